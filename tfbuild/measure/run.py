"""Candidate and baseline, side by side: benchmark workers driven in alternation.

Each wheel gets a long-lived worker process (``scripts/worker.py`` in the wheel's own interpreter), one per
thread setting. Ops are timed one repetition at a time, a candidate repetition beside a baseline
one, the two taking turns to go first, so that whatever the machine does meanwhile hits both alike
and each pair can be compared on its own (:mod:`tfbuild.core.stats`, paired). An op still
undecided after its first round is timed again, a round at a time, while the budget lasts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from tfbuild.core import commands
from tfbuild.core.errors import SmokeFailed, UnsupportedError
from tfbuild.core.stats import (
    FASTER,
    MARGIN,
    MAX_LOOKS,
    MEMORY_BOUND_MARGIN,
    SLOWER,
    UNDECIDED,
    Summary,
    Verdict,
    verdict,
)
from tfbuild.detect import contention
from tfbuild.detect.contention import Contention
from tfbuild.measure.models import ModelFile
from tfbuild.measure.protocol import (
    MAX_LINE,
    ModelError,
    OpInfo,
    Reply,
    decode_ready,
    decode_reply,
)

T = TypeVar("T")

WORKER = commands.script("worker.py")


class Worker:
    """One benchmark process; a context manager that always stops it."""

    def __init__(
        self,
        python: str,
        *,
        intra: int,
        inter: int,
        env: Mapping[str, str],
        bf16: bool = False,
        label: str = "",
        model: ModelFile | None = None,
        cpus: Sequence[int] = (),
        script: Path = WORKER,
        extra: Sequence[str] = (),
        xla: str = "off",
        model_only: bool = False,
    ) -> None:
        """``cpus``: the CPUs it runs on (all this process may use when empty); ``script``:
        another program that speaks the worker's protocol (the known-ratio worker of the tests
        and benchmarks/verdicts.py); ``extra``: more arguments for it. ``xla``: "jit" compiles
        the model's step with XLA; ``model_only``: the model is the only op (none of the smoke's
        ops are made)."""
        self.label = label
        self._model = model
        self._quit_asked = False
        self._log = tempfile.TemporaryFile(mode="w+", prefix="tfbuild-worker-")  # noqa: SIM115
        argv = ["--intra", str(intra), "--inter", str(inter), *extra]
        if cpus:
            argv += ["--cpus", ",".join(str(c) for c in cpus)]
        if bf16:
            argv.append("--bf16")
        if model is not None:
            argv += [*model.worker_args(), "--model-xla", xla]
            if model_only:
                argv.append("--model-only")
        call = commands.Command(
            argv=commands.in_python(python, script, *argv, paths=commands.python_path(env)),
            what=f"the benchmark worker for {label} did not start",
            error=SmokeFailed,
            env=env,
        )
        self._proc = commands.spawn(call, stderr=self._log)
        try:
            self.info = self._read(decode_ready)
            if not self.info.ready:
                problem = self.info.model_error
                if model is not None and problem is not None:
                    raise model_failed(model, problem)
                raise self._died("did not start")
        except BaseException:  # a worker that never started leaves no process, pipe or log open
            self.close()
            raise

    def _died(self, what: str) -> SmokeFailed:
        self._log.seek(0)
        tail = [line for line in self._log.read().splitlines() if line.strip()][-3:]
        return SmokeFailed(
            f"the benchmark worker for {self.label} {what}",
            why=" | ".join(tail) or f"exit code {self._proc.poll()}",
            fix="Run 'tfbuild smoke --no-bench' to see whether the wheel imports at all"
            + (
                f", and tune without --model to see whether {self._model.op} is the cause."
                if self._model is not None
                else "."
            ),
        )

    def _read(self, decode: Callable[[str], T]) -> T:
        stdout: IO[str] | None = self._proc.stdout
        assert stdout is not None
        line = stdout.readline(MAX_LINE + 1)
        if not line:
            raise self._died("stopped unexpectedly")
        try:
            return decode(line)
        except ValueError as exc:
            raise self._died(f"said what tfbuild cannot read ({exc})") from None

    def run(self, op: str, *, reps: int, min_rep_seconds: float, inner: int | None = None) -> Reply:
        """``reps`` timed repetitions of ``op``; with ``inner`` (an earlier reply's count), no
        calibration and one warm-up call instead of three."""
        stdin = self._proc.stdin
        assert stdin is not None
        request: dict[str, Any] = {"op": op, "reps": reps, "min_rep_seconds": min_rep_seconds}
        if inner is not None:
            request |= {"inner": inner, "warmup": 1}
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return self._read(decode_reply)

    def stderr_lines(self, prefix: str) -> list[str]:
        """The lines the worker wrote to standard error so far that start with ``prefix`` (the
        overlay loader's "tfbuild overlay: ..." among them)."""
        self._log.flush()
        self._log.seek(0)
        lines = [line for line in self._log.read().splitlines() if line.startswith(prefix)]
        self._log.seek(0, os.SEEK_END)
        return lines

    def rss_bytes(self) -> int | None:
        """The worker's resident memory now (Linux), None when it cannot be read."""
        return proc_bytes(f"/proc/{self._proc.pid}/status", "VmRSS:")

    @property
    def ops(self) -> dict[str, OpInfo]:
        return self.info.ops

    def ask_to_quit(self) -> None:
        """Ask the worker to exit without waiting for it: several workers then end together, and
        :meth:`close` only waits (TensorFlow takes most of a second to exit)."""
        if self._quit_asked or self._proc.poll() is not None:
            return
        self._quit_asked = True
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self._proc.stdin.flush()
        except (OSError, AssertionError):
            self._proc.kill()

    def close(self) -> None:
        if self._proc.poll() is None:
            self.ask_to_quit()
            commands.wait_or_kill(self._proc, 30)
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()
        self._log.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def proc_bytes(path: str, key: str) -> int | None:
    """The bytes of the line ``key`` of a file in /proc ("VmRSS:   1024 kB"), None when it cannot
    be read."""
    try:
        for line in Path(path).read_text(encoding="ascii").splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        return None
    return None


#: What to do when a model fails in the worker, by the stage it failed at.
_MODEL_FIXES = {
    "load": "Check that this TensorFlow loads it (a .keras file loads with safe_mode=True: no Lambda "
    "layers; custom classes need --model-code FILE.py that defines them), or export a SavedModel "
    "(model.export(DIR)) and pass the directory.",
    "inputs": "Give the open input's shape without the batch: --model-input 224,224,3 (NAME=DIMS "
    "for one of several inputs, :int32 for its dtype).",
    "call": "Check that it runs on a batch made from its input signature here (--model-batch sets "
    "the batch, --model-input an input's shape).",
    "xla": "Run it without XLA (jit_compile=False): XLA cannot compile this model here.",
}
_MODEL_WHAT = {
    "load": "cannot load",
    "inputs": "cannot make a batch for",
    "call": "cannot call",
    "xla": "cannot compile with XLA",
}


def model_failed(model: ModelFile, problem: ModelError) -> UnsupportedError:
    """The one line for a model the timing worker could not use (exit 4)."""
    stage = problem.stage
    what = _MODEL_WHAT.get(stage, "cannot use")
    why = problem.error or "no reason given"
    if stage in ("call", "xla"):
        why = f"called on a batch of {model.batch} made from its input signature: {why}"
    return UnsupportedError(
        f"{what} {model.op}",
        why=why,
        fix=_MODEL_FIXES.get(stage, "Tune without --model."),
    )


@dataclass(frozen=True, kw_only=True)
class OpResult:
    op: str
    threads: str  # "1" or "default"
    candidate: Summary
    baseline: Summary | None
    verdict: Verdict | None
    contention: Contention | None = None  # what else ran on the CPUs while the op was timed
    #: A claimed difference timed again in a fresh pair of processes: the claim stands only when
    #: this one agrees (else the verdict is undecided). None: nothing was claimed.
    recheck: Verdict | None = None


@dataclass(frozen=True, kw_only=True)
class Method:
    """How hard to measure: --quick trades precision for time, never the rules.

    Each round times ``pairs`` repetitions a side, one candidate repetition beside one of the
    baseline's, in turn. The first round of every op always runs; an op still undecided then gets
    more rounds (up to ``looks`` in all) while the ``budget`` lasts."""

    pairs: int = 15
    min_rep_seconds: float = 0.05
    ops: tuple[str, ...] | None = None  # None = every op both builds run
    min_margin: float = MARGIN  # the smallest difference that matters (15 % for memory-bound ops)
    budget: float = 300.0  # seconds for the whole comparison, extra rounds included
    looks: int = MAX_LOOKS

    def __post_init__(self) -> None:
        if not self.ops:  # no ops named: every op, as None says
            object.__setattr__(self, "ops", None)
        if self.pairs < 1 or not 1 <= self.looks <= MAX_LOOKS or self.budget < 0:
            raise ValueError(f"pairs >= 1, looks in 1..{MAX_LOOKS}, budget >= 0: {self}")

    @staticmethod
    def quick(min_margin: float = MARGIN, budget: float = 90.0) -> Method:
        return Method(pairs=15, min_rep_seconds=0.01, min_margin=min_margin, budget=budget)


THREAD_SETTINGS = (("1", 1, 1), ("default", 0, 0))


def order(names: Sequence[str], index: int) -> list[str]:
    """Round ``index``'s order: each name first in turn, and every other cycle of turns backwards
    (two names: AB, BA, BA, AB), so that no worker always runs after the same one."""
    if not names:
        return []
    turn = index % len(names)
    found = [*names[turn:], *names[:turn]]
    return found[::-1] if (index // len(names)) % 2 else found


class Rounds:
    """The one way tfbuild times things side by side: workers timed one repetition each per
    *round*, in an order that turns from round to round (:func:`order`), so that whatever the
    machine does meanwhile falls on all of them alike. Round r's repetitions of any two workers are
    a *pair*, compared on their own (:func:`tfbuild.core.stats.verdict`, paired). Rounds run in
    blocks of ``method.pairs``, a *look* each; what else ran on the CPUs is read for each block.

    Smoke times a candidate beside a baseline, op by op (:func:`alternate`); tune races several
    ways of running one model (:mod:`tfbuild.measure.race`)."""

    def __init__(
        self, workers: Mapping[str, Worker], op: str, method: Method, *, shared_inner: bool
    ) -> None:
        """``shared_inner``: every worker runs the calls per repetition that the largest
        calibration found (:meth:`calibrate`); else each its own."""
        self.workers = dict(workers)
        self.op = op
        self.method = method
        self.shared_inner = shared_inner
        self.times: dict[str, list[float | None]] = {name: [] for name in workers}
        self.inner: dict[str, int] = {}
        #: A worker's error when the op failed in it: it is out of the rounds.
        self.failed: dict[str, str] = {}
        self.rounds = 0
        self.looks = 0
        self.block_seconds = 0.0  # the longest block so far
        self.spans: list[Contention] = []

    def _rep(self, name: str, inner: int | None) -> Reply | None:
        reply = self.workers[name].run(
            self.op, reps=1, min_rep_seconds=self.method.min_rep_seconds, inner=inner
        )
        if reply.error is not None:
            self.failed[name] = reply.error
            return None
        return reply

    def calibrate(self, names: Sequence[str]) -> None:
        """The calls per repetition of each worker not calibrated yet (these calls are not timed).

        Shared, the largest that any calibration found. A calibration that a neighbour pre-empts
        finds too small a count (the stalled first calls took the whole ``min_rep_seconds``), and a
        side whose repetitions last a millisecond slips between a neighbour's time slices while
        the other's share them: a steady bias that every pair agrees on (3-6x, seen under load). A
        stall can only shrink a count, so the largest is the honest one, and one count for both
        sides keeps their repetitions alike. Ways of running one model that differ many times in
        speed (XLA, threads) each keep their own."""
        for name in names:
            if name not in self.inner and name not in self.failed:
                reply = self._rep(name, None)
                if reply is not None:
                    self.inner[name] = reply.inner
        if self.shared_inner and self.inner:
            self.inner = dict.fromkeys(self.inner, max(self.inner.values()))

    def block(
        self,
        live: Sequence[str],
        *,
        fatal: Collection[str] = (),
        after_round: Callable[[int, list[str]], Collection[str]] | None = None,
    ) -> list[str]:
        """A look: ``method.pairs`` rounds of the ``live`` workers (calibrated first where they are
        not). A worker whose op fails leaves the rounds (:attr:`failed` says why), and one of
        ``fatal`` ends the block there; ``after_round(rounds, live)`` names workers to stop. The
        workers still live after it."""
        began, before = time.monotonic(), contention.snapshot()
        self.calibrate(live)
        live = [name for name in live if name not in self.failed]
        if set(fatal) & set(self.failed):
            return live
        for _ in range(self.method.pairs):
            for name in order(list(live), self.rounds):
                reply = self._rep(name, self.inner[name])
                if reply is None:
                    live.remove(name)
                    if name in fatal:
                        return live
                    continue
                times = self.times[name]
                times += [None] * (self.rounds - len(times))
                times.append(reply.seconds_per_call[0])
            self.rounds += 1
            if after_round is not None:
                stop = after_round(self.rounds, live)
                live = [name for name in live if name not in stop]
        self.spans.append(contention.between(before, contention.snapshot()))
        self.looks += 1
        self.block_seconds = max(self.block_seconds, time.monotonic() - began)
        return live

    def seconds(self, name: str) -> tuple[float | None, ...]:
        """Seconds per call in each round so far, None where the worker did not run."""
        times = self.times[name]
        return (*times, *[None] * (self.rounds - len(times)))

    def timed(self, name: str) -> list[float]:
        return [s for s in self.times[name] if s is not None]


def _margin(meta: OpInfo, method: Method) -> float:
    """The method's margin; at least :data:`MEMORY_BOUND_MARGIN` for the element-wise and cast ops,
    whose speed differs steadily between two processes of one build. A matmul, a convolution or a
    whole model (mostly matmuls) is compute-bound and keeps the method's."""
    if meta.unit != "GFLOP/s" and meta.group != "model":
        return max(method.min_margin, MEMORY_BOUND_MARGIN)
    return method.min_margin


def alternate(
    cand: Worker,
    base: Worker | None,
    *,
    method: Method,
    threads: str,
    deadline: float | None = None,
    progress: Callable[[str], object] | None = None,
) -> list[OpResult]:
    """Time every op both workers offer in :class:`Rounds`, one look each; then, while time is left
    before ``deadline`` (time.monotonic(); None: no extra looks), time the still undecided ops
    again, a look each in turn, until each is decided or has had ``method.looks`` looks. An op
    that fails on either side is left out."""
    say = progress or (lambda _message: None)
    ops = [o for o in cand.ops if base is None or o in base.ops]
    if method.ops:
        ops = [o for o in ops if o in method.ops]
    workers = {"candidate": cand} | ({"baseline": base} if base is not None else {})
    timed = {op: Rounds(workers, op, method, shared_inner=True) for op in ops}
    found: dict[str, Verdict | None] = {}

    def look(op: str) -> None:
        rounds = timed[op]
        rounds.block(list(workers), fatal=workers)
        if rounds.failed:
            found.pop(op, None)
        elif base is None:
            found[op] = None
        else:
            margin = _margin(cand.ops[op], method)
            mine, theirs = rounds.timed("candidate"), rounds.timed("baseline")
            found[op] = verdict(mine, theirs, paired=True, margin=margin, looks=rounds.looks)

    for op in ops:
        say(f"{threads} thread(s): {op}")
        look(op)
    for again in range(2, method.looks + 1):
        pending = {op: v for op, v in found.items() if v is not None and not v.decided}
        for op, undecided in pending.items():
            if deadline is None or time.monotonic() + timed[op].block_seconds > deadline:
                continue
            reach = f"±{undecided.spread * 100:.0f}%"
            say(f"{threads} thread(s): {op} again (round {again}: undecided, {reach})")
            look(op)
    return [_result(op, threads, timed[op], found[op], cand.ops[op]) for op in ops if op in found]


def _result(op: str, threads: str, rounds: Rounds, found: Verdict | None, meta: OpInfo) -> OpResult:
    baseline = rounds.timed("baseline") if "baseline" in rounds.workers else None
    return OpResult(
        op=op,
        threads=threads,
        candidate=Summary.of(rounds.timed("candidate"), meta.work, meta.unit),
        baseline=Summary.of(baseline, meta.work, meta.unit) if baseline else None,
        verdict=found,
        contention=contention.combine(rounds.spans),
    )


Pair = Callable[[], contextlib.AbstractContextManager[tuple[Worker, Worker | None]]]


def time_and_recheck(
    start: Pair,
    *,
    method: Method,
    threads: str,
    deadline: float | None,
    progress: Callable[[str], object] | None = None,
) -> list[OpResult]:
    """:func:`alternate` in a pair of workers from ``start``; then every op called faster or slower
    is timed again in a fresh pair, and the claim stands only when that pair claims it too.

    Two processes of the same build can differ steadily (where their buffers land, which CPU their
    threads share): the stock wheel against itself, default threads, once came out 0.77x and 0.80x
    on tanh in 2 of 10 pairs of processes, every pair of repetitions agreeing. No timing inside
    one pair of processes sees through that; another pair does."""
    say = progress or (lambda _message: None)
    with start() as (cand, base):
        first = alternate(
            cand,
            base,
            method=method,
            threads=threads,
            deadline=deadline,
            progress=progress,
        )
    claimed = tuple(r.op for r in first if r.verdict and r.verdict.label in (FASTER, SLOWER))
    if not claimed:
        return first
    say(f"{threads} thread(s): {', '.join(claimed)} again, in a fresh pair of processes")
    with start() as (cand, base):
        again = alternate(
            cand,
            base,
            method=dataclasses.replace(method, ops=claimed),
            threads=threads,
            deadline=deadline,
        )
    second = {r.op: r.verdict for r in again}
    return [_settled(r, second.get(r.op)) if r.op in claimed else r for r in first]


def _settled(first: OpResult, again: Verdict | None) -> OpResult:
    """A claim kept when the fresh pair of processes makes it too; else undecided."""
    assert first.verdict is not None
    held = again is not None and again.label == first.verdict.label
    found = first.verdict if held else dataclasses.replace(first.verdict, label=UNDECIDED)
    return dataclasses.replace(first, verdict=found, recheck=again)


def compare(
    candidate_python: str,
    baseline_python: str | None,
    *,
    candidate_env: Mapping[str, str],
    baseline_env: Mapping[str, str] | None = None,
    method: Method,
    bf16: bool = False,
    thread_settings: Sequence[tuple[str, int, int]] = THREAD_SETTINGS,
    progress: Callable[[str], object] | None = None,
    script: Path = WORKER,
    extra: Sequence[str] = (),
    model: ModelFile | None = None,
    labels: tuple[str, str] = ("candidate", "baseline"),
) -> list[OpResult]:
    """Time every op for the candidate (and the baseline, in alternation) at each thread setting,
    within ``method.budget`` seconds: each setting's extra rounds get an equal share of what is
    left when it starts. A claimed difference is rechecked in fresh processes
    (:func:`time_and_recheck`). ``script`` and ``extra``: another program speaking the worker's
    protocol and its arguments (the overlay's models, ``tfbuild/scripts/models_tf.py``);
    ``model``: the user's model, served alone (the smoke of an overlay with --model); ``labels``:
    the two workers' names in what they say."""
    results: list[OpResult] = []
    end = time.monotonic() + method.budget
    for index, (label, intra, inter) in enumerate(thread_settings):
        now = time.monotonic()
        deadline = now + max(0.0, end - now) / (len(thread_settings) - index)
        worker = functools.partial(
            Worker,
            intra=intra,
            inter=inter,
            bf16=bf16,
            cpus=shared_cpu(intra),
            script=script,
            extra=extra,
            model=model,
            model_only=model is not None,
        )

        @contextlib.contextmanager
        def start(
            worker: functools.partial[Worker] = worker,
        ) -> Iterator[tuple[Worker, Worker | None]]:
            with contextlib.ExitStack() as stack:
                cand = stack.enter_context(
                    worker(candidate_python, env=candidate_env, label=labels[0])
                )
                base = None
                if baseline_python is not None:
                    env = candidate_env if baseline_env is None else baseline_env
                    base = stack.enter_context(worker(baseline_python, env=env, label=labels[1]))
                yield cand, base

        results += time_and_recheck(
            start, method=method, threads=label, deadline=deadline, progress=progress
        )
    return results


def why_undecided(what: str, machine: Contention | None) -> str:
    """``what`` was undecided: why, the machine's state first when it was busy, and what to do."""
    if machine is not None and machine.busy:
        return (
            f"{machine.describe()}: {what}. Run again on a quiet machine, pin tfbuild to CPUs "
            "others leave idle (taskset -c LIST tfbuild ...), or give a longer --budget."
        )
    return f"{what}: the ops' own noise was too wide to tell. Give a longer --budget."


def shared_cpu(intra: int) -> tuple[int, ...]:
    """One CPU for both workers of a one-thread setting (none for others): they never run at once,
    and a neighbour on one CPU then slows both alike instead of whichever the scheduler put there.
    The last CPU this process may use (the first often takes the interrupts)."""
    if intra != 1 or not hasattr(os, "sched_getaffinity"):
        return ()
    return (max(os.sched_getaffinity(0)),)


WINS, LOSES, NO_GAIN = "wins", "loses", "no gain"


@dataclass(frozen=True, kw_only=True)
class SettingTrial:
    """One runtime setting tried on the candidate against the candidate without it."""

    name: str
    env: tuple[tuple[str, str], ...]
    intra: int
    inter: int
    results: tuple[OpResult, ...]

    @property
    def outcome(self) -> str:
        """wins (faster on most ops, slower on none), loses (slower on one), undecided (the ops
        not decided could still make it win), or no gain."""
        labels = [r.verdict.label for r in self.results if r.verdict]
        if SLOWER in labels:
            return LOSES
        if labels and labels.count(FASTER) * 2 > len(labels):
            return WINS
        if labels and (labels.count(FASTER) + labels.count(UNDECIDED)) * 2 > len(labels):
            return UNDECIDED
        return NO_GAIN

    @property
    def wins(self) -> bool:
        return self.outcome == WINS

    @property
    def undecided(self) -> tuple[str, ...]:
        return tuple(r.op for r in self.results if r.verdict and not r.verdict.decided)

    # hand-written: the JSON is a view (env as an object, each op's verdict and median seconds per
    # call with the setting and with the defaults), not the op results
    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "env": dict(self.env),
            "intra": self.intra,
            "inter": self.inter,
            "wins": self.wins,
            "outcome": self.outcome,
            "ops": {r.op: r.verdict.label if r.verdict else None for r in self.results},
            "seconds": {
                r.op: {
                    "setting": float(f"{r.candidate.seconds.median:.4g}"),
                    "defaults": (float(f"{r.baseline.seconds.median:.4g}") if r.baseline else None),
                }
                for r in self.results
            },
        }


SETTING_OPS = ("matmul_1024", "conv2d_nhwc", "exp", "add", "softmax")


def threads_env(cores: int | str) -> dict[str, str]:
    """Intra-op threads on every core, inter-op one: TensorFlow reads these two variables when it
    creates its thread pools (process_util.cc)."""
    return {"TF_NUM_INTEROP_THREADS": "1", "TF_NUM_INTRAOP_THREADS": str(cores)}


def openmp_env(cores: int | str) -> dict[str, str]:
    """The OpenMP runtime's advised settings, for an OpenMP oneDNN build (--config=mkl)."""
    return {
        "KMP_AFFINITY": "granularity=fine,compact,1,0",
        "KMP_BLOCKTIME": "1",
        "OMP_NUM_THREADS": str(cores),
    }


def try_setting(
    python: str,
    *,
    base_env: Mapping[str, str],
    name: str,
    env: Mapping[str, str],
    method: Method,
) -> SettingTrial:
    """Measure the candidate with a runtime setting against itself without it, in alternation, on
    :data:`SETTING_OPS` at default threads (:func:`compare`)."""
    results = compare(
        python,
        python,
        candidate_env={**base_env, **env},
        baseline_env=base_env,
        method=dataclasses.replace(method, ops=SETTING_OPS),
        thread_settings=(("default", 0, 0),),
        labels=(name, "as is"),
    )
    return SettingTrial(
        name=name, env=tuple(sorted(env.items())), intra=0, inter=0, results=tuple(results)
    )
