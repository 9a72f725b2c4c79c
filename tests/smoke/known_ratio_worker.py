"""A benchmark worker whose speed ratios are known: smoke's timing loop tested against the truth.

Usage: ``python3 known_ratio_worker.py --role candidate|baseline [--intra N --inter M]`` (the
thread counts are accepted, as ``tfbuild.smoke.run.Worker`` passes them, and ignored).
Standard library only, no tfbuild import: it runs under any Python 3.

It speaks the protocol of ``tfbuild/smoke/_worker.py`` (see that module's docstring), one JSON
object per line on stdout:

* Start: ``{"ready": true, "role": ..., "ops": {NAME: {"unit": "GFLOP/s", "work": W,
  "group": "synthetic", "dtype": "float32"}}, ...}``.
* ``{"op": NAME, "reps": R, "min_rep_seconds": S}`` and optionally ``"inner": n`` (no calibration)
  and ``"warmup": W``: reply ``{"op", "seconds_per_call": [R floats], "inner", "work", "unit"}``,
  or ``{"op": NAME, "error": ...}`` for a request it cannot serve.
* ``{"quit": true}`` or end of input: exit 0.

Each op ``xF`` (``x1.0``, ``x1.2``, ``x1.5``, ``x2.0``) hashes a 64 KiB block with SHA-256
:data:`BLOCKS` times per call on the candidate and ``BLOCKS * F`` times on the baseline, so the
candidate is faster by exactly F: the work is C code on data that stays in cache, each block costs
the same, and the Python around it (one ``update`` call a block) is about 0.1 % of it (AMD EPYC,
Python 3.11: 31.5 us a block; 10, 12, 15 and 20 blocks took 0.315, 0.378, 0.472 and 0.630 ms).
Native code, like TensorFlow's kernels: a pure-Python loop differed steadily by 5-10 % between two
processes running the same code (the interpreter's speed moves with where the process's stack and
heap land), which no timing inside the two processes can see through.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import sys
import time
from typing import Any

#: The truth: op name -> how much faster the candidate is (baseline blocks / candidate blocks).
FACTORS = {"x1.0": 1.0, "x1.2": 1.2, "x1.5": 1.5, "x2.0": 2.0}
#: 64 KiB blocks hashed per call on the candidate (divisible by 5: every factor gives a whole number).
BLOCKS = 10
BLOCK = bytes(range(256)) * 256
WARMUP_CALLS = 3
MAX_INNER = 10_000_000


def spin(blocks: int) -> bytes:
    """SHA-256 over ``blocks`` copies of the same 64 KiB block: the same cost each block."""
    digest = hashlib.sha256()
    for _ in range(blocks):
        digest.update(BLOCK)
    return digest.digest()


def time_calls(blocks: int, count: int) -> float:
    """Seconds for ``count`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(count):
        spin(blocks)
    return time.perf_counter() - start


def calibrate(blocks: int, min_rep_seconds: float) -> int:
    """The smallest inner count (found by growing it) whose loop took at least min_rep_seconds
    (``calibrate`` of tfbuild/smoke/_worker.py, over a loop instead of a callable)."""
    inner = 1
    while inner < MAX_INNER:
        elapsed = time_calls(blocks, inner)
        if elapsed >= min_rep_seconds:
            break
        if elapsed <= 0:
            inner *= 10
            continue
        estimate = math.ceil(inner * min_rep_seconds / elapsed * 1.05)
        inner = min(MAX_INNER, max(inner * 2, min(estimate, inner * 1000)))
    return inner


def measure(
    name: str, blocks: int, reps: int, min_rep_seconds: float, inner: int | None, warmup: int
) -> dict[str, Any]:
    time_calls(blocks, warmup)
    if inner is None:
        inner = calibrate(blocks, min_rep_seconds)
    seconds = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            seconds.append(time_calls(blocks, inner) / inner)
    finally:
        gc.enable()
    return {
        "op": name,
        "seconds_per_call": seconds,
        "inner": inner,
        "work": BLOCKS,
        "unit": "GFLOP/s",
    }


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def handle(line: str, blocks_of: dict[str, int]) -> dict[str, Any] | None:
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
    if not isinstance(name, str) or name not in blocks_of:
        return {"op": name, "error": f"unknown op {name!r}; known: {', '.join(blocks_of)}"}
    reps = request.get("reps", 15)
    min_rep_seconds = request.get("min_rep_seconds", 0.05)
    inner = request.get("inner")
    warmup = request.get("warmup", WARMUP_CALLS)
    if not _is_int(reps) or reps < 1:
        return {"op": name, "error": f"reps must be an integer >= 1, not {reps!r}"}
    if isinstance(min_rep_seconds, bool) or not isinstance(min_rep_seconds, (int, float)):
        return {"op": name, "error": f"min_rep_seconds must be a number, not {min_rep_seconds!r}"}
    if not 0 <= min_rep_seconds <= 60:
        return {"op": name, "error": f"min_rep_seconds must be in [0, 60], not {min_rep_seconds}"}
    if inner is not None and (not _is_int(inner) or not 1 <= inner <= MAX_INNER):
        return {"op": name, "error": f"inner must be an integer in [1, {MAX_INNER}], not {inner!r}"}
    if not _is_int(warmup) or not 0 <= warmup <= 100:
        return {"op": name, "error": f"warmup must be an integer in [0, 100], not {warmup!r}"}
    return measure(name, blocks_of[name], reps, float(min_rep_seconds), inner, warmup)


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--role", choices=("candidate", "baseline"), required=True)
    parser.add_argument("--intra", type=int, default=0, help="accepted and ignored")
    parser.add_argument("--inter", type=int, default=0, help="accepted and ignored")
    parser.add_argument("--cpus", default="", help="comma-separated CPUs to run on")
    args = parser.parse_args()
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    blocks_of = {
        name: BLOCKS if args.role == "candidate" else round(BLOCKS * factor)
        for name, factor in FACTORS.items()
    }
    meta = {"unit": "GFLOP/s", "work": BLOCKS, "group": "synthetic", "dtype": "float32"}
    send(
        {
            "ready": True,
            "role": args.role,
            "intra": args.intra,
            "inter": args.inter,
            "ops": {name: dict(meta) for name in blocks_of},
            "blocks": blocks_of,
            "python": sys.version.split()[0],
            "pid": os.getpid(),
        }
    )
    try:
        for line in iter(sys.stdin.readline, ""):
            if not line.strip():
                continue
            reply = handle(line, blocks_of)
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
