"""How long `tfbuild forecast` takes, and whether its stock (-mavx) side matches the stock wheel itself.

Runs ``tfbuild forecast --json`` for this host and times it. Then times the same ops in the stock
wheel's TensorFlow (eager, one thread: intra = inter = 1, 2^18 f32 elements, the forecast's size),
and its per-call overhead (the same op on 256 elements), and prints each op's rate beside the
forecast's: the forecast's stock build should land near stock TensorFlow's kernel rate (the
baseline measured exp 2.2 Gelem/s against 1.8-2.0), and its plan build shows what a build for this
host would reach. Beside them, the forecast's own TensorFlow side: stock TensorFlow's rate as the
forecast timed it (a whole eager call, the same measurement as this script's "stock TF" column) and
the rate and ratio TensorFlow would reach with the plan's kernel, T / (T - D).

    python benchmarks/forecast.py [--spec tensorflow-cpu==2.21.0] [--reps 11]

About 2-3 minutes on a 2-core machine once the stock wheel's environment exists.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from tfbuild.measure import _forecast_tf
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env

FORECAST_TF = _forecast_tf.__file__

#: Run in the stock environment: the forecast's own ops (tfbuild/measure/_forecast_tf.py, the file
#: the forecast runs there), on 2^18 elements and on one 256-element row. An eager call costs 11-17
#: us of dispatch and allocation whatever its size (the stock-wheel baseline, section 6), which the
#: kernels compiled by the forecast never pay; the difference of the two sizes leaves the kernel's
#: own rate (the "marginal" rate: extra elements per extra second), the quantity the forecast's
#: stock-flag side is.
_TF_RATES = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("_forecast_tf", sys.argv[2])
ftf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ftf)
import numpy as np
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
reps, big, small = int(sys.argv[1]), ftf.ELEMENTS, ftf.ROW
large, tiny = ftf.ops(tf, np, big), ftf.ops(tf, np, small)

def seconds_per_call(op):
    calls = ftf.calibrate(op, 0.02)
    return [ftf._loop(op, calls) / calls for _ in range(reps)]

result = {}
for name in large:
    # Alternate the two sizes so that both see the same state of the machine.
    b, t = [], []
    for _ in range(3):
        b += seconds_per_call(large[name])
        t += seconds_per_call(tiny[name])
    b.sort(); t.sort()
    result[name] = {
        "rates": [big / s / 1e9 for s in b],
        "overhead_us": t[len(t) // 2] * 1e6,
        "marginal": (big - small) / max(b[len(b) // 2] - t[len(t) // 2], 1e-9) / 1e9,
    }
print(json.dumps(result))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="tensorflow-cpu==2.21.0")
    parser.add_argument("--reps", type=int, default=11)
    args = parser.parse_args()
    python = ensure_env(WheelSpec.parse(args.spec)).python
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "tfbuild", "forecast", "--json", "--stock", args.spec],
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
        return run.returncode
    forecast = json.loads(run.stdout)
    print(f"tfbuild forecast: {took:.0f} s (goal: under 120 s)")
    print(forecast["summary"])
    tf_run = subprocess.run(
        [python, "-c", _TF_RATES, str(args.reps), str(FORECAST_TF)],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env() | {"TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    tf_rates = json.loads(tf_run.stdout.strip().splitlines()[-1])
    print()
    print(
        f"{'op':<15}{'stock TF':>10}{'overhead':>10}{'TF kernel':>11}{'fc -mavx':>10}"
        f"{'-mavx range':>14}{'-mavx/TF':>10}{'fc plan':>9}{'plan/-mavx':>12}"
        f"{'fc TF':>8}{'fc TF plan':>12}{'in TF':>8}"
    )
    print(
        f"{'':<15}{'Gelem/s':>10}{'us/call':>10}{'Gelem/s':>11}{'Gelem/s':>10}"
        f"{'slow-fast':>14}{'kernel':>10}{'Gelem/s':>9}{'kernel':>12}"
        f"{'Gelem/s':>8}{'Gelem/s':>12}{'ratio':>8}"
    )
    for op in forecast["ops"]:
        tf_side = tf_rates[op["op"]]
        rates = tf_side["rates"]
        tf_median = rates[len(rates) // 2]
        stock, plan = op["stock"]["throughput"], op["plan"]["throughput"]
        stock_range = f"{stock['min']:.2f}-{stock['max']:.2f}"
        line = (
            f"{op['op']:<15}{tf_median:>10.2f}{tf_side['overhead_us']:>10.1f}"
            f"{tf_side['marginal']:>11.2f}{stock['median']:>10.2f}{stock_range:>14}"
            f"{stock['median'] / tf_side['marginal']:>10.2f}{plan['median']:>9.2f}"
            f"{op['ratio']:>11.2f}x"
        )
        at_tf = op.get("tensorflow")
        if at_tf:
            # TensorFlow with the plan's kernel: the stock op's time less the kernel's saving.
            kernel_stock = op["stock"]["seconds"]["median"]
            saving = kernel_stock - op["plan"]["seconds"]["median"]
            seconds = max(at_tf["seconds"], kernel_stock)  # the forecast's floor (see "clamped")
            plan_rate = op["stock"]["work"] / (seconds - saving) / 1e9
            line += f"{at_tf['throughput']:>8.2f}{plan_rate:>12.2f}{at_tf['ratio']:>7.2f}x"
        print(line)
    print(
        "\nstock TF: 2^18 elements per eager call, median; overhead: the same op on 256 elements; "
        "TF kernel: (2^18 - 256) elements / (difference of the two times). layer_norm is seven "
        "eager ops in TF and one fused expression in the forecast, so its overhead is seven calls'. "
        "fc TF: stock TensorFlow's rate as the forecast timed it (T, a whole eager call); fc TF "
        "plan: the rate TensorFlow would reach with the plan's kernel (elements / (T - D), D the "
        "kernel's saving per call); in TF: their ratio, T / (T - D), the forecast's summary's."
    )
    print(f"\nmatmul, conv: {forecast['onednn']['isa']}; kernels {forecast['onednn']['kernels']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
