"""How long `tfbuild smoke` takes on the stock wheel, with its baseline. Targets: the full smoke under
10 minutes, `--quick` under 2 minutes, on a 2-core machine (the environments already made).

    python benchmarks/smoke_time.py [--spec tensorflow-cpu==2.21.0] [--skip-full]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

TARGETS = {"--quick": 120.0, "full": 600.0}


def _run(spec: str, extra: list[str]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tfbuild", "smoke", spec, "--json", "--allow-unused", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    return elapsed, json.loads(proc.stdout) if proc.stdout.strip() else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="tensorflow-cpu==2.21.0")
    parser.add_argument("--skip-full", action="store_true")
    args = parser.parse_args()
    _run(args.spec, ["--no-bench"])  # make sure the environment exists before timing
    modes = [("--quick", ["--quick"])] + ([] if args.skip_full else [("full", [])])
    for name, extra in modes:
        elapsed, report = _run(args.spec, extra)
        results = report.get("results") or []
        verdicts: dict[str, int] = {}
        for r in results:
            label = (r.get("verdict") or {}).get("label", "-")
            verdicts[label] = verdicts.get(label, 0) + 1
        ok = "ok" if elapsed < TARGETS[name] else "MISSES the target"
        print(
            f"smoke {name:8} {elapsed:6.1f} s (target < {TARGETS[name]:.0f} s: {ok}); "
            f"{len(results)} op results, verdicts {verdicts}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
