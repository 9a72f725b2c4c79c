"""How long `tfbuild detect --json` takes, end to end, as a user runs it. Target: median < 0.3 s.

Each mode runs as a fresh process (interpreter start-up and imports included), after two warm-up
runs so that the page cache is warm. The modes are measured in alternation, round by round, so that
machine noise hits them alike. Prints median, min and max per mode; `--check` exits 1 when a median
misses the target.

    python benchmarks/detect_speed.py [--rounds 21] [--check]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 0.3
ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "tests" / "fixtures" / "cpuinfo" / "linux-rocky8.5-zen4"

MODES: dict[str, list[str]] = {
    "python -c pass (interpreter floor)": [sys.executable, "-c", "pass"],
    "tfbuild detect --json": [sys.executable, "-m", "tfbuild", "detect", "--json"],
    "tfbuild detect --json --no-gpu": [
        sys.executable,
        "-m",
        "tfbuild",
        "detect",
        "--json",
        "--no-gpu",
    ],
}
if DUMP.exists():
    MODES["tfbuild detect --json --cpuinfo (zen4)"] = [
        sys.executable, "-m", "tfbuild", "detect", "--json", "--cpuinfo", str(DUMP),
    ]  # fmt: skip


def _once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--check", action="store_true", help="exit 1 if a median misses the target")
    args = parser.parse_args()
    for argv in MODES.values():
        _once(argv)
        _once(argv)
    samples: dict[str, list[float]] = {name: [] for name in MODES}
    for _ in range(args.rounds):
        for name, argv in MODES.items():
            samples[name].append(_once(argv))
    print(f"{'mode':45} {'median':>8} {'min':>8} {'max':>8}   ({args.rounds} runs each)")
    missed = False
    for name, values in samples.items():
        median = statistics.median(values)
        verdict = ""
        if name.startswith("tfbuild"):
            ok = median < TARGET_SECONDS
            missed |= not ok
            verdict = (
                f"  ok (< {TARGET_SECONDS} s)" if ok else f"  MISSES the {TARGET_SECONDS} s target"
            )
        print(f"{name:45} {median:8.3f} {min(values):8.3f} {max(values):8.3f}{verdict}")
    return 1 if (missed and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
