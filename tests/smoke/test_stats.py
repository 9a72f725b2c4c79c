"""Summaries, verdicts and the recheck: synthetic timings with a fixed RNG, and smoke's own timing
loop against real workers."""

from __future__ import annotations

import json
import math
import os
import random
import statistics
from collections.abc import Sequence
from typing import Any

import pytest

from tfbuild.core import serial
from tfbuild.smoke.envs import clean_env
from tfbuild.smoke.run import Method, Worker, alternate
from tfbuild.smoke.stats import Summary, Verdict, needs_recheck, quantile, settle, verdict

SEEDS = range(500)


def timings(
    rng: random.Random,
    median: float,
    *,
    n: int = 15,
    sigma: float = 0.05,
    outliers: float = 0.0,
    drift: Sequence[float] = (1.0,),
) -> list[float]:
    """n seconds-per-call values: log-normal noise, occasional 1.5-4x stalls, and per-block drift.

    ``drift`` is one factor per block, shared by both sides, as when candidate and baseline run in
    alternation and the machine slows down for both.
    """
    values = []
    for i in range(n):
        t = median * math.exp(rng.gauss(0.0, sigma))
        if rng.random() < outliers:
            t *= rng.uniform(1.5, 4.0)
        values.append(t * drift[i * len(drift) // n])
    return values


def pair(
    seed: int, speedup: float, *, n: int = 15, sigma: float = 0.05, outliers: float = 0.0
) -> tuple[list[float], list[float]]:
    """(candidate, baseline) where the candidate's true time is the baseline's / speedup."""
    rng = random.Random(seed)
    drift = [math.exp(rng.uniform(-0.1, 0.1)) for _ in range(3)]  # +-10 % between blocks
    baseline = timings(rng, 1e-3, n=n, sigma=sigma, outliers=outliers, drift=drift)
    candidate = timings(rng, 1e-3 / speedup, n=n, sigma=sigma, outliers=outliers, drift=drift)
    return candidate, baseline


# --- Summary ----------------------------------------------------------------------------------------


def test_summary_of_known_values() -> None:
    s = Summary.of([5.0, 1.0, 3.0, 2.0, 4.0], 10e9, "GFLOP/s")
    assert (s.n, s.median_s, s.min_s, s.max_s, s.q1_s, s.q3_s) == (5, 3.0, 1.0, 5.0, 2.0, 4.0)
    assert s.mean_s == 3.0
    assert s.cv == pytest.approx(statistics.stdev([1, 2, 3, 4, 5]) / 3)
    assert s.robust_cv == pytest.approx(1.4826 * 1.0 / 3.0)
    assert s.throughput_median == pytest.approx(10 / 3)
    assert s.throughput_min == pytest.approx(2.0)  # the slowest repetition
    assert s.throughput_max == pytest.approx(10.0)
    data = json.loads(json.dumps(serial.to_data(s)))
    assert data["unit"] == "GFLOP/s"
    assert data["seconds"]["median"] == 3.0
    assert data["throughput"]["median"] == pytest.approx(10 / 3, abs=1e-3)
    assert {"cv", "robust_cv", "n", "work"} <= set(data)


def test_summary_of_one_repetition() -> None:
    s = Summary.of([0.5], 1e9, "Gelem/s")
    assert (s.median_s, s.q1_s, s.q3_s, s.cv, s.robust_cv) == (0.5, 0.5, 0.5, 0.0, 0.0)
    assert s.throughput_median == pytest.approx(2.0)


@pytest.mark.parametrize("bad", [[], [0.0], [1.0, -1.0], [math.nan], [math.inf]])
def test_summary_rejects_what_is_not_a_timing(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        Summary.of(bad, 1.0, "Gelem/s")


def test_quantile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert [quantile(values, q) for q in (0, 0.25, 0.5, 0.75, 1)] == [1.0, 1.75, 2.5, 3.25, 4.0]


# --- verdict: rules ---------------------------------------------------------------------------------


def test_clear_difference_is_faster_one_way_and_slower_the_other() -> None:
    fast = [1.00, 1.01, 0.99, 1.02, 0.98]
    slow = [2.00, 2.02, 1.98, 2.01, 1.99]
    v = verdict(fast, slow)
    assert isinstance(v, Verdict)
    assert (v.label, v.ratio, v.separated) == ("faster", 2.0, True)
    back = verdict(slow, fast)
    assert (back.label, back.ratio) == ("slower", 0.5)
    assert back.margin == v.margin
    data = json.loads(json.dumps(serial.to_data(v)))
    assert data["label"] == "faster"
    assert {"ratio", "margin", "separated", "cv_candidate", "cv_baseline"} <= set(data)


def test_margin_is_the_floor_or_the_measured_spread() -> None:
    quiet = verdict([1.0] * 5, [1.0] * 5)
    assert (quiet.label, quiet.margin) == ("same", 0.05)
    assert verdict([1.0] * 5, [1.0] * 5, min_margin=0.2).margin == 0.2
    noisy = [0.8, 0.9, 1.0, 1.1, 1.2]  # MAD 0.1 -> robust cv 0.148
    v = verdict(noisy, [1.0] * 5)
    assert v.cv_candidate == pytest.approx(0.14826)
    assert v.margin == pytest.approx(2 * 0.14826)
    assert verdict(noisy, [1.0] * 5, spread_factor=3.0).margin == pytest.approx(3 * 0.14826)


def test_ratio_beyond_the_margin_is_not_enough_when_middle_halves_overlap() -> None:
    candidate = [1.0] * 5 + [2.0] * 5  # median 1.5, middle half 1.0-2.0
    baseline = [1.8] * 5 + [2.2] * 5  # median 2.0, middle half 1.8-2.2
    v = verdict(candidate, baseline, spread_factor=0.0)
    assert v.ratio == pytest.approx(4 / 3)
    assert v.ratio > 1 + v.margin
    assert (v.label, v.separated) == ("same", False)


def test_separated_but_within_the_margin_is_same() -> None:
    v = verdict([1.00, 1.001, 0.999], [1.03, 1.031, 1.029])  # 3 %: real, but below the 5 % floor
    assert (v.label, v.separated) == ("same", True)


def test_one_stall_per_side_does_not_hide_a_2x_difference() -> None:
    candidate = [0.5] * 14 + [5.0]
    baseline = [1.0] * 14 + [10.0]
    assert Summary.of(candidate, 1, "s").cv > 0.5  # stdev / mean would make the margin > 100 %
    assert verdict(candidate, baseline).label == "faster"


def test_verdict_rejects_negative_settings_and_empty_sides() -> None:
    with pytest.raises(ValueError):
        verdict([1.0], [1.0], min_margin=-0.1)
    with pytest.raises(ValueError):
        verdict([], [1.0])


# --- verdict: synthetic noise, many seeds ----------------------------------------------------------


@pytest.mark.parametrize(
    "noise",
    [
        {"sigma": 0.01},
        {"sigma": 0.05, "outliers": 0.05},
        {"sigma": 0.1, "outliers": 0.1},
        {"sigma": 0.2, "outliers": 0.05},
        {"sigma": 0.3},
    ],
    ids=str,
)
def test_identical_builds_in_alternation_come_out_same(noise: dict[str, Any]) -> None:
    """15 repetitions per side, as ``tfbuild smoke`` takes them (3 blocks of 5)."""
    labels = [verdict(*pair(seed, 1.0, **noise)).label for seed in SEEDS]
    assert labels.count("same") == len(SEEDS), {k: labels.count(k) for k in set(labels)}


def test_with_only_5_repetitions_identical_builds_are_rarely_told_apart() -> None:
    """The spread of 5 values is a poor estimate: a few percent of false verdicts remain."""
    labels = [verdict(*pair(seed, 1.0, sigma=0.1, n=5)).label for seed in SEEDS]
    assert labels.count("same") >= 0.96 * len(SEEDS)


@pytest.mark.parametrize(
    "noise", [{"sigma": 0.01}, {"sigma": 0.1}, {"sigma": 0.1, "n": 5}], ids=str
)
def test_a_2x_difference_is_always_found(noise: dict[str, Any]) -> None:
    for seed in SEEDS:
        candidate, baseline = pair(seed, 2.0, **noise)
        assert verdict(candidate, baseline).label == "faster", seed
        assert verdict(baseline, candidate).label == "slower", seed


def test_a_2x_difference_is_found_despite_stalls() -> None:
    found = [verdict(*pair(seed, 2.0, sigma=0.1, outliers=0.1)).label for seed in SEEDS]
    assert "slower" not in found
    assert found.count("faster") >= 0.95 * len(SEEDS)


@pytest.mark.parametrize("speedup", [1.15, 1 / 1.15])
def test_shifted_medians_within_big_noise_are_same(speedup: float) -> None:
    labels = [verdict(*pair(seed, speedup, sigma=0.3, outliers=0.1)).label for seed in SEEDS]
    assert labels.count("same") >= 0.97 * len(SEEDS)
    wrong = "slower" if speedup > 1 else "faster"
    assert wrong not in labels


# --- the recheck -----------------------------------------------------------------------------------


def judged(
    first: tuple[list[float], list[float]], second: tuple[list[float], list[float]]
) -> Verdict:
    """What ``run.alternate`` decides: the first round, and when it needs one, both rounds pooled."""
    found = verdict(*first)
    if not needs_recheck(found):
        return found
    return settle(found, verdict(first[0] + second[0], first[1] + second[1]))


def burst(seed: int, slowdown: float = 1.6) -> tuple[list[float], list[float]]:
    """Identical builds, but something else takes the vCPU during two of the baseline's 3 blocks."""
    rng = random.Random(seed)
    candidate = timings(rng, 1e-3, sigma=0.1)
    baseline = timings(rng, 1e-3, sigma=0.1, drift=(1.0, slowdown, slowdown))
    return candidate, baseline


def test_a_decisive_difference_needs_no_recheck_and_a_narrow_one_does() -> None:
    clear = verdict([1.0 + i / 100 for i in range(10)], [2.0 + i / 100 for i in range(10)])
    assert (clear.label, clear.disjoint, needs_recheck(clear)) == ("faster", True, False)
    # Disjoint, but with 5 a side that happens by chance once in 126 pairs of equal builds.
    few = verdict([1.0, 1.01, 0.99, 1.02, 0.98], [2.0, 2.02, 1.98, 2.01, 1.99])
    assert (few.disjoint, needs_recheck(few)) == (True, True)
    overlapping = verdict([1.0] * 12 + [3.0] * 3, [1.5] * 12 + [0.9] * 3)
    assert (overlapping.label, overlapping.disjoint) == ("faster", False)
    assert needs_recheck(overlapping)
    same = verdict([1.0] * 5, [1.0] * 5)
    assert not needs_recheck(same) and not same.disjoint
    assert same.confirmed is None and clear.confirmed is None


def test_settle_keeps_a_difference_both_rounds_show_and_drops_one_they_do_not() -> None:
    first_c, first_b = [1.0] * 12 + [3.0] * 3, [1.5] * 12 + [0.9] * 3
    first = verdict(first_c, first_b)
    held = settle(first, verdict(first_c + [1.0] * 15, first_b + [1.5] * 15))
    assert (held.label, held.confirmed, held.n_candidate) == ("faster", True, 30)
    assert held.first_round == first and not needs_recheck(held)
    gone = settle(first, verdict(first_c + [1.5] * 15, first_b + [1.0] * 15))
    assert (gone.label, gone.confirmed) == ("same", False)
    data = json.loads(json.dumps(serial.to_data(gone)))
    assert data["confirmed"] is False
    assert data["first_round"]["label"] == "faster"
    assert data["first_round"]["first_round"] is None


def test_a_burst_on_one_side_fools_one_round_and_not_the_recheck() -> None:
    """As on the 2-vCPU VM, where the stock wheel once came out 1.49x faster than itself on conv2d."""
    first = [verdict(*burst(seed)) for seed in SEEDS]
    assert sum(v.label == "faster" for v in first) > 0.3 * len(SEEDS)
    settled = [judged(burst(seed), pair(seed + 10_000, 1.0)) for seed in SEEDS]
    assert [v.label for v in settled].count("same") == len(SEEDS)


def test_with_5_repetitions_the_recheck_removes_the_false_verdicts() -> None:
    first = [verdict(*pair(seed, 1.0, sigma=0.1, n=5)).label for seed in SEEDS]
    assert first.count("same") < len(SEEDS)  # what a single round gets wrong (about 3 %)
    settled = [
        judged(pair(seed, 1.0, sigma=0.1, n=5), pair(seed + 10_000, 1.0, sigma=0.1, n=5)).label
        for seed in SEEDS
    ]
    assert settled.count("same") >= 0.995 * len(SEEDS)


def test_a_2x_difference_survives_the_recheck() -> None:
    found = [
        judged(
            pair(seed, 2.0, sigma=0.1, outliers=0.1),
            pair(seed + 10_000, 2.0, sigma=0.1, outliers=0.1),
        ).label
        for seed in SEEDS
    ]
    assert "slower" not in found
    assert found.count("faster") >= 0.95 * len(SEEDS)


# --- real workers -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_real_workers_same_wheel_is_same_and_one_thread_is_slower_than_two(
    stock_python: str,
) -> None:
    """``tfbuild smoke``'s own timing loop, stock wheel against itself: "same" for each op; then
    1 intra-op thread against 2 on matmul_2048: "slower".

    The ops are compute-bound ones on purpose. Memory-bound ops (add, relu, softmax, reduce_sum)
    differ by up to ~10 % between two processes of the same wheel on the 2-vCPU VM, steadily for the
    life of the processes, which the spread within one process cannot show (smoke gives them a 15 %
    floor). Before the recheck, a burst of load on this shared machine once made conv2d 1.49x
    "faster" than itself here.
    """
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs for the 1-thread vs 2-thread check")
    env = clean_env()
    with (
        Worker(stock_python, intra=1, inter=1, env=env, label="first") as first,
        Worker(stock_python, intra=1, inter=1, env=env, label="second") as second,
        Worker(stock_python, intra=2, inter=1, env=env, label="two threads") as two_threads,
    ):
        ops = ("exp", "tanh", "conv2d_nhwc")
        method = Method(reps=15, blocks=3, min_rep_seconds=0.02, ops=ops)
        results = alternate(first, second, method=method, threads="1")
        assert sorted(r.op for r in results) == sorted(ops)
        for r in results:
            assert r.verdict is not None and r.baseline is not None
            assert r.verdict.label == "same", (r.op, serial.to_data(r.verdict))
            assert r.candidate.n == r.baseline.n == (15 if r.verdict.first_round is None else 30)

        # One more try when the second vCPU was taken by something else on this shared machine:
        # the verdict is then rightly "same" (the spread of the 2-thread side covers the gap).
        method = Method(reps=15, blocks=3, min_rep_seconds=0.05, ops=("matmul_2048",))
        for _attempt in range(2):
            (matmul,) = alternate(first, two_threads, method=method, threads="1 vs 2")
            found = matmul.verdict
            assert found is not None
            if found.label == "slower":
                break
        assert found is not None
        assert found.label == "slower", serial.to_data(found)
        assert found.ratio < 0.8, serial.to_data(found)
