"""Smoke's timing loop against known truth, quiet and under load.

Two real worker processes (``known_ratio_worker.py``) whose ops differ by known factors (the
candidate faster by 1.0x, 1.2x, 1.5x and 2x), timed by ``tfbuild.measure.run.alternate`` as smoke
times two wheels. Quiet, and with a CPU-bound neighbour on every CPU (``tests.measure.neighbours``).

What is asserted is what more load cannot break (``make quick`` runs tests two at a time, and the
machine may be shared): never a wrong direction, never "same" of a real 1.2x or more, and
"undecided" only when the op's own contention says the machine was busy. benchmarks/verdicts.py
counts the answers over many trials.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.measure import known_ratio_worker
from tests.measure.neighbours import neighbours
from tfbuild.core.stats import FASTER, SAME, SLOWER, UNDECIDED, describe
from tfbuild.detect.contention import combine
from tfbuild.measure.run import Method, OpResult, Worker, shared_cpu, time_and_recheck

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="neighbours and contention"),
]

WORKER = Path(known_ratio_worker.__file__)
FACTORS = known_ratio_worker.FACTORS
#: Seconds of extra rounds per condition: a first round of the four ops takes 2-5 s on 2 cores
#: (more when loaded), and five looks of every op fit in this on a machine that is not overloaded.
SECONDS = 20.0


def time_known_ratios(seconds: float = SECONDS) -> list[OpResult]:
    """Every op of a fresh candidate/baseline pair, timed as smoke times two wheels (one thread):
    undecided ops timed again for up to ``seconds``, claims rechecked in a fresh pair."""
    method = Method(pairs=15, min_rep_seconds=0.01, looks=5, budget=seconds)
    env = dict(os.environ)

    def worker(role: str) -> Worker:
        return Worker(
            sys.executable,
            intra=1,
            inter=1,
            env=env,
            label=f"known-ratio {role}",
            cpus=shared_cpu(1),
            script=WORKER,
            extra=("--role", role),
        )

    @contextlib.contextmanager
    def start() -> Iterator[tuple[Worker, Worker | None]]:
        with worker("candidate") as cand, worker("baseline") as base:
            yield cand, base

    deadline = time.monotonic() + seconds
    results = time_and_recheck(start, method=method, threads="1", deadline=deadline)
    for result in results:  # every claim was made again by a fresh pair of processes
        assert result.verdict is not None
        claimed = result.verdict.label in (FASTER, SLOWER)
        assert (result.recheck is not None) or not claimed, result
        if claimed and result.recheck is not None:
            assert result.recheck.label == result.verdict.label, result
    return results


def report(condition: str, results: list[OpResult]) -> None:
    """One line per ratio, shown by ``pytest -s``."""
    for result in results:
        assert result.verdict is not None and result.contention is not None
        print(
            f"{condition:>6} {FACTORS[result.op]:.1f}x: {describe(result.verdict)}, "
            f"{result.verdict.looks} look(s); {result.contention.describe()}"
        )


def problems(results: list[OpResult]) -> list[str]:
    """Wrong directions and false "same", with the numbers; and that every op has its answer."""
    assert sorted(r.op for r in results) == sorted(FACTORS), [r.op for r in results]
    found = []
    for result in results:
        truth, verdict = FACTORS[result.op], result.verdict
        assert verdict is not None and result.contention is not None
        label = verdict.label
        wrong_way = label == SLOWER if truth > 1 else label in (FASTER, SLOWER)
        false_same = truth >= 1.2 and label == SAME
        if wrong_way or false_same:
            found.append(
                f"truth {truth:.1f}x, answer {describe(verdict)} "
                f"(interval {verdict.interval[0]}-{verdict.interval[1]} at {verdict.confidence}, "
                f"{verdict.looks} look(s), {verdict.n_candidate} pairs, robust cv "
                f"{verdict.cv_candidate}/{verdict.cv_baseline}; {result.contention.describe()})"
            )
    return found


def test_quiet_the_truth_is_found_or_the_machine_was_busy() -> None:
    results = time_known_ratios()
    report("quiet", results)
    assert not problems(results), problems(results)
    for result in results:
        truth, verdict, busy = FACTORS[result.op], result.verdict, result.contention
        assert verdict is not None and busy is not None
        expected = {1.0: SAME, 1.5: FASTER, 2.0: FASTER}.get(truth)
        if expected is None:
            continue  # 1.2x: anything but slower and same (above)
        assert verdict.label == expected or (verdict.label == UNDECIDED and busy.busy), (
            f"{truth:.1f}x: {describe(verdict)} on a machine that was not busy: {busy.describe()}"
        )


def test_loaded_never_the_wrong_way_and_undecided_only_when_busy() -> None:
    with neighbours() as pids:
        results = time_known_ratios()
    report("loaded", results)
    assert not problems(results), problems(results)
    spans = [r.contention for r in results if r.contention is not None]
    for result in results:
        assert result.verdict is not None and result.contention is not None
        if result.verdict.label == UNDECIDED:
            assert result.contention.busy, (result.op, result.contention)
    # The neighbours' cores were others' (less what the hypervisor or a quota took from them).
    span = combine(spans)
    assert span.others_busy is not None, span
    usable = min(span.cpus, span.quota_cores or span.cpus)
    assert span.others_busy + (span.steal or 0.0) * span.cpus >= 0.5 * usable, (pids, span)
    print(f"loaded: {span.describe()}")
