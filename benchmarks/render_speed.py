"""How long rendering every shipped recipe x variant takes, in one process. Target: < 1 s in total.

Planning and rendering are pure functions; this measures them without detection (fixed host facts
from a recorded cpuinfo dump), after one warm-up pass (template compilation), 15 rounds, median.

    python benchmarks/render_speed.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.detect.host import HostFacts
from tfbuild.plan import GIB, PlanOptions, make_plan
from tfbuild.plan.render import render_files
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes

TARGET_SECONDS = 1.0
DUMP = Path(__file__).resolve().parents[1] / "tests/fixtures/cpuinfo/linux-debian12-epyc-zen5-vm"


def _render_all() -> int:
    recipes = load_recipes()
    images = load_base_images()
    machine = read_cpuinfo(DUMP) if DUMP.exists() else None
    host = HostFacts(
        machine=machine or read_cpuinfo(Path("/proc/cpuinfo")),
        machine_is_build_host=True,
        build_cpus=2,
        build_memory_bytes=8 * GIB,
        build_disk_path="/cache",
        build_disk_free_bytes=200 * GIB,
        python="3.11",
    )
    count = 0
    for recipe in recipes.recipes:
        variants = ["cpu", "mkl"] + (["cuda"] if recipe.cuda else [])
        for variant in variants:
            plan = make_plan(PlanOptions(variant=variant), recipe, host, base_images=images)  # type: ignore[arg-type]
            render_files(plan)
            count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    count = _render_all()
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        _render_all()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    verdict = "ok (< 1 s)" if median < TARGET_SECONDS else "MISSES the 1 s target"
    print(
        f"load recipes + plan + render, {count} recipe x variant contexts: median {median:.3f} s, "
        f"min {min(times):.3f} s, max {max(times):.3f} s over {args.rounds} rounds  {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
