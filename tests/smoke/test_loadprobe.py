"""The in-image probe of ``tfbuild smoke --in-image`` (``tfbuild/scripts/loadprobe.py``), on this host's
Python: how it reads a wheel's tags, top-level names and Requires-Dist, judges the tags against an
interpreter, and names the likely cause of an import error; then the whole probe on real wheels,
the report made from it and how it prints. The docker tests run the same probe in other systems."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.wheels import make_wheel
from tfbuild.cli.wheel_display import print_loads
from tfbuild.core import serial
from tfbuild.scripts import loadprobe as probe
from tfbuild.smoke.loads import PROBE, LoadReport

PY39 = {"implementation": "cpython", "version": "3.9.2", "major": 3, "minor": 9, "abi": "cp39"}
PY37 = {"implementation": "cpython", "version": "3.7.3", "major": 3, "minor": 7, "abi": "cp37m"}
PYPY = {"implementation": "pypy", "version": "3.9.18", "major": 3, "minor": 9, "abi": "pypy39_pp73"}


# --- the wheel's own words ---------------------------------------------------------------------


def read_words(tmp_path: Path, wheel: str, metadata: str = "") -> dict[str, Any]:
    """What ``read_wheel`` reads of a wheel holding these WHEEL and METADATA texts."""
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo-1.0.dist-info/WHEEL", wheel)
        archive.writestr("demo-1.0.dist-info/METADATA", metadata)
    with zipfile.ZipFile(path) as archive:
        return probe.read_wheel(archive)


def test_tags_come_from_the_wheel_file_and_expand_compressed_sets(tmp_path: Path) -> None:
    text = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_17_x86_64\nTag: cp311-cp311-manylinux2014_x86_64\n"
    assert read_words(tmp_path, text)["tags"] == [
        "cp311-cp311-manylinux_2_17_x86_64",
        "cp311-cp311-manylinux2014_x86_64",
    ]
    # no Tag line: the file name's tag
    assert read_words(tmp_path, "Wheel-Version: 1.0\n")["tags"] == ["py3-none-any"]
    assert probe.expand_tag("py2.py3-none-any") == [("py2", "none", "any"), ("py3", "none", "any")]
    assert probe.expand_tag("py3-none") == []
    assert probe.tags_from_filename(
        "/w/tensorflow_cpu-2.21.0+x86_64v4-cp311-cp311-linux_x86_64.whl"
    ) == ["cp311-cp311-linux_x86_64"]
    assert probe.tags_from_filename("demo-1.0-1-py3-none-any.whl") == ["py3-none-any"]  # build tag


@pytest.mark.parametrize(
    ("python", "abi", "here", "fits"),
    [
        ("py3", "none", PY39, True),
        ("py39", "none", PY39, True),
        ("py38", "none", PY39, True),  # pyXY: this minor and older
        ("py310", "none", PY39, False),
        ("py2", "none", PY39, False),
        ("cp39", "cp39", PY39, True),
        ("cp39", "none", PY39, True),
        ("cp311", "cp311", PY39, False),
        ("cp38", "cp38", PY39, False),  # a version-specific ABI is that version's only
        ("cp36", "abi3", PY39, True),  # the stable ABI: this CPython and older
        ("cp310", "abi3", PY39, False),
        ("cp39", "cp39d", PY39, False),  # a debug build's ABI
        ("cp37", "cp37m", PY37, True),
        ("cp37", "cp37", PY37, False),
        ("cp39", "cp39", PYPY, False),
        ("py3", "none", PYPY, True),
        ("pp39", "pypy39_pp73", PY39, False),
    ],
)
def test_python_and_abi_tags_fit_as_pip_judges_them(
    python: str, abi: str, here: dict[str, Any], fits: bool
) -> None:
    assert probe.tag_fits(python, abi, here) is fits


def test_not_installable_says_both_versions() -> None:
    ok, why = probe.installable({"tags": ["cp311-cp311-manylinux_2_34_x86_64"]}, PY39)
    assert not ok
    assert why == (
        "the wheel is for CPython 3.11 (cp311-cp311-manylinux_2_34_x86_64); "
        "this system has CPython 3.9.2"
    )
    ok, why = probe.installable({"tags": ["cp310-abi3-linux_x86_64"]}, PY39)
    assert not ok and why is not None and "CPython 3.10 or newer (abi3)" in why
    ok, why = probe.installable(
        {"tags": ["cp312-cp312-linux_x86_64", "cp313-cp313-linux_x86_64"]}, PY39
    )
    assert why is not None and why.startswith("the wheel is for CPython 3.12 or CPython 3.13 (")
    assert probe.installable({"tags": ["py3-none-manylinux_2_34_x86_64"]}, PY39) == (True, None)
    assert probe.installable({"tags": ["cp39-cp39-linux_x86_64"]}, PY39) == (True, None)
    ok, why = probe.installable({"tags": []}, PY39)
    assert not ok and why == "the wheel has no valid tag (none); this system has CPython 3.9.2"


def test_requires_python_is_checked_in_its_simple_forms() -> None:
    ok, why = probe.installable({"tags": ["py3-none-any"], "requires_python": ">=3.10"}, PY39)
    assert not ok
    assert why == (
        "the wheel requires Python >=3.10 (Requires-Python); this system has CPython 3.9.2"
    )
    holds = probe.requires_python_holds
    assert holds(">=3.8, <4", (3, 9, 2)) is True
    assert holds(">=3.8,!=3.9.*", (3, 9, 2)) is False
    assert holds("==3.9.*", (3, 9, 2)) is True
    assert holds("~=3.9", (3, 11, 0)) is True
    assert holds("~=3.9.1", (3, 10, 0)) is False
    assert holds(">3.9", (3, 9, 2)) is True  # padded: 3.9.2 against 3.9.0
    assert holds(">3.9.2", (3, 9, 2)) is False
    assert holds("<3.9.2", (3, 9, 2)) is False
    assert holds(">=3.9.1", (3, 9, 2)) is True
    assert holds(">=3.10.0a1", (3, 9, 2)) is None  # a pre-release: not evaluated
    assert holds(">=3.8.*", (3, 9, 2)) is None  # invalid: a wildcard only goes with == and !=
    # Not evaluated means installable: only a specifier that is known to fail refuses the wheel.
    fits = {"tags": ["py3-none-any"], "requires_python": ">=3.10.0rc1"}
    assert probe.installable(fits, PY39) == (True, None)


def test_top_level_names() -> None:
    members = [
        "tensorflow/__init__.py",
        "tensorflow/python/__init__.py",  # nested: not a top-level name
        "tensorflow/libtensorflow_framework.so.2",
        "six.py",
        "libplain.so",  # a library, perhaps: not a module without an ABI suffix
        "_speedups.cpython-311-x86_64-linux-gnu.so",  # an extension module
        "_stable.abi3.so",
        "data_only/README",  # no __init__.py: a namespace directory, not counted
        "demo-1.0.dist-info/METADATA",
        "demo-1.0.dist-info/top_level.py",
        "demo-1.0.data/purelib/extra_pkg/__init__.py",  # installs at the top level
        "demo-1.0.data/platlib/extra_mod.py",
        "demo-1.0.data/scripts/tool.py",
        "demo-1.0.data/headers/x.py",
    ]
    found = ["_speedups", "_stable", "extra_mod", "extra_pkg", "six", "tensorflow"]
    assert probe.top_level_names(members) == found
    assert probe.top_level_names(members, "tensorflow\n\n_private/part\n") == [
        "_private.part",
        "tensorflow",
    ]
    assert probe.top_level_names(members, "\n") == found  # an empty top_level.txt says nothing


def test_metadata_and_requirements(tmp_path: Path) -> None:
    metadata = read_words(
        tmp_path,
        "Wheel-Version: 1.0\n",
        "Metadata-Version: 2.1\nName: tensorflow-cpu\nVersion: 2.21.0\n"
        "Requires-Python: >=3.9\n"
        "Requires-Dist: absl-py>=1.0.0\n"
        "Requires-Dist: numpy<2.2.0,>=1.26.0\n"
        "Requires-Dist: tensorflow-io-gcs-filesystem>=0.23.1; python_version < '3.12'\n"
        'Requires-Dist: nvidia-cublas-cu12==12.5.3.2; extra == "and-cuda"\n'
        "Requires-Dist: Typing_Extensions>=3.6.6\n"
        "\n"
        "Requires-Dist: not-a-header (this is the description)\n",
    )
    assert metadata["name"] == "tensorflow-cpu"
    assert metadata["requires_python"] == ">=3.9"
    assert len(metadata["requires_dist"]) == 5
    assert probe.classify_requirement("numpy<2.2.0,>=1.26.0") == ("numpy", "plain")
    assert probe.classify_requirement("protobuf (>=3.20)") == ("protobuf", "plain")
    assert probe.classify_requirement('dep ; extra=="test"') == ("dep", "extra")
    assert probe.classify_requirement("x; sys_platform == 'linux'") == ("x", "marked")

    installed = {"absl-py": "2.1.0", "typing-extensions": "4.12.2"}
    checked = probe.check_requirements(metadata["requires_dist"], installed)
    assert [(r["name"], r["state"], r["version"]) for r in checked] == [
        ("absl-py", "installed", "2.1.0"),
        ("numpy", "missing", None),
        ("tensorflow-io-gcs-filesystem", "not evaluated", None),
        ("Typing_Extensions", "installed", "4.12.2"),  # names compared as PEP 503 normalises
    ]  # the extra's requirement is left out
    unknown = probe.check_requirements(["numpy>=1.26", "x; os_name == 'posix'"], None)
    assert [r["state"] for r in unknown] == ["unknown", "not evaluated"]


def test_installed_distributions_are_read_from_the_given_paths(tmp_path: Path) -> None:
    dist_info = tmp_path / "Some_Thing-1.2.3.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: Some_Thing\nVersion: 1.2.3\n")
    found = probe.installed_distributions([str(tmp_path)])
    assert found == {"some-thing": "1.2.3"}


def test_the_likely_cause_of_an_import_error() -> None:
    cause = probe.likely_cause
    own = ["tensorflow"]
    error = "ModuleNotFoundError: No module named 'numpy'"
    assert cause(error, ["absl-py", "numpy"], own) == "numpy"
    assert cause("ModuleNotFoundError: No module named 'google.protobuf'", ["protobuf"], own) == (
        "protobuf"  # the only missing one
    )
    assert (
        cause("ModuleNotFoundError: No module named 'google'", ["protobuf", "numpy"], own) is None
    )
    assert cause("ModuleNotFoundError: No module named 'tensorflow.x'", ["numpy"], own) is None
    assert cause("OSError: libfoo.so: cannot open shared object file", ["numpy"], own) is None
    assert cause(error, [], own) is None


# --- the whole probe, on this host -------------------------------------------------------------


def test_the_probe_runs_on_python_3_6_syntax() -> None:
    """Old images have old Pythons: the probe's source parses as Python 3.6 (and its annotations
    are strings, which 3.6 does not evaluate)."""
    source = PROBE.read_text()
    tree = ast.parse(source, feature_version=(3, 6))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            arguments = [*node.args.args, *node.args.kwonlyargs]
            for annotation in [a.annotation for a in arguments] + [node.returns]:
                if isinstance(annotation, ast.Subscript | ast.BinOp):
                    pytest.fail(
                        f"{node.name}: an annotation 3.6 would evaluate: {ast.unparse(annotation)}"
                    )


def _demo(directory: Path, requires: tuple[str, ...] = (), *, imports: str = "") -> Path:
    """A real wheel (tests/wheels.py) whose package imports ``imports`` and which requires ``requires``."""
    return make_wheel(
        directory,
        "tfbuild_probe_demo-1.0-py3-none-any.whl",
        module_text=(f"import {imports}\n" if imports else "") + "VERSION = '1.0'\n",
        requires=requires,
    )


def test_the_probe_on_this_host(tmp_path: Path) -> None:
    wheel = _demo(
        tmp_path,
        ("tfbuild-absent-dep>=1", "pytest", "thing; python_version < '3'", "x; extra == 'y'"),
        imports="tfbuild_absent_dep",
    )
    data = probe.probe(str(wheel))
    assert data["python"] == ".".join(map(str, sys.version_info[:3]))
    assert data["libraries"] == []
    assert data["wheel"]["top_level"] == ["tfbuild_probe_demo"]
    assert data["installable"] is True
    assert [(r["name"], r["state"]) for r in data["requirements"]] == [
        ("tfbuild-absent-dep", "missing"),
        ("pytest", "installed"),  # this very interpreter has it
        ("thing", "not evaluated"),
    ]
    (imported,) = data["imports"]
    assert imported == {
        "name": "tfbuild_probe_demo",
        "ok": False,
        "file": None,
        "error": "ModuleNotFoundError: No module named 'tfbuild_absent_dep'",
        "cause": "tfbuild-absent-dep",
    }
    report = LoadReport.from_probe("this host", json.loads(json.dumps(data)))
    assert (report.loads, report.installable, report.imports, report.passed) == (
        True,
        True,
        False,
        False,
    )
    assert report.missing == ("tfbuild-absent-dep",)
    assert report.problem() == (
        "import tfbuild_probe_demo: ModuleNotFoundError: No module named 'tfbuild_absent_dep' "
        "(missing dependency: tfbuild-absent-dep)"
    )
    as_json = serial.to_data(report)
    assert {"image", "glibc", "loads", "libraries"} <= as_json.keys()  # the keys of before
    assert as_json["imports"] is False and as_json["missing"] == ["tfbuild-absent-dep"]


def test_the_probe_imports_the_wheel_itself(tmp_path: Path) -> None:
    data = probe.probe(str(_demo(tmp_path)))
    (imported,) = data["imports"]
    assert imported == {
        "name": "tfbuild_probe_demo",
        "ok": True,
        "file": "tfbuild_probe_demo/__init__.py",  # the unpacked wheel's, not another copy
        "error": None,
        "cause": None,
    }
    assert LoadReport.from_probe("here", data).imports is True


def test_a_wheel_for_another_python_is_not_imported(tmp_path: Path) -> None:
    other = 8 if sys.version_info[:2] != (3, 8) else 7
    wheel = make_wheel(tmp_path, f"tfbuild_probe_demo-1.0-cp3{other}-cp3{other}-linux_x86_64.whl")
    data = probe.probe(str(wheel))
    here = ".".join(map(str, sys.version_info[:3]))
    assert data["installable"] is False
    assert data["not_installable"] == (
        f"the wheel is for CPython 3.{other} (cp3{other}-cp3{other}-linux_x86_64); "
        f"this system has CPython {here}"
    )
    assert data["imports"] == []
    report = LoadReport.from_probe("here", data)
    assert (report.imports, report.passed) == (None, False)


def _old_python(version: str) -> str | None:
    """A working ``pythonX.Y`` on this machine: on PATH, or among pyenv's versions (whose shims
    run only the versions pyenv has selected)."""
    found = [shutil.which(f"python{version}")]
    found += sorted(
        str(p) for p in Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}")
    )
    for python in filter(None, found):
        if subprocess.run([python, "-c", ""], capture_output=True, check=False).returncode == 0:
            return python
    return None


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_the_probe_runs_on_old_pythons(version: str, tmp_path: Path) -> None:
    """Where this machine has an old Python (pyenv), the probe runs there as a script, as in an
    old image: the tags judged against it, importlib.metadata missing on 3.7."""
    python = _old_python(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    wheel = _demo(tmp_path, ("tfbuild-absent-dep",))
    out = subprocess.run(
        [python, str(PROBE), str(wheel)], capture_output=True, text=True, check=True
    ).stdout
    data = json.loads(out)
    assert data["python"].startswith(version + ".")
    assert data["imports"][0]["ok"] is True
    # No importlib.metadata before 3.8: the requirement is unknown (missing, with the backport).
    assert data["requirements"][0]["state"] in ("unknown", "missing")


def test_print_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = _demo(
        tmp_path, ("tfbuild-absent-dep", "y; os_name == 'nt'"), imports="tfbuild_absent_dep"
    )
    data = probe.probe(str(wheel), wheelhouse=str(tmp_path))
    report = LoadReport.from_probe("tfbuild/base:bookworm", data)
    data["libraries"] = [
        {"path": "pkg/libx.so", "loads": False, "error": "version `GLIBC_2.34' not found [x]"}
    ]
    old = LoadReport.from_probe("tfbuild/base:bullseye", {**data, "glibc": "2.31"})
    print_loads(wheel, [report, old])
    lines = capsys.readouterr().out.splitlines()
    python = ".".join(map(str, sys.version_info[:3]))
    assert lines[0] == wheel.name
    # This host's Python has pip: the demo is installed from the wheelhouse (which lacks its dep).
    assert lines[1].startswith(
        f"  tfbuild/base:bookworm (glibc {data['glibc']}, Python {python}): loads, "
    )
    assert "does NOT import tfbuild_probe_demo, missing tfbuild-absent-dep" in lines[1]
    assert lines[2] == (
        "    import tfbuild_probe_demo: ModuleNotFoundError: No module named 'tfbuild_absent_dep' "
        "(likely cause: the missing dependency tfbuild-absent-dep)"
    )
    assert lines[3].startswith("    pip could not install it from the wheelhouse: ERROR: ")
    assert (
        lines[4] == "    not evaluated (no packaging here to evaluate markers): y; os_name == 'nt'"
    )
    assert lines[5].startswith("  tfbuild/base:bullseye (glibc 2.31, ")
    assert "does NOT load, does NOT import" in lines[5]
    assert lines[6] == "    pkg/libx.so: version `GLIBC_2.34' not found [x]"  # markup kept as text


def test_wheelhouse_needs_in_image(tmp_path: Path) -> None:
    result = run_cli("smoke", str(tmp_path / "x.whl"), "--wheelhouse", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "tfbuild: error: --wheelhouse works only with --in-image: it is the dependencies' wheels "
        "to install in that image. Add --in-image IMAGE, or drop --wheelhouse."
    )
