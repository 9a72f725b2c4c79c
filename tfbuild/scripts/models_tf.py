# mypy: disable-error-code="import-not-found,import-untyped"
"""Four small models for the overlay's end-to-end proof, in the interpreter that has TensorFlow.

Imports only the standard library, numpy, tensorflow and the measuring worker and profiler beside
it (never tfbuild); valid on Python 3.9. Two ways to run it:

    PYTHON models_tf.py [--intra N] [--inter M] [--cpus LIST] [--models LIST]
    PYTHON models_tf.py [--intra N] [--inter M] [--models LIST] --profile [--steps K]
        [--replaced KERNELS]

The first serves the models as ops of the smoke worker's protocol (``worker.py``: the same ready
line, requests and replies, so :mod:`tfbuild.measure.run` times them in alternation, with verdicts
and rechecks, as it times single ops): op ``model_<name>``, group "model", unit "Gsample/s", work =
the batch. Its ready line adds ``"overlaid"``: the kernels this process runs at
the overlay's priority (1), read from TensorFlow's own registry ("Exp:float32",
"Cast:float32->bfloat16"); empty when the overlay is off.

Each model is one step under ``tf.function`` (never XLA) on fixed inputs and weights from seed 0:
an inference step (``model(x, training=False)``), or for the MLPs a training step (forward, a
float32 loss and every weight's gradient, none applied, so each call does the same work): in
inference oneDNN fuses the MLP's gelu into ``_MklNativeFusedMatMul`` and no Erfc runs at all. They
are sized so their element-wise work is not lost under their matmuls, except where that is the
point:

* ``lstm``: Keras LSTM(64) over [1024, 32, 32] then Dense(1). On CPU Keras runs the generic while
  loop: per time step a MatMul of [1024, 96] x [96, 256], then Sigmoid and Tanh on the gates.
* ``mlp_gelu``: the feed-forward block of a narrow transformer, [4096, 64] -> Dense(2048, exact
  gelu) -> Dense(64). Keras' exact gelu is ``0.5 x erfc(-x / sqrt 2)``: Erfc.
* ``mlp_bf16``: the same under Keras' ``mixed_bfloat16`` policy (variables float32, compute
  bfloat16, the last layer float32): Cast of the input, every weight and the output, Erfc in bf16.
* ``transformer``: the counter-example, one pre-norm block over [8, 256, 128]: MultiHeadAttention
  (4 heads), a gelu MLP (512), two LayerNormalizations. Matmuls dominate, and oneDNN's graph pass
  runs the attention's Softmax as ``_MklSoftmax``, out of the overlay's reach.

``--profile`` builds each model afresh and profiles it (``profile_tf.py``, the profiler the
measuring worker uses on a user's model too): one line per model, the op time per op type and the
share of the replaced kernels (``--replaced``; default: those this process runs at the overlay's
priority).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

MODELS = ("lstm", "mlp_gelu", "mlp_bf16", "transformer")


# --- the models ---------------------------------------------------------------------------------

#: Each model's batch: the samples one step computes (the work of its op).
BATCH = {"lstm": 1024, "mlp_gelu": 4096, "mlp_bf16": 4096, "transformer": 8}
#: The models timed as a training step (forward and gradients); the others as inference.
TRAINING = frozenset({"mlp_gelu", "mlp_bf16"})


def build_model(tf: Any, np: Any, name: str) -> Callable[[], Any]:
    """The model's inference step, its weights and inputs from seed 0, traced on first call."""
    keras = tf.keras
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    layers = keras.layers

    def data(*shape: int) -> Any:
        return tf.constant(rng.standard_normal(shape).astype(np.float32))

    if name == "lstm":
        model = keras.Sequential([keras.Input((32, 32)), layers.LSTM(64), layers.Dense(1)])
        x = data(BATCH[name], 32, 32)
    elif name in ("mlp_gelu", "mlp_bf16"):
        policy = "mixed_bfloat16" if name == "mlp_bf16" else "float32"
        model = keras.Sequential(
            [
                keras.Input((64,)),
                layers.Dense(2048, activation="gelu", dtype=policy),
                layers.Dense(64, dtype="float32"),
            ]
        )
        x = data(BATCH[name], 64)
    elif name == "transformer":
        inputs = keras.Input((256, 128))
        h = layers.LayerNormalization()(inputs)
        h = inputs + layers.MultiHeadAttention(num_heads=4, key_dim=32)(h, h)
        m = layers.Dense(512, activation="gelu")(layers.LayerNormalization()(h))
        outputs = h + layers.Dense(128)(m)
        model = keras.Model(inputs, outputs)
        x = data(BATCH[name], 256, 128)
    else:
        raise KeyError(f"no model {name!r}; known: {', '.join(MODELS)}")

    if name in TRAINING:
        return _training_step(tf, model, x)

    @tf.function(jit_compile=False)  # type: ignore[untyped-decorator]
    def step() -> Any:
        return model(x, training=False)

    return step  # type: ignore[no-any-return]


def _training_step(tf: Any, model: Any, x: Any) -> Callable[[], Any]:
    """Forward, a float32 loss (the mean square of the output) and the gradients of every weight,
    none applied: every call does the same work."""
    variables = model.trainable_variables

    @tf.function(jit_compile=False)  # type: ignore[untyped-decorator]
    def step() -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.cast(model(x, training=True), tf.float32)))
        return loss, tape.gradient(loss, variables)

    return step  # type: ignore[no-any-return]


# --- running ---------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--intra", type=int, default=0, help="intra-op threads (0: default)")
    parser.add_argument("--inter", type=int, default=0, help="inter-op threads (0: default)")
    parser.add_argument("--cpus", default="", help="comma-separated CPUs to run on")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated models")
    parser.add_argument("--profile", action="store_true", help="profile each model, then exit")
    parser.add_argument("--steps", type=int, default=3, help="calls profiled per model")
    parser.add_argument("--replaced", default=None, help="comma-separated kernels to count")
    args = parser.parse_args(argv)
    chosen = [m for m in args.models.split(",") if m]
    unknown = sorted(set(chosen) - set(MODELS))
    if unknown or not chosen:
        parser.error(f"--models: known models are {', '.join(MODELS)}, not {unknown}")
    if args.intra < 0 or args.inter < 0 or args.steps < 1:
        parser.error("thread counts must be >= 0 and --steps >= 1")
    args.models = chosen
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # The measuring worker beside this one, its protocol and loop, run by its path (this process
    # runs isolated, ``python -I``: nothing of tfbuild's tree is on its path).
    _worker = SimpleNamespace(**runpy.run_path(str(Path(__file__).with_name("worker.py"))))
    _profile_tf = _worker.sibling("profile_tf")  # where a step's time goes
    send = _worker.take_stdout()
    _worker.pin(args.cpus)
    try:
        import numpy as np
        import tensorflow as tf

        if args.intra:
            tf.config.threading.set_intra_op_parallelism_threads(args.intra)
        if args.inter:
            tf.config.threading.set_inter_op_parallelism_threads(args.inter)
        loaded = _profile_tf.overlay_loaded()
        kernels = _profile_tf.overlaid(tf)
        if args.profile:
            replaced = kernels if args.replaced is None else args.replaced.split(",")
            for name in args.models:
                send(_profile_tf.profile(tf, build_model(tf, np, name), name, args.steps, replaced))
            return 0
        ops = []
        for name in args.models:
            step = build_model(tf, np, name)
            step()  # traced here, so a model that cannot run says so before the ready line
            ops.append(_worker.Op(f"model_{name}", "model", "Gsample/s", BATCH[name], step))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        send({"ready": False, "error": _worker.failure(exc, 2000)})
        return 1
    served: int = _worker.serve(
        send,
        ops,
        {
            "tensorflow": tf.__version__,
            "intra": args.intra,
            "inter": args.inter,
            "cpus": _worker.cpu_count(),
            "pid": os.getpid(),
            "overlay_loaded": loaded,
            "overlaid": kernels,
        },
    )
    return served


if __name__ == "__main__":
    sys.exit(main())
