"""A benchmark worker whose speed ratios are known: smoke's timing loop tested against the truth.

Usage: ``python known_ratio_worker.py --role candidate|baseline [--intra N --inter M --cpus LIST]``
(the thread counts are accepted, as ``tfbuild.measure.run.Worker`` passes them, and ignored). Run
with tfbuild's own interpreter: it serves its ops with the real worker's code
(``tfbuild/scripts/worker.py``: its protocol, calibration, timing and pinning), only the ops differ.

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
import functools
import hashlib
import os
import sys

from tfbuild.scripts.worker import Op, pin, serve, take_stdout

#: The truth: op name -> how much faster the candidate is (baseline blocks / candidate blocks).
FACTORS = {"x1.0": 1.0, "x1.2": 1.2, "x1.5": 1.5, "x2.0": 2.0}
#: 64 KiB blocks hashed per call on the candidate (divisible by 5: every factor gives a whole number).
BLOCKS = 10
BLOCK = bytes(range(256)) * 256


def spin(blocks: int) -> bytes:
    """SHA-256 over ``blocks`` copies of the same 64 KiB block: the same cost each block."""
    digest = hashlib.sha256()
    for _ in range(blocks):
        digest.update(BLOCK)
    return digest.digest()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--role", choices=("candidate", "baseline"), required=True)
    parser.add_argument("--intra", type=int, default=0, help="accepted and ignored")
    parser.add_argument("--inter", type=int, default=0, help="accepted and ignored")
    parser.add_argument("--cpus", default="", help="comma-separated CPUs to run on")
    args = parser.parse_args()
    pin(args.cpus)
    send = take_stdout()
    blocks_of = {
        name: BLOCKS if args.role == "candidate" else round(BLOCKS * factor)
        for name, factor in FACTORS.items()
    }
    ops = [
        Op(name, "synthetic", "GFLOP/s", BLOCKS, functools.partial(spin, blocks))
        for name, blocks in blocks_of.items()
    ]
    ready = {"role": args.role, "intra": args.intra, "inter": args.inter, "blocks": blocks_of}
    return serve(send, ops, ready | {"pid": os.getpid()})


if __name__ == "__main__":
    sys.exit(main())
