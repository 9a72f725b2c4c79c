#!/usr/bin/env python3
"""The canary's smoke test, run inside the toolchain container (standard library only).

    python3 probe.py HOST_WHEEL BASELINE_WHEEL

For each wheel: install it into its own fresh virtual environment (offline, no dependencies), import
it with that environment's Python and run its kernel once (the smoke: it installs, imports and runs
on this CPU without an illegal instruction). Then count the vector instructions in each library
(objdump) and time the two kernels in alternation, ROUNDS pairs, the two taking turns to go first
(tfbuild judges them 15 pairs at a time: tfbuild.core.stats.sequential). Prints one JSON object.
"""

import ctypes
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

N, REPS, ROUNDS = 1 << 16, 200, 75
MARKERS = {"zmm": r"%zmm\d", "ymm": r"%ymm\d", "fma": r"\bvfn?m(add|sub)\w*"}


def install(wheel: str, venv: Path) -> dict[str, Any]:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", wheel],
        check=True,
    )
    code = (
        "import json, pathlib, tfbuild_canary as c; "
        "print(json.dumps({'checksum': c.run(4096, 10), "
        "'library': str(pathlib.Path(c.__file__).with_name('libcanary.so'))}))"
    )
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        return {"ok": False, "exit_code": run.returncode, "stderr": run.stderr[-2000:]}
    data: dict[str, Any] = json.loads(run.stdout)
    return {"ok": True, **data}


def instructions(library: str) -> dict[str, int]:
    text = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", library], capture_output=True, text=True, check=True
    ).stdout
    return {name: len(re.findall(pattern, text)) for name, pattern in MARKERS.items()}


def load(library: str) -> Any:
    lib = ctypes.CDLL(library)
    lib.canary_kernel.restype = ctypes.c_float
    lib.canary_kernel.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_int]
    return lib


def seconds(lib: Any, data: Any) -> float:
    start = time.perf_counter()
    lib.canary_kernel(data, N, REPS)
    return time.perf_counter() - start


def main(host_wheel: str, baseline_wheel: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # One environment each: both wheels have the same name and version.
        smoke = {
            "host": install(host_wheel, root / "host"),
            "baseline": install(baseline_wheel, root / "baseline"),
        }
        result: dict[str, Any] = {"smoke": smoke}
        if all(s["ok"] for s in smoke.values()):
            libs = {name: s["library"] for name, s in smoke.items()}
            result["instructions"] = {name: instructions(lib) for name, lib in libs.items()}
            loaded = {name: load(lib) for name, lib in libs.items()}
            data = (ctypes.c_float * N)(*([0.001] * N))
            times: dict[str, list[float]] = {name: [] for name in loaded}
            order = list(loaded.items())
            for _ in range(ROUNDS):
                for name, lib in order:
                    times[name].append(seconds(lib, data))
                order.reverse()
            result["seconds"] = times
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
