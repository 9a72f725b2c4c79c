"""What stamping the label into a real TensorFlow wheel costs, against copying the file.

`tfbuild wheel` adds the target to the wheel's version (2.21.0+x86_64v4) after the build. The stock
tensorflow-cpu 2.21.0 wheel (270 MB, ~15,600 members) is relabelled ROUNDS times, side by side with
the floor (a plain file copy) and with the obvious alternative (zipfile: read and recompress every
member). Medians and ratios, measured in one run.

    python benchmarks/relabel_speed.py [WHEEL]   (default: downloads tensorflow-cpu==2.21.0 once)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from tfbuild.wheel.wheelfile import relabel

ROUNDS = 3


def stock_wheel() -> Path:
    cache = Path.home() / ".cache" / "tfbuild-tests" / "wheels"
    found = sorted(cache.glob("tensorflow_cpu-2.21.0-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(cache),
            "tensorflow-cpu==2.21.0",
        ],
        check=True,
    )
    return sorted(cache.glob("tensorflow_cpu-2.21.0-*.whl"))[0]


def recompress(wheel: Path, out: Path) -> None:
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(out / "r.whl", "w") as target:
        for info in source.infolist():
            with source.open(info) as src, target.open(info, "w") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def interleaved(
    wheel: Path, ways: dict[str, Callable[[Path], object]], rounds: int
) -> dict[str, list[float]]:
    """Seconds of each way per round, the ways interleaved so drift hits every way alike; each
    writes into a fresh directory beside the wheel (the same disk)."""
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, way in ways.items():
            with tempfile.TemporaryDirectory(dir=wheel.parent) as out:
                start = time.perf_counter()
                way(Path(out))
                times[name].append(time.perf_counter() - start)
    return times


def report(wheel: Path, times: dict[str, list[float]], *, copy: str) -> None:
    """Each way's median, and how many times the plain copy it takes, measured side by side."""
    print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.0f} MB, {len(times[copy])} rounds")
    floor = statistics.median(times[copy])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:20s} median {median:7.2f} s  ({median / floor:6.1f}x the copy)")


def main() -> None:
    wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else stock_wheel()
    ways = {
        "copy (floor)": lambda out: shutil.copyfile(wheel, out / wheel.name),
        "tfbuild relabel": lambda out: relabel(wheel, "x86_64v4", out),
        "zipfile recompress": lambda out: recompress(wheel, out),
    }
    report(wheel, interleaved(wheel, ways, ROUNDS), copy="copy (floor)")


if __name__ == "__main__":
    main()
