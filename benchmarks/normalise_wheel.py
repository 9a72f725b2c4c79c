"""What normalising a real TensorFlow wheel costs, against recompressing it and against a file copy.

A reproducible build normalises its wheel (sorted members, SOURCE_DATE_EPOCH times, 0644/0755 modes)
by copying every member's compressed bytes. The stock tensorflow-cpu 2.21.0 wheel (270 MB, ~15,600
members; the one for the running Python: run it with Python 3.11) is normalised ROUNDS times, side by
side with the floor (a plain file copy), with relabel + normalise in one pass, and with the obvious
alternative (zipfile: read and recompress every member). Medians and ratios, measured in one run.

    python benchmarks/normalise_wheel.py [WHEEL]   (default: downloads tensorflow-cpu==2.21.0 once)
"""

from __future__ import annotations

import shutil
import statistics
import sys
from pathlib import Path

# Beside this script: the stock wheel for the running Python, fetched once with pip download into
# ~/.cache/tfbuild-tests/wheels (shared with the tests), and zipfile recompressing every member.
from relabel_speed import interleaved, recompress, report, stock_wheel

from tfbuild.wheel.wheelfile import normalise, relabel

ROUNDS = 3
EPOCH = 1_767_323_045  # SOURCE_DATE_EPOCH: 2026-01-02 03:04:05 UTC


def main() -> None:
    wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else stock_wheel()
    ways = {
        "copy (floor)": lambda out: shutil.copyfile(wheel, out / wheel.name),
        "tfbuild normalise": lambda out: normalise(wheel, out, epoch=EPOCH),
        "relabel + normalise": lambda out: relabel(wheel, "x86_64v4", out, epoch=EPOCH),
        "zipfile recompress": lambda out: recompress(wheel, out),
    }
    times = interleaved(wheel, ways, ROUNDS)
    report(wheel, times, copy="copy (floor)")
    ratio = statistics.median(times["zipfile recompress"]) / statistics.median(
        times["tfbuild normalise"]
    )
    print(f"  normalise is {ratio:.0f}x faster than recompressing the wheel")


if __name__ == "__main__":
    main()
