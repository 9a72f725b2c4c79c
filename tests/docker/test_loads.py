"""`tfbuild smoke WHEEL --in-image IMAGE` shows that the wheel imports on another system, not only
that its shared objects load: real containers of the test base images, the real canary wheel built
by the pipeline on bookworm (glibc 2.36, Python 3.11), and copies of it with another tag or with a
dependency, made here with zipfile. Each container run takes about a second."""

from __future__ import annotations

import importlib.util
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.docker.test_wheel import wheel_cli
from tests.wheels import make_wheel, members_of, pack, record
from tfbuild.recipes import canary
from tfbuild.smoke.loads import loads_in

pytestmark = pytest.mark.docker

GLIBC_ERROR = "version `GLIBC_2.34' not found"
DEP = "tfbuild-test-dep"  # a dependency no image has: the wheelhouse brings it


@pytest.fixture(scope="module")
def canary_wheel(engine: Any, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The canary wheel, built once for this module by the real pipeline on the test base image."""
    volume = f"tfbuild-test-loads-{uuid.uuid4().hex[:10]}"
    try:
        built = wheel_cli(tmp_path_factory.mktemp("dist"), volume, "--json")
    finally:
        engine.remove_volume(volume)
    assert built.returncode == 0, built.stderr
    return Path(json.loads(built.stdout)["wheel"])


def rewritten(
    wheel: Path,
    directory: Path,
    *,
    python_abi: str | None = None,
    requires: tuple[str, ...] = (),
    first_line: str = "",
) -> Path:
    """A copy of ``wheel`` in ``directory``: its Python and ABI tags set to ``python_abi`` (file
    name and WHEEL), ``requires`` added to METADATA as Requires-Dist, ``first_line`` put at the top
    of the package's ``__init__.py``; RECORD written anew with true hashes."""
    parts = wheel.name[: -len(".whl")].split("-")
    name, version, platform = parts[0], parts[1], parts[-1]
    tags = python_abi or "-".join(parts[-3:-1])
    members = members_of(wheel)
    dist_info = f"{name}-{version}.dist-info"
    for member in list(members):
        text = members[member]
        if member == f"{dist_info}/WHEEL" and python_abi:
            lines = text.decode().splitlines()
            text = "".join(
                f"Tag: {python_abi}-{line.rsplit('-', 1)[1]}\n"
                if line.startswith("Tag: ")
                else f"{line}\n"
                for line in lines
            ).encode()
        elif member == f"{dist_info}/METADATA":
            head, sep, body = text.decode().partition("\n\n")  # the headers, the description
            head = head.rstrip("\n") + "".join(f"\nRequires-Dist: {r}" for r in requires)
            text = f"{head}\n{sep[1:]}{body}".encode()
        elif member == "tfbuild_canary/__init__.py" and first_line:
            text = f"{first_line}\n".encode() + text
        members[member] = text
    members[f"{dist_info}/RECORD"] = record(members, f"{dist_info}/RECORD")
    return pack(directory / f"{name}-{version}-{tags}-{platform}.whl", members)


@pytest.fixture(scope="module")
def needs_dep(canary_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The canary, made to require and import a dependency that no image has."""
    return rewritten(
        canary_wheel,
        tmp_path_factory.mktemp("needs-dep"),
        requires=(
            f"{DEP}>=1.0",
            "tfbuild-test-other; python_version < '3.0'",
            "pytest; extra == 'test'",
        ),
        first_line="import tfbuild_test_dep",
    )


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheelhouse with the dependency: a real wheel (tests/wheels.py) of the package it imports."""
    house = tmp_path_factory.mktemp("wheelhouse")
    make_wheel(house, "tfbuild_test_dep-1.0-py3-none-any.whl")
    return house


@pytest.fixture(scope="module")
def pip_image(engine: Any, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The test base image with pip (this interpreter's own pip package, copied in: no network),
    built once and reused by the hash of its context, which names the base image's id."""
    spec = importlib.util.find_spec("pip")
    assert spec is not None and spec.origin is not None, "the test environment has pip"
    context = tmp_path_factory.mktemp("pip-image")
    shutil.copytree(
        Path(spec.origin).parent, context / "pip", ignore=shutil.ignore_patterns("__pycache__")
    )
    (context / "base-image-id").write_text(f"{engine.image_id(base_image)}\n")
    (context / "Dockerfile").write_text(
        f"FROM {base_image}\n"
        "COPY pip /opt/tfbuild-test-pip/pip\n"
        'RUN python3 -c "import os, site; d = site.getsitepackages()[0]; os.makedirs(d, exist_ok=True); '
        "open(os.path.join(d, 'tfbuild-test-pip.pth'), 'w').write('/opt/tfbuild-test-pip\\n')\" "
        "&& python3 -m pip --version\n"
    )
    tag, _ = engine.ensure_image(context, repository="tfbuild/test-pip")
    return str(tag)


def test_the_canary_imports_on_its_own_system_and_not_on_an_older_one(
    canary_wheel: Path, base_image: str, old_base_image: str
) -> None:
    """What a user reads: one line per image, then the loader's words, for the library and for the
    import that really ran the package."""
    result = run_cli(
        "smoke",
        str(canary_wheel),
        "--in-image",
        base_image,
        "--in-image",
        old_base_image,
        timeout=300,
    )
    assert result.returncode == 7, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == canary_wheel.name
    assert lines[1] == f"  {base_image} (glibc 2.36, Python 3.11.2): loads, imports tfbuild_canary"
    assert (
        lines[2]
        == f"  {old_base_image} (glibc 2.31, Python 3.9.2): does NOT load, does NOT import tfbuild_canary"
    )
    assert lines[3].startswith(f"    {canary.LIBRARY}: ") and GLIBC_ERROR in lines[3]
    assert lines[4].startswith("    import tfbuild_canary: OSError: ") and GLIBC_ERROR in lines[4]
    assert len(lines) == 5
    message = result.stderr.splitlines()[-1]
    assert f"does not load on {old_base_image}" in message and GLIBC_ERROR in message


def test_a_wheel_for_a_python_the_image_lacks_is_not_installable(
    engine: Any, canary_wheel: Path, base_image: str, old_base_image: str, tmp_path: Path
) -> None:
    """A cp39 wheel on bookworm's Python 3.11: its code loads, but pip would not install it, so no
    import is tried; the report names both versions. A cp311 wheel on bullseye's 3.9: the same."""
    cp39 = rewritten(canary_wheel, tmp_path / "cp39", python_abi="cp39-cp39")
    assert "-cp39-cp39-manylinux_2_34_x86_64.whl" in cp39.name
    result = run_cli("smoke", str(cp39), "--in-image", base_image, "--json", timeout=300)
    assert result.returncode == 7, result.stderr
    (image,) = result.json()["images"]
    assert (image["loads"], image["installable"], image["imports"], image["modules"]) == (
        True,
        False,
        None,
        [],
    )
    assert image["not_installable"] == (
        "the wheel is for CPython 3.9 (cp39-cp39-manylinux_2_34_x86_64); this system has CPython 3.11.2"
    )
    assert f"does not install on {base_image}" in result.stderr.splitlines()[-1]

    cp311 = rewritten(canary_wheel, tmp_path / "cp311", python_abi="cp311-cp311")
    report = loads_in(engine, cp311, old_base_image)
    assert not report.installable and report.imports is None
    assert report.not_installable is not None
    assert "CPython 3.11 (cp311-cp311-" in report.not_installable
    assert report.not_installable.endswith("this system has CPython 3.9.2")


def test_a_missing_dependency_is_reported_and_named_as_the_cause(
    engine: Any, needs_dep: Path, base_image: str
) -> None:
    report = loads_in(engine, needs_dep, base_image)
    assert report.loads and report.installable
    assert [(r.name, r.state) for r in report.requirements] == [
        (DEP, "missing"),
        ("tfbuild-test-other", "not evaluated"),
    ]  # the extra's requirement is left out
    (module,) = report.modules
    assert (module.name, module.ok) == ("tfbuild_canary", False)
    assert module.error == "ModuleNotFoundError: No module named 'tfbuild_test_dep'"
    assert module.cause == DEP
    assert report.imports is False and not report.passed


def test_a_wheelhouse_needs_pip_in_the_image(
    needs_dep: Path, wheelhouse: Path, base_image: str
) -> None:
    """tfbuild's base images have no pip: the report says so, and the import from the unpacked
    wheel fails for the dependency the wheelhouse would have brought."""
    result = run_cli(
        "smoke",
        str(needs_dep),
        "--in-image",
        base_image,
        "--wheelhouse",
        str(wheelhouse),
        timeout=300,
    )
    assert result.returncode == 7, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == (
        f"  {base_image} (glibc 2.36, Python 3.11.2): loads, does NOT import tfbuild_canary, missing {DEP}"
    )
    assert f"    {base_image} has no pip; dependencies cannot be installed offline" in lines
    assert (
        "    import tfbuild_canary: ModuleNotFoundError: No module named 'tfbuild_test_dep' "
        f"(likely cause: the missing dependency {DEP})"
    ) in lines
    message = result.stderr.splitlines()[-1]
    assert f"does not import on {base_image}" in message and "--wheelhouse DIR" in message


def test_a_wheelhouse_installs_the_dependencies_with_the_images_pip(
    engine: Any, needs_dep: Path, wheelhouse: Path, pip_image: str, tmp_path: Path
) -> None:
    report = loads_in(engine, needs_dep, pip_image, wheelhouse=wheelhouse)
    assert (report.install.by, report.install.error) == ("pip", None)
    assert report.install.pip is not None
    assert [(r.name, r.state, r.version) for r in report.requirements] == [
        (DEP, "installed", "1.0"),
        ("tfbuild-test-other", "not evaluated", None),
    ]
    (module,) = report.modules
    assert (module.ok, module.file) == (
        True,
        "tfbuild_canary/__init__.py",
    )  # pip's target: its code
    assert report.passed

    # A wheelhouse without the dependency: pip's own words, then the import without it.
    empty = tmp_path / "empty"
    empty.mkdir()
    report = loads_in(engine, needs_dep, pip_image, wheelhouse=empty)
    assert report.install.by == "unpacked"
    assert report.install.error is not None and DEP in report.install.error
    assert report.install.error.startswith("ERROR: ")
    (module,) = report.modules
    assert (module.ok, module.cause) == (False, DEP)
