"""``tfbuild index`` over a hostile directory: each finding of issue 15 replayed through the real CLI.

A name a wheel cannot have, a link, a file that is not a wheel, a receipt built to exhaust the parser,
an output path taken by a directory, a base URL with a password: each is one line on stderr, exit 3
(an input) or 2 (an option), and the previous index.html and SHA256SUMS stay exactly as they were.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests import wheels
from tests.conftest import NO_FILE_KINDS, ROOT, CliResult, one_error_line, plant_no_file, run_cli
from tests.receipts import write_receipt
from tfbuild.wheel.index import INDEX_NAME, SUMS_NAME

GOOD = "tfbuild_standin-2.21.0+x86_64v4-py3-none-any.whl"
SUMS_LINE = re.compile(r"[0-9a-f]{64}  [A-Za-z0-9_.+-]+\.whl")


def one_line(result: CliResult, code: int) -> str:
    line = one_error_line(result, code)
    # Nothing but printable ASCII reaches the terminal: no control character, no raw byte.
    assert all(0x20 <= ord(c) < 0x7F for c in line), repr(line)
    return line


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A directory indexed once: one good wheel with its receipt, index.html and SHA256SUMS."""
    directory = tmp_path / "dist"
    directory.mkdir()
    write_receipt(wheels.make_wheel(directory, GOOD), standin=True)
    result = run_cli("index", str(directory))
    assert result.returncode == 0, result.stderr
    return directory


def unchanged(directory: Path, before: dict[str, bytes]) -> None:
    """The previous pair is intact and no temp file is left."""
    assert {n: (directory / n).read_bytes() for n in (INDEX_NAME, SUMS_NAME)} == before
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []


def snapshot(directory: Path) -> dict[str, bytes]:
    return {n: (directory / n).read_bytes() for n in (INDEX_NAME, SUMS_NAME)}


# --- names --------------------------------------------------------------------------------------------


def test_a_newline_in_a_name_packaging_accepts_injects_no_line(published: Path) -> None:
    """packaging before 26 parsed this name (the newline sits in the build tag; 26.4 refuses it),
    and SHA256SUMS would have gained a second line naming any file the attacker likes. tfbuild's own
    name check refuses it whatever packaging's version does."""
    name = "evil-1.0-1\nffff  ..%2Fetc%2Fpasswd-py3-none-any.whl"
    before = snapshot(published)
    wheels.make_wheel(published, name)
    line = one_line(run_cli("index", str(published)), 3)
    assert line == (
        f"tfbuild: error: {published}/evil-1.0-1\\nffff ..%2Fetc%2Fpasswd-py3-none-any.whl is "
        "not a wheel file name: it holds \\n space %, and a wheel's name has only letters, digits "
        "and _ . + - (PEP 427). Rename or remove it."
    )
    unchanged(published, before)


def test_terminal_controls_in_a_name_are_escaped_not_echoed(published: Path) -> None:
    name = "evil-1.0-1\x1b]0;owned\x07\u202e-py3-none-any.whl"
    before = snapshot(published)
    (published / name).write_bytes(b"")
    line = one_line(run_cli("index", str(published)), 3)
    assert "evil-1.0-1\\x1b]0;owned\\x07\\u202e-py3-none-any.whl is not a wheel file name" in line
    unchanged(published, before)


def test_a_latin1_byte_in_a_name_is_one_line_not_an_internal_error(published: Path) -> None:
    before = snapshot(published)
    # The name as os.listdir gives it back: the byte 0xe9 kept as the surrogate U+DCE9.
    (published / "caf\udce9-1.0-py3-none-any.whl").write_bytes(b"PK")
    assert os.fsencode(published / "caf\udce9-1.0-py3-none-any.whl").endswith(
        b"caf\xe9-1.0-py3-none-any.whl"
    )
    line = one_line(run_cli("index", str(published)), 3)
    assert "caf\\xe9-1.0-py3-none-any.whl is not a wheel file name: it holds \\xe9," in line
    unchanged(published, before)


# --- files that are not wheels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "it is empty (0 bytes)"),
        (b"#!/bin/sh\nrm -rf ~\n", "it is not a zip archive (File is not a zip file)"),
        (None, "it has no NAME-VERSION.dist-info/WHEEL member"),
    ],
    ids=["zero-bytes", "not-a-zip", "zip-without-WHEEL"],
)
def test_a_file_that_is_not_a_wheel_is_not_published(
    published: Path, content: bytes | None, why: str
) -> None:
    before = snapshot(published)
    fake = published / "fake-1.0-py3-none-any.whl"
    if content is None:
        wheels.pack(fake, {"fake/__init__.py": b""})
    else:
        fake.write_bytes(content)
    line = one_line(run_cli("index", str(published)), 3)
    assert line == (
        f"tfbuild: error: {fake} is not a wheel: {why}. Publish only wheels that tfbuild wheel "
        "(or pip wheel) wrote; remove or rebuild it."
    )
    unchanged(published, before)


@pytest.mark.parametrize("points_to", ["outside", "dangling"])
def test_a_symlinked_wheel_is_refused(published: Path, tmp_path: Path, points_to: str) -> None:
    before = snapshot(published)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = wheels.make_wheel(elsewhere, "other-1.0-py3-none-any.whl")
    if points_to == "dangling":
        target.unlink()
    link = published / "other-1.0-py3-none-any.whl"
    link.symlink_to(target)
    line = one_line(run_cli("index", str(published)), 3)
    assert line == (
        f"tfbuild: error: {link} is a symbolic link: a link can point out of the directory, and "
        "the page would publish what it names. Copy the wheel itself into the directory."
    )
    unchanged(published, before)


def test_a_fifo_named_like_a_wheel_is_refused_not_read(published: Path) -> None:
    """Reading a FIFO would block for ever."""
    before = snapshot(published)
    fifo = published / "pipe-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    line = one_line(run_cli("index", str(published)), 3)
    assert line.startswith(f"tfbuild: error: {fifo} is not a wheel: it is not a regular file.")
    unchanged(published, before)


# --- receipts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [65, 100_000])
def test_a_deeply_nested_receipt_is_one_line(published: Path, depth: int) -> None:
    before = snapshot(published)
    receipt = published / GOOD.replace(".whl", ".json")
    receipt.write_text('{"a": ' + "[" * depth + "]" * depth + "}")
    line = one_line(run_cli("index", str(published)), 3)
    assert line == (
        f"tfbuild: error: {receipt} is not a tfbuild receipt: it nests deeper than 64 levels. "
        "Rebuild the wheel with tfbuild wheel, which writes its receipt beside it."
    )
    unchanged(published, before)


def test_an_oversized_receipt_is_not_read(published: Path) -> None:
    before = snapshot(published)
    receipt = published / GOOD.replace(".whl", ".json")
    with receipt.open("wb") as handle:
        handle.truncate((16 << 20) + 1)  # sparse: no 16 MiB written
    line = one_line(run_cli("index", str(published)), 3)
    assert line.startswith(
        f"tfbuild: error: {receipt} is not a tfbuild receipt: it is larger than 16 MiB."
    )
    unchanged(published, before)


# --- the outputs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("blocked", [INDEX_NAME, SUMS_NAME])
def test_an_output_path_that_is_a_directory_leaves_the_other_untouched(
    published: Path, blocked: str
) -> None:
    """Before: SHA256SUMS was already rewritten when index.html turned out to be a directory."""
    other = SUMS_NAME if blocked == INDEX_NAME else INDEX_NAME
    kept = (published / other).read_bytes()
    wheels.make_wheel(published, "second-1.0-py3-none-any.whl")  # the new set would differ
    (published / blocked).unlink()
    (published / blocked).mkdir()
    line = one_line(run_cli("index", str(published)), 3)
    assert line == (
        f"tfbuild: error: cannot write the index in {published}: {published}/{blocked}: it is a "
        "directory, not a file; nothing was written. Let tfbuild write index.html and SHA256SUMS "
        "there (neither may be a directory)."
    )
    assert (published / other).read_bytes() == kept
    assert sorted(p.name for p in published.iterdir() if p.name.startswith(".")) == []


def test_a_read_only_directory_is_one_line_and_keeps_the_pair(published: Path) -> None:
    """Read-only for real: a read-only bind mount for root (whom permission bits do not stop), the
    permission bits for anyone else."""
    before = snapshot(published)
    wheels.make_wheel(published, "second-1.0-py3-none-any.whl")
    index = shlex.join([sys.executable, "-m", "tfbuild", "index", str(published)])
    if os.geteuid() == 0:
        where = shlex.quote(str(published))
        script = f"mount --bind {where} {where} && mount -o remount,ro,bind {where} && {index}"
        command = ["unshare", "-m", "sh", "-c", script]
    else:
        published.chmod(0o555)
        command = ["sh", "-c", index]
    try:
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    finally:
        published.chmod(0o755)
    line = one_line(CliResult(result.returncode, result.stdout, result.stderr), 3)
    assert line.startswith(
        f"tfbuild: error: cannot write the index in {published}: {published}/{SUMS_NAME}: "
    )
    assert "; nothing was written." in line
    unchanged(published, before)


# --- the base URL -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:s3cret@host/wheels/", "http://***@host/wheels/"),
        ("https://token@host:8443/w/", "https://***@host:8443/w/"),
    ],
)
def test_a_base_url_with_credentials_is_refused(published: Path, url: str, shown: str) -> None:
    before = snapshot(published)
    line = one_line(run_cli("index", str(published), "--base-url", url), 2)
    assert line == (
        f"tfbuild: error: --base-url {shown} carries a user name or password: every link of the "
        "public page would show it. Pass the URL without credentials; the page is for anyone "
        "to read."
    )
    assert "s3cret" not in line and "token" not in line
    unchanged(published, before)


def test_a_base_url_with_a_control_character_is_refused(published: Path) -> None:
    before = snapshot(published)
    line = one_line(run_cli("index", str(published), "--base-url", "https://h/x\n/"), 2)
    assert "--base-url 'https://h/x\\n/' is not an http(s) URL of a directory" in line
    unchanged(published, before)


def test_the_published_set_is_sums_lines_only(published: Path) -> None:
    """The good path still holds after all of the above: one well-formed line per wheel."""
    lines = (published / SUMS_NAME).read_text().splitlines()
    assert len(lines) == 1 and SUMS_LINE.fullmatch(lines[0]), lines


@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_a_receipt_that_is_a_fifo_or_dev_zero_is_refused_not_skipped(
    published: Path, kind: str
) -> None:
    """Issue 21, item 15: the receipt beside a wheel is read by the one reader; one that is no
    file is one line and exit 3 (it was skipped, and the wheel published as if it had none)."""
    before = snapshot(published)
    wheel = wheels.make_wheel(published, "other-1.0-py3-none-any.whl")
    receipt = wheel.with_suffix(".json")
    said = plant_no_file(receipt, kind)
    line = one_line(run_cli("index", str(published), timeout=60), 3)
    assert line.startswith(
        f"tfbuild: error: the receipt {receipt} is not a file: {receipt} is {said}; tfbuild reads "
        "regular files only."
    )
    wheel.unlink()
    receipt.unlink()
    unchanged(published, before)
