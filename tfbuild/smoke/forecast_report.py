"""A forecast's results: per op and per op class, the plan build against the stock flags, in words
and as JSON.

Pure values over measured seconds; :mod:`tfbuild.smoke.forecast` measures them. Each op's ratio is
median(stock) / median(plan) (> 1: the plan's build is faster), with a 95 % bootstrap interval of
that ratio, and the smoke's verdict (:func:`tfbuild.smoke.stats.verdict`: beyond the noise or not).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from tfbuild.core.rounded import Round3
from tfbuild.smoke.stats import FASTER, SAME, SLOWER, Summary, verdict

SCHEMA: Literal["tfbuild.forecast/1"] = "tfbuild.forecast/1"

#: The op classes in the order they are shown, with what they are in words.
CLASSES = {
    "transcendental": "transcendental element-wise ops",
    "cast": "dtype casts",
    "composite": "Eigen-only row ops",
    "control": "controls (memory-bound, should not change)",
}
MIXED = "mixed"
_RESAMPLES = 2000


def ratio_interval(stock: Sequence[float], plan: Sequence[float]) -> tuple[float, float]:
    """A 95 % bootstrap interval of median(stock) / median(plan), seeded: the same input gives
    the same interval."""
    rng = random.Random(0)
    ratios = sorted(
        statistics.median(rng.choices(stock, k=len(stock)))
        / statistics.median(rng.choices(plan, k=len(plan)))
        for _ in range(_RESAMPLES)
    )
    return ratios[int(0.025 * _RESAMPLES)], ratios[int(0.975 * _RESAMPLES) - 1]


class OpResult(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"name": "op", "klass": "class", "label": "verdict"},
):
    """One op: each side's rate and the plan build's speed-up over the stock flags.

    A msgspec Struct, not a dataclass, only for its JSON key "class" (a Python keyword: a
    dataclass field cannot be named so, and msgspec renames only a Struct's fields).
    """

    name: str
    klass: str
    stock: Summary
    plan: Summary
    ratio: Round3
    interval: tuple[Round3, Round3]  # the 95 % bootstrap interval of the ratio
    label: str  # faster, same or slower (the smoke's verdict)

    @property
    def low(self) -> float:
        return self.interval[0]

    @property
    def high(self) -> float:
        return self.interval[1]

    @staticmethod
    def of(
        name: str, klass: str, elements: int, *, stock: Sequence[float], plan: Sequence[float]
    ) -> OpResult:
        judged = verdict(plan, stock)
        low, high = ratio_interval(stock, plan)
        return OpResult(
            name=name,
            klass=klass,
            stock=Summary.of(stock, elements, "Gelem/s"),
            plan=Summary.of(plan, elements, "Gelem/s"),
            ratio=Round3(judged.ratio),
            interval=(Round3(low), Round3(high)),
            label=judged.label,
        )


class ClassResult(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"klass": "class", "label": "verdict"},
):
    """One op class: the range of its ops' ratios, the union of their intervals, one verdict.

    A msgspec Struct for its JSON key "class" (see :class:`OpResult`).
    """

    klass: str
    ops: tuple[str, ...]
    ratio: tuple[Round3, Round3]  # the smallest op ratio and the largest
    interval: tuple[Round3, Round3]  # from the lowest op interval's start to the highest's end
    label: str  # faster, same, slower, or mixed

    @property
    def low(self) -> float:
        return self.ratio[0]

    @property
    def high(self) -> float:
        return self.ratio[1]


def compare(ops: Sequence[OpResult]) -> tuple[ClassResult, ...]:
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
                ratio=(
                    Round3(min(o.ratio for o in members)),
                    Round3(max(o.ratio for o in members)),
                ),
                interval=(
                    Round3(min(o.low for o in members)),
                    Round3(max(o.high for o in members)),
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
            return f"not measured ({self.error or 'oneDNN ran no kernel'})"
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
    summary: str = field(init=False)  # the one line: the element-wise ops, and matmul/conv
    tensorflow: str
    target: str
    stock_wheel: str
    compiler: CompilerUsed
    stock_flags: StockFlags
    plan_flags: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    classes: tuple[ClassResult, ...]
    ops: tuple[OpResult, ...]
    onednn: OneDnn

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", self._summary())

    def klass(self, name: str) -> ClassResult | None:
        return next((c for c in self.classes if c.klass == name), None)

    def _summary(self) -> str:
        """The one line: what the element-wise ops would do, and matmul/conv."""
        head = self.klass("transcendental")
        build = f"a build for {self.target}"
        if head is None:
            element = "would change nothing measured here"
        elif head.label == FASTER:
            element = (
                f"would run TensorFlow's element-wise ops about {_times(head.low, head.high)} "
                "faster here"
            )
        elif head.label == SLOWER:
            element = (
                "would run TensorFlow's element-wise ops about "
                f"{_times(1 / head.high, 1 / head.low)} slower here (a loss against stock)"
            )
        elif head.label == SAME:
            element = "would run TensorFlow's element-wise ops no faster here (within the noise)"
        else:
            labels = [o.label for o in self.ops if o.klass == head.klass]
            word = "faster" if SLOWER not in labels else "slower" if FASTER not in labels else ""
            beyond = f"{labels.count(word)} of {len(labels)} ops beyond the noise"
            if word == "faster":
                element = (
                    "would run TensorFlow's element-wise ops about "
                    f"{_times(head.low, head.high)} faster here ({beyond})"
                )
            elif word == "slower":
                element = (
                    "would run TensorFlow's element-wise ops about "
                    f"{_times(1 / head.high, 1 / head.low)} slower here ({beyond}: a loss "
                    "against stock)"
                )
            else:
                element = (
                    f"would run TensorFlow's element-wise ops {_times(head.low, head.high)} the "
                    "stock speed here, some faster and some slower"
                )
        if self.onednn.measured:
            rest = "matmul and conv would not change"
        else:
            rest = "matmul and conv: oneDNN's dispatch was not measured"
        return f"{build} {element}; {rest}"


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

    A msgspec Struct for its JSON key "class" (see :class:`OpResult`).
    """

    klass: str
    ops: tuple[str, ...]  # the forecast's ops that smoke measured too (one thread)
    forecast: tuple[Round3, Round3]
    measured: tuple[Round3, Round3] | None  # None: smoke measured none of them


def beside(saved: dict[str, Any], measured: Mapping[str, float]) -> tuple[Beside, ...]:
    """Per op class of a saved forecast (its JSON), the forecast's ratios and ``measured``: smoke's
    candidate-over-baseline ratio per op, one thread."""
    rows = []
    for klass in saved.get("classes", []):
        ops = [o for o in saved.get("ops", []) if o.get("class") == klass.get("class")]
        forecast = [float(o["ratio"]) for o in ops]
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
                forecast=(Round3(min(forecast)), Round3(max(forecast))),
                measured=(Round3(min(found.values())), Round3(max(found.values())))
                if found
                else None,
            )
        )
    return tuple(rows)
