"""What the measuring worker says (``tfbuild/scripts/worker.py`` and every script that speaks its
protocol: the overlay's models, the tests' known-ratio workers), decoded strictly into types.

One JSON object a line: first the ready line (:class:`Ready`), then one reply a request
(:class:`Reply`). The worker runs the wheel under test, so what it says is untrusted input: each
line is bounded, decoded by :mod:`tfbuild.core.serial` (the types' fields must have their types),
and the numbers the verdicts read are checked to be finite and in range.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from tfbuild.core import serial

#: The longest line the driver reads from a worker (a ready line lists every op and its model).
MAX_LINE = 1 << 20


@dataclass(frozen=True, kw_only=True)
class OpInfo:
    """One op the worker can time: its unit of throughput, the work a call does in that unit."""

    unit: str
    work: float
    group: str = ""
    dtype: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelError:
    """Why the worker could not use the user's model: the stage (load, batch, call, xla)."""

    stage: str
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class Ready:
    """The worker's first line: whether it is ready, its ops, and what it reports of itself."""

    ready: bool
    ops: dict[str, OpInfo] = field(default_factory=dict)
    error: str | None = None
    model_error: ModelError | None = None
    overlay_loaded: bool = False
    overlaid: tuple[str, ...] = ()  # the overlay's models: kernels run at the overlay's priority
    model: dict[str, Any] | None = None  # the user's model, as the worker describes it
    #: the rest (TensorFlow's version, threads, CPUs, environment), for reports only
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One request's reply: seconds per call of each repetition and the calls a repetition made,
    or why the op failed."""

    op: str | None = None
    seconds_per_call: tuple[float, ...] = ()
    inner: int = 0
    work: float | None = None
    unit: str | None = None
    error: str | None = None


_READY_FIELDS = {f for f in Ready.__dataclass_fields__ if f != "facts"}


def decode_ready(line: str) -> Ready:
    """The ready line; a ValueError says why it is not one."""
    data = _object(line)
    known = {k: v for k, v in data.items() if k in _READY_FIELDS}
    facts = {k: v for k, v in data.items() if k not in _READY_FIELDS}
    ready = serial.from_data({**known, "facts": facts}, Ready)
    for name, op in ready.ops.items():
        if not (math.isfinite(op.work) and op.work > 0):
            raise ValueError(f"op {name}'s work is {op.work}")
    return ready


def decode_reply(line: str) -> Reply:
    """One reply; a ValueError says why it is not one."""
    reply = serial.from_data(_object(line), Reply)
    if reply.error is None:
        if not reply.seconds_per_call or not reply.inner >= 1:
            raise ValueError("a reply without an error has timings and an inner count")
        if not all(math.isfinite(s) and s > 0 for s in reply.seconds_per_call):
            raise ValueError(f"a timing is not a positive number: {reply.seconds_per_call}")
    return reply


def _object(line: str) -> dict[str, Any]:
    if len(line) > MAX_LINE:
        raise ValueError(f"a line longer than {MAX_LINE} characters")
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("a line is not a JSON object")
    return data
