"""Text from inputs is shown, never obeyed: rich markup and terminal escape sequences in a cpuinfo's
fields or in a file name reach the terminal as plain characters (or not at all), on every command.

Each test runs the real CLI on a real recorded dump whose fields were replaced by hostile text, and
reads the bytes the user's terminal would get.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import CliResult, cpuinfo_fixture, run_cli

#: rich markup that crashed (``[/x]``: MarkupError) or became a live link, an OSC 8 hyperlink with a
#: BEL terminator, and a CSI colour left open.
HOSTILE = "[/x][link=http://e]\x1b]8;;http://evil\x07click\x1b[31m"
#: What the user must see instead: the markup literally, the escape sequences gone.
SHOWN = "[/x][link=http://e]click"
#: The same in a file name (no "/" there): markup that would style and link, an OSC window title, a
#: C1 CSI.
HOSTILE_NAME = "[bold]x[link=https:evil]y\x1b]0;pwned\x07\x9b31mz.cpuinfo"
SHOWN_NAME = "[bold]x[link=https:evil]yz.cpuinfo"
#: rich's own styling when it talks to a terminal: SGR sequences only.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _hostile_dump(tmp_path: Path, *, field: str, value: str, name: str = "node.cpuinfo") -> Path:
    text = cpuinfo_fixture("haswell").read_text()
    replaced, count = re.subn(rf"(?m)^{field}\s*:.*$", f"{field}\t: {value}", text)
    assert count == 1, f"the dump has no {field!r} line"
    path = tmp_path / name
    path.write_text(replaced)
    return path


def _assert_terminal_safe(result: CliResult, *, styled: bool = False) -> str:
    """No BEL, no C1, no ESC but (with ``styled``) rich's own SGR; returns the text shown."""
    shown = result.stdout + result.stderr
    if styled:
        assert _SGR.search(shown), "FORCE_COLOR should make rich style its output"
        shown = _SGR.sub("", shown)
    assert "\x1b" not in shown, repr(shown[shown.index("\x1b") - 40 : shown.index("\x1b") + 40])
    assert "\x07" not in shown
    assert not re.search("[\x80-\x9f]", shown)
    return shown


def test_detect_shows_a_hostile_model_name_literally(tmp_path: Path) -> None:
    dump = _hostile_dump(tmp_path, field="model name", value=HOSTILE)
    result = run_cli("detect", "--cpuinfo", str(dump))
    assert result.returncode == 0, result.stderr
    assert SHOWN in _assert_terminal_safe(result)
    assert "haswell (archspec)" in result.stdout  # the rest of the report is there


def test_detect_on_a_terminal_keeps_only_its_own_styling(tmp_path: Path) -> None:
    dump = _hostile_dump(tmp_path, field="model name", value=HOSTILE)
    result = run_cli("detect", "--cpuinfo", str(dump), env={"FORCE_COLOR": "1", "TERM": "xterm"})
    assert result.returncode == 0, result.stderr
    assert SHOWN in _assert_terminal_safe(result, styled=True)


def test_a_hostile_vendor_and_common_target_of_two_machines(tmp_path: Path) -> None:
    hostile = _hostile_dump(tmp_path, field="vendor_id", value=HOSTILE)
    other = cpuinfo_fixture("skylake_avx512")
    result = run_cli("detect", "--cpuinfo", str(hostile), "--cpuinfo", str(other))
    assert result.returncode == 0, result.stderr
    shown = _assert_terminal_safe(result)
    assert SHOWN in shown
    assert "Common target of all 2 machines" in shown


def test_a_hostile_file_name_in_the_report_title(tmp_path: Path) -> None:
    dump = _hostile_dump(tmp_path, field="model name", value="plain", name=HOSTILE_NAME)
    result = run_cli("detect", "--cpuinfo", str(dump))
    assert result.returncode == 0, result.stderr
    shown = _assert_terminal_safe(result)
    assert "Machine from" in shown
    # The table title wraps the path at the table's width, wherever the length of pytest's temp path
    # puts the break: read it with the white space taken out, the name escaped and whole.
    assert f"{dump.parent}/{SHOWN_NAME}".replace(" ", "") in "".join(shown.split())


def test_plan_for_a_hostile_dump(tmp_path: Path) -> None:
    dump = _hostile_dump(tmp_path, field="model name", value=HOSTILE)
    result = run_cli("plan", "--skip-disk-check", "--canary", "--cpuinfo", str(dump))
    assert result.returncode == 0, result.stderr
    shown = _assert_terminal_safe(result)
    assert "STAND-IN" in shown or "canary" in shown.lower()


def test_the_error_line_of_a_missing_hostile_path_is_one_safe_line(tmp_path: Path) -> None:
    missing = tmp_path / HOSTILE_NAME
    result = run_cli("detect", "--cpuinfo", str(missing))
    assert result.returncode == 3
    shown = _assert_terminal_safe(result)
    (line,) = shown.strip().splitlines()
    assert line.startswith("tfbuild: error: cannot use --cpuinfo ")
    assert f"{tmp_path}/{SHOWN_NAME}: the file does not exist" in line


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_garbage_flags_are_refused_in_one_safe_line(tmp_path: Path, as_json: bool) -> None:
    text = cpuinfo_fixture("haswell").read_text()
    dump = tmp_path / "garbage.cpuinfo"
    dump.write_text(text.replace("flags\t\t: fpu ", "flags\t\t: \x1b]8;;http://evil\x07fpu ", 1))
    result = run_cli("detect", "--cpuinfo", str(dump), *(["--json"] if as_json else []))
    assert result.returncode == 3, result.stderr
    (line,) = _assert_terminal_safe(result).strip().splitlines()
    assert "flags line holds garbage" in line
