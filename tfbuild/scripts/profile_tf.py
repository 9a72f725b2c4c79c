# mypy: disable-error-code="import-not-found,import-untyped"
"""Where a model's time goes: TensorFlow's profiler on one step function, in the interpreter that has
TensorFlow.

Imports only the standard library (TensorFlow is passed in); valid on Python 3.9. Not run on its
own: the measuring worker (``worker.py --profile``, a user's model) and the overlay's models
(``models_tf.py --profile``, through the worker) load it by its path, from their own directory.

:func:`profile` calls a step (a ``tf.function`` of no arguments) once, runs STEPS calls under
``tf.profiler.experimental`` and reads the ``.xplane.pb`` written with the XPlane proto the wheel
ships (``tensorflow.tsl.profiler.protobuf.xplane_pb2``): each op is an event ``node:OpType`` on an
executor thread of the ``/host:CPU`` plane; its self time (less the ops nested in it on the same
thread) is summed per op type. The step must be built afresh in the process and called only once
before: TensorFlow 2.21 ignores ``host_tracer_level=3`` (it logs "host_tracer_level expects an i
value" and profiles at 2), and at 2 the executor traces only the ops it deems expensive. Every op
starts expensive and its cost is re-estimated only in untraced runs, so after a single warm call
every op of every traced call is recorded; after ~100 calls the cheap ones vanish from the profile.
The dtypes of each node come from the traced graph and its function library (while bodies), by
node name: an inlined body's node by its trailing components, a node Grappler made in another's
place by that other's.

It returns one dict per step: ``{"model", "steps", "overlay_loaded", "host_tracer_level",
"total_op_s", "wall_s", "replaced_s", "share", "unknown_s", "not_run", "kernels", "replaced":
{"Kernel:dtype": s}, "ops": {type: s}}``, seconds per step. Replaced: the ``kernels`` asked for
(by default those this process runs at the overlay's priority, :func:`overlaid`); an op of a
replaced type whose dtypes cannot be told counts in ``unknown_s``, in no share. ``not_run``:
replaced op types in the graph that never ran (rewritten or fused before they could).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

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


def profile(
    tf: Any, step: Any, name: str, steps: int, replaced: list[str], *, warm: bool = True
) -> dict[str, Any]:
    """The op time per op type of ``steps`` calls of a step built afresh and called once, and the
    share of the ``replaced`` kernels ("Exp:float32"); see the module docstring. ``warm``: make
    that one call here; False when the caller already has (the worker calls a user's model once
    when it loads it), since a second untraced call lets TensorFlow judge the fast ops cheap, and
    the traced calls then leave them out (the overlay's kernels first, being fastest)."""
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:
        from tsl.profiler.protobuf import xplane_pb2
    if warm:
        step()  # allocations, oneDNN primitives; every op still counts as expensive after it
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
