"""A model worker whose speed is known: the race of ``tfbuild tune --model`` tested against the truth.

It takes the real worker's arguments (``tfbuild/scripts/worker.py --model ... --model-only``, as
:class:`tfbuild.measure.run.Worker` passes them) and serves one op, the model's, with the real
worker's code (protocol, calibration, timing); only the op differs. What it is comes from its
environment, as each way of running a model differs by its environment in tune:

* ``KNOWN_BLOCKS``: 64 KiB blocks hashed a call (``known_ratio_worker.spin``): two entrants with 10
  and 20 blocks differ by exactly 2x.
* ``KNOWN_FAIL=start``: refuses at start as the worker does when XLA cannot compile the model (a
  ``model_error`` of stage "xla"); ``KNOWN_FAIL=time``: the op raises from its fifth call on.
* ``KNOWN_OVERLAY=1``: says the overlay is loaded; ``KNOWN_LOADER``: a line said as the overlay's
  loader says why it did not load.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

from tests.measure.known_ratio_worker import spin
from tfbuild.scripts.worker import Op, serve, take_stdout


def main() -> int:
    send = take_stdout()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    for flag in ("--intra", "--inter", "--cpus", "--model", "--model-kind", "--model-batch"):
        parser.add_argument(flag, default="")
    for flag in ("--model-step", "--model-inputs", "--model-code", "--model-xla"):
        parser.add_argument(flag, default="")
    parser.add_argument("--model-op", default="model")
    parser.add_argument("--model-only", action="store_true")
    args = parser.parse_args()
    if os.environ.get("KNOWN_LOADER"):
        print(os.environ["KNOWN_LOADER"], file=sys.stderr, flush=True)
    if os.environ.get("KNOWN_FAIL") == "start":
        error = "InvalidArgumentError: XLA cannot compile this op (known worker)"
        problem = {"stage": "xla", "error": error}
        send({"ready": False, "error": error, "model_error": problem})
        return 1
    blocks = int(os.environ.get("KNOWN_BLOCKS", "10"))
    calls = {"n": 0}

    def call() -> bytes:
        calls["n"] += 1
        if os.environ.get("KNOWN_FAIL") == "time" and calls["n"] >= 5:
            raise RuntimeError("the known worker fails from its fifth call")
        return spin(blocks)

    op = Op(args.model_op, "model", "Gsample/s", 1, functools.partial(call))
    ready = {
        "overlay_loaded": os.environ.get("KNOWN_OVERLAY") == "1",
        "model": {"inputs": [], "params": blocks, "step": "predict", "xla": args.model_xla},
        "pid": os.getpid(),
    }
    return serve(send, [op], ready)


if __name__ == "__main__":
    sys.exit(main())
