"""At a terminal, as a user sees it: the long commands never leave it silent for 10 s, and print no
line wider than it (a word longer than the line, a path or a file name, is the one exception: it
runs over whole, to be copied whole). Real commands in a real 80-column pseudo-terminal
(tests/terminal.py); ``forecast --mkl`` and ``smoke --quick`` were measured the same way by hand
(docs/development.md), their runs being minutes long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.docker.conftest import base_image, engine
from tests.terminal import Seen, run_in_terminal

__all__ = ["base_image", "engine"]  # the real-engine fixtures

#: The longest silence the commands promise (tfbuild.core.heartbeat), and the terminal's width.
SILENCE = 10.0
WIDTH = 80


def _held_to_the_terminal(seen: Seen) -> None:
    wide = [line for _, line in seen.lines if len(line) > WIDTH and " " in line.strip()]
    assert not wide, "\n".join(wide)
    assert seen.longest_silence <= SILENCE, seen.text()


def test_overlay_at_an_80_column_terminal(stock_python: str, tmp_path: Path) -> None:
    seen = run_in_terminal(
        ["overlay", "--compiler", "clang++-16", "--python", stock_python, "--dist", "dist"],
        cwd=tmp_path,
    )
    assert seen.code == 0, seen.text()
    assert any(line.startswith("[overlay] compiling ") for _, line in seen.lines)
    _held_to_the_terminal(seen)


@pytest.mark.docker
def test_doctor_at_an_80_column_terminal(engine: Any, base_image: str, tmp_path: Path) -> None:
    seen = run_in_terminal(["doctor"], cwd=tmp_path)
    assert seen.code in (0, 5), seen.text()  # 5: this machine's own shortfalls (its disk)
    assert any("canary build" in line for _, line in seen.lines), seen.text()
    _held_to_the_terminal(seen)
