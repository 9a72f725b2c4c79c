"""How long the GPU side of `tfbuild detect` takes in-process: CUDA's files (locate_cuda, with the
toolkit at /usr/local/cuda when there is one) and the NVIDIA driver and GPUs (detect_nvidia, which
runs nvidia-smi when it is installed). Target: median < 0.5 s each (the bound the
tests held with a stopwatch until they moved here).

The two are timed in alternation, round by round, after one warm-up each, so that machine noise hits
them alike. Prints median, min and max per probe and the machine's load; `--check` exits 1 when a
median misses the target.

    python benchmarks/gpu_detect_speed.py [--rounds 21] [--check]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

from tfbuild.detect.cuda import locate_cuda
from tfbuild.detect.nvidia import detect_nvidia

TARGET_SECONDS = 0.5
PROBES: dict[str, Callable[[], object]] = {
    "locate_cuda()": locate_cuda,
    "detect_nvidia()": detect_nvidia,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--check", action="store_true", help="exit 1 when a median misses")
    args = parser.parse_args()
    for probe in PROBES.values():  # warm-up: the page cache, the imports
        probe()
    times: dict[str, list[float]] = {name: [] for name in PROBES}
    for _ in range(args.rounds):
        for name, probe in PROBES.items():
            started = time.perf_counter()
            probe()
            times[name].append(time.perf_counter() - started)
    print(
        f"{args.rounds} rounds; load average (1 min) after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    missed = False
    for name, seconds in times.items():
        median = statistics.median(seconds)
        missed |= median >= TARGET_SECONDS
        print(
            f"{name:<18} median {median * 1e3:7.1f} ms  min {min(seconds) * 1e3:7.1f} ms  "
            f"max {max(seconds) * 1e3:7.1f} ms  target < {TARGET_SECONDS * 1e3:.0f} ms"
        )
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
