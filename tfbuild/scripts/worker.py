# mypy: disable-error-code="import-not-found,import-untyped"
"""The benchmark process: runs inside the wheel's own virtual environment, never imports tfbuild.

Usage: ``PYTHON worker.py --intra N --inter M [--bf16] [--cpus LIST] [--model PATH --model-kind KIND
--model-op NAME --model-batch B]`` (0 = TensorFlow's default thread count; ``--cpus``: pin the
process to these CPUs before TensorFlow starts its threads).
Only the standard library, numpy and tensorflow are imported, and the file stays valid on Python 3.9.

Protocol, one JSON object per line. Stdout carries the protocol and nothing else: the worker keeps a
private duplicate of file descriptor 1 and points fd 1 at stderr before TensorFlow is imported, so
whatever TensorFlow, its C++ libraries or a stray ``print`` write lands on stderr.

* Start: ``{"ready": true, "tensorflow": ..., "git_version": ..., "intra": N, "inter": M,
  "ops": {NAME: {"unit": "GFLOP/s" | "Gelem/s", "work": flops or elements per call,
  "group": "matmul" | "conv" | "elementwise" | "control" | "cast", "dtype": "float32" | "bfloat16"}},
  "dropped": {NAME: why}, "cpus": ..., "env": {...}, ...}``, listing only the ops this
  build runs on this CPU (``conv2d_nchw`` only when the build accepts NCHW, ``matmul_bf16_1024`` only
  with ``--bf16``). When TensorFlow cannot be imported or set up: ``{"ready": false, "error": ...}``
  and exit code 1. When the ``--model`` cannot be loaded, given a batch or called, the same with
  ``"model_error": {"stage": "load" | "inputs" | "call", "error": ...}``.
* ``{"op": NAME, "reps": R, "min_rep_seconds": S}``: 3 warm-up calls, an inner loop count calibrated
  so that one repetition takes at least S seconds, then R timed repetitions. Reply
  ``{"op": NAME, "seconds_per_call": [R floats], "inner": n, "work": w, "unit": ...}``, or
  ``{"op": NAME, "error": "..."}`` when the op raised (the worker goes on). With ``"inner": n``
  (the count an earlier reply gave) the calibration is skipped, and ``"warmup": W`` sets the
  warm-up calls: the driver times one repetition at a time, each beside one of the other build's,
  and calibrates once per op.
* ``{"quit": true}`` or end of input: exit 0.

Ops: matmul n x n float32 (2n^3 flop); conv2d x [32, 56, 56, 64] * w [3, 3, 64, 64], stride 1, SAME
(7.40 GFLOP; NCHW on the transposed input); element-wise ops on x [1024, 256] float32 (262,144
elements): exp, tanh, sigmoid, erf, gelu (exact, erf form), log1p (of |x|), softmax and log_softmax
(last axis), layer_norm (``tf.nn.moments`` + ``tf.nn.batch_normalization`` with scale and offset, as
Keras does), casts to bfloat16 and float16, and the memory-bound controls add (x + y), relu and
reduce_sum (last axis). Inputs are made once, from a fixed seed, before the ready line.

With ``--model``, one more op (group "model", unit "Gsample/s", work = the batch): a SavedModel's
``serving_default`` signature, or a Keras v3 file loaded with ``safe_mode=True`` and called under
``tf.function`` (as ``predict`` and serving run it), on inputs made from its input signature, the
open first dimension set to the batch: random normal floats, zeros for integers and booleans. It is
loaded and called once before the ready line, so a model that cannot be used says so at start.

Ops run eagerly: a ``tf.function`` call costs 150-250 us on the project's machines, as much as the
element-wise kernels themselves, and would hide the instruction set. Eager CPU ops are synchronous,
so timing the call times the kernel; the result of each call is kept until the next one replaces it.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

WARMUP_CALLS = 3
#: Element-wise inputs: 262,144 float32 (1 MiB), as rows so softmax and layer norm have an axis.
ROWS, COLS = 1024, 256
ELEMENTS = ROWS * COLS
#: The ResNet-style 3x3 layer: x [32, 56, 56, 64] (NHWC) * w [3, 3, 64, 64], stride 1, SAME.
CONV_N, CONV_HW, CONV_C, CONV_K = 32, 56, 64, 3
CONV_FLOPS = 2 * CONV_N * CONV_HW * CONV_HW * CONV_C * CONV_K * CONV_K * CONV_C  # 7.40 GFLOP
MAX_INNER = 10_000_000
#: Environment variables that change threading or kernels, echoed in the ready line.
RECORDED_ENV = (
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "OMP_NUM_THREADS",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "LD_PRELOAD",
)


class Op(NamedTuple):
    """One benchmark: a zero-argument callable over inputs made once, and its work per call."""

    name: str
    group: str
    unit: str
    work: int
    fn: Callable[[], Any]
    dtype: str = "float32"  # of the inputs: a bfloat16 matmul has another peak than a float32 one

    def describe(self) -> dict[str, Any]:
        return {"unit": self.unit, "work": self.work, "group": self.group, "dtype": self.dtype}


#: Sends one message of the protocol: a JSON object, one line.
Send = Callable[[dict[str, Any]], None]


def take_stdout() -> Send:
    """Keep fd 1 for the protocol and send everything else written to stdout to stderr."""
    sys.stdout.flush()
    private = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(message: dict[str, Any]) -> None:
        private.write(json.dumps(message) + "\n")
        private.flush()

    return send


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--intra", type=int, default=0, help="intra-op threads (0 = default)")
    parser.add_argument("--inter", type=int, default=0, help="inter-op threads (0 = default)")
    parser.add_argument("--bf16", action="store_true", help="also offer matmul_bf16_1024")
    parser.add_argument("--model", help="a SavedModel directory or a .keras file to time too")
    parser.add_argument("--model-kind", choices=("savedmodel", "keras"), default="savedmodel")
    parser.add_argument("--model-op", default="model", help="the op name the model is timed as")
    parser.add_argument("--model-batch", type=int, default=1, help="the batch for open dimensions")
    parser.add_argument("--model-step", choices=("predict", "train"), default="predict")
    parser.add_argument("--model-xla", choices=("off", "jit"), default="off")
    parser.add_argument("--model-code", default="", help="a .py file imported before loading")
    parser.add_argument(
        "--model-inputs", default="", help='JSON: [{"name": N or null, "shape": [...], "dtype": D}]'
    )
    parser.add_argument(
        "--model-only", action="store_true", help="serve the model alone, none of the smoke's ops"
    )
    parser.add_argument(
        "--profile", type=int, default=0, help="profile STEPS calls of the model, print, exit"
    )
    parser.add_argument("--replaced", default=None, help="comma-separated kernels to count")
    parser.add_argument(
        "--cpus", default="", help="comma-separated CPUs to run on, set before TensorFlow starts"
    )
    args = parser.parse_args(argv)
    if args.intra < 0 or args.inter < 0:
        parser.error("thread counts must be >= 0")
    if args.model_batch < 1:
        parser.error("--model-batch must be >= 1")
    if args.profile < 0:
        parser.error("--profile must be >= 0")
    if (args.model_only or args.profile) and not args.model:
        parser.error("--model-only and --profile need --model")
    return args


class ModelProblem(Exception):
    """The model cannot be used: ``stage`` is "load", "inputs", "call" or "xla" (the call, compiled
    by XLA, failed)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def failure(exc: BaseException, limit: int | None = 1000) -> str:
    """The exception in one line: its type and message, at most ``limit`` characters."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:limit]


#: Integer and boolean inputs named like this get ones (every position valid), not zeros.
MASK_SUFFIXES = ("mask",)
#: The learning rate of the training step's Adam: small, so that the weights stay where they were
#: built (each call does the same work), not zero, so that the update is computed in full.
TRAIN_LEARNING_RATE = 1e-7


def _keras_structure(model: Any) -> Any:
    """The model's input structure (Keras tensors), or None when it declares none.

    ``model.input`` is the nest a functional model was built with (one tensor, a list, a dict). A
    Sequential loaded from its config raises there ("has never been called") though it knows its
    inputs from its build shape: ``model.inputs`` (a list; one tensor is passed as itself)."""
    try:
        return model.input
    except (AttributeError, ValueError):
        pass
    try:
        inputs = list(model.inputs or ())
    except (AttributeError, ValueError):  # an unbuilt Sequential: "has no defined inputs yet"
        inputs = []
    if inputs:
        return inputs[0] if len(inputs) == 1 else inputs
    return _built_shape(model)


class InputSpec:
    """An input the model does not declare as a tensor: its name, its shape without the batch
    (which is left open), its dtype."""

    def __init__(self, shape: list[int | None], name: str | None, dtype: str | None) -> None:
        self.name = name or "input"
        self.shape = [None, *shape]
        self.dtype = dtype or "float32"


def _built_shape(model: Any) -> Any:
    """A subclassed model that was built (called, or ``build(shape)``) before it was saved records
    the shape in its build config; one plain shape is one input (its first dimension the batch it
    was built with, which the batch replaces), in the model's compute dtype. None otherwise."""
    try:
        shape = (model.get_build_config() or {}).get("input_shape")
    except Exception:
        return None
    if not isinstance(shape, (list, tuple)) or not shape:
        return None
    if not all(d is None or isinstance(d, int) for d in shape):
        return None
    dtype = getattr(model, "compute_dtype", None)
    return InputSpec(list(shape[1:]), None, str(dtype) if dtype else None)


def _embedding_vocabularies(tf: Any, model: Any, structure: Any) -> dict[int, int]:
    """id(input tensor) -> the smallest vocabulary of the Embedding layers it feeds directly: its
    values must be token ids below that."""
    found: dict[int, int] = {}
    leaves = {id(leaf) for leaf in tf.nest.flatten(structure)}
    embedding = tf.keras.layers.Embedding
    try:
        layers = list(model._flatten_layers(include_self=False))
    except Exception:  # not a Keras 3 model: no layers to read
        return found
    for layer in layers:
        if not isinstance(layer, embedding):
            continue
        try:
            source = layer.input  # raises for a layer called more than once
        except Exception:  # a shared layer feeds several tensors: none to name
            continue
        if id(source) in leaves:
            found[id(source)] = min(found.get(id(source), layer.input_dim), int(layer.input_dim))
    return found


def _given(specs: list[dict[str, Any]], name: str, dims: list[int | None] | None) -> Any:
    """The --model-inputs entry for input ``name`` (of shape ``dims``, None when its rank is
    unknown): the one named so, else the unnamed one when the input leaves a dimension other than
    the batch open (or its rank unknown) and has the entry's rank."""
    for spec in specs:
        if spec.get("name") == name:
            return spec
    for spec in specs:
        if spec.get("name"):
            continue
        if dims is None or (None in dims[1:] and len(dims) == len(spec["shape"]) + 1):
            return spec
    return None


def model_inputs(
    tf: Any,
    np: Any,
    structure: Any,
    batch: int,
    given: list[dict[str, Any]],
    vocabularies: dict[int, int],
) -> tuple[Any, list[dict[str, Any]]]:
    """Tensors for a nest of input specs (TensorSpec or Keras tensors), and what each is: its
    name, shape (the batch first), dtype and what fills it.

    The open first dimension is the batch; a shape or dtype given on the command line
    (``--model-inputs``: by input name, or unnamed for every input that leaves a dimension open)
    replaces the model's. Floats are random normal (a fixed seed); integers feeding an Embedding
    are token ids drawn below its vocabulary; integers and booleans named ``*mask`` are ones
    (every position valid); other integers zeros."""
    rng = np.random.default_rng(20261125)
    leaves: list[dict[str, Any]] = []

    def make(spec: Any) -> Any:
        name = getattr(spec, "name", None) or "?"
        shape = spec.shape
        known = (
            None
            if getattr(shape, "rank", 0) is None
            else [None if d is None else int(d) for d in shape]
        )
        override = _given(given, name, known)
        if override is not None:
            dims: list[int | None] = [None, *override["shape"]]
        elif known is None:
            raise ModelProblem("inputs", f"input {name!r} has an unknown rank")
        else:
            dims = known
        if dims and dims[0] is None:
            dims[0] = batch
        if None in dims:
            raise ModelProblem(
                "inputs",
                f"input {name!r} has shape {tuple(shape)}: an open dimension other than the batch",
            )
        dtype = tf.as_dtype((override or {}).get("dtype") or spec.dtype)
        vocabulary = vocabularies.get(id(spec), 0)
        whole = [int(d) for d in dims if d is not None]
        if vocabulary:
            ids = rng.integers(0, vocabulary, size=whole)
            value, fill = tf.cast(tf.constant(ids), dtype), "token ids"
        elif dtype.is_floating:
            data = rng.standard_normal(whole).astype(np.float32)
            value, fill = tf.cast(tf.constant(data), dtype), "normal"
        elif (dtype.is_integer or dtype.is_bool) and name.lower().endswith(MASK_SUFFIXES):
            value, fill = tf.ones(whole, dtype), "ones"
        elif dtype.is_integer or dtype.is_bool:
            value, fill = tf.zeros(whole, dtype), "zeros"
        else:
            raise ModelProblem("inputs", f"input {name!r} is {dtype.name}; tune makes numbers only")
        leaf = {"name": name, "shape": whole, "dtype": dtype.name, "fill": fill}
        leaves.append(leaf | ({"vocabulary": vocabulary} if vocabulary else {}))
        return value

    return tf.nest.map_structure(make, structure), leaves


def _declared(given: list[dict[str, Any]]) -> Any:
    """The input structure the command line gives a model that declares none: one tensor, or a
    dict by name."""
    if not given:
        raise ModelProblem(
            "inputs", "the model declares no inputs: it was saved before it was built or called"
        )
    specs = [InputSpec(spec["shape"], spec.get("name"), spec.get("dtype")) for spec in given]
    if len(given) == 1 and not given[0].get("name"):
        return specs[0]
    if all(spec.get("name") for spec in given):
        return {spec.name: spec for spec in specs}
    raise ModelProblem(
        "inputs", "the model declares no inputs: name each --model-input (NAME=DIMS) it takes"
    )


def _params(model: Any, kind: str) -> int | None:
    try:
        if kind == "keras":
            return int(model.count_params())
        return int(sum(int(v.shape.num_elements() or 0) for v in model.variables))
    except Exception:
        return None


def _train_step(tf: Any, model: Any, inputs: Any) -> Callable[[], Any]:
    """Forward in training mode, a float32 loss (the mean square of every output), the gradients
    of every trainable weight, and Adam's update of them (:data:`TRAIN_LEARNING_RATE`)."""
    variables = model.trainable_variables
    if not variables:
        raise ModelProblem(
            "inputs", "the model has no trainable weights: there is no training step"
        )
    optimizer = tf.keras.optimizers.Adam(learning_rate=TRAIN_LEARNING_RATE)
    optimizer.build(variables)

    def step() -> Any:
        with tf.GradientTape() as tape:
            outputs = tf.nest.flatten(model(inputs, training=True))
            loss = tf.add_n([tf.reduce_mean(tf.square(tf.cast(o, tf.float32))) for o in outputs])
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    return step


def import_file(name: str, path: str | Path) -> Any:
    """The Python file ``path`` run as module ``name``: nothing of tfbuild's tree is on this
    process's path (it runs isolated, ``python -I``), nor the user's ``--model-code``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_model(
    tf: Any, np: Any, args: argparse.Namespace
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The model's step on its batch, as ``--model-step`` and ``--model-xla`` say (a tf.function
    of no arguments, called once), and what the model is; ModelProblem when it cannot be loaded
    ("load"), given a batch ("inputs"), or called ("call")."""
    given: list[dict[str, Any]] = json.loads(args.model_inputs) if args.model_inputs else []
    try:
        if args.model_code:  # the model's custom classes, registered as the user's program does
            import_file("tfbuild_model_code", args.model_code)
        if args.model_kind == "keras":
            model = tf.keras.models.load_model(args.model, compile=False, safe_mode=True)
        else:
            model = tf.saved_model.load(args.model)
    except Exception as exc:
        raise ModelProblem("load", failure(exc)) from exc
    if args.model_kind == "keras":
        structure = _keras_structure(model)
        if structure is None:
            structure, vocabularies = _declared(given), {}
        else:
            vocabularies = _embedding_vocabularies(tf, model, structure)
        inputs, leaves = model_inputs(tf, np, structure, args.model_batch, given, vocabularies)
        if args.model_step == "train":
            fn = _train_step(tf, model, inputs)
        else:
            fn = lambda: model(inputs, training=False)  # noqa: E731
    else:
        if args.model_step == "train":
            raise ModelProblem(
                "inputs",
                "a SavedModel's serving signature has no training step: time a .keras file",
            )
        signatures = getattr(model, "signatures", None) or {}
        if "serving_default" not in signatures:
            found = ", ".join(sorted(signatures)) or "none"
            raise ModelProblem(
                "inputs", f"the SavedModel has no 'serving_default' signature (it has: {found})"
            )
        serve = signatures["serving_default"]
        named, leaves = model_inputs(
            tf, np, serve.structured_input_signature[1], args.model_batch, given, {}
        )
        fn = lambda: serve(**named)  # noqa: E731
    # Under tf.function, as predict, fit and serving run a model; XLA compiles it whole when asked.
    call = tf.function(fn, jit_compile=args.model_xla == "jit")
    try:
        call()
    except Exception as exc:
        stage = "xla" if args.model_xla == "jit" else "call"
        raise ModelProblem(stage, failure(exc)) from exc
    return call, {
        "inputs": leaves,
        "params": _params(model, args.model_kind),
        "step": args.model_step,
        "xla": args.model_xla,
    }


def build_ops(tf: Any, np: Any, *, bf16: bool) -> tuple[list[Op], dict[str, str]]:
    """Every op this build runs, with its inputs already made; and why the others were dropped."""
    rng = np.random.default_rng(20261122)

    def tensor(shape: tuple[int, ...], dtype: Any = None) -> Any:
        data = rng.standard_normal(shape).astype(np.float32)
        value = tf.constant(data)
        return value if dtype is None else tf.cast(value, dtype)

    ops: list[Op] = []
    dropped: dict[str, str] = {}

    def add(
        name: str, group: str, unit: str, work: int, fn: Callable[[], Any], dtype: str = "float32"
    ) -> None:
        ops.append(Op(name, group, unit, work, fn, dtype))

    def accepted(name: str, probe: Callable[[], Any]) -> bool:
        try:
            probe()
        except Exception as exc:  # the build refuses it: leave the op out
            dropped[name] = failure(exc, 500)
            return False
        return True

    matmul = tf.linalg.matmul

    def product(a: Any, b: Any) -> Callable[[], Any]:
        return lambda: matmul(a, b)

    for n in (256, 1024, 2048):
        add(f"matmul_{n}", "matmul", "GFLOP/s", 2 * n**3, product(tensor((n, n)), tensor((n, n))))
    if bf16:
        small = tensor((16, 16), tf.bfloat16)
        if accepted("matmul_bf16_1024", lambda: matmul(small, small)):
            a16, b16 = tensor((1024, 1024), tf.bfloat16), tensor((1024, 1024), tf.bfloat16)
            add("matmul_bf16_1024", "matmul", "GFLOP/s", 2 * 1024**3, product(a16, b16), "bfloat16")

    conv2d = tf.nn.conv2d

    def convolution(x: Any, w: Any, data_format: str) -> Callable[[], Any]:
        return lambda: conv2d(x, w, strides=1, padding="SAME", data_format=data_format)

    x_nhwc = tensor((CONV_N, CONV_HW, CONV_HW, CONV_C))
    w = tensor((CONV_K, CONV_K, CONV_C, CONV_C))  # HWIO in both data formats
    add("conv2d_nhwc", "conv", "GFLOP/s", CONV_FLOPS, convolution(x_nhwc, w, "NHWC"))
    tiny_x, tiny_w = tensor((1, CONV_C, 4, 4)), tensor((CONV_K, CONV_K, CONV_C, CONV_C))
    if accepted("conv2d_nchw", convolution(tiny_x, tiny_w, "NCHW")):
        x_nchw = tf.transpose(x_nhwc, [0, 3, 1, 2])
        add("conv2d_nchw", "conv", "GFLOP/s", CONV_FLOPS, convolution(x_nchw, w, "NCHW"))

    x, y = tensor((ROWS, COLS)), tensor((ROWS, COLS))
    x_pos = tf.abs(x)  # log1p's domain
    gamma, beta = tensor((COLS,)), tensor((COLS,))

    def layer_norm() -> Any:  # what Keras' LayerNormalization runs: moments + batch_normalization
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-5)

    elementwise: list[tuple[str, Callable[[], Any]]] = [
        ("exp", lambda: tf.math.exp(x)),
        ("tanh", lambda: tf.math.tanh(x)),
        ("sigmoid", lambda: tf.math.sigmoid(x)),
        ("erf", lambda: tf.math.erf(x)),
        ("gelu", lambda: tf.nn.gelu(x, approximate=False)),  # the erf form, a few eager ops
        ("log1p", lambda: tf.math.log1p(x_pos)),
        ("softmax", lambda: tf.nn.softmax(x, axis=-1)),
        ("log_softmax", lambda: tf.nn.log_softmax(x, axis=-1)),
        ("layer_norm", layer_norm),
    ]
    for name, fn in elementwise:
        add(name, "elementwise", "Gelem/s", ELEMENTS, fn)
    add("cast_f32_bf16", "cast", "Gelem/s", ELEMENTS, lambda: tf.cast(x, tf.bfloat16))
    add("cast_f32_f16", "cast", "Gelem/s", ELEMENTS, lambda: tf.cast(x, tf.float16))
    add("add", "control", "Gelem/s", ELEMENTS, lambda: tf.math.add(x, y))
    add("relu", "control", "Gelem/s", ELEMENTS, lambda: tf.nn.relu(x))
    add("reduce_sum", "control", "Gelem/s", ELEMENTS, lambda: tf.math.reduce_sum(x, axis=-1))
    return ops, dropped


def time_calls(fn: Callable[[], Any], count: int) -> float:
    """Seconds for ``count`` back-to-back calls; each result lives until the next call replaces it."""
    result = None
    start = time.perf_counter()
    for _ in range(count):
        result = fn()
    elapsed = time.perf_counter() - start
    del result
    return elapsed


def calibrate(fn: Callable[[], Any], min_rep_seconds: float) -> int:
    """The smallest inner count (found by growing it) whose loop took at least min_rep_seconds."""
    inner = 1
    while inner < MAX_INNER:
        elapsed = time_calls(fn, inner)
        if elapsed >= min_rep_seconds:
            break
        if elapsed <= 0:
            inner *= 10
            continue
        estimate = math.ceil(inner * min_rep_seconds / elapsed * 1.05)
        inner = min(MAX_INNER, max(inner * 2, min(estimate, inner * 1000)))
    return inner


def measure(
    op: Op,
    reps: int,
    min_rep_seconds: float,
    inner: int | None = None,
    warmup: int = WARMUP_CALLS,
) -> dict[str, Any]:
    time_calls(op.fn, warmup)
    if inner is None:
        inner = calibrate(op.fn, min_rep_seconds)
        # Once per op, not per repetition: with TensorFlow loaded a full collection takes about
        # 0.15 s, more than the repetitions it would precede (the driver asks one at a time).
        gc.collect()
    seconds: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(reps):
            seconds.append(time_calls(op.fn, inner) / inner)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {
        "op": op.name,
        "seconds_per_call": seconds,
        "inner": inner,
        "work": op.work,
        "unit": op.unit,
    }


def handle(line: str, ops: dict[str, Op]) -> dict[str, Any] | None:
    """The reply to one request line; None means quit."""
    try:
        request = json.loads(line)
    except ValueError as exc:
        return {"error": f"not JSON: {exc}"}
    if not isinstance(request, dict):
        return {"error": "a request is a JSON object"}
    if request.get("quit"):
        return None
    name = request.get("op")
    op = ops.get(name) if isinstance(name, str) else None
    if op is None:
        return {"op": name, "error": f"unknown op {name!r}; known: {', '.join(ops)}"}
    reps = request.get("reps", 15)
    min_rep_seconds = request.get("min_rep_seconds", 0.05)
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        return {"op": name, "error": f"reps must be an integer >= 1, not {reps!r}"}
    if isinstance(min_rep_seconds, bool) or not isinstance(min_rep_seconds, (int, float)):
        return {"op": name, "error": f"min_rep_seconds must be a number, not {min_rep_seconds!r}"}
    if not 0 <= min_rep_seconds <= 60:
        return {"op": name, "error": f"min_rep_seconds must be in [0, 60], not {min_rep_seconds}"}
    inner = request.get("inner")
    if inner is not None and (
        isinstance(inner, bool) or not isinstance(inner, int) or not 1 <= inner <= MAX_INNER
    ):
        return {"op": name, "error": f"inner must be an integer in [1, {MAX_INNER}], not {inner!r}"}
    warmup = request.get("warmup", WARMUP_CALLS)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup <= 100:
        return {"op": name, "error": f"warmup must be an integer in [0, 100], not {warmup!r}"}
    try:
        return measure(op, reps, float(min_rep_seconds), inner, warmup)
    except Exception as exc:  # the op failed on this build: say so and go on
        traceback.print_exc(file=sys.stderr)
        return {"op": name, "error": failure(exc, 2000)}


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def pin(cpus: str) -> None:
    """Run on these CPUs, and every thread started from now on (TensorFlow's pools) too."""
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
        except (OSError, ValueError) as exc:
            print(f"cannot pin to CPUs {cpus}: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    send = take_stdout()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    pin(args.cpus)
    try:
        import numpy as np
        import tensorflow as tf

        if args.intra:
            tf.config.threading.set_intra_op_parallelism_threads(args.intra)
        if args.inter:
            tf.config.threading.set_inter_op_parallelism_threads(args.inter)
        tf.config.experimental.set_synchronous_execution(True)  # the default; timing relies on it
        ops, dropped = ([], {}) if args.model_only else build_ops(tf, np, bf16=args.bf16)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        send({"ready": False, "error": failure(exc, None)})
        return 1
    model: dict[str, Any] = {}
    if args.model:
        try:
            call, described = load_model(tf, np, args)
        except ModelProblem as exc:
            traceback.print_exc(file=sys.stderr)
            problem = {"stage": exc.stage, "error": str(exc)}
            send({"ready": False, "error": str(exc), "model_error": problem})
            return 1
        if args.profile:  # one line: where the model's step spends its time (profile_tf.py)
            _profile_tf = sibling("profile_tf")
            if args.replaced is not None:
                replaced = [k for k in args.replaced.split(",") if k]
            else:  # the kernels this process runs at the overlay's priority
                replaced = _profile_tf.overlaid(tf)
            # load_model called it once already: the one untraced call the profile needs
            found = _profile_tf.profile(tf, call, args.model_op, args.profile, replaced, warm=False)
            send({**found, "describe": described})
            return 0
        ops.append(Op(args.model_op, "model", "Gsample/s", args.model_batch, call))
        model = {"model": described}
    return serve(
        send,
        ops,
        {
            "tensorflow": tf.__version__,
            "git_version": getattr(tf, "__git_version__", None),
            "intra": args.intra,
            "inter": args.inter,
            "dropped": dropped,
            "cpus": cpu_count(),
            "env": {k: os.environ[k] for k in RECORDED_ENV if k in os.environ},
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "pid": os.getpid(),
            "overlay_loaded": sibling("profile_tf").overlay_loaded(),
            **model,
        },
    )


def sibling(name: str) -> Any:
    """The script NAME.py beside this one, imported once."""
    if name not in sys.modules:
        import_file(name, Path(__file__).with_name(f"{name}.py"))
    return sys.modules[name]


def serve(send: Send, ops: list[Op], ready: dict[str, Any]) -> int:
    """The ready line (``ready`` and the ops), then one reply per request until quit or end of
    input (also the loop of the tests' known-ratio worker, which serves its own ops)."""
    by_name = {op.name: op for op in ops}
    send({"ready": True, **ready, "ops": {op.name: op.describe() for op in ops}})
    try:
        for line in iter(sys.stdin.readline, ""):
            if not line.strip():
                continue
            reply = handle(line, by_name)
            if reply is None:
                break
            send(reply)
    except BrokenPipeError:  # the driver went away: nobody to answer
        return 0
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
