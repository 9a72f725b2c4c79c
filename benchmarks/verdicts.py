"""How often smoke's timing loop gives the right answer when the truth is known, quiet and loaded.

Two real worker processes (tests/measure/known_ratio_worker.py) whose ops differ by known factors, the
candidate faster by 1.0x, 1.2x, 1.5x and 2x, timed by ``tfbuild.measure.run.alternate`` as smoke times
two wheels (one thread, 15 pairs a round, 10 ms repetitions, up to five looks). Each trial is a
fresh pair of workers timing the four ops. First on the machine as it is ("quiet"), then with a
CPU-bound neighbour on every CPU (tests/measure/neighbours.py, processes that are not ours).

    python benchmarks/verdicts.py [--trials 20] [--budget 15]

``--budget``: seconds of extra rounds per trial (the undecided ops timed again). Prints, per
condition, the confusion table (truth x answer), the median looks, how busy the machine was and the
time taken, then every wrong direction, false "same" and "undecided" on a machine that was not
busy, with the inner loop count each worker calibrated. Target: quiet, 1.0x "same" and 1.5x and 2x
"faster"; loaded, no wrong direction and no "same" of 1.2x or more. About 4 minutes with the
defaults on a quiet 2-core machine (the loaded trials take longer: each repetition shares a core).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.measure import known_ratio_worker
from tests.measure.neighbours import neighbours
from tfbuild.core.stats import FASTER, LABELS, SAME, SLOWER, UNDECIDED, describe
from tfbuild.detect.contention import Contention, combine
from tfbuild.measure.protocol import Reply
from tfbuild.measure.run import Method, OpResult, Worker, alternate, shared_cpu

WORKER = Path(known_ratio_worker.__file__)
FACTORS = known_ratio_worker.FACTORS


class Recorded(Worker):
    """A worker that remembers the inner loop count it calibrated for each op."""

    def __init__(self, role: str) -> None:
        super().__init__(
            sys.executable,
            intra=1,
            inter=1,
            env=dict(os.environ),
            label=f"known-ratio {role}",
            cpus=shared_cpu(1),
            script=WORKER,
            extra=("--role", role),
        )
        self.inner: dict[str, int] = {}

    def run(self, op: str, *, reps: int, min_rep_seconds: float, inner: int | None = None) -> Reply:
        reply = super().run(op, reps=reps, min_rep_seconds=min_rep_seconds, inner=inner)
        if reply.error is None:
            self.inner.setdefault(op, reply.inner)
        return reply


def trial(method: Method, budget: float) -> Iterator[tuple[OpResult, int, int]]:
    """One fresh pair: each op's result and the two inner counts (candidate, baseline)."""
    cand, base = Recorded("candidate"), Recorded("baseline")
    with cand, base:
        results = alternate(
            cand, base, method=method, threads="1", deadline=time.monotonic() + budget
        )
    for result in results:
        yield result, cand.inner.get(result.op, 0), base.inner.get(result.op, 0)


def problem(truth: float, result: OpResult) -> str | None:
    assert result.verdict is not None and result.contention is not None
    label = result.verdict.label
    if (truth > 1 and label == SLOWER) or (truth == 1 and label in (FASTER, SLOWER)):
        return "WRONG DIRECTION"
    if truth >= 1.2 and label == SAME:
        return "FALSE SAME"
    if label == UNDECIDED and not result.contention.busy:
        return "undecided on a machine not busy"
    return None


def condition(
    name: str, load: AbstractContextManager[object], trials: int, budget: float
) -> list[str]:
    """Run the trials under ``load``, print the table; returns the lines of the cases to look at."""
    method = Method(pairs=15, min_rep_seconds=0.01, looks=5, budget=budget)
    answers = {op: Counter[str]() for op in FACTORS}
    looks: dict[str, list[int]] = {op: [] for op in FACTORS}
    spans: list[Contention] = []
    cases: list[str] = []
    start = time.monotonic()
    with load:
        for number in range(1, trials + 1):
            for result, inner_cand, inner_base in trial(method, budget):
                assert result.verdict is not None and result.contention is not None
                answers[result.op][result.verdict.label] += 1
                looks[result.op].append(result.verdict.looks)
                spans.append(result.contention)
                what = problem(FACTORS[result.op], result)
                if what is not None:
                    cases.append(
                        f"  {name} trial {number}, {FACTORS[result.op]:.1f}x: {what}: "
                        f"{describe(result.verdict)}, {result.verdict.looks} look(s), "
                        f"inner {inner_cand} (candidate) / {inner_base} (baseline), "
                        f"robust cv {result.verdict.cv_candidate}/{result.verdict.cv_baseline}; "
                        f"{result.contention.describe()}"
                    )
    took = time.monotonic() - start
    busy = combine(spans).describe() if spans else "nothing timed"
    print(f"{name} ({busy}), {trials} trials a ratio, {took:.0f} s")
    print(f"{'truth':<7}" + "".join(f"{label:>10}" for label in LABELS) + "   looks (median)")
    for op, factor in FACTORS.items():
        counts = "".join(f"{answers[op][label]:>10}" for label in LABELS)
        median = statistics.median(looks[op]) if looks[op] else 0
        print(f"{factor:.1f}x{'':<3}{counts}   {median:g}")
    print()
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per ratio and condition")
    parser.add_argument("--budget", type=float, default=15.0, help="extra-round seconds a trial")
    args = parser.parse_args()
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}\n")
    cases = condition("quiet", nullcontext(), args.trials, args.budget)
    cases += condition("loaded", neighbours(), args.trials, args.budget)
    print("cases to look at:" if cases else "cases to look at: none")
    for line in cases:
        print(line)
    return 1 if any("WRONG" in line or "FALSE" in line for line in cases) else 0


if __name__ == "__main__":
    raise SystemExit(main())
