"""Whether the overlay's kernels compute what TensorFlow's own compute, on the same inputs.

``tfbuild/scripts/check_tf.py`` runs in the stock wheel's environment twice, with
TFBUILD_OVERLAY=off (TensorFlow's kernels) and on (the overlay's), and keeps every output's bits;
this module compares the two runs element by element, per op and type:

- where stock gives a NaN the overlay must give a NaN (of any payload), and no NaN elsewhere;
- where stock gives an infinity or a zero the overlay must give the same one, sign included, and
  no infinity where stock is finite;
- everywhere else the distance in ulp, units in the last place of the output's type: both bit
  patterns as integers ordered like the floats they encode (sign-magnitude to two's complement),
  subtracted. Adjacent floats are 1 apart, +0 and -0 are 0 apart.

The largest distance must stay within the op's bound (:data:`BOUNDS`, each with its reason).
"""

from __future__ import annotations

import array
import json
import math
import os
import struct
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfbuild.core import commands, serial
from tfbuild.core.errors import BuildFailed, EnvironmentProblem
from tfbuild.overlay.compile import loader_line
from tfbuild.wheel.overlay_receipt import KernelCheck

SCRIPT = commands.script("check_tf.py")


@dataclass(frozen=True, kw_only=True)
class Format:
    """A binary floating-point format: total, exponent and mantissa bits."""

    width: int
    exponent: int
    mantissa: int

    @property
    def sign(self) -> int:
        return 1 << (self.width - 1)

    @property
    def infinity(self) -> int:
        return ((1 << self.exponent) - 1) << self.mantissa


FORMATS: Mapping[str, Format] = {
    "float16": Format(width=16, exponent=5, mantissa=10),
    "bfloat16": Format(width=16, exponent=8, mantissa=7),
    "float32": Format(width=32, exponent=8, mantissa=23),
    "float64": Format(width=64, exponent=11, mantissa=52),
}


def ordered(bits: int, fmt: Format) -> int:
    """The bit pattern as an integer that orders like the float: -magnitude for negatives."""
    magnitude = bits & (fmt.sign - 1)
    return -magnitude if bits & fmt.sign else magnitude


def ulp_distance(a: int, b: int, fmt: Format) -> int:
    """How many steps from one float of ``fmt`` to the other (non-NaN bit patterns; +0 = -0)."""
    return abs(ordered(a, fmt) - ordered(b, fmt))


def is_nan(bits: int, fmt: Format) -> bool:
    return bits & (fmt.sign - 1) > fmt.infinity


def value(bits: int, dtype: str) -> float:
    """The float a bit pattern of ``dtype`` encodes."""
    if dtype == "bfloat16":
        return float(struct.unpack("<f", struct.pack("<I", bits << 16))[0])
    code = {"float16": "eH", "float32": "fI", "float64": "dQ"}[dtype]
    return float(struct.unpack(f"<{code[0]}", struct.pack(f"<{code[1]}", bits))[0])


@dataclass(frozen=True)
class Bound:
    """The most ulp an op may differ by, per output type, and why. With ``floor``, an output
    smaller in magnitude than it is measured in ulp of ``floor`` (when that is fewer)."""

    float32: int
    float64: int
    bfloat16: int
    float16: int
    why: str
    floor: float = 0.0

    def ulp(self, dtype: str) -> int:
        return int(getattr(self, dtype))


_POLY = "Eigen's polynomial, with FMA in the overlay's build and without in stock's"
#: Why an op exact in IEEE terms may differ: its packet and scalar code round differently (SqrtGrad:
#: g * (0.5 / y) against 0.5 * g / y), and the last n mod packet-width elements take the scalar code.
_TAIL = "Eigen's packet and scalar code differ, and the overlay's packets are wider"
#: Softmax: a row's sum of exps, in an order that follows the packet width (rows of up to 1000).
_SUM = "a row's sum, ordered by packet width"
_LOG_SOFTMAX = f"{_SUM}; log(sum) is off by ulp of 1, so outputs nearer 0 are measured in ulp of 1"
_SQRT = (
    "the sqrt instruction on both sides, correctly rounded (the overlay's compiled without "
    "Eigen's fast math, whose AVX-512 sqrt is an estimate): measured 0"
)

#: Per op, the most ulp by output type (float32, float64, bfloat16, float16) and why the op may
#: differ at all, with what was measured (in that order) on an AMD Zen 5, the full overlay built
#: for x86_64_v4 by clang 16; a bound leaves about half again for other targets and compilers.
BOUNDS: Mapping[str, Bound] = {
    "Cast": Bound(0, 0, 0, 0, "correctly rounded conversions have one answer: measured 0"),
    "Exp": Bound(2, 2, 1, 1, f"{_POLY}: measured 1, 0, 0, 0"),
    "Expm1": Bound(4, 3, 1, 1, f"{_POLY}: measured 3, 2, 0, 0"),
    "Log": Bound(3, 2, 1, 1, f"{_POLY}: measured 2, 1, 0, 0"),
    "Log1p": Bound(3, 3, 1, 1, f"{_POLY}: measured 2, 2, 0, 1"),
    "Tanh": Bound(9, 10, 1, 1, f"{_POLY}, clamped to 1 at another |x|: measured 6, 7, 0, 1"),
    "Sigmoid": Bound(5, 2, 1, 1, f"{_POLY}: measured 3, 0, 0, 0"),
    "Erf": Bound(8, 3, 1, 1, f"{_POLY}: measured 5, 2, 0, 0"),
    # exp(-x^2): an ulp of x^2 (< 128 in float32, < 1024 in float64) is 64 (512) ulp of the result
    "Erfc": Bound(96, 768, 1, 1, f"{_POLY}, of exp(-x^2): measured 53, 142, 0, 0"),
    "Rsqrt": Bound(3, 3, 1, 1, "estimates of another width, Newton steps: measured 2, 2, 0, 0"),
    "Sqrt": Bound(0, 0, 0, 0, _SQRT),
    "Softplus": Bound(6, 3, 1, 1, f"exp and log1p, {_POLY}: measured 4, 2, 0, 0"),
    "Elu": Bound(2, 2, 1, 1, f"expm1 below 0, {_POLY}: measured 1, 0, 0, 0"),
    "Selu": Bound(2, 2, 1, 1, f"expm1 below 0, {_POLY}: measured 1, 0, 0, 0"),
    "TanhGrad": Bound(2, 2, 1, 1, f"{_TAIL}: measured 0, 0, 0, 0"),
    "SigmoidGrad": Bound(2, 2, 1, 1, f"{_TAIL}: measured 1, 0, 0, 0"),
    "RsqrtGrad": Bound(2, 2, 1, 1, f"{_TAIL}: measured 0, 0, 0, 0"),
    "SqrtGrad": Bound(2, 2, 1, 1, f"{_TAIL}: measured 1, 0, 0, 0"),
    "SoftplusGrad": Bound(2, 2, 1, 1, f"g / (1 + exp(-x)), {_POLY}: measured 1, 0, 0, 0"),
    "EluGrad": Bound(0, 0, 0, 0, "one Eigen expression of IEEE operations: measured 0"),
    "SeluGrad": Bound(0, 0, 0, 0, "one Eigen expression of IEEE operations: measured 0"),
    "Softmax": Bound(4, 40, 2, 8, f"exp, {_SUM}, in float16 for it: measured 0, 24, 0, 4"),
    # in their own ulp, outputs near 0 differed by up to 67108863
    "LogSoftmax": Bound(4, 24, 3, 4, f"{_LOG_SOFTMAX}: measured 2, 12, 2, 2", floor=1.0),
}


@dataclass(frozen=True, kw_only=True)
class Part:
    """One computation of both runs: an op on one array (or a pair of arrays) of inputs."""

    name: str  # "dense", "key x key", "rows of 16", ...
    input_dtypes: tuple[str, ...]
    inputs: tuple[Sequence[int], ...]  # bit patterns, one sequence per input of the op
    stock: Sequence[int]
    overlay: Sequence[int]
    overlaid: bool = True  # the overlay registered a kernel for this op and type


@dataclass(frozen=True, kw_only=True)
class Worst:
    """The element that differs most: a NaN, infinity or zero not kept first, then the most ulp."""

    part: str
    index: int
    inputs: tuple[float, ...]
    stock: float
    overlay: float
    ulp: int | None  # None: a NaN, infinity or zero not kept


@dataclass(frozen=True, kw_only=True)
class OpCheck:
    op: str
    dtype: str  # the op's type, or "float32->bfloat16" for a cast
    overlaid: bool  # the overlay registered a kernel for it (else stock ran twice)
    values: int  # elements compared
    exact: int  # of them bit for bit the same (any two NaNs count as the same)
    max_ulp: int
    nan_mismatches: int
    special_mismatches: int  # infinities and zeros (with their sign) not kept
    bound: int
    worst: Worst | None = None
    problem: str = ""  # one run computed the op and the other did not

    @property
    def passed(self) -> bool:
        failed = self.problem or self.nan_mismatches or self.special_mismatches
        return not failed and self.max_ulp <= self.bound

    def line(self) -> str:
        """One line: the verdict, the counts and, when not exact, the worst element."""
        text = f"{self.op} {self.dtype}: {'ok' if self.passed else 'FAILED'}, "
        if self.problem:
            return text + self.problem
        text += f"{self.exact}/{self.values} exact, max {self.max_ulp} ulp (bound {self.bound})"
        text += f", {self.nan_mismatches} NaN and {self.special_mismatches} inf/zero mismatches"
        if (w := self.worst) is not None:
            args = ", ".join(repr(x) for x in w.inputs)
            text += f"; worst: {w.part} [{w.index}] of ({args}): stock {w.stock!r}, overlay {w.overlay!r}"
        return text


def compare(op: str, dtype: str, parts: Sequence[Part], bound: Bound) -> OpCheck:
    """Both runs' outputs of one op and type, element by element (see the module's docstring)."""
    out_dtype = dtype.rsplit("->", 1)[-1]
    fmt, limit = FORMATS[out_dtype], bound.ulp(out_dtype)
    spacing = math.ldexp(1.0, math.frexp(bound.floor)[1] - 1 - fmt.mantissa) if bound.floor else 0
    values = exact = max_ulp = nans = specials = 0
    worst: tuple[int, Part, int] | None = None  # (ulp, or -1 for NaN/inf/zero; part; index)
    step = 4096  # chunks compared whole first, in C: most are the same
    for part in parts:
        stock, overlay = part.stock, part.overlay
        values += len(stock)
        for start in range(0, len(stock), step):
            if stock[start : start + step] == overlay[start : start + step]:
                exact += len(stock[start : start + step])
                continue
            for i in range(start, min(start + step, len(stock))):
                s, o = stock[i], overlay[i]
                s_nan, o_nan = is_nan(s, fmt), is_nan(o, fmt)
                if s == o or (s_nan and o_nan):
                    exact += 1
                    continue
                if s_nan or o_nan:
                    nans += 1
                elif s & (fmt.sign - 1) in (0, fmt.infinity) or o & (fmt.sign - 1) == fmt.infinity:
                    specials += 1
                else:
                    ulp = ulp_distance(s, o, fmt)
                    a = value(s, out_dtype)
                    if spacing and abs(a) < bound.floor:
                        ulp = min(ulp, math.ceil(abs(a - value(o, out_dtype)) / spacing))
                    max_ulp = max(max_ulp, ulp)
                    if worst is None or 0 <= worst[0] < ulp:
                        worst = (ulp, part, i)
                    continue
                if worst is None or worst[0] >= 0:
                    worst = (-1, part, i)
    found = None
    if worst is not None:
        ulp, part, i = worst
        found = Worst(
            part=part.name,
            index=i,
            inputs=tuple(map(value, (x[i] for x in part.inputs), part.input_dtypes)),
            stock=value(part.stock[i], out_dtype),
            overlay=value(part.overlay[i], out_dtype),
            ulp=None if ulp < 0 else ulp,
        )
    return OpCheck(
        op=op,
        dtype=dtype,
        overlaid=any(p.overlaid for p in parts),
        values=values,
        exact=exact,
        max_ulp=max_ulp,
        nan_mismatches=nans,
        special_mismatches=specials,
        bound=limit,
        worst=found,
    )


# --- running the script ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Record:
    """One computation as index.json lists it: arrays as (dtype, file in the zip)."""

    op: str
    dtype: str
    part: str
    overlaid: bool
    out: tuple[str, str] | None = None
    inputs: tuple[tuple[str, str], ...] = ()
    error: str = ""  # TensorFlow refused the op (no kernel): no out, no inputs


@dataclass(frozen=True, kw_only=True)
class Index:
    tensorflow: str
    overlaid: int  # computations with an overlay kernel registered
    records: tuple[Record, ...]


def _bits(archive: zipfile.ZipFile, entry: tuple[str, str]) -> array.array[int]:
    width = FORMATS[entry[0]].width
    out = array.array(next(c for c in "HILQ" if array.array(c).itemsize * 8 == width))
    out.frombytes(archive.read(entry[1]))
    if sys.byteorder == "big":
        out.byteswap()
    return out


def _run(python: str, env: Mapping[str, str], mode: str, out: Path) -> tuple[Index, str | None]:
    """The run's records, and the loader's line if it said why it did not load."""
    what = f"the overlay's numerical check (TFBUILD_OVERLAY={mode}) could not run"
    call = commands.Command(
        argv=commands.in_python(python, SCRIPT, str(out), paths=commands.python_path(env)),
        what=what,
        fix=f"Check that {python} imports tensorflow and numpy.",
        env=env,
        timeout=900,
    )
    done = commands.run(call)
    if not out.is_file():
        raise commands.failure(call, done, "it wrote no results")
    try:
        with zipfile.ZipFile(out) as archive:
            index = serial.from_data(json.loads(archive.read("index.json")), Index)
        for r in index.records:
            types = {
                r.dtype.rsplit("->", 1)[-1],
                *(t for t, _ in (*r.inputs, *filter(None, [r.out]))),
            }
            if r.op not in BOUNDS or not types <= FORMATS.keys():
                raise serial.DecodeFailure(f"unknown op or type: {r.op} {r.dtype}")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise EnvironmentProblem(what, why=f"its output is unreadable: {exc}") from exc
    said = loader_line(done.stderr, last=True)
    return index, (None if said is None else said[:400])


def unchecked(registered: Iterable[str], results: Iterable[OpCheck]) -> tuple[str, ...]:
    """The kernels an overlay registers (``Op:dtype``) that the check did not run as the overlay's:
    not in its corpus, or stock's ran in their place. Each is one an overlay must not ship."""
    ran = {f"{r.op}:{r.dtype}" for r in results if r.overlaid}
    return tuple(sorted(set(registered) - ran))


def check_ops(
    python: str, env: Mapping[str, str], pythonpath: str | None = None
) -> tuple[OpCheck, ...]:
    """Every op and type of the corpus, overlay against stock: ``python`` (the stock wheel's
    interpreter) runs the script in ``env`` with ``pythonpath`` (the site-packages directory that
    holds tensorflow-plugins/) first on PYTHONPATH. EnvironmentProblem when a run fails, when the
    overlay is not loaded with TFBUILD_OVERLAY=check (on, its own check not awaited), or is with
    off."""
    full = {"TF_CPP_MIN_LOG_LEVEL": "3", **env}
    if pythonpath is not None:
        full["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="tfbuild-check-") as tmp:
        off_zip, on_zip = Path(tmp) / "off.zip", Path(tmp) / "on.zip"
        off, _ = _run(python, {**full, "TFBUILD_OVERLAY": "off"}, "off", off_zip)
        if off.overlaid:
            raise EnvironmentProblem(
                "TFBUILD_OVERLAY=off did not keep the overlay's kernels out",
                why=f"{off.overlaid} of the computations had a kernel above TensorFlow's own",
                fix="Check the loader in tensorflow-plugins/: it must not load when off.",
            )
        # "check": on, and an overlay whose check is pending on this machine loads for it
        on, loader_said = _run(python, {**full, "TFBUILD_OVERLAY": "check"}, "check", on_zip)
        if not on.overlaid:
            raise EnvironmentProblem(
                "the overlay's kernels were not loaded with TFBUILD_OVERLAY=check",
                why=f"its loader said: {loader_said}"
                if loader_said
                else "no op checked had a kernel above TensorFlow's own, and its loader said "
                "nothing (was tensorflow-plugins/ scanned?)",
                fix="Build for a target this CPU runs (tfbuild detect names it), or check the "
                "overlay on a machine of its target.",
            )
        with zipfile.ZipFile(off_zip) as off_archive, zipfile.ZipFile(on_zip) as on_archive:
            return _compare_runs(off.records, off_archive, on.records, on_archive)


def verify_kernels(
    python: str, env: Mapping[str, str], pythonpath: str | None, registered: Sequence[str]
) -> tuple[KernelCheck, ...]:
    """:func:`check_ops`, held to what an overlay must prove: every kernel it registers
    (``registered``, ``Op:dtype``) ran as the overlay's and stayed within its bound. BuildFailed
    otherwise, naming the first kernel unchecked or beyond its bound."""
    results = check_ops(python, env, pythonpath)
    missed = unchecked(registered, results)
    if missed:
        raise BuildFailed(
            f"{len(missed)} kernel(s) the overlay registers were not checked against stock: "
            f"{', '.join(missed[:6])}",
            why="an overlay's kernels run only once its special-value check has covered each; "
            "the check's corpus (tfbuild/scripts/check_tf.py) lacks them, or stock's ran there",
            fix="Report it to tfbuild with the receipt's TensorFlow and target.",
        )
    failed = [r for r in results if r.overlaid and not r.passed]
    if failed:
        raise BuildFailed(
            f"{len(failed)} kernel(s) differ from stock TensorFlow beyond their bound",
            why=failed[0].line(),
            fix="Report it to tfbuild with the receipt's compiler and target; --target picks "
            "another target meanwhile.",
        )
    wanted = set(registered)
    return tuple(
        KernelCheck(
            kernel=f"{r.op}:{r.dtype}",
            values=r.values,
            exact=r.exact,
            max_ulp=r.max_ulp,
            bound=r.bound,
        )
        for r in results
        if r.overlaid and f"{r.op}:{r.dtype}" in wanted
    )


def _compare_runs(
    off: Sequence[Record], off_zip: zipfile.ZipFile, on: Sequence[Record], on_zip: zipfile.ZipFile
) -> tuple[OpCheck, ...]:
    on_by_key = {(r.op, r.dtype, r.part): r for r in on}
    grouped: dict[tuple[str, str], list[Part]] = {}
    problems: dict[tuple[str, str], str] = {}
    for stock in off:
        grouped.setdefault((stock.op, stock.dtype), [])
        other = on_by_key.pop((stock.op, stock.dtype, stock.part), None)
        if other is None or (stock.out is None) != (other.out is None):
            said = "nothing" if other is None else other.error or "computed it"
            problem = f"{stock.part}: stock {stock.error or 'computed it'}, the overlay {said}"
            problems[stock.op, stock.dtype] = problem
        elif stock.out is not None and other.out is not None:  # else neither registers it
            inputs = tuple(_bits(off_zip, e) for e in stock.inputs)
            if inputs != tuple(_bits(on_zip, e) for e in other.inputs):
                raise EnvironmentProblem(
                    "the overlay's numerical check computed on other inputs in its second run",
                    why=f"{stock.op} {stock.dtype} {stock.part}: the corpus is not deterministic",
                    fix="Report this as a bug of tfbuild.",
                )
            part = Part(
                name=stock.part,
                input_dtypes=tuple(t for t, _ in stock.inputs),
                inputs=inputs,
                stock=_bits(off_zip, stock.out),
                overlay=_bits(on_zip, other.out),
                overlaid=other.overlaid,
            )
            grouped[stock.op, stock.dtype].append(part)
    for op, dtype, part_name in on_by_key:
        grouped.setdefault((op, dtype), [])
        problems[op, dtype] = f"{part_name}: computed with the overlay only"
    checks = {key: compare(*key, parts, BOUNDS[key[0]]) for key, parts in grouped.items()}
    for key, problem in problems.items():
        checks[key] = replace(checks[key], overlaid=True, problem=problem)
    return tuple(c for key, c in checks.items() if grouped[key] or key in problems)
