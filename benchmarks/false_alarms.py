"""How often `tfbuild smoke` calls a wheel faster or slower than itself, before and after the recheck.

The stock wheel against itself, with smoke's own timing loop (``--quick`` method), many rounds per
thread setting. A "first-round" alarm is what a single round concluded; "settled" is what smoke
reports after timing a non-decisive difference a second time. Target: no settled alarm.

    python benchmarks/false_alarms.py [--spec tensorflow-cpu==2.21.0] [--rounds 20]

About 10 minutes with the defaults on a 2-core machine.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from tfbuild.core import serial
from tfbuild.smoke.envs import WheelSpec, clean_env, ensure_env
from tfbuild.smoke.run import THREAD_SETTINGS, Method, Worker, alternate

OPS = ("matmul_1024", "conv2d_nhwc", "exp", "tanh", "add", "softmax")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="tensorflow-cpu==2.21.0")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    python = ensure_env(WheelSpec.parse(args.spec)).python
    method = Method(reps=15, blocks=3, min_rep_seconds=0.01, ops=OPS)
    env = clean_env()
    for threads, intra, inter in THREAD_SETTINGS:
        first_round: Counter[str] = Counter()
        settled: Counter[str] = Counter()
        rechecked = 0
        alarmed_ops: Counter[str] = Counter()
        start = time.perf_counter()
        with (
            Worker(python, intra=intra, inter=inter, env=env, label="a") as a,
            Worker(python, intra=intra, inter=inter, env=env, label="b") as b,
        ):
            for _ in range(args.rounds):
                for result in alternate(a, b, method=method, threads=threads):
                    found = result.verdict
                    assert found is not None
                    first = found.first_round or found
                    first_round[first.label] += 1
                    if first.label != "same":
                        alarmed_ops[f"{result.op} {first.label}"] += 1
                    settled[found.label] += 1
                    if found.first_round is not None:
                        rechecked += 1
                        if found.label != "same":
                            print(f"  settled alarm: {result.op} {serial.to_data(found)}")
        total = sum(settled.values())
        alarms = total - settled["same"]
        print(
            f"{threads:>7} thread(s): {total} comparisons in {time.perf_counter() - start:.0f} s; "
            f"first round {total - first_round['same']} alarms ({dict(first_round)}), "
            f"{rechecked} rechecked, settled {alarms} alarms "
            f"({'ok' if alarms == 0 else 'MISSES the target'})"
        )
        if alarmed_ops:
            print(f"  first-round alarms by op: {dict(alarmed_ops)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
