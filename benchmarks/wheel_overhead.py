"""What `tfbuild wheel` adds around the build command itself, on a second run with nothing changed.

The canary STAND-IN source (not TensorFlow) is built once to warm the toolchain image and the cache
volume, then ROUNDS more times. For each run: the wall time of the whole `tfbuild wheel` process
(Python start, plan, render, image check, cache volume, container start and removal, publish) and
the time of the build container (build.sh) from the receipt. The overhead is the difference; the
issue's target is under 10 s.

    python benchmarks/wheel_overhead.py        (needs a Docker engine and `tfbuild base`'s image)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

ROUNDS = 5


def run(dist: str, volume: str) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfbuild",
            "wheel",
            "--canary",
            "--base-image",
            "tfbuild/base:bookworm",
            "--dist",
            dist,
            "--cache-volume",
            volume,
            "--skip-disk-check",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, json.loads(proc.stdout)


def main() -> int:
    volume = f"tfbuild-bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as dist:
        first_wall, first = run(dist, volume)
        walls, builds = [], []
        for _ in range(ROUNDS):
            wall, result = run(dist, volume)
            assert result["image_built"] is False
            walls.append(wall)
            builds.append(sum(a["seconds"] for a in result["attempts"]))
    subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True, check=False)
    overheads = [w - b for w, b in zip(walls, builds, strict=True)]
    print(
        f"first run (toolchain image {'built' if first['image_built'] else 'reused'}): {first_wall:.1f} s"
    )
    print(f"second and later runs, {ROUNDS} rounds:")
    print(
        f"  whole command   median {statistics.median(walls):6.2f} s  (min {min(walls):.2f}, max {max(walls):.2f})"
    )
    print(f"  build container median {statistics.median(builds):6.2f} s")
    print(
        f"  overhead        median {statistics.median(overheads):6.2f} s  "
        f"(min {min(overheads):.2f}, max {max(overheads):.2f}); target < 10 s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
