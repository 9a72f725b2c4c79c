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
from typing import Any

from tfbuild.core import serial
from tfbuild.smoke.stats import FASTER, SAME, SLOWER, Summary, verdict

SCHEMA = "tfbuild.forecast/1"

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


@dataclass(frozen=True, kw_only=True)
class OpResult:
    """One op: each side's rate and the plan build's speed-up over the stock flags."""

    name: str
    klass: str
    stock: Summary
    plan: Summary
    ratio: float
    low: float
    high: float
    label: str  # faster, same or slower (the smoke's verdict)

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
            ratio=judged.ratio,
            low=low,
            high=high,
            label=judged.label,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.name,
            "class": self.klass,
            "stock": serial.to_data(self.stock),
            "plan": serial.to_data(self.plan),
            "ratio": round(self.ratio, 3),
            "interval": [round(self.low, 3), round(self.high, 3)],
            "verdict": self.label,
        }


@dataclass(frozen=True, kw_only=True)
class ClassResult:
    """One op class: the range of its ops' ratios, the union of their intervals, one verdict."""

    klass: str
    ops: tuple[str, ...]
    low: float  # the smallest op ratio
    high: float  # the largest
    interval: tuple[float, float]  # from the lowest op interval's start to the highest's end
    label: str  # faster, same, slower, or mixed

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.klass,
            "ops": list(self.ops),
            "ratio": [round(self.low, 3), round(self.high, 3)],
            "interval": [round(self.interval[0], 3), round(self.interval[1], 3)],
            "verdict": self.label,
        }


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
                low=min(o.ratio for o in members),
                high=max(o.ratio for o in members),
                interval=(min(o.low for o in members), max(o.high for o in members)),
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
class Forecast:
    """The whole forecast: what was compiled how, each op and class, and oneDNN's dispatch."""

    tensorflow: str
    target: str
    stock_wheel: str
    compiler: str
    compiler_why: str
    stock_flags: tuple[str, ...]
    stock_flags_source: str
    plan_flags: tuple[str, ...]
    ops: tuple[OpResult, ...]
    classes: tuple[ClassResult, ...]
    onednn: OneDnn
    notes: tuple[str, ...] = field(default=())

    def klass(self, name: str) -> ClassResult | None:
        return next((c for c in self.classes if c.klass == name), None)

    def summary(self) -> str:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "summary": self.summary(),
            "tensorflow": self.tensorflow,
            "target": self.target,
            "stock_wheel": self.stock_wheel,
            "compiler": {"version": self.compiler, "why": self.compiler_why},
            "stock_flags": {"flags": list(self.stock_flags), "source": self.stock_flags_source},
            "plan_flags": list(self.plan_flags),
            "notes": list(self.notes),
            "classes": [c.to_json() for c in self.classes],
            "ops": [o.to_json() for o in self.ops],
            "onednn": serial.to_data(self.onednn),
        }


# --- the forecast beside what tfbuild smoke measured ----------------------------------------------

#: Smoke's names for the forecast's ops where they differ (smoke sums along the last axis).
SMOKE_NAMES = {"sum": "reduce_sum"}


@dataclass(frozen=True, kw_only=True)
class Beside:
    """One op class: the forecast's ratio range and the one smoke measured for the same ops."""

    klass: str
    ops: tuple[str, ...]  # the forecast's ops that smoke measured too (one thread)
    forecast: tuple[float, float]
    measured: tuple[float, float] | None  # None: smoke measured none of them

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.klass,
            "ops": list(self.ops),
            "forecast": [round(v, 3) for v in self.forecast],
            "measured": [round(v, 3) for v in self.measured] if self.measured else None,
        }


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
                forecast=(min(forecast), max(forecast)),
                measured=(min(found.values()), max(found.values())) if found else None,
            )
        )
    return tuple(rows)
