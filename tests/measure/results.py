"""One op's result made from timings, as smoke's loop makes it: both sides' summaries and the
paired verdict (tfbuild.core.stats), for the printers' and reports' tests."""

from __future__ import annotations

from collections.abc import Sequence

from tfbuild.core.stats import Summary, verdict
from tfbuild.detect.contention import Contention
from tfbuild.measure.run import OpResult


def timed(
    op: str,
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    work: float,
    unit: str,
    contention: Contention | None = None,
) -> OpResult:
    """``op`` with the default threads, timed in pairs: candidate[i] beside baseline[i]."""
    return OpResult(
        op=op,
        threads="default",
        candidate=Summary.of(candidate, work, unit),
        baseline=Summary.of(baseline, work, unit),
        verdict=verdict(candidate, baseline, paired=True),
        contention=contention,
    )
