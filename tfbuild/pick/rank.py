"""Which of the wheels that run is the best here, and why: the ranking and :func:`pick` (pure).

Newest TensorFlow, then a usable CUDA build, then the most specific CPU target, then plain over
oneDNN (``mkl``), then an exact ``cpXY`` build over ``abi3`` over ``py3-none``. The user narrows the
choice with :class:`PickOptions` (``--tf``, ``--variant``, ``--overlay``).

Overlays are a choice of their own, never ranked against wheels: a wheel is a TensorFlow to install
(in place of the one there), an overlay goes on top of the stock TensorFlow already installed, and
runs only on that exact build. So :attr:`PickResult.chosen` is the best wheel, as before, and
:attr:`PickResult.overlay` the best overlay for the TensorFlow the interpreter has (the most
specific CPU target among those that run: they all go on the same TensorFlow). ``--install``
installs the chosen wheel, or the overlay when no wheel is chosen; ``--overlay`` leaves the wheels
out, so that it installs the overlay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from packaging.version import InvalidVersion, Version

from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.core.variants import Variant
from tfbuild.detect import cpu
from tfbuild.pick.compat import STAGE_ORDER, Assessment, evaluate
from tfbuild.pick.listing import WheelSource
from tfbuild.pick.machine import OWN_INTERPRETER, Host
from tfbuild.wheel.labels import NATIVE

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture

SCHEMA: Literal["tfbuild.pick/1"] = "tfbuild.pick/1"


@dataclass(frozen=True, kw_only=True)
class PickOptions:
    """What the user narrowed the choice to."""

    tf: str | None = None  # "2.20" or "2.20.1": wheels of that release
    variant: Variant | None = None
    overlay: bool = False  # --overlay: only overlays, for the TensorFlow installed

    def __post_init__(self) -> None:
        if self.tf is None:
            return
        try:
            Version(self.tf)
        except InvalidVersion:
            raise UsageError(
                f"--tf {self.tf!r} is not a version", fix="Write it like 2.20 or 2.20.1."
            ) from None


def _specificity(target: Microarchitecture) -> tuple[int, int]:
    # archspec's descendants carry all their ancestors' features, so more features (then more
    # ancestors, for equal sets such as nehalem and x86_64_v2) puts every target above its
    # ancestors and, among unrelated targets, the one with more features first.
    return len(target.features), len(target.ancestors)


def _target_specificity(assessment: Assessment, host: Host) -> tuple[int, int]:
    from tfbuild.core.targets import targets

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
    micro = targets().get(target)
    return _specificity(micro) if micro is not None else (-1, -1)


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
    from tfbuild.core.targets import targets

    target = targets().get(assessment.target or "")
    return -len(target.features) if target is not None else -(10**6)


def _filter(assessment: Assessment, options: PickOptions) -> str | None:
    reasons = []
    if options.tf is not None:
        asked = Version(options.tf).release
        if Version(assessment.tensorflow).release[: len(asked)] != asked:
            reasons.append(f"not TensorFlow {options.tf} (--tf)")
    if options.variant is not None and assessment.variant != options.variant:
        reasons.append(f"not a {options.variant} build (--variant)")
    if options.overlay and not assessment.wheel.is_overlay:
        reasons.append("not an overlay (--overlay)")
    return "; ".join(reasons) or None


@dataclass(frozen=True, kw_only=True)
class PickResult:
    """The wheels of a source judged on one host, the best first, and the choice; the overlays
    apart, with their own choice."""

    source: WheelSource
    host: Host
    options: PickOptions
    wheels: tuple[Assessment, ...]  # chosen first, then the others that run, then the refused
    chosen: Assessment | None
    why: tuple[str, ...]  # why the chosen wheel, one sentence each
    warnings: tuple[str, ...] = ()
    overlays: tuple[Assessment, ...] = ()  # the same order, ranked among themselves
    overlay: Assessment | None = None  # the best overlay for the TensorFlow installed
    overlay_why: tuple[str, ...] = ()

    @property
    def to_install(self) -> Assessment | None:
        """What ``--install`` installs: the chosen wheel, else the chosen overlay."""
        return self.chosen if self.chosen is not None else self.overlay

    def no_choice(self) -> UnsupportedError:
        """The error for "nothing runs here": the host target and the nearest miss."""
        where = f"{self.host.target} ({self.host.source}, {self.host.python_text})"
        overlays_only = self.options.overlay or not self.wheels  # --overlay leaves the wheels out
        noun = "wheel" if not self.overlays else "overlay" if overlays_only else "wheel or overlay"
        everything = (*self.wheels, *self.overlays)  # each kind's nearest miss first
        asked = [v for v in everything if v.filtered is None]
        refused = [v for v in asked if not v.runs]
        if refused:
            best = refused[0]
            why = f"the nearest, {best.wheel.filename}: {best.reason}"
        else:
            runs = [v for v in everything if v.runs]
            why = f"{len(runs)} {noun}(s) run here, but {runs[0].filtered}" if runs else ""
        if not self.overlays:
            fix = "Build one for this machine with tfbuild wheel; every wheel's reason is in the "
            fix += "list (wheels[] in --json)."
        elif overlays_only and self.host.tensorflow is None:
            own = (
                "pick asked tfbuild's own interpreter, which is not the one you run TensorFlow "
                "with; "
                if self.host.python_source.startswith(OWN_INTERPRETER)
                else ""
            )
            fix = f"An overlay goes on an installed TensorFlow: {own}name that interpreter "
            fix += "with --python PATH."
        elif overlays_only:
            fix = "Build one for this machine and the TensorFlow installed with tfbuild overlay; "
            fix += "every overlay's reason is in the list (overlays[] in --json)."
        else:
            fix = "Build a wheel for this machine with tfbuild wheel, or an overlay for it and the "
            fix += "TensorFlow installed with tfbuild overlay; every reason is in the list "
            fix += "(wheels[] and overlays[] in --json)."
        return UnsupportedError(
            f"no {noun} in {self.source.source} runs on {where}", why=why, fix=fix
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
    lines += _most_specific(chosen, peers)
    if chosen.variant == Variant.cpu and any(v.variant == Variant.mkl for v in peers):
        lines.append("the plain build over the oneDNN (mkl) one; --variant mkl asks for that")
    if chosen.python_rank == 3 and any(v.python_rank < 3 for v in peers):
        lines.append("built for exactly this Python (over abi3 / py3 wheels)")
    return tuple(lines)


def _overlay_why(chosen: Assessment, others: Sequence[Assessment]) -> tuple[str, ...]:
    lines = [chosen.reason]
    if not others:
        return (*lines, "the only overlay that runs here and goes on the TensorFlow installed")
    return (*lines, *_most_specific(chosen, others))


def _most_specific(chosen: Assessment, peers: Sequence[Assessment]) -> list[str]:
    below = sorted({v.target or "unlabelled" for v in peers if v.target != chosen.target})
    if not below:
        return []
    target = chosen.target or "unlabelled"
    return [f"the most specific CPU target that runs here: {target} (over {', '.join(below)})"]


def _ordered(assessments: Sequence[Assessment], host: Host) -> tuple[Assessment, ...]:
    """The best first, ranked 1, 2, ...; then those that run but were not asked for; then the
    refused, the nearest miss first."""
    runs = sorted(
        (v for v in assessments if v.runs),
        key=lambda v: (_rank_key(v, host), v.wheel.filename),
        reverse=True,
    )
    eligible = [v for v in runs if v.filtered is None]
    eligible = [replace(v, rank=i) for i, v in enumerate(eligible, start=1)]
    filtered = [v for v in runs if v.filtered is not None]
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
    return (*eligible, *filtered, *refused)


def pick(source: WheelSource, host: Host, options: PickOptions | None = None) -> PickResult:
    """Judge every wheel on the host and choose the best one that runs, and apart from them the
    best overlay (pure)."""
    options = options or PickOptions()
    assessments = [evaluate(w, host) for w in source.wheels]
    assessments = [replace(v, filtered=_filter(v, options)) for v in assessments]
    wheels = _ordered([v for v in assessments if not v.wheel.is_overlay], host)
    overlays = _ordered([v for v in assessments if v.wheel.is_overlay], host)
    chosen = wheels[0] if wheels and wheels[0].rank == 1 else None
    overlay = overlays[0] if overlays and overlays[0].rank == 1 else None
    return PickResult(
        source=source,
        host=host,
        options=options,
        wheels=wheels,
        chosen=chosen,
        why=_why(chosen, [v for v in wheels[1:] if v.rank is not None]) if chosen else (),
        warnings=(*host.cpu.warnings, *source.warnings),  # what reading --cpuinfo left out
        overlays=overlays,
        overlay=overlay,
        overlay_why=(
            _overlay_why(overlay, [v for v in overlays[1:] if v.rank is not None])
            if overlay
            else ()
        ),
    )
