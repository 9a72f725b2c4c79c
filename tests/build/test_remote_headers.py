"""--remote-header-file: credentials become a private bazel rc file, and a bad line is named by its
number, never by its value."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tfbuild.build import remote_header_rc
from tfbuild.errors import InputError

TOKEN = "s3cr3t-t0ken with spaces 'and quotes'"


def test_each_header_is_one_quoted_remote_header_and_announce_rc_is_off(tmp_path: Path) -> None:
    headers = tmp_path / "headers"
    headers.write_text(
        f"# for the cache\nAuthorization: Bearer {TOKEN}\n\nx-buildbuddy-api-key: k\n"
    )
    rc = remote_header_rc(headers)
    lines = rc.splitlines()
    assert lines[-1] == "build --noannounce_rc"
    # bazel tokenizes rc lines like a shell: each header comes back whole, spaces and quotes kept.
    assert [shlex.split(line)[1] for line in lines[:-1]] == [
        f"--remote_header=Authorization=Bearer {TOKEN}",
        "--remote_header=x-buildbuddy-api-key=k",
    ]


@pytest.mark.parametrize(
    "line",
    [f"Authorization Bearer {TOKEN}", f"Bad Name: {TOKEN}", "Empty:", f"Ctl: {TOKEN}\x1b[31m"],
)
def test_a_bad_line_is_named_by_number_without_its_value(tmp_path: Path, line: str) -> None:
    headers = tmp_path / "headers"
    headers.write_text(f"Good: value\n{line}\n")
    with pytest.raises(InputError) as caught:
        remote_header_rc(headers)
    said = caught.value.line()
    assert f"{headers}:2 is not a 'Name: value' header" in said
    assert TOKEN not in said and "s3cr3t" not in said


def test_an_empty_or_missing_file_is_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    with pytest.raises(InputError, match="holds no header"):
        remote_header_rc(empty)
    with pytest.raises(InputError, match="cannot read --remote-header-file"):
        remote_header_rc(tmp_path / "missing")
