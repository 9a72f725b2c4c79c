"""The overlay's numerical check: the ulp arithmetic on every format, the comparison's rules (NaN,
infinities, signed zeros, bounds, the floor of LogSoftmax), the two runs through a stand-in
interpreter, and the real check of a real overlay against stock TensorFlow."""

from __future__ import annotations

import json
import math
import os
import shlex
import stat
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfbuild.core.errors import EnvironmentProblem
from tfbuild.overlay.check import (
    BOUNDS,
    FORMATS,
    OpCheck,
    Part,
    check_ops,
    compare,
    is_nan,
    ordered,
    ulp_distance,
    unchecked,
    value,
)

DTYPES = tuple(FORMATS)


def bits_of(x: float, dtype: str) -> int:
    """The bit pattern of ``x``, which must be exact in ``dtype``."""
    if dtype == "bfloat16":
        wide = struct.unpack("<I", struct.pack("<f", x))[0]
        assert wide & 0xFFFF == 0, f"{x!r} is not a bfloat16"
        return int(wide >> 16)
    code = {"float16": "eH", "float32": "fI", "float64": "dQ"}[dtype]
    return int(struct.unpack(f"<{code[1]}", struct.pack(f"<{code[0]}", x))[0])


def non_nan(dtype: str) -> st.SearchStrategy[int]:
    fmt = FORMATS[dtype]
    return st.integers(0, (1 << fmt.width) - 1).filter(lambda b: not is_nan(b, fmt))


@st.composite
def dtype_and_bits(draw: Any, count: int = 1) -> tuple[str, list[int]]:
    dtype = draw(st.sampled_from(DTYPES))
    return dtype, [draw(non_nan(dtype)) for _ in range(count)]


# --- the ulp arithmetic ---------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(dtype_and_bits())
def test_adjacent_floats_are_one_ulp_apart(case: tuple[str, list[int]]) -> None:
    dtype, (bits,) = case
    fmt = FORMATS[dtype]
    if bits & (fmt.sign - 1) == fmt.infinity:
        bits -= 1  # the largest finite: its neighbour away from zero is the infinity
    away = bits + 1  # one step further from zero, same sign
    assert ulp_distance(bits, away, fmt) == 1
    assert abs(value(away, dtype)) > abs(value(bits, dtype))


@settings(max_examples=400, deadline=None)
@given(dtype_and_bits(count=2))
def test_distance_is_symmetric_and_zero_only_for_the_same_float(
    case: tuple[str, list[int]],
) -> None:
    dtype, (a, b) = case
    fmt = FORMATS[dtype]
    assert ulp_distance(a, b, fmt) == ulp_distance(b, a, fmt)
    assert (ulp_distance(a, b, fmt) == 0) == (value(a, dtype) == value(b, dtype))


@settings(max_examples=400, deadline=None)
@given(dtype_and_bits(count=3))
def test_ordered_orders_like_the_floats_and_distances_add_up(case: tuple[str, list[int]]) -> None:
    dtype, bits = case
    fmt = FORMATS[dtype]
    a, b, c = sorted(bits, key=lambda x: ordered(x, fmt))
    assert value(a, dtype) <= value(b, dtype) <= value(c, dtype)
    assert ulp_distance(a, c, fmt) == ulp_distance(a, b, fmt) + ulp_distance(b, c, fmt)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(allow_nan=False, allow_infinity=False), st.integers(1, 40), st.sampled_from([1, -1])
)
def test_float64_steps_of_nextafter_are_ulps(x: float, steps: int, direction: int) -> None:
    y, taken = x, 0
    while taken < steps and not math.isinf(y):
        y, taken = math.nextafter(y, direction * math.inf), taken + 1
    assert ulp_distance(bits_of(x, "float64"), bits_of(y, "float64"), FORMATS["float64"]) == taken


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False), st.floats(width=16, allow_nan=False))
def test_value_reads_what_struct_writes(f32: float, f16: float) -> None:
    assert value(bits_of(f32, "float32"), "float32") == f32
    assert value(bits_of(f16, "float16"), "float16") == f16


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_infinities_and_nans(dtype: str) -> None:
    fmt = FORMATS[dtype]
    plus_zero, minus_zero, smallest = 0, fmt.sign, 1
    assert ulp_distance(plus_zero, minus_zero, fmt) == 0
    assert ulp_distance(smallest, smallest | fmt.sign, fmt) == 2  # through the zero
    assert value(fmt.infinity, dtype) == math.inf
    assert value(fmt.infinity | fmt.sign, dtype) == -math.inf
    assert not is_nan(fmt.infinity, fmt) and not is_nan(fmt.infinity - 1, fmt)
    assert is_nan(fmt.infinity + 1, fmt) and is_nan(fmt.sign | fmt.infinity | 1, fmt)
    assert ulp_distance(fmt.infinity - 1, fmt.infinity, fmt) == 1
    assert value(bits_of(1.0, dtype), dtype) == 1.0


def test_bfloat16_is_the_top_half_of_float32() -> None:
    assert value(0x3F80, "bfloat16") == 1.0
    assert value(0x4049, "bfloat16") == 3.140625
    assert value(0x0001, "bfloat16") == struct.unpack("<f", struct.pack("<I", 0x10000))[0]


# --- the comparison ---------------------------------------------------------------------------------


def part(
    dtype: str, stock: list[float | int], overlay: list[float | int], name: str = "dense"
) -> Part:
    """A unary computation; floats are encoded, ints are taken as bit patterns."""

    def enc(xs: list[float | int]) -> list[int]:
        return [x if isinstance(x, int) else bits_of(x, dtype) for x in xs]

    inputs = enc([float(i) for i in range(len(stock))])
    return Part(
        name=name, input_dtypes=(dtype,), inputs=(inputs,), stock=enc(stock), overlay=enc(overlay)
    )


def test_nans_of_any_payload_and_sign_agree() -> None:
    fmt = FORMATS["float32"]
    quiet, other = fmt.infinity | (1 << 22), fmt.sign | fmt.infinity | (1 << 22) | 5
    check = compare("Exp", "float32", [part("float32", [quiet, 1.0], [other, 1.0])], BOUNDS["Exp"])
    assert check.passed and check.exact == check.values == 2 and check.worst is None


@pytest.mark.parametrize(
    ("stock", "overlay", "nans", "specials"),
    [
        (math.nan, 1.0, 1, 0),  # NaN not kept
        (1.0, math.nan, 1, 0),  # NaN made up
        (0.0, -0.0, 0, 1),  # the sign of a zero
        (-0.0, 1e-45, 0, 1),  # a zero not kept
        (math.inf, 3.4028234663852886e38, 0, 1),  # an infinity not kept
        (3.4028234663852886e38, math.inf, 0, 1),  # an infinity made up
        (-math.inf, math.inf, 0, 1),
    ],
)
def test_nan_infinity_and_zero_disagreements_fail(
    stock: float, overlay: float, nans: int, specials: int
) -> None:
    check = compare(
        "Exp", "float32", [part("float32", [2.0, stock], [2.0, overlay])], BOUNDS["Exp"]
    )
    assert (check.nan_mismatches, check.special_mismatches) == (nans, specials)
    assert not check.passed
    assert check.worst is not None and check.worst.ulp is None and check.worst.index == 1
    assert check.worst.inputs == (1.0,) and "FAILED" in check.line()


def test_ulps_within_the_bound_pass_and_beyond_it_fail_with_the_worst_input() -> None:
    one = bits_of(1.0, "float32")
    stock = [1.0, 2.0, 4.0, 8.0]
    overlay = [one + 1, 2.0, bits_of(4.0, "float32") - 2, 8.0]
    exp = compare("Exp", "float32", [part("float32", stock, overlay)], BOUNDS["Exp"])
    assert (exp.max_ulp, exp.exact, exp.values, exp.bound) == (2, 2, 4, 2) and exp.passed
    assert exp.worst is not None and exp.worst.ulp == 2 and exp.worst.inputs == (2.0,)
    cast = compare("Cast", "float32->bfloat16", [part("bfloat16", [1.0], [0x3F81])], BOUNDS["Cast"])
    assert not cast.passed and cast.bound == 0
    assert "stock 1.0, overlay 1.0078125" in cast.line()


def test_a_special_mismatch_is_the_worst_even_after_a_large_ulp_distance() -> None:
    parts = [part("float64", [1.0, 0.0], [1.5, 0.0]), part("float64", [0.0], [-0.0], name="b")]
    check = compare("Tanh", "float64", parts, BOUNDS["Tanh"])
    assert check.worst is not None and check.worst.part == "b" and check.worst.ulp is None
    assert check.max_ulp == 1 << 51


def test_log_softmax_outputs_near_zero_are_measured_in_ulps_of_one() -> None:
    # measured: log(sum) off by 2 ulp of 1, which are 1048582 ulp of the output
    stock, overlay = (
        struct.unpack("<f", struct.pack("<f", x))[0] for x in (-2.1457e-06, -1.9073e-06)
    )
    parts = [part("float32", [stock], [overlay])]
    assert compare("LogSoftmax", "float32", parts, BOUNDS["LogSoftmax"]).max_ulp == 2
    assert compare("Softmax", "float32", parts, BOUNDS["Softmax"]).max_ulp > 1_000_000


def test_every_bound_has_a_reason_and_casts_and_plain_arithmetic_are_exact() -> None:
    for op, bound in BOUNDS.items():
        assert bound.why, op
    for op in ("Cast", "EluGrad", "SeluGrad"):
        assert {BOUNDS[op].ulp(t) for t in DTYPES} == {0}


# --- the two runs, through a stand-in for the stock interpreter --------------------------------------

#: Writes the zip the real script would, from the spec of its mode (TFBUILD_OVERLAY) in FAKE_SPEC.
FAKE = """
import json, os, struct, sys, zipfile
spec = json.load(open(os.environ["FAKE_SPEC"]))[os.environ["TFBUILD_OVERLAY"]]
if "fail" in spec:
    sys.exit(spec["fail"])
with zipfile.ZipFile(sys.argv[-1], "w") as out:  # the last argument, as check_tf.py takes it
    for name, (code, values) in spec.pop("files").items():
        out.writestr(name, struct.pack(f"<{len(values)}{code}", *values))
    out.writestr("index.json", json.dumps(spec))
"""


def fake_python(tmp_path: Path, spec: dict[str, Any]) -> tuple[str, dict[str, str]]:
    # Not a #! line naming this Python: where the checkout's path has a space, or is longer than
    # the kernel reads of a #! line (127 bytes before Linux 5.1), that line would not run it.
    (tmp_path / "fake.py").write_text(FAKE)
    script = tmp_path / "python"
    python, fake = shlex.quote(sys.executable), shlex.quote(str(tmp_path / "fake.py"))
    script.write_text(f'#!/bin/sh\nexec {python} {fake} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return str(script), {**os.environ, "FAKE_SPEC": str(tmp_path / "spec.json")}


def run_spec(stock: list[int], overlay: list[int], *, overlaid: int = 1) -> dict[str, Any]:
    """Exp float32 on two inputs, computed by both runs; Erf float16 by the overlay's only."""
    computed = {"out": ["float32", "out"], "inputs": [["float32", "in"]]}

    def mode(out: list[int], flag: int, erf: dict[str, Any]) -> dict[str, Any]:
        exp = {"op": "Exp", "dtype": "float32", "part": "dense", "overlaid": bool(flag)}
        return {
            "tensorflow": "2.21.0",
            "overlaid": flag,
            "records": [
                {**exp, **computed},
                {"op": "Erf", "dtype": "float16", "part": "dense", "overlaid": False, **erf},
            ],
            "files": {"in": ["f", [1.0, 2.0]], "out": ["I", out]},
        }

    off = mode(stock, 0, {"error": "NotFoundError: no kernel"})
    return {"off": off, "check": mode(overlay, overlaid, computed)}


def test_the_runs_compare_and_an_op_only_one_run_computes_is_a_failure(tmp_path: Path) -> None:
    one = bits_of(1.0, "float32")
    python, env = fake_python(tmp_path, run_spec([one, one], [one, one + 1]))
    checks = {(c.op, c.dtype): c for c in check_ops(python, env, str(tmp_path))}
    exp, erf = checks["Exp", "float32"], checks["Erf", "float16"]
    assert exp.passed and exp.overlaid and (exp.values, exp.exact, exp.max_ulp) == (2, 1, 1)
    assert exp.worst is not None and exp.worst.inputs == (2.0,)
    assert (
        not erf.passed
        and "NotFoundError" in erf.problem
        and [c for c in checks.values() if not c.passed] == [erf]
    )


def test_an_overlay_not_loaded_with_on_is_an_environment_problem(tmp_path: Path) -> None:
    python, env = fake_python(tmp_path, run_spec([0, 0], [0, 0], overlaid=0))
    with pytest.raises(EnvironmentProblem, match="not loaded with TFBUILD_OVERLAY=check"):
        check_ops(python, env)


def test_an_overlay_loaded_with_off_is_an_environment_problem(tmp_path: Path) -> None:
    spec = run_spec([0, 0], [0, 0])
    spec["off"]["overlaid"] = 3
    python, env = fake_python(tmp_path, spec)
    with pytest.raises(EnvironmentProblem, match="did not keep the overlay's kernels out"):
        check_ops(python, env)


def test_a_script_that_fails_or_a_missing_interpreter_is_an_environment_problem(
    tmp_path: Path,
) -> None:
    python, env = fake_python(tmp_path, {"off": {"fail": "ImportError: no tensorflow"}})
    said = r"could not run: check_tf\.py: it exited with 1: ImportError: no tensorflow"
    with pytest.raises(EnvironmentProblem, match=said):
        check_ops(python, env)
    with pytest.raises(EnvironmentProblem, match="could not run"):
        check_ops(str(tmp_path / "nowhere" / "python"), env)


def test_runs_on_other_inputs_are_refused(tmp_path: Path) -> None:
    spec = run_spec([0, 0], [0, 0])
    spec["check"]["files"]["in"] = ["f", [1.0, 3.0]]
    python, env = fake_python(tmp_path, spec)
    with pytest.raises(EnvironmentProblem, match="other inputs"):
        check_ops(python, env)


# --- the real check ---------------------------------------------------------------------------------

OPS = (
    *("Exp", "Expm1", "Log", "Log1p", "Tanh", "Sigmoid", "Erf", "Erfc", "Rsqrt", "Sqrt"),
    *("Softplus", "Elu", "Selu", "TanhGrad", "SigmoidGrad", "RsqrtGrad", "SqrtGrad"),
    *("SoftplusGrad", "EluGrad", "SeluGrad", "Softmax", "LogSoftmax"),
)
CASTS = ("float32->bfloat16", "bfloat16->float32", "float32->float16", "float16->float32")


@pytest.mark.slow
def test_the_overlay_computes_what_stock_tensorflow_computes(built_overlay: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TFBUILD_OVERLAY")}
    checks = check_ops(built_overlay.python, env, built_overlay.site)
    by_key = {(c.op, c.dtype): c for c in checks}
    expected = {(op, t) for op in OPS for t in DTYPES} | {("Cast", c) for c in CASTS}
    assert set(by_key) == expected
    assert any(c.overlaid for c in checks)
    assert all(c.values > 0 for c in checks)
    failed = [c for c in checks if not c.passed]
    assert not failed, "\n".join(c.line() for c in failed)
    # every kernel the overlay registers was run as the overlay's, and checked
    assert unchecked(built_overlay.result.receipt.kernels, checks) == ()
    for dtype in DTYPES:  # compiled without Eigen's fast math: the sqrt instruction, as stock's
        sqrt = by_key["Sqrt", dtype]
        assert sqrt.overlaid and sqrt.exact == sqrt.values, sqrt.line()


def test_a_registered_kernel_the_check_did_not_run_as_the_overlays_is_named() -> None:
    def ran(op: str, dtype: str, overlaid: bool) -> OpCheck:
        return OpCheck(
            op=op, dtype=dtype, overlaid=overlaid, values=1, exact=1, max_ulp=0,
            nan_mismatches=0, special_mismatches=0, bound=0,
        )  # fmt: skip

    results = [ran("Exp", "float32", True), ran("Tanh", "float32", False)]
    registered = ["Exp:float32", "Tanh:float32", "Cast:float32->bfloat16"]
    # Tanh ran as stock's (not the overlay's), and no Cast was in the corpus
    assert unchecked(registered, results) == ("Cast:float32->bfloat16", "Tanh:float32")
    assert unchecked(["Exp:float32"], results) == ()


def test_the_three_op_lists_agree() -> None:
    """What the overlay can register (ops.py), what the check script computes (scripts/check_tf.py) and
    what the check bounds (check.py): every kernel registered is one the check runs and bounds."""
    from tfbuild.overlay.ops import candidate_names
    from tfbuild.scripts import check_tf as _check_tf

    kernels = candidate_names()
    registered = {k.split(":")[0] for k in kernels}
    computed = {*_check_tf.UNARY, *_check_tf.GRADS, *_check_tf.ROWS, "Cast"}
    assert registered <= computed, sorted(registered - computed)
    assert registered <= set(BOUNDS), sorted(registered - set(BOUNDS))
    casts = {k.split(":")[1] for k in kernels if k.startswith("Cast:")}
    assert casts <= {f"{src}->{dst}" for src, dst in _check_tf.CASTS}
