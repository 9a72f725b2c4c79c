"""What `tfbuild verify` costs beyond the rebuild itself, on the canary STAND-IN source.

One canary wheel is built; then `tfbuild verify` runs ROUNDS times on it. Each verify reads the
receipt, plans the rebuild, builds in isolation (a fresh cache volume every time, so bazel's output
base and repository cache start empty), compares the two wheels member by member (ELF sections
with pyelftools) and removes its volume. Per round: the wall time of the whole verify process and
the time of the rebuild as the verify report gives it (toolchain image check, cache volume, build
container, publish into a temporary directory). The overhead is the difference: receipt, plan,
comparison, clean-up and Python's start.

    python benchmarks/verify_overhead.py       (needs a Docker engine and `tfbuild base`'s image)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROUNDS = 5


def tfbuild(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "tfbuild", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return proc.stdout


def main() -> int:
    volume = f"tfbuild-bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as dist:
        build = ["wheel", "--canary", "--base-image", "tfbuild/base:bookworm", "--dist", dist]
        build += ["--cache-volume", volume, "--skip-disk-check", "--json"]
        wheel = json.loads(tfbuild(*build))["wheel"]
        tfbuild("verify", wheel, "--json")  # warms the pinned toolchain image (built once, by hash)
        walls, rebuilds = [], []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            report = json.loads(tfbuild("verify", wheel, "--json"))
            walls.append(time.perf_counter() - start)
            rebuilds.append(float(report["rebuild_seconds"]))
            assert report["reproducible"] is True
    subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True, check=False)
    overheads = [w - r for w, r in zip(walls, rebuilds, strict=True)]
    print(f"tfbuild verify on the canary ({Path(wheel).name}), {ROUNDS} rounds after one warm-up")
    print(f"{'':28}{'median':>9}{'min':>9}{'max':>9}")
    for name, values in (
        ("verify, whole process (s)", walls),
        ("the rebuild in it (s)", rebuilds),
        ("verify beyond the rebuild", overheads),
    ):
        print(f"{name:28}{statistics.median(values):9.2f}{min(values):9.2f}{max(values):9.2f}")
    ratio = statistics.median(walls) / statistics.median(rebuilds)
    print(f"verify / rebuild (medians): {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
