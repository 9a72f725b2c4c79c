# mypy: disable-error-code="import-not-found,import-untyped"
"""The forecast's ops as stock TensorFlow itself runs them: runs in the stock wheel's environment,
never imports tfbuild.

Usage: ``PYTHON _forecast_tf.py REPS [SECONDS_PER_REP]``. Only the standard library, numpy and
tensorflow are imported, and the file stays valid on Python 3.9.

Each op of ``forecast_kernels.cc`` as one eager TensorFlow call (intra = inter = 1), on the same
tensors: 2^18 float32 x in [-8, 8) and y in [0.001, 4) filled by the same formula, rows of 256 for
the row ops. An inner loop count is calibrated so that one repetition takes at least
SECONDS_PER_REP, then REPS repetitions are timed, in two passes over all ops (half the repetitions
each) so that a slow spell of the machine does not land on one op only. Eager CPU ops are
synchronous, so timing the call times the kernel and what TensorFlow does around it (dispatch,
output allocation and its first touch), which the forecast's bare kernels never pay.

Stdout carries one JSON line: ``{"tensorflow": VERSION, "elements": N, "ops": {NAME: [seconds per
call, ...]}}``; TensorFlow's own messages go to stderr. Exit 1 with ``{"error": ...}`` when
TensorFlow cannot be imported or an op fails.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

ELEMENTS = 1 << 18
ROW = 256


def _inputs(tf: Any, np: Any, n: int) -> tuple[Any, Any, Any]:
    """x, y and x as bfloat16 of ``n`` elements, filled as forecast_kernels.cc fills them."""
    i = np.arange(n, dtype=np.int64)
    x = (-8.0 + 16.0 * ((i * 7919) % n).astype(np.float32) / n).astype(np.float32)
    y = (0.001 + 4.0 * ((i * 104729) % n).astype(np.float32) / n).astype(np.float32)
    x, y = tf.constant(x), tf.constant(y)
    return x, y, tf.cast(x, tf.bfloat16)


def ops(tf: Any, np: Any, n: int = ELEMENTS) -> dict[str, Callable[[], Any]]:
    """Each op on ``n`` elements (a multiple of ROW); benchmarks/forecast.py also times them on
    one row, to take TensorFlow's per-call overhead out."""
    x, y, bf = _inputs(tf, np, n)
    rows = tf.reshape(x, [n // ROW, ROW])

    def layer_norm() -> (
        Any
    ):  # (x - mean) * rsqrt(var + eps), as the kernel's expression computes it
        centred = rows - tf.reduce_mean(rows, axis=-1, keepdims=True)
        var = tf.reduce_mean(centred * centred, axis=-1, keepdims=True)
        return centred * tf.math.rsqrt(var + 1e-5)

    return {
        "exp": lambda: tf.exp(x),
        "tanh": lambda: tf.tanh(x),
        "sigmoid": lambda: tf.sigmoid(x),
        "erf": lambda: tf.math.erf(x),
        "log1p": lambda: tf.math.log1p(y),
        "cast_f32_bf16": lambda: tf.cast(x, tf.bfloat16),
        "cast_f32_f16": lambda: tf.cast(x, tf.float16),
        "cast_bf16_f32": lambda: tf.cast(bf, tf.float32),
        "log_softmax": lambda: tf.nn.log_softmax(rows),
        "layer_norm": layer_norm,
        "add": lambda: x + y,
        "relu": lambda: tf.nn.relu(x),
        "sum": lambda: tf.reduce_sum(x),
    }


def _loop(op: Callable[[], Any], calls: int) -> float:
    out = None
    start = time.perf_counter()
    for _ in range(calls):
        out = op()
    elapsed = time.perf_counter() - start
    del out
    return elapsed


def calibrate(op: Callable[[], Any], budget: float) -> int:
    calls = 1
    while _loop(op, calls) < budget / 4 and calls < (1 << 20):
        calls *= 2
    return calls * 4


def main(argv: list[str]) -> int:
    reps = int(argv[1])
    budget = float(argv[2]) if len(argv) > 2 else 0.01
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever TensorFlow prints lands on stderr
    try:
        import numpy as np
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        table = ops(tf, np)
        calls = {name: calibrate(op, budget) for name, op in table.items()}
        seconds: dict[str, list[float]] = {name: [] for name in table}
        for count in (reps - reps // 2, reps // 2):
            for name, op in table.items():
                seconds[name] += [_loop(op, calls[name]) / calls[name] for _ in range(count)]
    except Exception as exc:  # the parent reports it in one line
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    result = {"tensorflow": tf.__version__, "elements": ELEMENTS, "ops": seconds}
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
