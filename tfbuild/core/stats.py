"""Timings compared: summaries, the interval of a speed ratio, and one of four answers.

Every stage that compares two timings (smoke, forecast, tune, doctor's canary, the benchmarks)
calls this module, so each gives the same answer to the same numbers. Pure functions over seconds
per call; nothing here measures anything.

**The ratio and its interval.** The ratio is baseline time over candidate time (> 1: the candidate
is faster), estimated on the log scale by Hodges-Lehmann, with a distribution-free confidence
interval (Hollander & Wolfe, *Nonparametric Statistical Methods*, ch. 3.2), over *paired* timings
(each candidate repetition timed next to one of the baseline's, in alternation, as every stage
times them): the one-sample estimator over the pairs' log ratios, the median of their Walsh
averages, and the interval from the Wilcoxon signed-rank distribution. Pairing cancels whatever
drifts slower than a pair (a neighbour's job, a clock change), which is most of a shared machine's
noise.

It needs no assumption about the shape of the noise (stalls, skew, outliers), only that the noise
of one pair is independent of the next. The exact distribution is used for the sizes timed here;
the normal approximation, with continuity correction, beyond them.

**Four answers**, from two intervals and an equivalence margin m (5 % by default; 15 % for
memory-bound ops, whose speed differs that much between two processes of the same build):

* ``faster``: the ratio is beyond 1 + m, and its :data:`CLAIM_CONFIDENCE` interval (99.99 %) lies
  above 1 (a difference that matters, and surely real);
* ``slower``: the mirror image;
* ``same``: the whole :data:`CONFIDENCE` interval (99 %) lies within [1 / (1 + m), 1 + m] (the data
  rule out a difference that matters);
* ``undecided``: anything else (the noise is too wide to tell). "Same" is never said of an interval
  wider than the margin: on a busy machine the answer is "undecided", with the interval's reach.

A claim of a difference needs the wider interval because a wrong one costs more (a wheel failed, a
setting kept): in simulation (``tests/core/test_stats.py``, 1,000 cases each) identical builds amid
30-50 % noise and stalls were never called faster or slower over five looks, where the 99 % interval
did so in 0.6 to 4 % of them; a real 1.1x gain amid 5 % noise is still found every time. With 15
pairs the 99.99 % interval is the range of the pairs' ratios: every pair must agree.

**Measuring until it can tell.** A caller that gets "undecided" may time more rounds and ask again,
up to :data:`MAX_LOOKS` times. The chance that one of five looks claims a difference that is not
there stays under 5 x 0.01 % (Bonferroni), and that one says "same" wrongly under 5 x 1 %.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from tfbuild.core.rounded import Round4

#: Standard deviations per median absolute deviation, for normal noise (1 / 0.6745).
SIGMA_PER_MAD = 1.4826

FASTER, SAME, SLOWER, UNDECIDED = "faster", "same", "slower", "undecided"
LABELS = (FASTER, SAME, SLOWER, UNDECIDED)

#: The smallest difference that matters, unless the caller says otherwise.
MARGIN = 0.05
#: The margin of memory-bound ops: their speed differs by up to ~10 % between two processes of the
#: same build, steadily, which no amount of timing inside the two removes; the gains sought there
#: are 2-3x, so a 15 % margin costs nothing and lets identical builds come out "same".
MEMORY_BOUND_MARGIN = 0.15
#: How often a caller may time more and look again before the answer stands.
MAX_LOOKS = 5
#: The confidence of each look's interval for "same" (and the one shown when undecided).
CONFIDENCE = 0.99
#: The confidence of the interval that must exclude 1 before "faster" or "slower" is said.
CLAIM_CONFIDENCE = 0.9999
#: The exact distribution up to this many pairs (the counting takes a few ms there); normal beyond.
_EXACT_PAIRS = 100


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _seconds(values: Sequence[float], what: str) -> list[float]:
    """``values`` as floats, in their order, refused unless they are positive, finite seconds."""
    data = [float(v) for v in values]
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
    robust_cv: Round4  # 1.4826 * MAD / median: the spread, blind to a few stalls

    def __post_init__(self) -> None:
        throughput = Throughput(
            median=Round4(self.throughput_median),
            min=Round4(self.throughput_min),
            max=Round4(self.throughput_max),
        )
        object.__setattr__(self, "throughput", throughput)

    @staticmethod
    def of(seconds_per_call: Sequence[float], work: float, unit: str) -> Summary:
        data = sorted(_seconds(seconds_per_call, "Summary.of"))
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
    def throughput_median(self) -> float:
        return self.work / self.seconds.median / 1e9

    @property
    def throughput_min(self) -> float:
        """From the slowest repetition."""
        return self.work / self.seconds.max / 1e9

    @property
    def throughput_max(self) -> float:
        """From the fastest repetition."""
        return self.work / self.seconds.min / 1e9


# --- the rank distributions ----------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """How many of the 2^n sign patterns of ranks 1..n give each positive-rank sum 0..n(n+1)/2."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    top = 0
    for rank in range(1, n + 1):
        top += rank
        for total in range(top, rank - 1, -1):
            counts[total] += counts[total - rank]
    return tuple(counts)


def signed_rank_bound(n: int, confidence: float) -> int | None:
    """t such that the interval of n pairs runs from the (t+1)-th smallest Walsh average to the
    (t+1)-th largest (Hollander & Wolfe, 3.2); None when n pairs cannot give that confidence."""
    if n <= _EXACT_PAIRS:
        # The largest t with P(statistic <= t) <= (1 - confidence) / 2, over the 2^n patterns;
        # None if even t = 0 is likelier (too few values for that confidence).
        tail = (1 - confidence) / 2 * 2**n
        below = bisect.bisect_right(list(itertools.accumulate(_signed_rank_counts(n))), tail)
        return below - 1 if below else None
    mean = n * (n + 1) / 4
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    t = math.floor(mean - 0.5 - z * sd)
    return t if t >= 0 else None


# --- the ratio and its interval ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Ratio:
    """baseline / candidate time: the estimate and its confidence interval (0 to inf when the
    values are too few for that confidence)."""

    ratio: float
    low: float
    high: float
    confidence: float


def ratio(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    paired: bool,
    confidence: float = CONFIDENCE,
) -> Ratio:
    """The speed ratio of ``candidate`` over ``baseline`` (seconds per call; > 1: the candidate is
    faster). ``paired``: value i of each side was timed next to the other's value i, as it must be
    (no stage times two samples apart: a ValueError)."""
    return ratios(candidate, baseline, paired=paired, confidences=(confidence,))[0]


def ratios(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    paired: bool,
    confidences: Sequence[float],
) -> list[Ratio]:
    """:func:`ratio` at each of ``confidences``, the Walsh averages sorted once."""
    cand = [math.log(v) for v in _seconds(candidate, "candidate")]
    base = [math.log(v) for v in _seconds(baseline, "baseline")]
    if not all(0 < c < 1 for c in confidences):
        raise ValueError("a confidence lies between 0 and 1")
    if not paired:
        raise ValueError("timings are compared in pairs only")
    if len(cand) != len(base):
        raise ValueError("paired timings need as many candidate values as baseline values")
    d = [b - c for b, c in zip(base, cand, strict=True)]
    values = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
    estimate = math.exp(statistics.median(values))
    found = []
    for confidence in confidences:
        bound = signed_rank_bound(len(d), confidence)
        if bound is None:
            low, high = 0.0, math.inf
        else:
            low, high = math.exp(values[bound]), math.exp(values[len(values) - 1 - bound])
        found.append(Ratio(ratio=estimate, low=low, high=high, confidence=confidence))
    return found


# --- the answer ------------------------------------------------------------------------------------


def decide(
    estimate: float,
    *,
    claim: tuple[float, float],
    same: tuple[float, float],
    margin: float = MARGIN,
) -> str:
    """faster, slower, same or undecided, for a ratio, the interval a claim of a difference needs
    (:data:`CLAIM_CONFIDENCE`) and the one "same" needs (:data:`CONFIDENCE`); see the module
    docstring."""
    if margin < 0:
        raise ValueError("margin must be >= 0")
    if claim[0] > 1 and estimate > 1 + margin:
        return FASTER
    if claim[1] < 1 and 1 / estimate > 1 + margin:
        return SLOWER
    if same[0] >= 1 / (1 + margin) and same[1] <= 1 + margin:
        return SAME
    return UNDECIDED


def spread(low: float, high: float) -> float:
    """Half the interval's width on the ratio's own (log) scale, as a fraction: the X of
    "undecided ±X%". An interval within a margin m has a spread of at most m."""
    if low <= 0 or not math.isfinite(high):
        return math.inf
    return math.sqrt(high / low) - 1


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Candidate against baseline for one op: faster, same, slower or undecided."""

    label: str
    ratio: Round4  # baseline / candidate time: > 1 means the candidate is faster
    interval: tuple[Round4, Round4]  # the interval that decided (faster, slower: the claim's)
    confidence: Round4  # that interval's: CLAIM_CONFIDENCE or CONFIDENCE
    margin: Round4  # the smallest difference that matters; "same" lies within it
    paired: bool  # timed in pairs (the signed-rank interval): always, now
    n_candidate: int
    n_baseline: int
    looks: int  # how many times the answer was asked for, with more timings each time
    cv_candidate: Round4  # each side's robust cv: the noise, for the reader
    cv_baseline: Round4
    spread: Round4 = field(init=False)  # half the interval's width (±), on the log scale

    def __post_init__(self) -> None:
        reach = spread(*self.interval)
        object.__setattr__(self, "spread", Round4(min(reach, 99.0)))

    @property
    def decided(self) -> bool:
        return self.label != UNDECIDED


def verdict(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    paired: bool,
    margin: float = MARGIN,
    looks: int = 1,
) -> Verdict:
    """Compare seconds per call of the same op; symmetric: swapping the sides swaps faster and
    slower and inverts the ratio and its interval. The interval kept is the one that decided: the
    claim's for faster and slower, the 99 % one otherwise."""
    same, claim = ratios(
        candidate, baseline, paired=paired, confidences=(CONFIDENCE, CLAIM_CONFIDENCE)
    )
    label = decide(
        same.ratio, claim=(claim.low, claim.high), same=(same.low, same.high), margin=margin
    )
    shown = claim if label in (FASTER, SLOWER) else same
    cand = Summary.of(candidate, 1.0, "s")
    base = Summary.of(baseline, 1.0, "s")
    return Verdict(
        label=label,
        ratio=Round4(shown.ratio),
        interval=(Round4(shown.low), Round4(min(shown.high, 1e9))),
        confidence=Round4(shown.confidence),
        margin=Round4(margin),
        paired=paired,
        n_candidate=cand.n,
        n_baseline=base.n,
        looks=looks,
        cv_candidate=cand.robust_cv,
        cv_baseline=base.robust_cv,
    )


def sequential(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    per_look: int,
    margin: float = MARGIN,
) -> Verdict:
    """The verdict over pairs timed in one go, looked at as if timed look by look: the first
    ``per_look`` pairs, then twice as many while undecided, up to :data:`MAX_LOOKS` looks (for a
    timer that cannot stop between looks, such as doctor's canary probe in its container)."""
    if per_look < 1:
        raise ValueError("per_look must be >= 1")
    looks = max(1, min(MAX_LOOKS, len(candidate) // per_look))
    for look in range(1, looks):
        n = per_look * look
        found = verdict(candidate[:n], baseline[:n], paired=True, margin=margin, looks=look)
        if found.decided:
            return found
    n = len(candidate)  # the last look takes every pair
    return verdict(candidate[:n], baseline[:n], paired=True, margin=margin, looks=looks)


def describe(found: Verdict) -> str:
    """``faster 1.52x ±4%``, ``same 1.01x ±2%``, ``undecided ±61%``: the ratio (none when it could
    not be told) and half the width of the interval that decided (see :class:`Verdict`; the JSON
    has both ends)."""
    reach = ">999" if found.spread >= 9.99 else f"{found.spread * 100:.0f}"
    if found.label == UNDECIDED:
        return f"{found.label} ±{reach}%"
    return f"{found.label} {found.ratio:.2f}x ±{reach}%"
