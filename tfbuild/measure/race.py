"""Several ways of running one model, timed side by side until each is judged.

Each entrant is a process of the measuring worker (``scripts/worker.py --model-only``) with its own
environment (threads, XLA auto-clustering, the overlay on or off, an allocator) and, for XLA on the
whole step, ``--model-xla jit``; all of them are started first and stay alive, each serving the
model as its one op. A *round* times one repetition of every entrant still racing, in an order that
turns from round to round (each entrant goes first in turn, and every other round runs backwards),
so that whatever the machine does meanwhile falls on all of them alike. Round r's repetitions of two
entrants are a *pair*: any two entrants can be compared on the rounds both ran
(:func:`tfbuild.core.stats.verdict`, paired), which is how each is judged against its *reference*
(stock at the same threads) and against the fastest so far (the *leader*).

Rounds come in blocks of ``method.pairs`` (a look). After each, an entrant is done when it is
decided against its reference, and against the leader (or is the leader); the references run
while any entrant that is compared with them does. The race ends when every entrant is done, after
``method.looks`` looks, or when another block would pass the deadline. One entrant stops early: one
that, after its first :data:`EARLY_ROUNDS` rounds, every pair shows at least :data:`FAR_SLOWER`
times slower than the leader and slower than its reference (XLA on a convolutional model: 4-14x),
so that it does not cost a whole block to say it loses.

An entrant that cannot start (XLA cannot compile the model, a plugin crashes) or raises while timed
is out of the race with its reason; only a reference failing fails the race.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild.core.errors import EnvironmentProblem, SmokeFailed, UnsupportedError
from tfbuild.core.stats import CONFIDENCE, Verdict, ratio, verdict
from tfbuild.detect import contention
from tfbuild.detect.contention import Contention
from tfbuild.measure.models import ModelFile
from tfbuild.measure.protocol import ModelError
from tfbuild.measure.run import WORKER, Method, Worker, model_failed

Progress = Callable[[str], object]

#: Rounds after which an entrant far slower than the leader stops (the 99 % interval needs 8).
EARLY_ROUNDS = 8
#: How much slower than the leader, in every pair of those rounds, stops an entrant early.
FAR_SLOWER = 1.5
#: The share of the available memory the race's processes may take together.
MEMORY_SHARE = 0.8
#: What the overlay's loader writes to standard error when it does not register its kernels.
LOADER_PREFIX = "tfbuild overlay"


@dataclass(frozen=True, kw_only=True)
class Entrant:
    """One way of running the model: its name, its process's whole environment, XLA or not, and
    the entrant it is judged against (None: the baseline, judged against none)."""

    name: str
    env: Mapping[str, str]
    xla: str = "off"  # "jit": the step compiled whole with XLA (jit_compile=True)
    reference: str | None = None


@dataclass(frozen=True, kw_only=True)
class Lane:
    """One entrant's race: seconds per call in each round (None where it did not run), or why it
    could not run, or why it stopped early."""

    name: str
    seconds: tuple[float | None, ...] = ()
    failed: str | None = None
    stopped: str | None = None
    inner: int = 0  # calls per repetition
    start_seconds: float = 0.0  # its process's start: TensorFlow, the model loaded and called once
    rss_bytes: int | None = None
    overlay_loaded: bool = False
    loader_lines: tuple[str, ...] = ()  # the overlay loader's lines, when it said any
    described: Mapping[str, Any] = field(default_factory=dict)  # the worker's model description

    @property
    def timed(self) -> tuple[float, ...]:
        return tuple(s for s in self.seconds if s is not None)

    @property
    def median(self) -> float | None:
        found = sorted(self.timed)
        return found[len(found) // 2] if found else None


@dataclass(frozen=True, kw_only=True)
class Race:
    baseline: str
    lanes: tuple[Lane, ...]
    rounds: int
    looks: int
    margin: float
    contention: Contention | None = None

    def lane(self, name: str) -> Lane:
        return next(lane for lane in self.lanes if lane.name == name)

    def pairs(self, candidate: str, against: str) -> tuple[list[float], list[float]]:
        """The two entrants' seconds in the rounds both ran."""
        a, b = self.lane(candidate), self.lane(against)
        both = [(x, y) for x, y in zip(a.seconds, b.seconds, strict=False) if x and y]
        return [x for x, _ in both], [y for _, y in both]

    def compare(self, candidate: str, against: str) -> Verdict | None:
        """``candidate`` against ``against`` over the rounds both ran (paired), None with fewer
        than two such rounds."""
        mine, theirs = self.pairs(candidate, against)
        if len(mine) < 2:
            return None
        return verdict(mine, theirs, paired=True, margin=self.margin, looks=self.looks)


def _available_memory() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _check_memory(first: Worker, count: int) -> None:
    """Refuse, in one line, a race whose processes would not fit in memory together."""
    rss, available = first.rss_bytes(), _available_memory()
    if rss is None or available is None or count <= 1:
        return
    needed = rss * (count - 1)
    if needed > MEMORY_SHARE * available:
        raise EnvironmentProblem(
            f"timing the model's {count} ways of running needs {count} processes at once",
            why=f"each holds about {rss >> 20} MiB with the model, and {available >> 20} MiB "
            "are available",
            fix="Close other work, or give a smaller --model-batch.",
        )


class _Running:
    """The entrants' workers and their timings while the race runs."""

    def __init__(
        self, stack: contextlib.ExitStack, entrants: Sequence[Entrant], script: Path
    ) -> None:
        self.stack = stack
        self.script = script
        self.entrants = {e.name: e for e in entrants}
        self.references = {e.reference for e in entrants if e.reference is not None}
        self.workers: dict[str, Worker] = {}
        self.lanes: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def ask_all_to_quit(self) -> None:
        for worker in list(self.workers.values()):
            worker.ask_to_quit()

    def start(
        self, entrant: Entrant, python: str, model: ModelFile, *, fatal: bool
    ) -> Worker | None:
        began = time.monotonic()
        record: dict[str, Any] = {"name": entrant.name, "seconds": []}
        with self._lock:
            self.lanes[entrant.name] = record
        try:
            made = Worker(
                python,
                intra=0,
                inter=0,
                env=entrant.env,
                label=entrant.name,
                model=model,
                xla=entrant.xla,
                model_only=True,
                script=self.script,
            )
        except (UnsupportedError, SmokeFailed) as exc:
            if fatal:
                raise
            record["failed"] = exc.what + (f": {exc.why}" if exc.why else "")
            return None
        with self._lock:
            worker = self.stack.enter_context(made)
        record["start_seconds"] = time.monotonic() - began
        record["rss_bytes"] = worker.rss_bytes()
        record["overlay_loaded"] = worker.info.overlay_loaded
        record["loader_lines"] = tuple(worker.stderr_lines(LOADER_PREFIX))
        record["described"] = dict(worker.info.model or {})
        with self._lock:
            self.workers[entrant.name] = worker
        return worker

    def fail(self, name: str, error: str, model: ModelFile) -> None:
        """The entrant raised while timed: out of the race (a reference: the race fails)."""
        if self.entrants[name].reference is None or name in self.references:
            raise model_failed(model, ModelError(stage="call", error=error))
        self.lanes[name]["failed"] = f"it raised while timed: {error}"
        self.workers.pop(name, None)

    def snapshot(self, rounds: int, margin: float, looks: int) -> Race:
        return Race(
            baseline="",
            lanes=tuple(self.lane(name, rounds, keep=True) for name in self.lanes),
            rounds=rounds,
            looks=looks,
            margin=margin,
        )

    def lane(self, name: str, rounds: int, *, keep: bool = False) -> Lane:
        record = dict(self.lanes[name]) if keep else self.lanes[name]
        seconds = list(record.pop("seconds"))
        seconds += [None] * (rounds - len(seconds))
        return Lane(**record, seconds=tuple(seconds))


def _at_once() -> int:
    """How many workers start at once: one a CPU (importing TensorFlow and tracing, or compiling
    with XLA, is one CPU's work each); none of them is timed yet."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _order(names: Sequence[str], index: int) -> list[str]:
    """Round ``index``'s order: each entrant first in turn, every other round backwards."""
    if not names:
        return []
    turn = index % len(names)
    found = [*names[turn:], *names[:turn]]
    return found[::-1] if index % 2 else found


def race(
    entrants: Sequence[Entrant],
    *,
    python: str,
    model: ModelFile,
    method: Method,
    deadline: float,
    say: Progress,
    script: Path = WORKER,
) -> Race:
    """Start every entrant, then time them round by round until each is judged (see the module
    docstring). One entrant, the baseline, has no reference; ``deadline`` is a
    ``time.monotonic()`` after which no new block starts (the first always runs whole).
    ``script``: another program speaking the worker's protocol (the tests' known model worker)."""
    names = [e.name for e in entrants]
    bases = [e.name for e in entrants if e.reference is None]
    references = {e.reference for e in entrants if e.reference is not None}
    if len(bases) != 1 or len(set(names)) != len(names) or not references <= set(names):
        raise ValueError(f"unique names, one baseline, references among them: {entrants}")
    baseline = bases[0]
    ordered = sorted(entrants, key=lambda e: (e.name != baseline, e.name not in references))
    with contextlib.ExitStack() as stack:
        running = _Running(stack, ordered, script)
        try:
            fatal = {baseline, *references}
            say(
                f"starting {ordered[0].name} (1 of {len(ordered)}): the model loaded and called once"
            )
            running.start(ordered[0], python, model, fatal=True)
            _check_memory(running.workers[baseline], len(ordered))
            rest = ordered[1:]
            if rest:
                say(f"starting the {len(rest)} other ways of running it, {_at_once()} at a time")
            with concurrent.futures.ThreadPoolExecutor(max_workers=_at_once()) as pool:
                starts = [
                    pool.submit(running.start, e, python, model, fatal=e.name in fatal)
                    for e in rest
                ]
                for job in starts:
                    job.result()
            for name, worker in list(running.workers.items()):
                reply = worker.run(model.op, reps=1, min_rep_seconds=method.min_rep_seconds)
                if reply.error is not None:
                    running.fail(name, reply.error, model)
                    continue
                running.lanes[name]["inner"] = reply.inner
            rounds, looks, spans = _run_rounds(running, model, method, deadline, say)
        finally:  # every worker told to quit first: each close then waits for its own exit only
            running.ask_all_to_quit()
    return Race(
        baseline=baseline,
        lanes=tuple(running.lane(e.name, rounds) for e in ordered),
        rounds=rounds,
        looks=looks,
        margin=method.min_margin,
        contention=contention.combine(spans) if spans else None,
    )


def _run_rounds(
    running: _Running, model: ModelFile, method: Method, deadline: float, say: Progress
) -> tuple[int, int, list[Contention]]:
    """Blocks of rounds until every entrant is done; the rounds and looks run, and what else ran
    on the CPUs meanwhile."""
    live = list(running.workers)
    index = looks = 0
    spans: list[Contention] = []
    block_seconds = 0.0
    while len(live) > 1:
        began, before = time.monotonic(), contention.snapshot()
        for _ in range(method.pairs):
            for name in _order(live, index):
                if name not in running.workers:
                    continue
                reply = running.workers[name].run(
                    model.op,
                    reps=1,
                    min_rep_seconds=method.min_rep_seconds,
                    inner=running.lanes[name]["inner"],
                )
                if reply.error is not None:
                    running.fail(name, reply.error, model)
                    live.remove(name)
                    continue
                times = running.lanes[name]["seconds"]
                times += [None] * (index - len(times))
                times.append(reply.seconds_per_call[0])
            index += 1
            if looks == 0 and index == EARLY_ROUNDS:
                _stop_far_slower(running, live, index, method)
        spans.append(contention.between(before, contention.snapshot()))
        looks += 1
        block_seconds = max(block_seconds, time.monotonic() - began)
        leader = _leader(running, live)
        pending = _pending(running, live, leader, index, looks, method)
        say(_look_line(leader, index, pending))
        if not pending or looks >= method.looks or time.monotonic() + block_seconds > deadline:
            break
        # The references and the leader are what the pending are judged against.
        needed = {running.entrants[name].reference for name in pending} | {leader}
        live = [name for name in live if name in pending or name in needed]
    return index, looks, spans


def _leader(running: _Running, live: Sequence[str]) -> str:
    """The live entrant with the shortest median over the rounds so far."""

    def median(name: str) -> float:
        found = sorted(s for s in running.lanes[name]["seconds"] if s is not None)
        return found[len(found) // 2] if found else float("inf")

    return min(live, key=median)


def _stop_far_slower(running: _Running, live: list[str], rounds: int, method: Method) -> None:
    """After the first rounds, stop each entrant that every pair shows :data:`FAR_SLOWER` times
    slower than the leader and slower than its reference (99 % intervals)."""
    leader = _leader(running, live)
    now = running.snapshot(rounds, method.min_margin, 1)
    for name in list(live):
        reference = running.entrants[name].reference
        if name == leader or reference is None or name in running.references:
            continue
        behind = _interval(now, name, leader)
        own = _interval(now, name, reference)
        if behind is None or own is None or behind[2] >= 1 / FAR_SLOWER or own[2] >= 1:
            continue
        running.lanes[name]["stopped"] = (
            f"stopped after {rounds} rounds: {behind[0]:.2f}x the speed of {leader} "
            f"({behind[1]:.2f}-{behind[2]:.2f}x, 99 %)"
        )
        live.remove(name)


def _interval(now: Race, candidate: str, against: str) -> tuple[float, float, float] | None:
    """The ratio and its 99 % interval over the rounds both ran, None before :data:`EARLY_ROUNDS`."""
    mine, theirs = now.pairs(candidate, against)
    if len(mine) < EARLY_ROUNDS:
        return None
    found = ratio(mine, theirs, paired=True, confidence=CONFIDENCE)
    return found.ratio, found.low, found.high


def _pending(
    running: _Running, live: Sequence[str], leader: str, rounds: int, looks: int, method: Method
) -> set[str]:
    """The live entrants not yet done: undecided against their reference, or (but the leader and
    the references) against the leader."""
    now = running.snapshot(rounds, method.min_margin, looks)
    pending: set[str] = set()
    for name in live:
        reference = running.entrants[name].reference
        if reference is None:
            continue
        own = now.compare(name, reference)
        if own is None or not own.decided:
            pending.add(name)
        if name != leader and name not in running.references:
            behind = now.compare(name, leader)
            if behind is None or not behind.decided:
                pending.add(name)
    return pending


def _look_line(leader: str, rounds: int, pending: set[str]) -> str:
    still = f"{len(pending)} still undecided" if pending else "all decided"
    return f"after {rounds} rounds: {leader} fastest so far; {still}"
