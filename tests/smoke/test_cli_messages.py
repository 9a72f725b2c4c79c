"""`tfbuild smoke`'s one-line refusals before any measuring: a missing TensorFlow for --installed, an
interpreter that does not run, --plot without matplotlib (whose advice must really work), a path
that is no wheel file (smoke's and tune's)."""

from __future__ import annotations

import shlex
import sys
import venv
from pathlib import Path

import pytest

from tests.cli_process import as_a_process
from tests.conftest import one_error_line, process_env, run_cli


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real, fresh virtual environment: an interpreter that certainly has no TensorFlow."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(where, with_pip=False)
    return str(where / "bin" / "python")


def test_installed_without_tensorflow_is_one_line_exit_5(bare_python: str) -> None:
    result = run_cli("smoke", "--installed", "--python", bare_python)
    assert result.returncode == 5
    assert one_error_line(result) == (
        f"tfbuild: error: no TensorFlow installed for {bare_python}: --installed tests the "
        "TensorFlow that interpreter imports, and it finds none. Install one "
        f"({bare_python} -m pip install tensorflow-cpu), name another interpreter with --python "
        "PATH, or test a wheel file: tfbuild smoke WHEEL."
    )
    # --json gives no half report either: the same line, the same exit code.
    as_json = run_cli("smoke", "--installed", "--python", bare_python, "--json")
    assert as_json.returncode == 5
    assert one_error_line(as_json) == one_error_line(result)


@pytest.mark.parametrize("installed", [True, False])
def test_an_interpreter_that_does_not_exist_is_a_usage_error(
    tmp_path: Path, installed: bool
) -> None:
    """--python takes what it takes in every command: a missing path is a bad value, exit 2."""
    missing = tmp_path / "no-such-python"
    args = ["--installed"] if installed else [str(tmp_path / "x.whl")]
    result = run_cli("smoke", *args, "--python", str(missing))
    assert one_error_line(result, 2) == (
        f"tfbuild: error: --python {str(missing)!r} is not an interpreter: it does not exist. "
        "Pass a version such as 3.12, or an interpreter: its path (.venv/bin/python) or name "
        "(python3.12)."
    )


def test_plot_without_matplotlib_names_an_install_that_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where matplotlib cannot be imported (``sys.modules[name] = None`` is Python's own way to
    make an import fail), --plot is refused before anything is measured. In this process, whatever
    $TFBUILD_TESTS_CLI says: the import is made to fail here."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    argv = ["smoke", "--installed", "--plot", str(tmp_path / "p.png")]
    result = as_a_process(argv, process_env(None), timeout=120)
    assert result.returncode == 5
    line = one_error_line(result)
    assert line == (
        "tfbuild: error: --plot needs matplotlib: it is not installed for the Python tfbuild runs "
        f"in ({sys.executable}). Install it there: {shlex.quote(sys.executable)} -m pip install "
        "matplotlib (or, "
        "from tfbuild's checkout, pip install '.[plot]'); or drop --plot."
    )
    assert "tfbuild[plot]" not in line  # that name on PyPI is another project
    assert not (tmp_path / "p.png").exists()


def test_the_plot_extra_the_advice_names_is_matplotlib() -> None:
    """This checkout's own metadata (pyproject.toml, as installed): extra ``plot`` is matplotlib."""
    from importlib.metadata import metadata

    from packaging.requirements import Requirement

    meta = metadata("tfbuild")
    assert "plot" in (meta.get_all("Provides-Extra") or [])
    requirements = [Requirement(text) for text in meta.get_all("Requires-Dist") or []]
    plot = [
        r.name
        for r in requirements
        if r.marker is not None and r.marker.evaluate({"extra": "plot"})
    ]
    assert plot == ["matplotlib"]


@pytest.mark.parametrize("command", ["smoke", "tune"])
def test_a_path_that_is_no_wheel_file_says_what_it_is(command: str, tmp_path: Path) -> None:
    """/dev/null exists: it is a character device, and the refusal says so, as it says a
    directory is one, and only a path that is not there "does not exist"."""
    fix = "Pass the path of a .whl file, or a requirement such as tensorflow-cpu==2.21.0."
    device = run_cli(command, "/dev/null")
    assert one_error_line(device, 3) == (
        f"tfbuild: error: cannot test wheel /dev/null: it is a character device, not a wheel "
        f"file. {fix}"
    )
    directory = run_cli(command, str(tmp_path))
    assert f"cannot test wheel {tmp_path}: it is a directory, not a wheel file." in (
        one_error_line(directory, 3)
    )
    missing = run_cli(command, str(tmp_path / "gone.whl"))
    assert f"{tmp_path / 'gone.whl'}: it does not exist." in one_error_line(missing, 3)
    (tmp_path / "dangling.whl").symlink_to(tmp_path / "gone.whl")
    dangling = run_cli(command, str(tmp_path / "dangling.whl"))
    assert "dangling.whl: it is a symbolic link to nothing." in one_error_line(dangling, 3)
    # A file, but no wheel: a receipt beside its wheel names the wheel; any other file is said so.
    name = "tfbuild_overlay-2.21.0+icelake-py3-none-manylinux_2_31_x86_64"
    (tmp_path / f"{name}.json").write_text("{}")
    (tmp_path / f"{name}.whl").write_bytes(b"")
    receipt = run_cli(command, str(tmp_path / f"{name}.json"))
    assert one_error_line(receipt, 3) == (
        f"tfbuild: error: {name}.json is not a wheel: it is a receipt (JSON), which describes a "
        f"wheel; a wheel is a .whl file. Pass the wheel beside it: {tmp_path / name}.whl"
    )
    (tmp_path / "notes.txt").write_text("")
    other = run_cli(command, str(tmp_path / "notes.txt"))
    assert one_error_line(other, 3) == (
        f"tfbuild: error: notes.txt is not a wheel: a wheel is a .whl file. {fix}"
    )


def test_an_overlay_wheel_that_is_not_there_is_refused_as_any_wheel(tmp_path: Path) -> None:
    """An overlay's name sends smoke to the overlay's proof, which refuses a missing wheel in the
    words smoke has for any wheel, exit 3, before it says anything else."""
    gone = tmp_path / "tfbuild_overlay-2.21.0+icelake-py3-none-manylinux_2_31_x86_64.whl"
    assert one_error_line(run_cli("smoke", str(gone)), 3) == (
        f"tfbuild: error: cannot test wheel {gone}: it does not exist. Pass the path of a .whl "
        "file, or a requirement such as tensorflow-cpu==2.21.0."
    )
