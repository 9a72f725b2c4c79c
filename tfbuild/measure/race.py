"""Several ways of running one model, timed side by side until each is judged.

Each entrant is a process of the measuring worker (``scripts/worker.py --model-only``) with its own
environment (threads, XLA auto-clustering, the overlay on or off, an allocator) and, for XLA on the
whole step, ``--model-xla jit``; all of them are started first and stay alive, each serving the
model as its one op. They are timed in smoke's :class:`tfbuild.measure.run.Rounds`, each with its
own calls per repetition: one repetition of every entrant still racing a round, in an order that
turns, and any two entrants compared on the rounds both ran (paired). That is how each is judged
against its *reference* (stock at the same threads) and against the fastest so far (the *leader*).

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
import dataclasses
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
from tfbuild.detect.system import usable_cpus
from tfbuild.measure.models import ModelFile
from tfbuild.measure.protocol import ModelError
from tfbuild.measure.run import WORKER, Method, Rounds, Worker, model_failed, proc_bytes

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

    def worker(self, python: str, model: ModelFile, script: Path = WORKER) -> Worker:
        """A worker serving ``model`` alone, run this way, at TensorFlow's default threads."""
        return Worker(
            python,
            intra=0,
            inter=0,
            env=self.env,
            label=self.name,
            model=model,
            xla=self.xla,
            model_only=True,
            script=script,
        )


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


def _check_memory(first: Worker, count: int) -> None:
    """Refuse, in one line, a race whose processes would not fit in memory together."""
    rss, available = first.rss_bytes(), proc_bytes("/proc/meminfo", "MemAvailable:")
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


class _Starting:
    """The entrants' workers as they start, some at once, and what each start showed."""

    def __init__(self, stack: contextlib.ExitStack, python: str, model: ModelFile, script: Path):
        self.stack, self.python, self.model, self.script = stack, python, model, script
        self.workers: dict[str, Worker] = {}
        self.lanes: dict[str, Lane] = {}
        self._lock = threading.Lock()

    def ask_all_to_quit(self) -> None:
        for worker in list(self.workers.values()):
            worker.ask_to_quit()

    def start(self, entrant: Entrant, *, fatal: bool) -> None:
        began = time.monotonic()
        try:
            made = entrant.worker(self.python, self.model, self.script)
        except (UnsupportedError, SmokeFailed) as exc:
            if fatal:
                raise
            failed = exc.what + (f": {exc.why}" if exc.why else "")
            with self._lock:
                self.lanes[entrant.name] = Lane(name=entrant.name, failed=failed)
            return
        with self._lock:
            worker = self.stack.enter_context(made)
            self.workers[entrant.name] = worker
            self.lanes[entrant.name] = Lane(
                name=entrant.name,
                start_seconds=time.monotonic() - began,
                rss_bytes=worker.rss_bytes(),
                overlay_loaded=worker.info.overlay_loaded,
                loader_lines=tuple(worker.stderr_lines(LOADER_PREFIX)),
                described=dict(worker.info.model or {}),
            )


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
    fatal = {baseline, *(r for r in references if r is not None)}
    with contextlib.ExitStack() as stack:
        starting = _Starting(stack, python, model, script)
        try:
            say(
                f"starting {ordered[0].name} (1 of {len(ordered)}): the model loaded and called once"
            )
            starting.start(ordered[0], fatal=True)
            _check_memory(starting.workers[baseline], len(ordered))
            rest = ordered[1:]
            # One start a CPU (importing TensorFlow and tracing, or compiling with XLA, is one
            # CPU's work each); none of them is timed yet.
            at_once = usable_cpus()
            if rest:
                say(f"starting the {len(rest)} other ways of running it, {at_once} at a time")
            with concurrent.futures.ThreadPoolExecutor(max_workers=at_once) as pool:
                starts = [pool.submit(starting.start, e, fatal=e.name in fatal) for e in rest]
                for job in starts:
                    job.result()
            timing = _Timing(
                Rounds(starting.workers, model.op, method, shared_inner=False), ordered, fatal
            )
            timing.run(model, deadline, say)
        finally:  # every worker told to quit first: each close then waits for its own exit only
            starting.ask_all_to_quit()
    rounds = timing.rounds
    return Race(
        baseline=baseline,
        lanes=tuple(timing.lane(starting.lanes[e.name]) for e in ordered),
        rounds=rounds.rounds,
        looks=rounds.looks,
        margin=method.min_margin,
        contention=contention.combine(rounds.spans) if rounds.spans else None,
    )


class _Timing:
    """The race's rounds: blocks until every entrant is done (see the module docstring)."""

    def __init__(self, rounds: Rounds, entrants: Sequence[Entrant], fatal: set[str]) -> None:
        self.rounds = rounds
        self.reference = {e.name: e.reference for e in entrants}
        self.fatal = fatal
        self.stopped: dict[str, str] = {}

    def lane(self, started: Lane) -> Lane:
        name = started.name
        if name not in self.rounds.workers:  # it did not start
            return dataclasses.replace(started, seconds=(None,) * self.rounds.rounds)
        failed = self.rounds.failed.get(name)
        return dataclasses.replace(
            started,
            seconds=self.rounds.seconds(name),
            failed=f"it raised while timed: {failed}" if failed is not None else None,
            stopped=self.stopped.get(name),
            inner=self.rounds.inner.get(name, 0),
        )

    def now(self, looks: int) -> Race:
        lanes = tuple(Lane(name=n, seconds=self.rounds.seconds(n)) for n in self.rounds.workers)
        margin = self.rounds.method.min_margin
        return Race(baseline="", lanes=lanes, rounds=self.rounds.rounds, looks=looks, margin=margin)

    def check(self, model: ModelFile) -> None:
        """A reference (or the baseline) whose model failed while timed fails the race."""
        for name, error in self.rounds.failed.items():
            if name in self.fatal:
                raise model_failed(model, ModelError(stage="call", error=error))

    def run(self, model: ModelFile, deadline: float, say: Progress) -> None:
        rounds, method = self.rounds, self.rounds.method
        live = list(rounds.workers)
        rounds.calibrate(live)
        self.check(model)
        live = [name for name in live if name not in rounds.failed]
        while len(live) > 1:
            early = self.stop_far_slower if rounds.looks == 0 else None
            live = rounds.block(live, fatal=self.fatal, after_round=early)
            self.check(model)
            leader = self.leader(live)
            pending = self.pending(live, leader)
            still = f"{len(pending)} still undecided" if pending else "all decided"
            say(f"after {rounds.rounds} rounds: {leader} fastest so far; {still}")
            if (
                not pending
                or rounds.looks >= method.looks
                or time.monotonic() + rounds.block_seconds > deadline
            ):
                break
            # The references and the leader are what the pending are judged against.
            needed = {self.reference[name] for name in pending} | {leader}
            live = [name for name in live if name in pending or name in needed]

    def leader(self, live: Sequence[str]) -> str:
        """The live entrant with the shortest median over the rounds so far."""
        now = self.now(self.rounds.looks)
        return min(live, key=lambda name: now.lane(name).median or float("inf"))

    def stop_far_slower(self, done: int, live: list[str]) -> list[str]:
        """After the first :data:`EARLY_ROUNDS` rounds, the entrants that every pair shows
        :data:`FAR_SLOWER` times slower than the leader and slower than their reference (99 %
        intervals): they stop."""
        if done != EARLY_ROUNDS:
            return []
        leader, now, stop = self.leader(live), self.now(1), []
        for name in live:
            reference = self.reference[name]
            if name == leader or reference is None or name in self.fatal:
                continue
            behind = _interval(now, name, leader)
            own = _interval(now, name, reference)
            if behind is None or own is None or behind[2] >= 1 / FAR_SLOWER or own[2] >= 1:
                continue
            self.stopped[name] = (
                f"stopped after {done} rounds: {behind[0]:.2f}x the speed of {leader} "
                f"({behind[1]:.2f}-{behind[2]:.2f}x, 99 %)"
            )
            stop.append(name)
        return stop

    def pending(self, live: Sequence[str], leader: str) -> set[str]:
        """The live entrants not yet done: undecided against their reference, or (but the leader
        and the references) against the leader."""
        now = self.now(self.rounds.looks)
        pending: set[str] = set()
        for name in live:
            reference = self.reference[name]
            if reference is None:
                continue
            own = now.compare(name, reference)
            if own is None or not own.decided:
                pending.add(name)
            if name != leader and name not in self.fatal:
                behind = now.compare(name, leader)
                if behind is None or not behind.decided:
                    pending.add(name)
        return pending


def _interval(now: Race, candidate: str, against: str) -> tuple[float, float, float] | None:
    """The ratio and its 99 % interval over the rounds both ran, None before :data:`EARLY_ROUNDS`."""
    mine, theirs = now.pairs(candidate, against)
    if len(mine) < EARLY_ROUNDS:
        return None
    found = ratio(mine, theirs, paired=True, confidence=CONFIDENCE)
    return found.ratio, found.low, found.high
