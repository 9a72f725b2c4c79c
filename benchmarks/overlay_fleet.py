"""Overlays for the machines of a fleet, built on this one: each target's overlay compiled in the
overlay's toolchain image (the command's default) against the stock wheel, checked at build time
where this CPU runs its kernels, its check left pending where it does not.

    python benchmarks/overlay_fleet.py [--targets x86_64_v3,x86_64_v4,...] [--tf 2.21] [--json]

Figures, per target: the seconds ``tfbuild overlay`` took (the image and the stock environment
already made: run it twice, the first builds the image), the kernels, the flags, what the build
left out of them, and the special-value check: how many kernels it covered, or pending with the
instruction sets this CPU lacks. The machine's load before and after, and what others took.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tfbuild.core import serial
from tfbuild.detect.contention import between, snapshot
from tfbuild.overlay.build import OverlayRequest, build_overlay
from tfbuild.plan.here import plan_here
from tfbuild.plan.options import PlanOptions

TARGETS = "x86_64_v3,x86_64_v4,zen4,icelake,sapphirerapids,graniterapids"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--targets", default=TARGETS)
    parser.add_argument("--tf", default="2.21")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    before = snapshot()
    rows = []
    for target in [t for t in args.targets.split(",") if t]:
        plan = plan_here(PlanOptions(tf=args.tf, target=target)).plan
        with tempfile.TemporaryDirectory(prefix="tfbuild-fleet-") as out:
            result = build_overlay(
                OverlayRequest.of_plan(
                    plan,
                    in_image=True,
                    venv_python=sys.executable,
                    out=Path(out),
                )
            )
        receipt = result.receipt
        rows.append(
            {
                "target": target,
                "seconds": receipt.seconds,
                "kernels": len(receipt.kernels),
                "cflags": " ".join(receipt.cflags),
                "left_out": [o.instruction_set for o in receipt.left_out],
                "checked": len(receipt.checks),
                "pending": list(receipt.pending),
                "wheel": receipt.wheel.name,
            }
        )
        if not args.json:
            check = (
                f"pending (this CPU lacks {' '.join(receipt.pending)})"
                if receipt.pending
                else f"checked at build: {len(receipt.checks)} kernels"
            )
            print(f"{target:<16}{receipt.seconds:>6.0f} s  {len(receipt.kernels)} kernels  {check}")
            print(f"{'':<16}{' '.join(receipt.cflags)}")
    load = between(before, snapshot())
    if args.json:
        print(json.dumps({"rows": rows, "load": serial.to_data(load)}, indent=2))
    else:
        print(f"machine: {load.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
