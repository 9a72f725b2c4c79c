"""A second canary build with and without a remote cache, side by side.

A BuildGrid cache (PyPI ``buildgrid``, a dev dependency) serves bazel's action cache and CAS on
127.0.0.1, as in tests/docker/test_remote_cache.py. The canary STAND-IN source (not TensorFlow), as
one git checkout, is built once through the cache to fill it; then, ROUNDS times each, in
alternation, a build from a fresh output base (a fresh cache volume, no disk cache):

- with the remote cache: bazel takes its actions from BuildGrid;
- without: bazel runs every action itself.

For each: the wall time of the whole `tfbuild wheel` process, the build container's time (the
receipt's ``timings.build_s``), and bazel's own process summary (actions run here, remote cache
hits), medians over the rounds. The canary has four actions of about a second each, so the figures
show the cache's fixed costs (bazel's server start, the gRPC round trips) more than its gains; a
TensorFlow build has tens of thousands of actions.

    python benchmarks/remote_cache.py      (needs a Docker engine and `tfbuild base`'s image)
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests package

from tests.docker.test_remote_cache import git_checkout
from tests.docker.test_wheel import wheel_argv
from tests.remote.services import start_buildgrid, stop

ROUNDS = 3


def build(source: Path, dist: Path, *args: str) -> tuple[float, dict[str, Any]]:
    """One `tfbuild wheel --canary` from a fresh cache volume: its wall time and receipt."""
    volume = f"tfbuild-bench-remote-{uuid.uuid4().hex[:10]}"
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            wheel_argv(dist, volume, "--source", str(source), "--no-disk-cache", "--json", *args),
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
    finally:
        subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"tfbuild wheel failed:\n{proc.stderr}")
    receipt: dict[str, Any] = json.loads(proc.stdout)["receipt_data"]
    return wall, receipt


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tfbuild-bench-remote-") as tmp:
        work = Path(tmp)
        server, url = start_buildgrid(work)
        try:
            source = git_checkout(work)
            build(source, work / "dist", "--remote-cache", url)  # fills the cache (and the image)
            results: dict[str, list[tuple[float, dict[str, Any]]]] = {"with": [], "without": []}
            for _ in range(ROUNDS):
                results["with"].append(build(source, work / "dist", "--remote-cache", url))
                results["without"].append(build(source, work / "dist"))
        finally:
            stop(server)
    print(f"second canary build from a fresh output base, median of {ROUNDS} rounds")
    print(f"{'':24}{'wall s':>9}{'build s':>9}{'run here':>10}{'cache hits':>12}")
    for name, runs in (("with remote cache", results["with"]), ("without", results["without"])):
        wall = statistics.median(w for w, _ in runs)
        built = statistics.median(r["timings"]["build_s"] for _, r in runs)
        local = statistics.median(r["processes"].get("local", 0) for _, r in runs)
        hits = statistics.median(r["processes"].get("remote cache hit", 0) for _, r in runs)
        print(f"{name:24}{wall:9.1f}{built:9.1f}{local:10.0f}{hits:12.0f}")


if __name__ == "__main__":
    main()
