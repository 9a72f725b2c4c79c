"""A forecast's results: per op and per op class, TensorFlow's element-wise kernels compiled for the
plan's target against stock's, in words and as JSON.

Pure values over what :func:`tfbuild.measure.run.compare` timed; :mod:`tfbuild.overlay.forecast`
compiles the kernels (an overlay) and times them in the stock TensorFlow, on and off. Each op's
ratio is stock's time over the target's (> 1: a build for the target is faster), with the interval
that decided and one of the four answers of :mod:`tfbuild.core.stats`, exactly as ``tfbuild smoke``
of that overlay gives them at one thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from tfbuild.core.rounded import Round3
from tfbuild.core.stats import FASTER, SAME, SLOWER, UNDECIDED, Summary
from tfbuild.detect.contention import Contention
from tfbuild.measure.run import OpResult

SCHEMA: Literal["tfbuild.forecast/2"] = "tfbuild.forecast/2"

#: The op classes in the order they are shown, with what they are in words.
CLASSES = {
    "transcendental": "transcendental element-wise ops",
    "composite": "composite and row ops",
    "cast": "dtype casts",
    "control": "controls (memory-bound, should not change)",
}
#: The class of each op the forecast times (the smoke worker's ops whose kernels an overlay
#: replaces, and the controls it never touches).
OP_CLASSES = {
    "exp": "transcendental",
    "tanh": "transcendental",
    "sigmoid": "transcendental",
    "erf": "transcendental",
    "gelu": "composite",
    "log_softmax": "composite",
    "cast_f32_bf16": "cast",
    "add": "control",
    "relu": "control",
    "reduce_sum": "control",
}
MIXED = "mixed"


class _Classed(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A row with the JSON key "class": a msgspec Struct, not a dataclass, only for that key (a
    Python keyword: a dataclass field cannot be named so, and msgspec renames only a Struct's
    fields)."""


class OpForecast(
    _Classed, frozen=True, rename={"name": "op", "klass": "class", "label": "verdict"}
):
    """One op, timed in the stock TensorFlow with the target's kernels and with stock's."""

    name: str
    klass: str
    stock: Summary
    target: Summary
    ratio: Round3  # stock's time over the target's
    interval: tuple[Round3, Round3]  # the interval that decided
    label: str  # faster, same, slower or undecided
    rechecked: bool  # a claim timed again in a fresh pair of processes (undecided if it disagreed)

    @staticmethod
    def of(result: OpResult) -> OpForecast | None:
        """The op as :func:`tfbuild.measure.run.compare` judged it (candidate: the target's
        kernels); None when it has no verdict (no baseline)."""
        found = result.verdict
        if found is None or result.baseline is None:
            return None
        return OpForecast(
            name=result.op,
            klass=OP_CLASSES.get(result.op, "composite"),
            stock=result.baseline,
            target=result.candidate,
            ratio=Round3(found.ratio),
            interval=(Round3(found.interval[0]), Round3(found.interval[1])),
            label=found.label,
            rechecked=result.recheck is not None,
        )


class ClassResult(_Classed, frozen=True, rename={"klass": "class", "label": "verdict"}):
    """One op class: the range of its ops' ratios, the union of their intervals, one verdict
    (``mixed`` when its ops disagree)."""

    klass: str
    ops: tuple[str, ...]
    ratio: tuple[Round3, Round3]  # the smallest op ratio and the largest
    interval: tuple[Round3, Round3]  # from the lowest op interval's start to the highest's end
    label: str


def by_class(ops: Sequence[OpForecast]) -> tuple[ClassResult, ...]:
    """The ops by class, in :data:`CLASSES`' order."""
    classes = []
    for klass in CLASSES:
        members = [o for o in ops if o.klass == klass]
        if not members:
            continue
        labels = {o.label for o in members}
        classes.append(
            ClassResult(
                klass=klass,
                ops=tuple(o.name for o in members),
                ratio=(min(o.ratio for o in members), max(o.ratio for o in members)),
                interval=(
                    min(o.interval[0] for o in members),
                    max(o.interval[1] for o in members),
                ),
                label=labels.pop() if len(labels) == 1 else MIXED,
            )
        )
    return tuple(classes)


@dataclass(frozen=True, kw_only=True)
class OneDnn:
    """What oneDNN dispatched to in the stock wheel on this machine (ONEDNN_VERBOSE)."""

    isa: str | None  # the ISA oneDNN detected ("Intel AVX-512 with ...")
    kernels: dict[str, tuple[str, ...]]  # "matmul"/"conv" -> implementations it ran
    error: str | None = None
    forecast: str | None = field(init=False)  # "no change" when measured

    def __post_init__(self) -> None:
        object.__setattr__(self, "forecast", "no change" if self.measured else None)

    @property
    def measured(self) -> bool:
        return self.isa is not None and bool(self.kernels)

    def describe(self) -> str:
        if not self.measured:
            return f"not measured: {self.error or 'oneDNN ran no kernel'}"
        ran = "; ".join(f"{kind}: {', '.join(impls)}" for kind, impls in self.kernels.items())
        return f"oneDNN picks its kernels at run time for this CPU ({self.isa}): {ran}"


@dataclass(frozen=True, kw_only=True)
class KernelsBuilt:
    """The kernels the forecast timed: TensorFlow's own, compiled for the target as ``tfbuild
    overlay`` compiles them (its wheel, which ``tfbuild smoke`` of it measures the same way)."""

    wheel: str  # the overlay wheel's file name
    sha256: str  # its bytes (the overlay is reproducible: tfbuild overlay makes the same wheel)
    kernels: int
    compiler: str  # the compiler's version line
    image: str | None  # the toolchain image it compiled in; None: on this host
    cflags: tuple[str, ...]
    left_to_stock: tuple[str, ...]  # the kernels a build would compile too that it leaves, and why
    seconds: float  # the overlay's build


def _times(low: float, high: float) -> str:
    return f"{low:.1f}x" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}x"


@dataclass(frozen=True, kw_only=True)
class Forecast:
    """The whole forecast: the kernels compiled, each op and class, oneDNN's dispatch, and how
    busy the machine was while it timed."""

    schema: Literal["tfbuild.forecast/2"] = SCHEMA
    summary: str = field(init=False)  # the one line: the transcendental ops, and matmul/conv
    tensorflow: str
    target: str
    stock_wheel: str
    built: KernelsBuilt
    threads: int = 1  # the ops' intra- and inter-op threads
    classes: tuple[ClassResult, ...]
    ops: tuple[OpForecast, ...]
    onednn: OneDnn
    machine: Contention | None  # what else used the CPUs while the ops were timed
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", self._summary())

    def klass(self, name: str) -> ClassResult | None:
        return next((c for c in self.classes if c.klass == name), None)

    def _summary(self) -> str:
        """The one line: what the transcendental ops (the class a build gains most on, named with
        its ops) would do, and matmul/conv. The other classes have their rows below it."""
        head = self.klass("transcendental")
        element = (
            "would change nothing measured here" if head is None else _element_words(head, self.ops)
        )
        rest = (
            "matmul and conv would not change"
            if self.onednn.measured
            else "matmul and conv: oneDNN's dispatch was not measured"
        )
        return f"a build for {self.target} {element}; {rest}"


def _element_words(head: ClassResult, ops: Sequence[OpForecast]) -> str:
    """What the class's verdict says about TensorFlow's ops of that class, named with its ops."""
    ops_here = f"TensorFlow's {head.klass} ops ({', '.join(head.ops)})"
    low, high = head.ratio
    speed = f"{_times(low, high)} the stock speed here"
    faster = f"would run {ops_here} about {_times(low, high)} faster here"
    slower = f"would run {ops_here} about {_times(1 / high, 1 / low)} slower here"
    if head.label == FASTER:
        return faster
    if head.label == SLOWER:
        return f"{slower} (a loss against stock)"
    if head.label == SAME:
        return f"would run {ops_here} no faster here (within the noise)"
    if head.label == UNDECIDED:
        return (
            f"may run {ops_here} {speed}: the timings were too noisy to tell (run it again on a "
            "quiet machine, or with a longer --budget)"
        )
    labels = [o.label for o in ops if o.klass == head.klass]
    undecided = labels.count(UNDECIDED)
    if FASTER in labels and SLOWER in labels:
        return f"would run {ops_here} {speed}, some faster and some slower"
    if FASTER not in labels and SLOWER not in labels:  # same and undecided
        return (
            f"would run {ops_here} {speed} ({labels.count(SAME)} of {len(labels)} ops the same, "
            f"{undecided} too noisy to tell)"
        )
    word = FASTER if FASTER in labels else SLOWER
    beyond = f"{labels.count(word)} of {len(labels)} ops beyond the noise" + (
        f", {undecided} undecided" if undecided else ""
    )
    return (
        f"{faster} ({beyond})" if word == FASTER else f"{slower} ({beyond}: a loss against stock)"
    )


# --- the forecast beside what tfbuild smoke measured ----------------------------------------------


class Beside(_Classed, frozen=True, rename={"klass": "class"}):
    """One op class: the forecast's ratio range and the one smoke measured for the same ops."""

    klass: str
    ops: tuple[str, ...]  # the forecast's ops that smoke measured too (one thread)
    forecast: tuple[Round3, Round3]
    measured: tuple[Round3, Round3] | None  # None: smoke measured none of them


def beside(saved: Mapping[str, Any], measured: Mapping[str, float]) -> tuple[Beside, ...]:
    """Per op class of a saved forecast (its JSON), the forecast's ratios and ``measured``: smoke's
    candidate-over-baseline ratio per op, one thread."""
    rows = []
    for klass in saved.get("classes", []):
        ops = [o for o in saved.get("ops", []) if o.get("class") == klass.get("class")]
        if not ops:
            continue
        forecast = [float(o["ratio"]) for o in ops]
        found = [measured[o["op"]] for o in ops if o["op"] in measured]
        rows.append(
            Beside(
                klass=str(klass["class"]),
                ops=tuple(o["op"] for o in ops if o["op"] in measured),
                forecast=(Round3(min(forecast)), Round3(max(forecast))),
                measured=(Round3(min(found)), Round3(max(found))) if found else None,
            )
        )
    return tuple(rows)
