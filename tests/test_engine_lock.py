"""The lock that keeps the real engine's tests apart: a second process waits until the first lets
go (told by the order of what they did, not by the clock)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from tests.engine_lock import HOLDER, engine_lock


def hold(directory: str, name: str, log: str, entered: object, release: object) -> None:
    with engine_lock(Path(directory)):
        with Path(log).open("a") as out:
            out.write(f"{name} in\n")
        entered.set()  # type: ignore[attr-defined]
        release.wait(30)  # type: ignore[attr-defined]
        with Path(log).open("a") as out:
            out.write(f"{name} out\n")


def test_a_second_holder_waits_until_the_first_lets_go(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    log = tmp_path / "log"
    first_in, second_in, release = context.Event(), context.Event(), context.Event()
    first = context.Process(target=hold, args=(str(tmp_path), "a", str(log), first_in, release))
    first.start()
    assert first_in.wait(30)
    second = context.Process(target=hold, args=(str(tmp_path), "b", str(log), second_in, release))
    second.start()
    assert not second_in.wait(1)  # it waits: the first holds the lock
    release.set()
    first.join(30)
    second.join(30)
    assert (first.exitcode, second.exitcode) == (0, 0)
    assert log.read_text().splitlines() == ["a in", "a out", "b in", "b out"]
    assert not (tmp_path / HOLDER).exists()


def test_a_lock_that_does_not_exclude_is_caught(tmp_path: Path) -> None:
    (tmp_path / HOLDER).write_text("pid 1")  # as a holder that the lock did not keep out leaves
    with pytest.raises(AssertionError, match="does not exclude"), engine_lock(tmp_path):
        pass
