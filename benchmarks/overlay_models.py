"""The overlay end to end on four small models: stock against overlay, in one environment, with the
gain each model's profile predicts beside the gain measured (tfbuild.overlay.models, the same code
``tfbuild smoke OVERLAY.whl`` runs, here with its own budget and an A/A control).

    python benchmarks/overlay_models.py --wheel dist/tfbuild_overlay-...whl [--budget 240]
        [--models lstm,mlp_bf16] [--control] [--json]

``--control`` runs stock against stock (``TFBUILD_OVERLAY=off`` on both sides): what two processes
of one build differ by, which every "faster" above must exceed. Figures: median milliseconds a
step on each side, the ratio with the interval that decided, the verdict, and the prediction;
the machine's load average before and after, and how much of the CPU others took meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tfbuild.core import serial
from tfbuild.detect.contention import between, snapshot
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env
from tfbuild.measure.run import Method
from tfbuild.overlay.models import MODELS, prove_models

OFF = {"TFBUILD_OVERLAY": "off"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="an overlay wheel")
    parser.add_argument("--budget", type=float, default=240.0, help="seconds for the timing")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--control", action="store_true", help="stock on both sides")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    env = ensure_env(WheelSpec(kind="file", value=str(args.wheel.resolve())), python=sys.executable)
    stock = {**clean_env(), **OFF}
    overlay = stock if args.control else clean_env()
    load_before, before = os.getloadavg()[0], snapshot()
    results = prove_models(
        env.python,
        stock_env=stock,
        overlay_env=overlay,
        method=Method(budget=args.budget),
        models=models,
        progress=lambda message: print(f"[bench] {message}", file=sys.stderr),
    )
    machine, load_after = between(before, snapshot()), os.getloadavg()[0]
    if args.json:
        print(json.dumps(serial.to_data(results), indent=2))
        return 0
    side = "stock (again)" if args.control else "overlay"
    print(f"{'model':<13}{'stock ms':>9}{side + ' ms':>17}  measured [interval]   predicted")
    for r in results:
        found, timed = r.measured.verdict, r.measured
        assert found is not None and timed.baseline is not None
        low, high = found.interval
        print(
            f"{r.model:<13}{timed.baseline.seconds.median * 1e3:>9.2f}"
            f"{timed.candidate.seconds.median * 1e3:>17.2f}  {found.ratio:.3f}x "
            f"[{low:.3f}, {high:.3f}] {found.label:<9} {r.predicted:.3f}x "
            f"(share {r.share * 100:.1f}%, kernels {r.speedup:.2f}x)"
        )
    print(f"load average {load_before:.2f} before, {load_after:.2f} after; {machine.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
