"""The canary's host-targeted build against its x86-64 baseline build, side by side.

Both are built from the same stand-in source with the host's bazel (Debian's bazel-bootstrap; flags
from tfbuild's planner for the installed gcc), then their kernels run in alternation, 15 rounds, judged as doctor judges them (tfbuild.core.stats).

    python benchmarks/canary_speedup.py
"""

from __future__ import annotations

import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from tfbuild.core.stats import describe, verdict
from tfbuild.detect import cpu
from tfbuild.detect.compilers import flags_for, parse_compiler
from tfbuild.recipes.canary import TREE

N, REPS, ROUNDS = 1 << 16, 200, 15


def _build(work: Path, name: str, flags: Sequence[str]) -> ctypes.CDLL:
    tree = work / name
    shutil.copytree(TREE, tree)
    rc = ['build --action_env CC="gcc"', *(f"build:opt --copt={f}" for f in flags)]
    (tree / ".tf_configure.bazelrc").write_text("\n".join(rc) + "\n")
    subprocess.run(
        [
            "bazel",
            "--batch",
            f"--output_base={work / ('output-' + name)}",
            "build",
            "--config=opt",
            "//tensorflow/tools/pip_package:wheel",
        ],
        cwd=tree,
        check=True,
        capture_output=True,
    )
    (wheel,) = (tree / "bazel-bin/tensorflow/tools/pip_package/wheel_house").glob("*.whl")
    lib = work / f"{name}.so"
    lib.write_bytes(zipfile.ZipFile(wheel).read("tfbuild_canary/libcanary.so"))
    handle = ctypes.CDLL(str(lib))
    handle.canary_kernel.restype = ctypes.c_float
    handle.canary_kernel.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_int]
    return handle


def _time(lib: ctypes.CDLL) -> float:
    data = (ctypes.c_float * N)(*([0.001] * N))
    start = time.perf_counter()
    lib.canary_kernel(data, N, REPS)
    return time.perf_counter() - start


def main() -> int:
    gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=True)
    info = cpu.host_cpuinfo()
    host = flags_for(
        cpu.identify(info),
        parse_compiler(f"gcc-{gcc.stdout.strip()}"),
        machine_features=cpu.guard_features(info),
    ).flags
    with tempfile.TemporaryDirectory() as tmp:
        libs = {
            "host": _build(Path(tmp), "host", host),
            "x86-64": _build(Path(tmp), "base", ("-march=x86-64",)),
        }
        times: dict[str, list[float]] = {name: [] for name in libs}
        for _ in range(ROUNDS):
            for name, lib in libs.items():
                times[name].append(_time(lib))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"host flags: {' '.join(host)}")
    for name, median in medians.items():
        print(
            f"{name:7} median {median * 1e3:7.2f} ms  (min {min(times[name]) * 1e3:.2f}, max {max(times[name]) * 1e3:.2f})"
        )
    found = verdict(times["host"], times["x86-64"], paired=True)  # doctor's rule, its interval
    print(f"speedup of the host-targeted build: {describe(found)} ({found.n_candidate} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
