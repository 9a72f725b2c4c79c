# mypy: disable-error-code="import-not-found,import-untyped"
"""Four small models for the overlay's end-to-end proof, in the interpreter that has TensorFlow.

Imports only the standard library, numpy, tensorflow and the smoke worker beside it (never tfbuild);
valid on Python 3.9. Two ways to run it:

    PYTHON _models_tf.py [--intra N] [--inter M] [--cpus LIST] [--models LIST]
    PYTHON _models_tf.py [--intra N] [--inter M] [--models LIST] --profile [--steps K]
        [--replaced KERNELS]

The first serves the models as ops of the smoke worker's protocol (``tfbuild/measure/_worker.py``:
the same ready line, requests and replies, so :mod:`tfbuild.measure.run` times them in alternation,
with verdicts and rechecks, as it times single ops): op ``model_<name>``, group "model", unit
"Gsample/s", work = the batch. Its ready line adds ``"overlaid"``: the kernels this process runs at
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

``--profile`` builds each model afresh, calls it once, runs STEPS calls under
``tf.profiler.experimental`` and reads the ``.xplane.pb`` written with the XPlane proto the wheel
ships (``tensorflow.tsl.profiler.protobuf.xplane_pb2``): each op is an event ``node:OpType`` on an
executor thread of the ``/host:CPU`` plane; its self time (less the ops nested in it on the same
thread) is summed per op type. Why afresh: TensorFlow 2.21 ignores ``host_tracer_level=3`` (it logs
"host_tracer_level expects an i value" and profiles at 2), and at 2 the executor traces only the ops
it deems expensive. Every op starts expensive and its cost is re-estimated only in untraced runs, so
after a single warm call every op of every traced call is recorded; after ~100 calls the cheap ones
vanish from the profile. The dtypes of each node come from the traced graph and its function
library (while bodies), by node name: an inlined body's node by its trailing components, a node
Grappler made in another's place by that other's name.

It prints one line per model: ``{"model", "steps", "overlay_loaded", "host_tracer_level",
"total_op_s", "wall_s", "replaced_s", "share", "unknown_s", "not_run", "kernels", "replaced":
{"Kernel:dtype": s}, "ops": {type: s}}``, seconds per step. Replaced: the ``kernels`` of
``--replaced`` (default: those this process runs at the overlay's priority); an op of a replaced
type whose dtypes cannot be told counts in ``unknown_s``, in no share. ``not_run``: replaced op types in the graph that never
ran (rewritten or fused before they could).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "measure"))
import _worker  # the measuring worker, beside this package: its protocol and loop

MODELS = ("lstm", "mlp_gelu", "mlp_bf16", "transformer")
#: The priority the overlay registers its kernels at (tfbuild.overlay.ops.PRIORITY).
OVERLAY_PRIORITY = 1
_OP_TYPE = re.compile(r"[A-Z_][A-Za-z0-9_]*")
_PROC_MAPS = Path("/proc/self/maps")


def overlay_loaded() -> bool:
    """Whether the overlay's kernels library is mapped into this process."""
    try:
        with _PROC_MAPS.open(encoding="utf-8", errors="replace") as maps:
            return any("/tfbuild_overlay/" in line for line in maps)
    except OSError:
        return False


def overlaid(tf: Any) -> list[str]:
    """The CPU kernels registered at the overlay's priority: "Exp:float32", "Cast:a->b"."""
    from tensorflow.python.framework import kernels

    found: set[str] = set()
    for kernel in kernels.get_all_registered_kernels().kernel:
        if kernel.device_type != "CPU" or kernel.priority != OVERLAY_PRIORITY:
            continue
        types = {
            c.name: [tf.dtypes.as_dtype(t).name for t in c.allowed_values.list.type]
            for c in kernel.constraint
        }
        if "SrcT" in types and "DstT" in types:
            found.update(f"{kernel.op}:{s}->{d}" for s in types["SrcT"] for d in types["DstT"])
        else:
            found.update(f"{kernel.op}:{t}" for t in types.get("T", ()))
    return sorted(found)


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


# --- the profile ---------------------------------------------------------------------------------


def _dtype_name(tf: Any, value: int) -> str:
    try:
        return str(tf.dtypes.as_dtype(value).name)
    except (TypeError, ValueError):
        return "?"


def graph_dtypes(tf: Any, step: Any) -> tuple[dict[str, set[str]], set[str]]:
    """Node name -> the dtypes it computes in ("float32", or "float32->bfloat16" for a Cast), and
    the op types, over the traced graph (before Grappler) and every function in its library."""
    graph_def = step.get_concrete_function().graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    found: dict[str, set[str]] = {}
    for node in nodes:
        attrs = node.attr
        if "SrcT" in attrs and "DstT" in attrs:
            dtype = f"{_dtype_name(tf, attrs['SrcT'].type)}->{_dtype_name(tf, attrs['DstT'].type)}"
        elif "T" in attrs and attrs["T"].type:
            dtype = _dtype_name(tf, attrs["T"].type)
        else:
            continue
        found.setdefault(node.name, set()).add(dtype)
    return found, {node.op for node in nodes}


def lookup_dtype(dtypes: dict[str, set[str]], node: str) -> str:
    """The node's dtype; by its trailing components when its full name is not in the graph (an
    inlined function's node); a node Grappler made in another's place
    (``NAME/ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_float_Cast``: the same Cast,
    moved) by that other's; "?" when unknown or ambiguous."""
    parts = node.split("/")
    for start in range(len(parts)):
        found = dtypes.get("/".join(parts[start:]))
        if found:
            return next(iter(found)) if len(found) == 1 else "?"
    if len(parts) > 2 and parts[-2].endswith("Optimizer"):  # SCOPE/Optimizer/Stage[_suffix]_NAME
        words = parts[-1].split("_")
        for cut in (2, 1):
            if len(words) > cut:
                found_dtype = lookup_dtype(dtypes, "/".join([*parts[:-2], "_".join(words[cut:])]))
                if found_dtype != "?":
                    return found_dtype
    return "?"


def op_events(xspace: Any) -> list[tuple[str, str, float]]:
    """(node name, op type, self seconds) of every TensorFlow op event on the host plane."""
    found: list[tuple[str, str, float]] = []
    for plane in xspace.planes:
        if plane.name != "/host:CPU":
            continue
        for line in plane.lines:
            ops = []
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                node, colon, kind = meta.name.rpartition(":")
                kind = meta.display_name or kind
                if colon and "::" not in meta.name and _OP_TYPE.fullmatch(kind):
                    ops.append((event.offset_ps, event.offset_ps + event.duration_ps, node, kind))
            ops.sort(key=lambda op: (op[0], -op[1]))
            stack: list[list[Any]] = []  # [end, node, kind, self ps]
            for begin, end, node, kind in ops:
                while stack and stack[-1][0] <= begin:
                    closed = stack.pop()
                    found.append((closed[1], closed[2], closed[3] / 1e12))
                if stack:  # nested: its time is not its parent's own
                    stack[-1][3] -= end - begin
                stack.append([end, node, kind, end - begin])
            found.extend((item[1], item[2], item[3] / 1e12) for item in stack)
    return found


def _xplane_pb2() -> Any:
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:
        from tsl.profiler.protobuf import xplane_pb2
    return xplane_pb2


def _used_level(xspace: Any) -> int | None:
    """The host tracer level the session ran at, as the profile records it."""
    try:
        from tensorflow.tsl.profiler.protobuf import profiler_options_pb2
    except ImportError:
        return None
    for plane in xspace.planes:
        names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for stat in plane.stats:
            if names.get(stat.metadata_id) == "profile_options":
                options = profiler_options_pb2.ProfileOptions()
                options.ParseFromString(stat.bytes_value)
                return int(options.host_tracer_level)
    return None


def profile(tf: Any, step: Any, name: str, steps: int, replaced: list[str]) -> dict[str, Any]:
    """The op time per op type of ``steps`` calls of a step built afresh and called once, and the
    share of the ``replaced`` kernels ("Exp:float32"); see the module docstring."""
    xplane_pb2 = _xplane_pb2()
    step()  # warm: allocations, oneDNN primitives; every op still counts as expensive after it
    logdir = tempfile.mkdtemp(prefix="tfbuild-profile-")
    try:
        # asked for, ignored by TF 2.21 (see the module docstring); the profile says what ran
        options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3)
        tf.profiler.experimental.start(logdir, options=options)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - start
        tf.profiler.experimental.stop()
        paths = sorted(Path(logdir).rglob("*.xplane.pb"))
        if len(paths) != 1:
            raise RuntimeError(f"expected one .xplane.pb under the profiler's logdir, got {paths}")
        xspace = xplane_pb2.XSpace()
        xspace.ParseFromString(paths[0].read_bytes())
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    dtypes, graph_types = graph_dtypes(tf, step)
    kernels = set(replaced)
    types = {kernel.partition(":")[0] for kernel in kernels}
    ops: dict[str, float] = {}
    found: dict[str, float] = {}
    unknown = 0.0
    for node, kind, seconds in op_events(xspace):
        ops[kind] = ops.get(kind, 0.0) + seconds / steps
        if kind not in types:
            continue
        dtype = lookup_dtype(dtypes, node)
        if dtype == "?":
            unknown += seconds / steps
            continue
        key = f"{kind}:{dtype}"
        if key in kernels:
            found[key] = found.get(key, 0.0) + seconds / steps
    total = sum(ops.values())
    replaced_s = sum(found.values())
    return {
        "model": name,
        "steps": steps,
        "overlay_loaded": overlay_loaded(),
        "host_tracer_level": _used_level(xspace),
        "total_op_s": total,
        "wall_s": wall / steps,
        "replaced_s": replaced_s,
        "share": replaced_s / total if total else 0.0,
        "unknown_s": unknown,
        # rewritten (oneDNN's _MklSoftmax) or fused (_UnaryOpsComposition) before they ran
        "not_run": sorted((graph_types & types) - set(ops)),
        "kernels": sorted(kernels),
        "replaced": dict(sorted(found.items(), key=lambda item: -item[1])),
        "ops": dict(sorted(ops.items(), key=lambda item: -item[1])),
    }


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
    protocol = _worker.take_stdout()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    _worker.pin(args.cpus)
    try:
        import numpy as np
        import tensorflow as tf

        if args.intra:
            tf.config.threading.set_intra_op_parallelism_threads(args.intra)
        if args.inter:
            tf.config.threading.set_inter_op_parallelism_threads(args.inter)
        loaded = overlay_loaded()
        kernels = overlaid(tf)
        if args.profile:
            replaced = kernels if args.replaced is None else args.replaced.split(",")
            for name in args.models:
                protocol.send(profile(tf, build_model(tf, np, name), name, args.steps, replaced))
            return 0
        ops = []
        for name in args.models:
            step = build_model(tf, np, name)
            step()  # traced here, so a model that cannot run says so before the ready line
            ops.append(_worker.Op(f"model_{name}", "model", "Gsample/s", BATCH[name], step))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        failure = f"{type(exc).__name__}: {_worker.one_line(str(exc))}"[:2000]
        protocol.send({"ready": False, "error": failure})
        return 1
    served: int = _worker.serve(
        protocol,
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
