"""A line at least every few seconds: the current activity said again, with its age, after a
silence, and not before; and the thread stops with its block."""

from __future__ import annotations

import threading

from tfbuild.core.heartbeat import Heartbeat


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_activity_is_said_again_after_a_silence_with_its_age() -> None:
    said: list[str] = []
    clock = Clock()
    beat = Heartbeat(said.append, every=8.0, clock=clock)
    beat.tick()
    assert said == []  # nothing said yet: nothing to repeat
    beat("compiling the kernels")
    clock.now += 7.9
    beat.tick()
    assert said == ["compiling the kernels"]
    clock.now += 0.2
    beat.tick()
    assert said[-1] == "compiling the kernels (still, 8 s)"
    clock.now += 5
    beat.tick()  # 5 s since the last line
    assert len(said) == 2
    clock.now += 3
    beat.tick()
    assert said[-1] == "compiling the kernels (still, 16 s)"
    beat("linking")  # a new activity: its own clock
    clock.now += 8
    beat.tick()
    assert said[-1] == "linking (still, 8 s)"


def test_the_thread_runs_inside_the_block_only() -> None:
    said: list[str] = []
    done = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if "still" in line:
            done.set()

    with Heartbeat(say, every=0.05) as beat:
        beat("waiting")
        assert done.wait(5), said
    count = len(said)
    assert not any(t.name == "tfbuild-heartbeat" for t in threading.enumerate())
    assert len(said) == count


def test_a_long_step_is_repeated_by_its_first_clause() -> None:
    from tfbuild.core.heartbeat import SHORT, Heartbeat

    now = [0.0]
    said: list[str] = []
    beat = Heartbeat(said.append, every=8.0, clock=lambda: now[0])
    beat("compiling 83 kernels of TensorFlow 2.21.0 for zen4 (-march=znver4 -mno-pku) with clang")
    now[0] = 9.0
    beat.tick()
    assert said[-1] == "compiling 83 kernels of TensorFlow 2.21.0 for zen4 (still, 9 s)"
    beat("x" * 200)
    now[0] = 18.0
    beat.tick()
    assert said[-1] == "x" * (SHORT - 3) + "... (still, 9 s)"
