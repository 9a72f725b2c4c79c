"""Which of the wheels that run is the best here, and why: the ranking and :func:`pick` (pure).

Newest TensorFlow, then a usable CUDA build, then the most specific CPU target, then plain over
oneDNN (``mkl``), then an exact ``cpXY`` build over ``abi3`` over ``py3-none``. The user narrows the
choice with :class:`PickOptions` (``--tf``, ``--variant``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from packaging.version import InvalidVersion, Version

from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.core.variants import VARIANTS, Variant
from tfbuild.detect import cpu
from tfbuild.pick.compat import STAGE_ORDER, Assessment, evaluate
from tfbuild.pick.listing import WheelSource
from tfbuild.pick.machine import Host
from tfbuild.wheel.labels import NATIVE

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture

SCHEMA: Literal["tfbuild.pick/1"] = "tfbuild.pick/1"


@dataclass(frozen=True, kw_only=True)
class PickOptions:
    """What the user narrowed the choice to."""

    tf: str | None = None  # "2.20" or "2.20.1": wheels of that release
    variant: Variant | None = None

    @staticmethod
    def parse(*, tf: str | None, variant: str | None) -> PickOptions:
        chosen: Variant | None = None
        if variant is not None:
            try:
                chosen = Variant(variant.strip().lower())
            except ValueError:
                known = ", ".join(VARIANTS[:-1])
                raise UsageError(
                    f"unknown --variant {variant!r}", fix=f"Use {known} or {VARIANTS[-1]}."
                ) from None
        if tf is not None:
            try:
                Version(tf)
            except InvalidVersion:
                raise UsageError(
                    f"--tf {tf!r} is not a version", fix="Write it like 2.20 or 2.20.1."
                ) from None
        return PickOptions(tf=tf, variant=chosen)


def _specificity(target: Microarchitecture) -> tuple[int, int]:
    # archspec's descendants carry all their ancestors' features, so more features (then more
    # ancestors, for equal sets such as nehalem and x86_64_v2) puts every target above its
    # ancestors and, among unrelated targets, the one with more features first.
    return len(target.features), len(target.ancestors)


def _target_specificity(assessment: Assessment, host: Host) -> tuple[int, int]:
    from archspec.cpu import TARGETS

    target = assessment.target
    if target is None:
        return (-1, -1)  # unlabelled: the least specific of all
    if target == NATIVE:
        receipt = assessment.wheel.receipt
        if receipt is not None and set(receipt.covered) == set(host.guard):
            # Built on a CPU with exactly this one's TensorFlow features: a machine like this one.
            return _specificity(cpu.identify(host.cpu))
        # A subset of this CPU's features: only known to run, so just above unlabelled.
        return (0, 0)
    return _specificity(TARGETS[target]) if target in TARGETS else (-1, -1)


def _rank_key(assessment: Assessment, host: Host) -> tuple[Any, ...]:
    return (
        Version(assessment.tensorflow),
        assessment.label.cuda is not None,
        _target_specificity(assessment, host),
        assessment.target != NATIVE,  # a named target over a native build of the same rank
        assessment.variant != Variant.mkl,
        assessment.python_rank,
        assessment.wheel.receipt is not None,
    )


def _closeness(assessment: Assessment) -> int:
    """For refused wheels: the less a target asks, the nearer the miss (x86_64_v2 before zen4)."""
    from archspec.cpu import TARGETS

    if assessment.target in TARGETS:
        return -len(TARGETS[assessment.target].features)
    return -(10**6)


def _filter(assessment: Assessment, options: PickOptions) -> str | None:
    reasons = []
    if options.tf is not None:
        asked = Version(options.tf).release
        if Version(assessment.tensorflow).release[: len(asked)] != asked:
            reasons.append(f"not TensorFlow {options.tf} (--tf)")
    if options.variant is not None and assessment.variant != options.variant:
        reasons.append(f"not a {options.variant} build (--variant)")
    return "; ".join(reasons) or None


@dataclass(frozen=True, kw_only=True)
class PickResult:
    """The wheels of a source judged on one host, the best first, and the choice."""

    source: WheelSource
    host: Host
    options: PickOptions
    wheels: tuple[Assessment, ...]  # chosen first, then the others that run, then the refused
    chosen: Assessment | None
    why: tuple[str, ...]  # why the chosen wheel, one sentence each
    warnings: tuple[str, ...] = ()

    def no_choice(self) -> UnsupportedError:
        """The error for "nothing runs here": the host target and the nearest miss."""
        where = f"{self.host.target} ({self.host.source}, {self.host.python_text})"
        asked = [v for v in self.wheels if v.filtered is None]
        refused = [v for v in asked if not v.runs]
        if refused:
            best = refused[0]
            why = f"the nearest, {best.wheel.filename}: {best.reason}"
        else:
            runs = [v for v in self.wheels if v.runs]
            why = f"{len(runs)} wheel(s) run here, but {runs[0].filtered}" if runs else ""
        return UnsupportedError(
            f"no wheel in {self.source.source} runs on {where}",
            why=why,
            fix="Build one for this machine with tfbuild wheel; every wheel's reason is in the "
            "list (wheels[] in --json).",
        )


def _why(chosen: Assessment, others: Sequence[Assessment]) -> tuple[str, ...]:
    lines = [chosen.reason]
    if not others:
        return (*lines, "the only wheel that runs here and matches what was asked")
    newer = Version(chosen.tensorflow)
    if any(Version(v.tensorflow) < newer for v in others):
        lines.append(f"the newest TensorFlow that runs here: {chosen.tensorflow}")
    peers = [v for v in others if v.tensorflow == chosen.tensorflow]
    if chosen.label.cuda and any(v.label.cuda is None for v in peers):
        lines.append("a CUDA build the driver can run, preferred over CPU builds")
    peers = [v for v in peers if (v.label.cuda is None) == (chosen.label.cuda is None)]
    below = sorted({v.target or "unlabelled" for v in peers if v.target != chosen.target})
    if below:
        lines.append(
            f"the most specific CPU target that runs here: {chosen.target or 'unlabelled'} "
            f"(over {', '.join(below)})"
        )
    if chosen.variant == Variant.cpu and any(v.variant == Variant.mkl for v in peers):
        lines.append("the plain build over the oneDNN (mkl) one; --variant mkl asks for that")
    if chosen.python_rank == 3 and any(v.python_rank < 3 for v in peers):
        lines.append("built for exactly this Python (over abi3 / py3 wheels)")
    return tuple(lines)


def pick(source: WheelSource, host: Host, options: PickOptions | None = None) -> PickResult:
    """Judge every wheel on the host and choose the best one that runs (pure)."""
    options = options or PickOptions()
    assessments = [evaluate(w, host) for w in source.wheels]
    assessments = [replace(v, filtered=_filter(v, options)) for v in assessments]
    eligible = sorted(
        (v for v in assessments if v.runs and v.filtered is None),
        key=lambda v: (_rank_key(v, host), v.wheel.filename),
        reverse=True,
    )
    eligible = [replace(v, rank=i) for i, v in enumerate(eligible, start=1)]
    filtered = sorted(
        (v for v in assessments if v.runs and v.filtered is not None),
        key=lambda v: (_rank_key(v, host), v.wheel.filename),
        reverse=True,
    )
    refused = sorted(
        (v for v in assessments if not v.runs),
        key=lambda v: (
            v.filtered is None,
            STAGE_ORDER[v.stage],
            Version(v.tensorflow),
            v.python_rank,
            _closeness(v),
            v.wheel.filename,
        ),
        reverse=True,
    )
    chosen = eligible[0] if eligible else None
    why = _why(chosen, eligible[1:]) if chosen else ()
    return PickResult(
        source=source,
        host=host,
        options=options,
        wheels=(*eligible, *filtered, *refused),
        chosen=chosen,
        why=why,
        warnings=(*host.cpu.warnings, *source.warnings),  # what reading --cpuinfo left out
    )
