# mypy: disable-error-code="import-not-found,import-untyped"
"""The overlay's ops as the TensorFlow of this process computes them, on a fixed corpus: runs in
the stock wheel's environment, never imports tfbuild (:mod:`tfbuild.overlay.check` runs it twice,
with TFBUILD_OVERLAY=off and on, and compares the two).

Usage: ``PYTHON check_tf.py OUT.zip``. Only the standard library, numpy and tensorflow are
imported, and the file stays valid on Python 3.9.

Every op runs eagerly on the CPU through ``tf.raw_ops`` (one intra-op thread), so that exactly the
registered kernel of that op and type computes it. Inputs are made from bit patterns and outputs
read back as bit patterns (``tf.bitcast``), so nothing rounds on the way in or out. The corpus, per
type: every bit pattern of float16 and bfloat16; for float32 and float64 the special values (NaNs
of both signs and with payloads, infinities, zeros, the smallest and largest subnormals, the
smallest normal, the largest finite, all of both signs), the edges of exp's range and their
neighbours, values about 0 and 1, a log-spaced sweep over the whole range and linear sweeps, and
4096 random bit patterns (a fixed seed). Grad ops take pairs (every pair of a small corpus of
special values, and the dense corpus against fixed gradients and against itself, permuted);
Softmax and LogSoftmax take rows of several widths (rows of special values, of the corpus, of
random logits and of logits with a large offset); the casts from float32 take every rounding case
(every kept part, for float16 of the exponents that reach it, with the dropped bits 0, 1, just
below a tie, the tie, just above it and all ones: ties to even, overflow to infinity, subnormals,
NaNs whose payload is all dropped), the casts to float32 every bit pattern.

OUT is a zip: ``index.json`` (``{"tensorflow": VERSION, "overlaid": N, "records": [...]}``, a
record per op, type and part: ``{"op", "dtype", "part", "overlaid": bool, "out": [DTYPE, FILE],
"inputs": [[DTYPE, FILE], ...]}``, or ``"error"`` instead of ``out`` when TensorFlow refused the
op) and each array's bits, little-endian. ``overlaid`` says whether a CPU kernel above priority 0
(the overlay's) is registered for that op and type. Exit 1 with one line on stderr on failure.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

#: name -> (bits, exponent bits, mantissa bits)
FORMATS = {
    "float16": (16, 5, 10),
    "bfloat16": (16, 8, 7),
    "float32": (32, 8, 23),
    "float64": (64, 11, 52),
}
#: unary op -> the name of its input
UNARY = {
    **dict.fromkeys(("Exp", "Expm1", "Log", "Log1p", "Tanh", "Sigmoid"), "x"),
    **dict.fromkeys(("Erf", "Erfc", "Rsqrt", "Sqrt"), "x"),
    **dict.fromkeys(("Softplus", "Elu", "Selu"), "features"),
}
#: grad op -> (its two inputs' names, which of them holds the values: the other is the gradient)
GRADS = {
    "TanhGrad": (("y", "dy"), 0),
    "SigmoidGrad": (("y", "dy"), 0),
    "RsqrtGrad": (("y", "dy"), 0),
    "SqrtGrad": (("y", "dy"), 0),
    "SoftplusGrad": (("gradients", "features"), 1),
    "EluGrad": (("gradients", "outputs"), 1),
    "SeluGrad": (("gradients", "outputs"), 1),
}
ROWS = ("Softmax", "LogSoftmax")
WIDTHS = (1, 5, 16, 33, 1000)
CASTS = (
    ("float32", "bfloat16"),
    ("bfloat16", "float32"),
    ("float32", "float16"),
    ("float16", "float32"),
)
SEED = 20240601


class Corpus:
    """The inputs of one type, as numpy arrays of bit patterns."""

    def __init__(self, np: Any, dtype: str) -> None:
        self.np, self.dtype = np, dtype
        self.width, self.exp, self.mant = FORMATS[dtype]
        self.uint = {16: np.uint16, 32: np.uint32, 64: np.uint64}[self.width]
        # the largest finite value, the smallest normal, the smallest subnormal
        self.big, self.tiny, self.sub = self.values(self.specials()[[9, 7, 5]])

    def bits(self, values: Any) -> Any:
        """float64 values rounded to this type (to nearest, ties to even), as bits."""
        np = self.np
        x = np.asarray(values, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.dtype == "float64":
                return x.view(np.uint64).copy()
            if self.dtype == "float16":
                return x.astype(np.float16).view(np.uint16)
            f = x.astype(np.float32).view(np.uint32).astype(np.uint64)
            if self.dtype == "float32":
                return f.astype(np.uint32)
            # numpy 1.x (TensorFlow before 2.18) promotes uint64 with a Python int to float64:
            # every constant is of the array's own type
            u = np.uint64
            rounded = (f + u(0x7FFF) + ((f >> u(16)) & u(1))) >> u(16)
            nan = np.isnan(x)
            rounded[nan] = (f[nan] >> u(16)) | u(0x40)
            return rounded.astype(np.uint16)

    def values(self, bits: Any) -> Any:
        """Bits of this type as float64 values."""
        np = self.np
        bits = np.asarray(bits, dtype=self.uint)
        if self.dtype == "bfloat16":
            return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
        view = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
        return bits.view(view[self.dtype]).astype(np.float64)

    def specials(self) -> Any:
        """NaNs, infinities, zeros, subnormal and normal edges, largest finite: both signs."""
        m = self.mant
        expmask = ((1 << self.exp) - 1) << m
        sign = 1 << (self.width - 1)
        quiet = 1 << (m - 1)
        patterns = [
            expmask | quiet,  # quiet NaN
            expmask | quiet | 1,  # with a payload
            expmask | 1,  # signalling
            expmask,  # inf
            0,
            1,  # smallest subnormal
            (1 << m) - 1,  # largest subnormal
            1 << m,  # smallest normal
            (1 << m) + 1,
            expmask - 1,  # largest finite
            expmask - 2,
        ]
        both = patterns + [p | sign for p in patterns]
        return self.np.array(both, dtype=self.uint)

    def neighbours(self, values: Any, reach: int = 2) -> Any:
        """Each value (rounded to this type) and the patterns up to ``reach`` ulp either side."""
        np = self.np
        centre = self.bits(values).astype(np.int64 if self.width < 64 else np.uint64)
        steps = np.arange(-reach, reach + 1).astype(centre.dtype)
        out = (centre[:, None] + steps[None, :]).ravel()
        return out.astype(self.uint)

    def key(self) -> Any:
        """Specials, the edges of exp's range, values about 0 and 1, a coarse log sweep."""
        np = self.np
        big, sub = self.big, self.sub
        edges = [math.log(big), math.log(self.tiny), math.log(sub), 1.0, 0.5, 2.0, 3.0, 10.0]
        edges += [1e-8, 1e-3, 0.25, 20.0, 100.0]
        edges += [-e for e in edges]
        with np.errstate(over="ignore"):  # geomspace's last step overflows, then is set to big
            coarse = np.geomspace(sub, big, 24)
        parts = [
            self.specials(),
            self.neighbours(edges),
            self.bits(np.concatenate([coarse, -coarse])),
        ]
        return np.concatenate(parts).astype(self.uint)

    def dense(self) -> Any:
        """The unary corpus: every pattern of a 16-bit type, else key values and sweeps."""
        np = self.np
        if self.width == 16:
            return np.arange(1 << 16, dtype=np.uint16)
        rng = np.random.default_rng(SEED)
        big, sub = self.big, self.sub
        with np.errstate(over="ignore"):
            log_sweep = np.geomspace(sub, big, 1024)
        lo, hi = math.log(sub) - 1, math.log(big) + 1
        near_one = [1 + 2.0**-k for k in range(1, 40)] + [1 - 2.0**-k for k in range(1, 40)]
        parts = [
            self.key(),
            self.bits(np.concatenate([log_sweep, -log_sweep])),
            self.bits(np.linspace(-10, 10, 2001)),
            self.bits(np.linspace(lo, hi, 1024)),
            self.bits(near_one),
            self.neighbours([1.0, -1.0], reach=8),
            rng.integers(0, 1 << self.width, 4096, dtype=self.uint, endpoint=False),
        ]
        return np.concatenate(parts).astype(self.uint)

    def pairs(self) -> list[tuple[str, Any, Any]]:
        """(part, values, gradients): every pair of key(), dense() against fixed gradients and
        against itself permuted."""
        np = self.np
        key = self.key()
        dense = self.dense()
        grads = [1.0] if self.width == 16 else [1.0, -1.0, 0.5, -3.25, 1e3]
        rng = np.random.default_rng(SEED + 1)
        out = [("key x key", np.repeat(key, len(key)), np.tile(key, len(key)))]
        for g in grads:
            out.append((f"dense x {g}", dense, np.full(len(dense), self.bits([g])[0])))
        out.append(("dense x dense permuted", dense, dense[rng.permutation(len(dense))]))
        return out

    def rows(self, width: int) -> Any:
        """Rows of ``width`` values: rows of special values (padded with zeros, and repeated),
        rows of dense(), random logits, and random logits about a large offset."""
        np = self.np
        rng = np.random.default_rng(SEED + width)
        inf, nan = math.inf, math.nan
        big, sub = float(self.big), float(self.sub)
        top = math.log(big)
        special = [
            [0.0],
            [1.0, 2.0, 3.0],
            [inf],
            [-inf],
            [nan],
            [inf, 1.0],
            [-inf, 1.0],
            [inf, -inf],
            [nan, 1.0],
            [big, big],
            [big, -big],
            [-big, 0.0],
            [top, top - 1],
            [top + 1, 0.0],
            [sub, -sub, 0.0],
            [1e4, 1e4 + 1],
            [-1e4, -1e4 - 1],
            [20.0, -20.0],
            [-0.0],
        ]
        rows = []
        for row in special:
            rows.append((row + [0.0] * width)[:width])
            rows.append((row * width)[:width])
        parts = [self.bits(np.array(rows, dtype=np.float64))]
        dense = self.dense()
        if len(dense) > 64 * width:  # every pattern in rows of 1000: a sample, in order
            dense = dense[:: max(1, len(dense) // (64 * width))]
        usable = len(dense) // width * width
        parts.append(dense[:usable].reshape(-1, width))
        logits = rng.standard_normal((max(4, 4096 // width), width)) * 4
        parts.append(self.bits(logits))
        offset = 1e4 if self.exp >= 8 else 1e3
        parts.append(self.bits(logits + offset))
        return np.concatenate(parts).astype(self.uint)


def cast_inputs(np: Any, dst: str) -> Any:
    """float32 bit patterns for every rounding case of a cast to ``dst``."""
    if dst == "bfloat16":
        upper = np.arange(1 << 16, dtype=np.uint32) << 16
        low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
        return (upper[:, None] | low[None, :]).ravel()
    # float16 keeps the top 10 of float32's 23 mantissa bits; exponents 2^-27 .. 2^16 reach it
    exps = np.arange(127 - 27, 127 + 17, dtype=np.uint32)
    kept = np.arange(1 << 10, dtype=np.uint32) << 13
    dropped = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF], dtype=np.uint32)
    reach = (exps[:, None, None] << 23) | kept[None, :, None] | dropped[None, None, :]
    other = np.array([e for e in range(256) if not 127 - 27 <= e < 127 + 17], dtype=np.uint32)
    edge = np.array([0, 1 << 13, 0x3FF << 13], dtype=np.uint32)
    rest = (other[:, None, None] << 23) | edge[None, :, None] | dropped[None, None, :]
    both = np.concatenate([reach.ravel(), rest.ravel()])
    return np.concatenate([both, both | np.uint32(1 << 31)])


class Runner:
    def __init__(self, tf: Any, np: Any, out: zipfile.ZipFile) -> None:
        from tensorflow.python.framework import kernels

        self.tf, self.np, self.out = tf, np, out
        self.kernels = kernels
        self.records: list[dict[str, Any]] = []
        self.overlaid = 0

    def is_overlaid(self, op: str, types: dict[str, str]) -> bool:
        for kernel in self.kernels.get_registered_kernels_for_op(op).kernel:
            if kernel.device_type != "CPU" or kernel.priority <= 0 or kernel.label:
                continue
            allowed = {
                c.name: {self.tf.dtypes.as_dtype(t).name for t in c.allowed_values.list.type}
                for c in kernel.constraint
            }
            if all(name in allowed.get(attr, {name}) for attr, name in types.items()):
                return True
        return False

    def save(self, dtype: str, bits: Any) -> list[str]:
        name = f"{len(self.out.namelist())}.bin"
        width = FORMATS[dtype][0]
        data = self.np.ascontiguousarray(bits, dtype=f"<u{width // 8}").tobytes()
        self.out.writestr(name, data)
        return [dtype, name]

    def tensor(self, dtype: str, bits: Any) -> Any:
        tf = self.tf
        uint = {16: tf.uint16, 32: tf.uint32, 64: tf.uint64}[FORMATS[dtype][0]]
        return tf.bitcast(tf.constant(bits, dtype=uint), getattr(tf, dtype))

    def run(self, op: str, dtype: str, part: str, call: Any, inputs: list[tuple[str, Any]]) -> None:
        """``call`` on the tensors of ``inputs`` ((type, bits) each); a cast's ``dtype`` is
        ``SRC->DST``."""
        tf = self.tf
        src, _, dst = dtype.rpartition("->")
        types = {"SrcT": src, "DstT": dst} if src else {"T": dtype}
        record: dict[str, Any] = {"op": op, "dtype": dtype, "part": part}
        record["overlaid"] = self.is_overlaid(op, types)
        self.overlaid += record["overlaid"]
        try:
            with tf.device("/CPU:0"):
                result = call(*(self.tensor(t, b) for t, b in inputs))
            uint = {16: tf.uint16, 32: tf.uint32, 64: tf.uint64}[FORMATS[dst][0]]
            bits = tf.bitcast(result, uint).numpy().ravel()
        except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError) as exc:
            record["error"] = f"{type(exc).__name__}: {exc.message.splitlines()[0]}"
        else:
            record["out"] = self.save(dst, bits)
            record["inputs"] = [self.save(t, self.np.ravel(b)) for t, b in inputs]
        self.records.append(record)


def _named(call: Any, names: tuple[str, ...], *tensors: Any) -> Any:
    return call(**dict(zip(names, tensors)))  # noqa: B905 (strict= is Python 3.10)


def compute(tf: Any, np: Any, out: zipfile.ZipFile) -> Runner:
    raw = tf.raw_ops
    runner = Runner(tf, np, out)
    for dtype in FORMATS:
        corpus = Corpus(np, dtype)
        dense = corpus.dense()
        for op, name in UNARY.items():
            call = functools.partial(_named, getattr(raw, op), (name,))
            runner.run(op, dtype, "dense", call, [(dtype, dense)])
        for op, (names, at) in GRADS.items():
            call = functools.partial(_named, getattr(raw, op), names)
            for part, values, grads in corpus.pairs():
                pair = [grads, grads]
                pair[at] = values
                runner.run(op, dtype, part, call, [(dtype, pair[0]), (dtype, pair[1])])
        for width in WIDTHS:
            rows = corpus.rows(width)
            for op in ROWS:
                call = functools.partial(_named, getattr(raw, op), ("logits",))
                runner.run(op, dtype, f"rows of {width}", call, [(dtype, rows)])
    for src, dst in CASTS:
        bits = cast_inputs(np, dst) if src == "float32" else np.arange(1 << 16, dtype=np.uint16)
        call = functools.partial(lambda x, d: raw.Cast(x=x, DstT=getattr(tf, d)), d=dst)
        runner.run("Cast", f"{src}->{dst}", "every case", call, [(src, bits)])
    return runner


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: check_tf.py OUT.zip\n")
        return 2
    try:
        import numpy as np
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
            runner = compute(tf, np, out)
            index = {
                "tensorflow": tf.__version__,
                "overlaid": runner.overlaid,
                "records": runner.records,
            }
            out.writestr("index.json", json.dumps(index))
        Path(argv[1]).write_bytes(buffer.getvalue())
    except Exception as exc:  # the parent reports it in one line
        sys.stderr.write(f"check_tf.py: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
