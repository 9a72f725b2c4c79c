"""Where tfbuild writes: `render -o DIR` and `wheel --dist DIR`, checked before any work.

An empty value is a usage error (2); a path that is a file, lies inside one or takes no new file is
an input error (3), one line. Tests run as root here, where permission bits do not stop writes, so
the unwritable directory is /proc, where nobody can create a file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import one_error_line, run_cli
from tfbuild.core.errors import InputError, UsageError
from tfbuild.plan.render import output_dir, write_context

#: No engine answers here: a `wheel` that got past its --dist check would end with exit 5 at once.
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/tfbuild-test.sock"}
FIX = "Name a directory tfbuild may write into with {option} DIR (it is made when missing)."
#: A plan each command accepts here without an engine (render) or before needing one (wheel).
PLAN = {"render": ("--tf", "2.21", "--mkl", "--skip-disk-check"), "wheel": ("--canary",)}


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("not a directory\n")
    return path


@pytest.mark.parametrize(("command", "option"), [("render", "-o"), ("wheel", "--dist")])
def test_an_empty_path_is_a_usage_error(
    command: str, option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(command, *PLAN[command], option, "", env=NO_ENGINE)
    assert result.returncode == 2
    assert one_error_line(result) == (
        f"tfbuild: error: {option} is empty: an empty path would quietly mean the current "
        f"directory. Name a directory ({option} . for the current one)."
    )
    assert list(tmp_path.iterdir()) == []  # nothing written into the current directory


@pytest.mark.parametrize(("command", "option"), [("render", "-o"), ("wheel", "--dist")])
def test_a_file_or_a_path_inside_one_exit_3(command: str, option: str, a_file: Path) -> None:
    result = run_cli(command, *PLAN[command], option, str(a_file), env=NO_ENGINE)
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: cannot write into {option} {a_file}: it is a file, not a directory. "
        + FIX.format(option=option)
    )
    inside = a_file / "ctx"
    result = run_cli(command, *PLAN[command], option, str(inside), env=NO_ENGINE)
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: cannot write into {option} {inside}: {a_file} is a file, not a "
        "directory. " + FIX.format(option=option)
    )
    assert a_file.read_text() == "not a directory\n"


@pytest.mark.parametrize(("command", "option"), [("render", "-o"), ("wheel", "--dist")])
@pytest.mark.parametrize("where", ["/proc", "/proc/tfbuild-ctx"])
def test_a_directory_that_takes_no_file_exit_3(command: str, option: str, where: str) -> None:
    result = run_cli(command, *PLAN[command], option, where, env=NO_ENGINE)
    assert result.returncode == 3
    line = one_error_line(result)
    assert line.startswith(
        f"tfbuild: error: cannot write into {option} {where}: no file can be created in /proc ("
    )
    assert line.endswith(FIX.format(option=option))


def test_render_writes_into_a_new_nested_directory(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    result = run_cli("render", *PLAN["render"], "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "Dockerfile").is_file()


def test_output_dir_checks_without_making_anything(tmp_path: Path) -> None:
    new = tmp_path / "x" / "y"
    assert output_dir(str(new), option="-o") == new
    assert not (tmp_path / "x").exists()
    with pytest.raises(UsageError):
        output_dir("  ", option="-o")
    with pytest.raises(InputError):
        output_dir("/proc", option="-o")


def test_write_context_turns_a_failed_write_into_one_line() -> None:
    """The last line of defence, for a directory that stops taking files after the check."""
    with pytest.raises(InputError, match=r"^cannot write /proc/Dockerfile: "):
        write_context({"Dockerfile": "FROM scratch\n"}, Path("/proc"))
