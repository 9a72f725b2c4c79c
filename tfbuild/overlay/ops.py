"""Which of TensorFlow's kernels the overlay registers, and the two ``.inc`` files that say so.

Every entry is a kernel class or functor of the headers the stock wheel ships; the kernel files
(``cwise_kernels.cc``, ``nn_kernels.cc``, ``exact_kernels.cc``) instantiate them. Which data types each op is registered
for is read from the stock release's own registry (:func:`plan_kernels`): a type TensorFlow has no
CPU kernel for is never added, and an op whose stock kernels already sit at the overlay's priority
or above (another plugin, a oneDNN kernel) is left to them, since two kernels of one priority make
TensorFlow refuse the op.

Left out, and why (measured on 2^18 elements, one thread, stock tensorflow-cpu 2.21.0 against the
overlay for x86_64_v4 with clang 16, on an AMD Zen 5; ``benchmarks/overlay_ops.py``): see
:data:`LEFT_OUT`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tfbuild.measure.stock import StockKernel

#: The overlay's kernels are registered at this priority; TensorFlow's own CPU kernels at 0.
PRIORITY = 1

Kind = Literal["unary", "grad", "class", "own"]
Part = Literal["cwise", "nn", "exact"]
#: The kernel files, each one translation unit (``<part>_kernels.cc`` includes ``<part>_ops.inc``).
PARTS: tuple[Part, ...] = ("cwise", "nn", "exact")

#: TensorFlow's name of a type -> its C++ name in the kernel files.
CXX_TYPES = {
    "float32": "float",
    "float64": "double",
    "bfloat16": "bfloat16",
    "float16": "Eigen::half",
}


@dataclass(frozen=True, kw_only=True)
class OverlayOp:
    """One op: its name in TensorFlow, and the kernel of TensorFlow's headers that computes it."""

    name: str
    kind: Kind  # unary: UnaryOp<functor>; grad: SimpleBinaryOp<functor>; class: a header's class
    kernel: str  # the functor (exp) or class (EluOp, SoftplusOp)
    #: The kernel file: numeric_op.h and cwise_ops_common.h clash (cwise, nn); exact is compiled
    #: without Eigen's fast math (:data:`tfbuild.overlay.compile.PART_FLAGS`).
    part: Part


def _unary(name: str, functor: str) -> OverlayOp:
    return OverlayOp(name=name, kind="unary", kernel=functor, part="cwise")


def _grad(name: str, functor: str) -> OverlayOp:
    return OverlayOp(name=name, kind="grad", kernel=functor, part="cwise")


OPS: tuple[OverlayOp, ...] = (
    _unary("Exp", "exp"),
    _unary("Expm1", "expm1"),
    _unary("Log", "log"),
    _unary("Log1p", "log1p"),
    _unary("Tanh", "tanh"),
    _unary("Sigmoid", "sigmoid"),
    _unary("Erf", "erf"),
    _unary("Erfc", "erfc"),
    _unary("Rsqrt", "rsqrt"),
    OverlayOp(name="Sqrt", kind="unary", kernel="sqrt", part="exact"),
    _grad("TanhGrad", "tanh_grad"),
    _grad("SigmoidGrad", "sigmoid_grad"),
    _grad("RsqrtGrad", "rsqrt_grad"),
    _grad("SqrtGrad", "sqrt_grad"),
    OverlayOp(name="Softmax", kind="own", kernel="SoftmaxOp", part="cwise"),
    OverlayOp(name="LogSoftmax", kind="own", kernel="SoftmaxOp", part="cwise"),
    OverlayOp(name="Softplus", kind="own", kernel="SoftplusOp", part="nn"),
    OverlayOp(name="SoftplusGrad", kind="own", kernel="SoftplusGradOp", part="nn"),
    OverlayOp(name="Elu", kind="class", kernel="EluOp", part="nn"),
    OverlayOp(name="EluGrad", kind="class", kernel="EluGradOp", part="nn"),
    OverlayOp(name="Selu", kind="class", kernel="SeluOp", part="nn"),
    OverlayOp(name="SeluGrad", kind="class", kernel="SeluGradOp", part="nn"),
)

#: The casts the overlay registers, (SrcT, DstT): the mixed-precision ones. TensorFlow's Cast kernel
#: is one registration with no type constraint; these, constrained to one pair each, win that pair.
CASTS: tuple[tuple[str, str], ...] = (
    ("float32", "bfloat16"),
    ("bfloat16", "float32"),
    ("float32", "float16"),
    ("float16", "float32"),
)

_SOFTMAX = (
    "not faster than stock beyond noise (tfbuild smoke: same 1.02x ±1% at one thread, 1.00x ±5% "
    "at two, float32 2^18)"
)
#: Eigen's log1p (arch/Default/GenericPacketMathFunctions.h, generic_log1p) ends in
#: ``pselect(small, x, pmul(x, ratio))`` (small: x + 1 == 1). clang (16, -O2) compiles it for AVX
#: packets, as stock's are, to ``x * blend(small, 1, ratio)``, and for AVX-512 ones to a multiply
#: masked off where small, which leaves x itself. Under TensorFlow's denormals-are-zero x * 1 is 0
#: for a subnormal x: stock returns 0, an AVX-512 build x (an AVX2 build matches stock; measured
#: 1.34x stock's speed where AVX-512's is 2.41x). EIGEN_FAST_MATH changes none of it (same code).
_SUBNORMAL = (
    "differs from stock on subnormal inputs (tfbuild's special-value check): stock, under "
    "TensorFlow's denormals-are-zero, returns 0 (x * 1 in clang's code for AVX packets) where an "
    "AVX-512 build returns the input (a masked multiply)"
)
#: (op, type) pairs not registered, each with the measurement that left it out.
LEFT_OUT: Mapping[tuple[str, str], str] = {
    **{("Softmax", t): _SOFTMAX for t in ("float32", "float64", "bfloat16", "float16")},
    **{("Log1p", t): _SUBNORMAL for t in ("float32", "float64", "bfloat16")},
}
_F16C = (
    "stock's own half casts are F16C code already (vcvtps2ph); tfbuild smoke: same 0.99x ±2% at "
    "one thread, 0.97x ±3% at two"
)
#: Casts not registered, and why.
LEFT_OUT_CASTS: Mapping[tuple[str, str], str] = {
    ("float32", "float16"): _F16C,
    ("float16", "float32"): _F16C,
}


@dataclass(frozen=True, kw_only=True)
class Registration:
    """What the overlay registers: (op, type) pairs and casts, and what it left to the stock kernels."""

    kernels: tuple[tuple[str, str], ...]  # (op, type), in OPS order then type order
    casts: tuple[tuple[str, str], ...]
    skipped: tuple[str, ...]  # why an op or type of OPS is not registered, one line each

    @property
    def names(self) -> tuple[str, ...]:
        """Each registered kernel as ``Op:type`` (``Cast:float32->bfloat16``)."""
        return (
            *(f"{op}:{dtype}" for op, dtype in self.kernels),
            *(f"Cast:{src}->{dst}" for src, dst in self.casts),
        )


def registry_ops() -> tuple[str, ...]:
    """The ops whose stock kernels an overlay reads from the registry: its own, and Cast."""
    return tuple(sorted({op.name for op in OPS} | ({"Cast"} if CASTS else set())))


def plan_kernels(registry: Mapping[str, Sequence[StockKernel]]) -> Registration:
    """The (op, type) pairs of :data:`OPS` the stock release registers on the CPU at a priority below
    the overlay's, minus :data:`LEFT_OUT`; and the casts, when the release has a Cast kernel."""
    kernels: list[tuple[str, str]] = []
    skipped: list[str] = []
    for op in OPS:
        stock = [k for k in registry.get(op.name, ()) if not k[2]]  # labelled kernels: opt-in only
        if not stock:
            skipped.append(f"{op.name}: this release registers no CPU kernel for it")
            continue
        above = [k for k in stock if k[1] >= PRIORITY]
        if above:
            skipped.append(
                f"{op.name}: a CPU kernel of this release is registered at priority {above[0][1]}, "
                f"at or above the overlay's {PRIORITY}"
            )
            continue
        types = {t for k in stock for t in k[0].get("T", ())}
        for dtype in CXX_TYPES:
            if dtype not in types:
                continue
            why = LEFT_OUT.get((op.name, dtype))
            if why:
                skipped.append(f"{op.name} {dtype}: {why}")
            else:
                kernels.append((op.name, dtype))
    casts: tuple[tuple[str, str], ...] = ()
    cast = [k for k in registry.get("Cast", ()) if not k[2]]
    if cast and all(k[1] < PRIORITY for k in cast):
        casts = tuple(pair for pair in CASTS if pair not in LEFT_OUT_CASTS)
        skipped += [f"Cast {src}->{dst}: {why}" for (src, dst), why in LEFT_OUT_CASTS.items()]
    else:
        skipped.append("Cast: this release has no CPU Cast kernel below the overlay's priority")
    return Registration(kernels=tuple(kernels), casts=casts, skipped=tuple(skipped))


def inc_files(registration: Registration) -> dict[str, str]:
    """``<part>_ops.inc`` for each of :data:`PARTS`: one registration macro per line, in a fixed
    order."""
    by_name = {op.name: op for op in OPS}
    parts: dict[str, list[str]] = {part: [] for part in PARTS}
    for name, dtype in registration.kernels:  # the macro of its kind: TFB_UNARY, TFB_GRAD, ...
        op = by_name[name]
        parts[op.part].append(f'TFB_{op.kind.upper()}("{name}", {op.kernel}, {CXX_TYPES[dtype]});')
    for src, dst in registration.casts:
        parts["cwise"].append(f"TFB_CAST({CXX_TYPES[src]}, {CXX_TYPES[dst]});")
    head = "// Written by tfbuild (tfbuild/overlay/ops.py): the kernels this overlay registers.\n"
    return {
        f"{part}_ops.inc": head + "".join(f"{line}\n" for line in lines)
        for part, lines in parts.items()
    }


def candidate_names() -> tuple[str, ...]:
    """Every kernel an overlay of this tfbuild can register, as ``Op:type``, whatever the release
    (its registry narrows them): the kernels a profile counts as "a rebuild recompiles these with
    a gain" when no overlay names its own."""
    kernels = tuple((op.name, t) for op in OPS for t in CXX_TYPES if (op.name, t) not in LEFT_OUT)
    casts = tuple(pair for pair in CASTS if pair not in LEFT_OUT_CASTS)
    return Registration(kernels=kernels, casts=casts, skipped=()).names
