"""Candidate and baseline, side by side: benchmark workers driven in alternation.

Each wheel gets a long-lived worker process (``_worker.py`` in the wheel's own interpreter), one per
thread setting. Ops are timed block by block, candidate then baseline, so that whatever the machine
does meanwhile hits both alike; the per-call times of all blocks are pooled per op. A difference that
is not decisive is timed once more before it counts.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tfbuild.core.errors import SmokeFailed, UnsupportedError
from tfbuild.smoke.models import ModelFile
from tfbuild.smoke.stats import Summary, Verdict, needs_recheck, settle, verdict

WORKER = Path(__file__).with_name("_worker.py")


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
    ) -> None:
        self.label = label
        self._model = model
        self._log = tempfile.TemporaryFile(mode="w+", prefix="tfbuild-worker-")  # noqa: SIM115
        argv = [python, str(WORKER), "--intra", str(intra), "--inter", str(inter)]
        if bf16:
            argv.append("--bf16")
        if model is not None:
            argv += ["--model", model.path, "--model-kind", model.kind, "--model-op", model.op]
            argv += ["--model-batch", str(model.batch)]
        self._proc = subprocess.Popen(  # argv built here, no shell
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=dict(env),
        )
        self.info = self._read()
        if not self.info.get("ready"):
            self.close()
            problem = self.info.get("model_error")
            if model is not None and isinstance(problem, dict):
                raise model_failed(model, problem)
            raise self._died("did not start")

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

    def _read(self) -> dict[str, Any]:
        stdout: IO[str] | None = self._proc.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise self._died("stopped unexpectedly")
        result: dict[str, Any] = json.loads(line)
        return result

    def run(self, op: str, *, reps: int, min_rep_seconds: float) -> dict[str, Any]:
        stdin = self._proc.stdin
        assert stdin is not None
        request = {"op": op, "reps": reps, "min_rep_seconds": min_rep_seconds}
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return self._read()

    @property
    def ops(self) -> dict[str, dict[str, Any]]:
        ops: dict[str, dict[str, Any]] = self.info.get("ops") or {}
        return ops

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(json.dumps({"quit": True}) + "\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired, AssertionError):
                self._proc.kill()
                self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()
        self._log.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


#: What to do when a model fails in the worker, by the stage it failed at.
_MODEL_FIXES = {
    "load": "Check that this TensorFlow loads it (a .keras file loads with safe_mode=True: no Lambda "
    "layers, no unregistered custom objects), or tune without --model.",
    "inputs": "Save it with a fixed input shape but the batch (keras.Input(shape=...)) and numeric "
    "inputs, or tune without --model.",
    "call": "Check that it runs on a batch made from its input signature here (--model-batch sets "
    "the batch), or tune without --model.",
}
_MODEL_WHAT = {
    "load": "cannot load",
    "inputs": "cannot make a batch for",
    "call": "cannot call",
}


def model_failed(model: ModelFile, problem: Mapping[str, object]) -> UnsupportedError:
    """The one line for a model the timing worker could not use (exit 4)."""
    stage = str(problem.get("stage"))
    what = _MODEL_WHAT.get(stage, "cannot use")
    why = str(problem.get("error") or "no reason given")
    if stage == "call":
        why = f"called on a batch of {model.batch} made from its input signature: {why}"
    return UnsupportedError(
        f"tune {what} {model.op}",
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
    peak_fraction: float | None = None  # matmul: candidate GFLOP/s over the machine's peak


@dataclass(frozen=True, kw_only=True)
class Method:
    """How hard to measure: --quick trades precision for time, never the rules."""

    reps: int = 15
    blocks: int = 3
    min_rep_seconds: float = 0.05
    ops: tuple[str, ...] | None = None  # None = every op both builds run
    min_margin: float = 0.05  # the smallest difference ever called faster or slower

    def __post_init__(self) -> None:
        if not self.ops:  # no ops named: every op, as None says
            object.__setattr__(self, "ops", None)

    @staticmethod
    def quick(min_margin: float = 0.05) -> Method:
        return Method(reps=15, blocks=3, min_rep_seconds=0.01, min_margin=min_margin)


THREAD_SETTINGS = (("1", 1, 1), ("default", 0, 0))
MEMORY_BOUND_MARGIN = 0.15


def _time(
    cand: Worker, base: Worker | None, op: str, *, method: Method, baseline_first: bool = False
) -> tuple[list[float], list[float]] | None:
    """One round: ``method.blocks`` blocks of the op, the two workers in turn; None if either fails."""
    reps = max(1, -(-method.reps // method.blocks))
    c_times: list[float] = []
    b_times: list[float] = []
    turns = [(cand, c_times)] + ([(base, b_times)] if base is not None else [])
    if baseline_first:
        turns.reverse()
    for _ in range(method.blocks):
        for worker, times in turns:
            reply = worker.run(op, reps=reps, min_rep_seconds=method.min_rep_seconds)
            if "error" in reply:
                return None
            times.extend(reply["seconds_per_call"])
    return c_times, b_times


def alternate(
    cand: Worker,
    base: Worker | None,
    *,
    method: Method,
    threads: str,
    peak_gflops: float | None = None,
    progress: Callable[[str], object] | None = None,
) -> list[OpResult]:
    """Time every op both workers offer, block by block: candidate, then baseline.

    A difference that one round does not settle is timed again, baseline first this time, and stands
    only if it holds over both rounds pooled (:func:`tfbuild.smoke.stats.settle`).
    """
    results: list[OpResult] = []
    ops = [o for o in cand.ops if base is None or o in base.ops]
    if method.ops:
        ops = [o for o in ops if o in method.ops]
    for op in ops:
        if progress:
            progress(f"{threads} thread(s): {op}")
        timed = _time(cand, base, op, method=method)
        if timed is None:
            continue
        c_times, b_times = timed
        meta = cand.ops[op]
        # Memory-bound ops differ by up to ~10% between two processes of the same wheel, steadily,
        # which the spread inside one process cannot show; the gains sought there are 2-3x, so a
        # 15% floor costs nothing and keeps identical wheels "same".
        margin = method.min_margin
        if meta["unit"] != "GFLOP/s":
            margin = max(margin, MEMORY_BOUND_MARGIN)
        found = verdict(c_times, b_times, min_margin=margin) if b_times else None
        if found is not None and needs_recheck(found):
            if progress:
                progress(f"{threads} thread(s): {op} again ({found.label} in the first round)")
            again = _time(cand, base, op, method=method, baseline_first=True)
            if again is None:
                continue
            c_times, b_times = c_times + again[0], b_times + again[1]
            found = settle(found, verdict(c_times, b_times, min_margin=margin))
        c_sum = Summary.of(c_times, meta["work"], meta["unit"])
        b_sum = Summary.of(b_times, meta["work"], meta["unit"]) if b_times else None
        fraction = None
        fp32 = meta.get("dtype", "float32") == "float32"
        if peak_gflops and meta["unit"] == "GFLOP/s" and fp32 and threads == "default":
            fraction = round(c_sum.throughput_median / peak_gflops, 3)
        results.append(
            OpResult(
                op=op,
                threads=threads,
                candidate=c_sum,
                baseline=b_sum,
                verdict=found,
                peak_fraction=fraction,
            )
        )
    return results


def compare(
    candidate_python: str,
    baseline_python: str | None,
    *,
    candidate_env: Mapping[str, str],
    baseline_env: Mapping[str, str] | None = None,
    method: Method,
    bf16: bool = False,
    thread_settings: Sequence[tuple[str, int, int]] = THREAD_SETTINGS,
    peak_gflops: float | None = None,
    progress: Callable[[str], object] | None = None,
) -> list[OpResult]:
    """Time every op for the candidate (and the baseline, in alternation) at each thread setting."""
    results: list[OpResult] = []
    for label, intra, inter in thread_settings:
        with Worker(
            candidate_python,
            intra=intra,
            inter=inter,
            env=candidate_env,
            bf16=bf16,
            label="candidate",
        ) as cand:
            if baseline_python is None:
                results += alternate(
                    cand,
                    None,
                    method=method,
                    threads=label,
                    peak_gflops=peak_gflops,
                    progress=progress,
                )
                continue
            with Worker(
                baseline_python,
                intra=intra,
                inter=inter,
                env=baseline_env or candidate_env,
                bf16=bf16,
                label="baseline",
            ) as base:
                results += alternate(
                    cand,
                    base,
                    method=method,
                    threads=label,
                    peak_gflops=peak_gflops,
                    progress=progress,
                )
    return results


@dataclass(frozen=True, kw_only=True)
class SettingTrial:
    """One runtime setting tried on the candidate against the candidate without it."""

    name: str
    env: tuple[tuple[str, str], ...]
    intra: int
    inter: int
    results: tuple[OpResult, ...]

    @property
    def wins(self) -> bool:
        labels = [r.verdict.label for r in self.results if r.verdict]
        return bool(labels) and "slower" not in labels and labels.count("faster") * 2 > len(labels)

    # hand-written: the JSON is a view (env as an object, each op's verdict and median seconds per
    # call with the setting and with the defaults), not the op results
    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "env": dict(self.env),
            "intra": self.intra,
            "inter": self.inter,
            "wins": self.wins,
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


def try_setting(
    python: str,
    *,
    base_env: Mapping[str, str],
    name: str,
    env: Mapping[str, str],
    intra: int = 0,
    inter: int = 0,
    method: Method,
    model: ModelFile | None = None,
) -> SettingTrial:
    """Measure the candidate with a runtime setting against itself without it, in alternation, on
    :data:`SETTING_OPS` and the ``model`` when one is given (timed as one more op)."""
    ops = SETTING_OPS + ((model.op,) if model is not None else ())
    trial_method = dataclasses.replace(method, ops=ops)
    setting_env = {**base_env, **env}
    with (
        Worker(
            python, intra=intra, inter=inter, env=setting_env, label=name, model=model
        ) as with_it,
        Worker(python, intra=0, inter=0, env=base_env, label="as is", model=model) as without,
    ):
        results = alternate(with_it, without, method=trial_method, threads="default")
    if model is not None and model.op not in {r.op for r in results}:
        # alternate() leaves out an op that raised while timed; the model is the point of --model
        raise model_failed(
            model, {"stage": "call", "error": f"it raised while timed with {name} or without it"}
        )
    return SettingTrial(
        name=name, env=tuple(sorted(env.items())), intra=intra, inter=inter, results=tuple(results)
    )


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
