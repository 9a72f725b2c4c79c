"""Summaries of timed repetitions, and the faster / same / slower verdict between two builds.

Pure functions over seconds per call; nothing here measures anything.

The verdict asks for two things before it calls a difference real:

* the medians differ by more than a margin that grows with the measured spread:
  ``margin = max(min_margin, spread_factor * max(cv_candidate, cv_baseline))``, and
* the middle halves do not overlap (the faster side's 75th percentile time is below the slower side's
  25th percentile).

The cv in the margin is a *robust* coefficient of variation, ``1.4826 * MAD / median`` (MAD: the
median absolute deviation from the median). For normal noise it equals stdev / mean, but it ignores
up to half of the repetitions being outliers (a descheduled vCPU, a page-fault storm), which would
inflate stdev / mean and hide even a 2x difference. The classic stdev / mean is still reported in
:class:`Summary` as ``cv``. Blocks timed in alternation are pooled by the caller, so drift between
blocks widens both sides' spread: the verdict then leans to "same", never to a false "faster".

With the defaults (5 %, 2x) two identical builds timed in alternation come out "same", and a real 2x
difference comes out as such as long as the robust cv stays below 50 % and the middle halves do not
overlap. Both need enough repetitions: the spread of a handful of values is itself noisy. With 15 per
side (``tfbuild smoke``'s default) and 10 % noise, identical builds were told apart in under 0.1 % of
simulated cases; with 5 per side in about 2-3 %, with 3 per side in about 10 %.

Simulated noise is kinder than a shared machine, though: a neighbour that takes the vCPU for a few
seconds can land on the blocks of one side only. On the 2-vCPU VM the stock wheel once came out 1.49x
"faster" than itself on conv2d (robust cv 9 % and 21 %, middle halves apart). So a difference is
final only when it is *decisive* (at least 10 repetitions a side, and every one of the faster side
beat every one of the slower side: 1 in 92,378 by chance) or when it holds over a second round, timed
baseline first and pooled with the first (:func:`needs_recheck`, :func:`settle`); otherwise the op is
"same". In simulation (2,000 seeds each): identical builds with 5 per side and 10 % noise, 2.9 % told
apart in one round, none after the recheck; a 1.6x slowdown of two of the baseline's three blocks,
45 % -> none; a real 2x difference amid 10 % noise and stalls stays found in 1,966 of 1,968 cases,
a 1.3x one in 853 of 1,106. On the VM itself (`benchmarks/false_alarms.py`, stock against
itself, 240 comparisons per run, two runs): 4 and 4 told apart in one round, none after the recheck.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

#: Standard deviations per median absolute deviation, for normal noise (1 / 0.6745).
SIGMA_PER_MAD = 1.4826

FASTER, SAME, SLOWER = "faster", "same", "slower"


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _seconds(values: Sequence[float], what: str) -> list[float]:
    data = sorted(float(v) for v in values)
    if not data:
        raise ValueError(f"{what}: no timings")
    if not all(math.isfinite(v) and v > 0 for v in data):
        raise ValueError(f"{what}: timings must be positive, finite seconds")
    return data


@dataclass(frozen=True, kw_only=True)
class Summary:
    """Seconds per call of one op (n repetitions) and the throughput they mean."""

    n: int
    work: float  # flops or elements per call
    unit: str  # "GFLOP/s" or "Gelem/s": work / seconds / 1e9
    median_s: float
    min_s: float
    max_s: float
    q1_s: float  # 25th percentile
    q3_s: float  # 75th percentile
    mean_s: float
    cv: float  # stdev / mean (sample stdev; 0 for a single repetition)
    robust_cv: float  # 1.4826 * MAD / median, what the verdict's margin uses

    @staticmethod
    def of(seconds_per_call: Sequence[float], work: float, unit: str) -> Summary:
        data = _seconds(seconds_per_call, "Summary.of")
        mean = statistics.fmean(data)
        median = statistics.median(data)
        q1, q3 = quantile(data, 0.25), quantile(data, 0.75)
        return Summary(
            n=len(data),
            work=work,
            unit=unit,
            median_s=median,
            min_s=data[0],
            max_s=data[-1],
            q1_s=q1,
            q3_s=q3,
            mean_s=mean,
            cv=statistics.stdev(data) / mean if len(data) > 1 else 0.0,
            robust_cv=SIGMA_PER_MAD * statistics.median(abs(v - median) for v in data) / median,
        )

    def throughput(self, seconds: float) -> float:
        return self.work / seconds / 1e9

    @property
    def throughput_median(self) -> float:
        return self.throughput(self.median_s)

    @property
    def throughput_min(self) -> float:
        """From the slowest repetition."""
        return self.throughput(self.max_s)

    @property
    def throughput_max(self) -> float:
        """From the fastest repetition."""
        return self.throughput(self.min_s)

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "work": self.work,
            "unit": self.unit,
            "seconds": {
                "median": self.median_s,
                "min": self.min_s,
                "max": self.max_s,
                "q1": self.q1_s,
                "q3": self.q3_s,
                "mean": self.mean_s,
            },
            "throughput": {
                "median": round(self.throughput_median, 4),
                "min": round(self.throughput_min, 4),
                "max": round(self.throughput_max, 4),
            },
            "cv": round(self.cv, 4),
            "robust_cv": round(self.robust_cv, 4),
        }


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Candidate against baseline for one op: "faster", "same" (within noise) or "slower"."""

    label: str
    ratio: float  # median(baseline) / median(candidate): > 1 means the candidate is faster
    margin: float  # how far the ratio (or its inverse) must exceed 1 to count
    separated: bool  # the middle halves (25th-75th percentile) do not overlap
    cv_candidate: float  # robust cv of each side (see the module docstring)
    cv_baseline: float
    n_candidate: int
    n_baseline: int
    disjoint: bool = False  # every repetition of the faster side beat every one of the slower side
    first_round: Verdict | None = None  # set when this verdict pools a recheck (see settle)

    @property
    def confirmed(self) -> bool | None:
        """None without a recheck; else whether the difference of the first round held."""
        if self.first_round is None:
            return None
        return self.label != SAME

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "ratio": round(self.ratio, 4),
            "margin": round(self.margin, 4),
            "separated": self.separated,
            "cv_candidate": round(self.cv_candidate, 4),
            "cv_baseline": round(self.cv_baseline, 4),
            "n_candidate": self.n_candidate,
            "n_baseline": self.n_baseline,
            "disjoint": self.disjoint,
            "first_round": self.first_round.to_json() if self.first_round else None,
            "confirmed": self.confirmed,
        }


def verdict(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    min_margin: float = 0.05,
    spread_factor: float = 2.0,
) -> Verdict:
    """Compare seconds per call of the same op; symmetric: swapping the sides swaps the label."""
    if min_margin < 0 or spread_factor < 0:
        raise ValueError("min_margin and spread_factor must be >= 0")
    cand = Summary.of(candidate, 1.0, "s")
    base = Summary.of(baseline, 1.0, "s")
    ratio = base.median_s / cand.median_s
    margin = max(min_margin, spread_factor * max(cand.robust_cv, base.robust_cv))
    if ratio > 1 + margin and cand.q3_s < base.q1_s:
        label, separated = FASTER, True
    elif 1 / ratio > 1 + margin and base.q3_s < cand.q1_s:
        label, separated = SLOWER, True
    else:
        label = SAME
        separated = cand.q3_s < base.q1_s or base.q3_s < cand.q1_s
    disjoint = cand.max_s < base.min_s if label == FASTER else base.max_s < cand.min_s
    return Verdict(
        label=label,
        ratio=ratio,
        margin=margin,
        separated=separated,
        cv_candidate=cand.robust_cv,
        cv_baseline=base.robust_cv,
        n_candidate=cand.n,
        n_baseline=base.n,
        disjoint=label != SAME and disjoint,
    )


#: Repetitions a side from which a complete separation is decisive: 2 / C(20, 10), 1 in 92,378, for
#: two builds of the same speed.
DECISIVE_N = 10


def needs_recheck(first: Verdict) -> bool:
    """A difference one round does not settle: not "same", and not decisive."""
    decisive = first.disjoint and min(first.n_candidate, first.n_baseline) >= DECISIVE_N
    return first.label != SAME and not decisive and first.first_round is None


def settle(first: Verdict, pooled: Verdict) -> Verdict:
    """The verdict over both rounds (``pooled``), kept only if it finds the first round's difference.

    Pooling doubles the repetitions, so a real difference is found with more certainty than in either
    round alone, while a burst of noise on one side of the first round is outweighed by the second.
    """
    label = pooled.label if pooled.label == first.label else SAME
    return replace(pooled, label=label, first_round=first)
