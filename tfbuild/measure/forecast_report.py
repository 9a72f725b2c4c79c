"""A forecast's results: per op and per op class, the plan build against the stock flags, in words
and as JSON.

Pure values over measured seconds; :mod:`tfbuild.measure.forecast` measures them. Each op's kernel
ratio is stock time over plan time (> 1: the plan's build is faster), with its confidence interval
and one of the four answers of :mod:`tfbuild.core.stats` (the two builds are timed in separate runs,
so as two samples, unpaired).

TensorFlow shows less than the bare kernel: its own op pays, whatever the flags, for what is around
the kernel (dispatch, the output's allocation and first touch; 0.1-0.2 ns per element more than the
kernel on the project's VM, benchmarks/forecast.py). So each op also has its TensorFlow-level
forecast (:class:`TensorFlowLevel`): with T the median seconds per call of stock TensorFlow's own op
and D = median(stock) - median(plan) the kernel's saving per call, TensorFlow would take T - D, a
ratio of T / (T - D) (:func:`tensorflow_ratio`). The per-class ranges and the summary line are
TensorFlow-level when stock TensorFlow was timed; the kernel's stay beside them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from tfbuild.core.rounded import Round3, Round4
from tfbuild.core.stats import (
    FASTER,
    MARGIN,
    MEMORY_BOUND_MARGIN,
    SAME,
    SLOWER,
    UNDECIDED,
    Summary,
    Verdict,
    bootstrap,
    decide,
    verdict,
)

SCHEMA: Literal["tfbuild.forecast/1"] = "tfbuild.forecast/1"

#: The op classes in the order they are shown, with what they are in words.
CLASSES = {
    "transcendental": "transcendental element-wise ops",
    "cast": "dtype casts",
    "composite": "Eigen-only row ops",
    "control": "controls (memory-bound, should not change)",
}
MIXED = "mixed"
#: The levels a class's ratios are given at: what TensorFlow would show, or the Eigen kernel alone.
TENSORFLOW, KERNEL = "tensorflow", "kernel"


def class_margin(klass: str) -> float:
    """The smallest difference that matters for an op class: the controls are memory-bound."""
    return MEMORY_BOUND_MARGIN if klass == "control" else MARGIN


def tensorflow_level(
    stock: Sequence[float], plan: Sequence[float], tensorflow: Sequence[float]
) -> float:
    """T / (T - D) from the three samples' medians (see :func:`tensorflow_ratio`)."""
    s, p = statistics.median(stock), statistics.median(plan)
    floor = tensorflow_seconds(stock_kernel=s, tensorflow=statistics.median(tensorflow))
    return floor / (floor - (s - p))  # floor - s + p >= p > 0


def tensorflow_ratio(kernel_ratio: float, *, stock_kernel: float, tensorflow: float) -> float:
    """The ratio TensorFlow would show for a kernel ratio r: T / (T - D), where D = s (1 - 1/r) is
    the kernel's saving per call (s: the stock build's seconds per call) and T stock TensorFlow's
    seconds per call. Increasing in r, and 1 at r = 1. T is taken to be at least s (see
    :func:`tensorflow_seconds`), so T - D >= s / r > 0."""
    floor = tensorflow_seconds(stock_kernel=stock_kernel, tensorflow=tensorflow)
    return floor / (floor - stock_kernel * (1 - 1 / kernel_ratio))


def tensorflow_seconds(*, stock_kernel: float, tensorflow: float) -> float:
    """T as the forecast uses it: stock TensorFlow's seconds per call, but never less than the stock
    build's kernel (TensorFlow running the same code faster than the bare kernel would mean that the
    kernel is not what TensorFlow runs; the TensorFlow-level ratio is then the kernel's, not more)."""
    return max(tensorflow, stock_kernel)


class TensorFlowLevel(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"label": "verdict"},
):
    """One op as TensorFlow would show it: stock TensorFlow's own time per call, and the kernel's
    saving carried over to it (see the module docstring)."""

    seconds: float  # the median seconds per call of stock TensorFlow's op (eager, one thread)
    throughput: Round4  # Gelem/s at that median
    n: int  # timed repetitions
    ratio: Round3  # T / (T - D)
    interval: tuple[Round3, Round3]  # bootstrap over TensorFlow's and both kernels' times
    label: str  # faster, same, slower or undecided: the interval against the class's margin
    clamped: (
        bool  # stock TensorFlow took less than the stock build's kernel: T taken as the kernel's
    )

    @staticmethod
    def of(
        elements: int,
        tensorflow: Sequence[float],
        *,
        stock: Sequence[float],
        plan: Sequence[float],
        kernel: Verdict,
    ) -> TensorFlowLevel:
        """The interval is a bootstrap over TensorFlow's times and both kernels' at once: T and D
        are timed at different moments, so the noise of each belongs in it. A difference is
        claimed where the ``kernel``'s is (T / (T - D) is 1 where the kernel's ratio is, and moves
        with it), and only where TensorFlow's ratio is still beyond the margin."""
        measured = Summary.of(tensorflow, elements, "Gelem/s")
        floor = tensorflow_seconds(
            stock_kernel=statistics.median(stock), tensorflow=measured.median_s
        )
        estimate = tensorflow_level(stock, plan, tensorflow)
        low, high = bootstrap(
            (stock, plan, tensorflow), lambda s: tensorflow_level(s[0], s[1], s[2])
        )
        return TensorFlowLevel(
            seconds=measured.median_s,
            throughput=measured.throughput.median,
            n=measured.n,
            ratio=Round3(estimate),
            interval=(Round3(low), Round3(high)),
            label=decide(
                estimate,
                claim=kernel.interval if kernel.label in (FASTER, SLOWER) else (0.0, math.inf),
                same=(low, high),
                margin=kernel.margin,
            ),
            clamped=floor > measured.median_s,
        )


class OpForecast(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"name": "op", "klass": "class", "label": "verdict"},
):
    """One op: each side's rate and the plan build's kernel speed-up over the stock flags, and
    (when stock TensorFlow was timed) what TensorFlow would show of it.

    A msgspec Struct, not a dataclass, only for its JSON key "class" (a Python keyword: a
    dataclass field cannot be named so, and msgspec renames only a Struct's fields).
    """

    name: str
    klass: str
    stock: Summary
    plan: Summary
    ratio: Round3  # the kernel's
    interval: tuple[Round3, Round3]  # the confidence interval of the kernel's ratio
    label: str  # faster, same, slower or undecided (the kernel's)
    tensorflow: TensorFlowLevel | None = None  # None: stock TensorFlow was not timed

    @property
    def low(self) -> float:
        return self.interval[0]

    @property
    def high(self) -> float:
        return self.interval[1]

    @staticmethod
    def of(
        name: str,
        klass: str,
        elements: int,
        *,
        stock: Sequence[float],
        plan: Sequence[float],
        tensorflow: Sequence[float] | None = None,
    ) -> OpForecast:
        """``tensorflow``: stock TensorFlow's seconds per call of the same op on the same
        elements."""
        judged = verdict(plan, stock, paired=False, margin=class_margin(klass))
        low, high = judged.interval
        return OpForecast(
            name=name,
            klass=klass,
            stock=Summary.of(stock, elements, "Gelem/s"),
            plan=Summary.of(plan, elements, "Gelem/s"),
            ratio=Round3(judged.ratio),
            interval=(Round3(low), Round3(high)),
            label=judged.label,
            tensorflow=None
            if tensorflow is None
            else TensorFlowLevel.of(elements, tensorflow, stock=stock, plan=plan, kernel=judged),
        )

    def shown(self, level: str) -> tuple[float, tuple[float, float], str]:
        """Ratio, interval and verdict at ``level``: "tensorflow" (when timed) or "kernel"."""
        if level == TENSORFLOW and self.tensorflow is not None:
            return self.tensorflow.ratio, self.tensorflow.interval, self.tensorflow.label
        return self.ratio, self.interval, self.label


class Range(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"label": "verdict"},
):
    """Ratios of a class's ops at one level: their range, the union of their intervals, one
    verdict."""

    ratio: tuple[Round3, Round3]  # the smallest op ratio and the largest
    interval: tuple[Round3, Round3]  # from the lowest op interval's start to the highest's end
    label: str  # faster, same, slower, or mixed

    @staticmethod
    def of(members: Sequence[OpForecast], level: str) -> Range:
        shown = [o.shown(level) for o in members]
        labels = {label for _, _, label in shown}
        return Range(
            ratio=(
                Round3(min(r for r, _, _ in shown)),
                Round3(max(r for r, _, _ in shown)),
            ),
            interval=(
                Round3(min(i[0] for _, i, _ in shown)),
                Round3(max(i[1] for _, i, _ in shown)),
            ),
            label=labels.pop() if len(labels) == 1 else MIXED,
        )


class ClassResult(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"klass": "class", "label": "verdict"},
):
    """One op class: the range of its ops' ratios, the union of their intervals, one verdict, at
    ``level`` (TensorFlow's when stock TensorFlow timed every op of the class), and the same for
    the Eigen kernel alone.

    A msgspec Struct for its JSON key "class" (see :class:`OpForecast`).
    """

    klass: str
    ops: tuple[str, ...]
    level: str  # "tensorflow" or "kernel": what ratio, interval and verdict are
    ratio: tuple[Round3, Round3]  # the smallest op ratio and the largest
    interval: tuple[Round3, Round3]  # from the lowest op interval's start to the highest's end
    label: str  # faster, same, slower, or mixed
    kernel: Range  # the Eigen kernel alone

    @property
    def low(self) -> float:
        return self.ratio[0]

    @property
    def high(self) -> float:
        return self.ratio[1]


def compare(ops: Sequence[OpForecast]) -> tuple[ClassResult, ...]:
    classes = []
    for klass in CLASSES:
        members = [o for o in ops if o.klass == klass]
        if not members:
            continue
        level = TENSORFLOW if all(o.tensorflow for o in members) else KERNEL
        shown = Range.of(members, level)
        classes.append(
            ClassResult(
                klass=klass,
                ops=tuple(o.name for o in members),
                level=level,
                ratio=shown.ratio,
                interval=shown.interval,
                label=shown.label,
                kernel=Range.of(members, KERNEL),
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


def _times(low: float, high: float) -> str:
    return f"{low:.1f}x" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}x"


@dataclass(frozen=True, kw_only=True)
class CompilerUsed:
    """The compiler both builds of the benchmark were compiled with, and why that one."""

    version: str
    why: str


@dataclass(frozen=True, kw_only=True)
class StockFlags:
    """The flags the stock release compiles TensorFlow's C++ with, and where that is written."""

    flags: tuple[str, ...]
    source: str


@dataclass(frozen=True, kw_only=True)
class Forecast:
    """The whole forecast: what was compiled how, each op and class, and oneDNN's dispatch."""

    schema: Literal["tfbuild.forecast/1"] = SCHEMA
    summary: str = field(init=False)  # the one line: the transcendental ops, and matmul/conv
    tensorflow: str
    target: str
    stock_wheel: str
    compiler: CompilerUsed
    stock_flags: StockFlags
    plan_flags: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    classes: tuple[ClassResult, ...]
    ops: tuple[OpForecast, ...]
    onednn: OneDnn

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", self._summary())

    def klass(self, name: str) -> ClassResult | None:
        return next((c for c in self.classes if c.klass == name), None)

    def _summary(self) -> str:
        """The one line: what the transcendental ops (the class a build gains most on, named with
        its ops) would do in TensorFlow (and the kernel alone), and matmul/conv. The other
        classes are in the rows below it, each with its own verdict."""
        head = self.klass("transcendental")
        build = f"a build for {self.target}"
        if head is None:
            element = "would change nothing measured here"
        else:
            words, kernel = _element_words(head, self.ops), _kernel_words(head)
            element = f"{words[:-1]}; {kernel})" if words.endswith(")") else f"{words} ({kernel})"
        if self.onednn.measured:
            rest = "matmul and conv would not change"
        else:
            rest = "matmul and conv: oneDNN's dispatch was not measured"
        return f"{build} {element}; {rest}"


def _faster_or_slower(label: str, low: float, high: float) -> str:
    if label == FASTER:
        return f"{_times(low, high)} faster"
    if label == SLOWER:
        return f"{_times(1 / high, 1 / low)} slower"
    if label == UNDECIDED:
        return f"{_times(low, high)} the stock speed, undecided"
    return f"{_times(low, high)} the stock speed"


def _element_words(head: ClassResult, ops: Sequence[OpForecast]) -> str:
    """What the class's verdict says about TensorFlow's ops of that class, named with its ops."""
    ops_here = f"TensorFlow's {head.klass} ops ({', '.join(head.ops)})"
    if head.label == FASTER:
        return f"would run {ops_here} about {_times(head.low, head.high)} faster here"
    if head.label == SLOWER:
        return (
            f"would run {ops_here} about {_times(1 / head.high, 1 / head.low)} slower here "
            "(a loss against stock)"
        )
    if head.label == SAME:
        return f"would run {ops_here} no faster here (within the noise)"
    if head.label == UNDECIDED:
        return (
            f"may run {ops_here} {_times(head.low, head.high)} the stock speed here: the timings "
            "were too noisy to tell (run it again on a quiet machine, or with a longer --budget)"
        )
    labels = [o.shown(head.level)[2] for o in ops if o.klass == head.klass]
    undecided = labels.count(UNDECIDED)
    if FASTER not in labels and SLOWER not in labels:  # same and undecided
        return (
            f"would run {ops_here} {_times(head.low, head.high)} the stock speed here "
            f"({labels.count(SAME)} of {len(labels)} ops the same, {undecided} too noisy to tell)"
        )
    word = "faster" if SLOWER not in labels else "slower" if FASTER not in labels else ""
    beyond = f"{labels.count(word)} of {len(labels)} ops beyond the noise" + (
        f", {undecided} undecided" if undecided else ""
    )
    if word == "faster":
        return f"would run {ops_here} about {_times(head.low, head.high)} faster here ({beyond})"
    if word == "slower":
        return (
            f"would run {ops_here} about {_times(1 / head.high, 1 / head.low)} slower here "
            f"({beyond}: a loss against stock)"
        )
    return (
        f"would run {ops_here} {_times(head.low, head.high)} the stock speed here, some faster "
        "and some slower"
    )


def _kernel_words(head: ClassResult) -> str:
    """The Eigen kernel alone, beside what TensorFlow would show (or said to be all there is)."""
    kernel = head.kernel
    alone = _faster_or_slower(kernel.label, *kernel.ratio)
    if head.level == KERNEL:
        return f"Eigen kernel ratios, {alone}: stock TensorFlow's own ops were not timed"
    return f"the Eigen kernel alone: {alone}"


# --- the forecast beside what tfbuild smoke measured ----------------------------------------------

#: Smoke's names for the forecast's ops where they differ (smoke sums along the last axis).
SMOKE_NAMES = {"sum": "reduce_sum"}


class Beside(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"klass": "class"},
):
    """One op class: the forecast's ratio range and the one smoke measured for the same ops.

    A msgspec Struct for its JSON key "class" (see :class:`OpForecast`).
    """

    klass: str
    ops: tuple[str, ...]  # the forecast's ops that smoke measured too (one thread)
    level: str  # "tensorflow" or "kernel" (a forecast kept before TensorFlow was timed)
    forecast: tuple[Round3, Round3]  # at ``level``
    kernel: tuple[Round3, Round3]  # the Eigen kernel alone
    measured: tuple[Round3, Round3] | None  # None: smoke measured none of them


def _saved_ratio(op: Mapping[str, Any]) -> float | None:
    """A saved op's TensorFlow-level ratio; None when the forecast did not time TensorFlow."""
    tensorflow = op.get("tensorflow")
    return float(tensorflow["ratio"]) if isinstance(tensorflow, Mapping) else None


def beside(saved: dict[str, Any], measured: Mapping[str, float]) -> tuple[Beside, ...]:
    """Per op class of a saved forecast (its JSON), the forecast's ratios (TensorFlow-level, what
    smoke measures, when the forecast has them for every op of the class) and ``measured``: smoke's
    candidate-over-baseline ratio per op, one thread."""
    rows = []
    for klass in saved.get("classes", []):
        ops = [o for o in saved.get("ops", []) if o.get("class") == klass.get("class")]
        kernel = [float(o["ratio"]) for o in ops]
        at_tf = [_saved_ratio(o) for o in ops]
        level = TENSORFLOW if all(r is not None for r in at_tf) else KERNEL
        forecast = [r for r in at_tf if r is not None] if level == TENSORFLOW else kernel
        found = {
            o["op"]: measured[SMOKE_NAMES.get(o["op"], o["op"])]
            for o in ops
            if SMOKE_NAMES.get(o["op"], o["op"]) in measured
        }
        if not forecast:
            continue
        rows.append(
            Beside(
                klass=str(klass["class"]),
                ops=tuple(found),
                level=level,
                forecast=(Round3(min(forecast)), Round3(max(forecast))),
                kernel=(Round3(min(kernel)), Round3(max(kernel))),
                measured=(Round3(min(found.values())), Round3(max(found.values())))
                if found
                else None,
            )
        )
    return tuple(rows)
