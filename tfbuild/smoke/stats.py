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
from dataclasses import dataclass, field, replace

from tfbuild.core.rounded import Round4

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
class Seconds:
    """Seconds per call of one op's repetitions, exact."""

    median: float
    min: float
    max: float
    q1: float  # 25th percentile
    q3: float  # 75th percentile
    mean: float


@dataclass(frozen=True, kw_only=True)
class Throughput:
    """Work per second (in the summary's unit) at the median, slowest and fastest repetition."""

    median: Round4
    min: Round4  # from the slowest repetition
    max: Round4  # from the fastest repetition


@dataclass(frozen=True, kw_only=True)
class Summary:
    """Seconds per call of one op (n repetitions) and the throughput they mean."""

    n: int
    work: float  # flops or elements per call
    unit: str  # "GFLOP/s" or "Gelem/s": work / seconds / 1e9
    seconds: Seconds
    throughput: Throughput = field(init=False)
    cv: Round4  # stdev / mean (sample stdev; 0 for a single repetition)
    robust_cv: Round4  # 1.4826 * MAD / median, what the verdict's margin uses

    def __post_init__(self) -> None:
        throughput = Throughput(
            median=Round4(self.throughput_median),
            min=Round4(self.throughput_min),
            max=Round4(self.throughput_max),
        )
        object.__setattr__(self, "throughput", throughput)

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
            seconds=Seconds(median=median, min=data[0], max=data[-1], q1=q1, q3=q3, mean=mean),
            cv=Round4(statistics.stdev(data) / mean if len(data) > 1 else 0.0),
            robust_cv=Round4(
                SIGMA_PER_MAD * statistics.median(abs(v - median) for v in data) / median
            ),
        )

    @property
    def median_s(self) -> float:
        return self.seconds.median

    @property
    def min_s(self) -> float:
        return self.seconds.min

    @property
    def max_s(self) -> float:
        return self.seconds.max

    @property
    def q1_s(self) -> float:
        return self.seconds.q1

    @property
    def q3_s(self) -> float:
        return self.seconds.q3

    @property
    def mean_s(self) -> float:
        return self.seconds.mean

    def throughput_of(self, seconds: float) -> float:
        return self.work / seconds / 1e9

    @property
    def throughput_median(self) -> float:
        return self.throughput_of(self.median_s)

    @property
    def throughput_min(self) -> float:
        """From the slowest repetition."""
        return self.throughput_of(self.max_s)

    @property
    def throughput_max(self) -> float:
        """From the fastest repetition."""
        return self.throughput_of(self.min_s)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Candidate against baseline for one op: "faster", "same" (within noise) or "slower"."""

    label: str
    ratio: Round4  # median(baseline) / median(candidate): > 1 means the candidate is faster
    margin: Round4  # how far the ratio (or its inverse) must exceed 1 to count
    separated: bool  # the middle halves (25th-75th percentile) do not overlap
    cv_candidate: Round4  # robust cv of each side (see the module docstring)
    cv_baseline: Round4
    n_candidate: int
    n_baseline: int
    disjoint: bool = False  # every repetition of the faster side beat every one of the slower side
    first_round: Verdict | None = None  # set when this verdict pools a recheck (see settle)

    confirmed: bool | None = field(init=False)  # None without a recheck; else: did it hold?

    def __post_init__(self) -> None:
        held = None if self.first_round is None else self.label != SAME
        object.__setattr__(self, "confirmed", held)


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
        ratio=Round4(ratio),
        margin=Round4(margin),
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
