"""One reader for every input file: regular files only (or ``-``), bounded while reading."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input
from tfbuild.wheel.receipt import receipt_path


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"0123456789")
    assert read_input(path, limit=10, what="x") == b"0123456789"


def test_the_bound_is_counted_while_reading(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"0123456789!")
    with pytest.raises(InputError, match=r"too large: .* larger than 10 bytes"):
        read_input(path, limit=10, what="x")


def test_a_missing_file_is_left_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "absent", limit=10, what="x")


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "receipt.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a FIFO; tfbuild reads regular files only"):
        read_input(fifo, limit=1 << 20, what="the receipt")


def test_a_link_to_dev_zero_is_a_device_not_a_memory_error(tmp_path: Path) -> None:
    link = tmp_path / "receipt.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(InputError, match="is a character device"):
        read_input(link, limit=16 << 20, what="the receipt")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_input(tmp_path, limit=10, what="x")


_READ_STDIN = """
from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input
try:
    print(len(read_input("-", limit=4, what="the header file")))
except InputError as exc:
    print(exc)
"""


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (b"abcd", "4"),
        (b"abcde", "the header file is too large: standard input is larger than 4 bytes."),
    ],
)
def test_standard_input_is_read_within_the_bound(given: bytes, said: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", _READ_STDIN], input=given, capture_output=True, check=True
    )
    assert run.stdout.decode().strip() == said


@pytest.mark.parametrize("command", ["verify", "--from-receipt"])
def test_a_receipt_that_is_a_fifo_is_one_line_and_exit_3(tmp_path: Path, command: str) -> None:
    wheel = tmp_path / "canary-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    receipt = receipt_path(wheel)
    os.mkfifo(receipt)
    argv = ["verify", str(wheel)] if command == "verify" else ["wheel", command, str(receipt)]
    result = run_cli(*argv, timeout=60)
    assert result.returncode == 3, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "is a FIFO" in lines[0]
