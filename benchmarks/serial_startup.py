"""Why tfbuild serialises with msgspec: the start-up cost of each maintained candidate, side by side.

`tfbuild detect --json` must stay quick, and every command imports the serialisation library, so
its import (plus turning one typed value into JSON data and strictly back) is paid on every run.
This script puts msgspec, cattrs and pydantic v2 in a scratch virtual environment (from PyPI, once,
under the temp directory), then runs, for each, a fresh interpreter that imports the library,
defines a small frozen dataclass and converts a value to data and strictly back. The candidates
run in alternation, round by round, so machine noise hits them alike. Prints the median, min and
max wall time per candidate and each median's excess over a bare `python -c pass`.

    python benchmarks/serial_startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV = Path(tempfile.gettempdir()) / "tfbuild-serial-startup-venv"
PACKAGES = ("msgspec", "cattrs", "pydantic>=2")

_TYPE = """
import dataclasses
@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    name: str
    jobs: int
    flags: tuple[str, ...] = ()
value = Job(name="zen4", jobs=2, flags=("-march=znver4",))
"""

PROGRAMS = {
    "python -c pass (floor)": "pass",
    "msgspec": _TYPE
    + "import msgspec\n"
    + "data = msgspec.json.decode(msgspec.json.encode(value))\n"
    + "assert msgspec.convert(data, type=Job, strict=True) == value\n",
    "cattrs": _TYPE
    + "import cattrs\n"
    + "converter = cattrs.Converter(forbid_extra_keys=True)\n"
    + "data = converter.unstructure(value)\n"
    + "assert converter.structure(data, Job) == value\n",
    "pydantic v2": _TYPE
    + "import pydantic\n"
    + "adapter = pydantic.TypeAdapter(Job)\n"
    + "assert adapter.validate_json(adapter.dump_json(value), strict=True) == value\n",
}


def _python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"making {VENV} with {', '.join(PACKAGES)} (once)...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PACKAGES], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    python = _python()
    times: dict[str, list[float]] = {name: [] for name in PROGRAMS}
    for code in PROGRAMS.values():  # warm the page cache
        subprocess.run([str(python), "-c", code], check=True)
    for _ in range(rounds):
        for name, code in PROGRAMS.items():
            started = time.perf_counter()
            subprocess.run([str(python), "-c", code], check=True)
            times[name].append(time.perf_counter() - started)
    floor = statistics.median(times["python -c pass (floor)"])
    versions = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m; "
            "print(', '.join(f'{p} {m.version(p)}' for p in ('msgspec', 'cattrs', 'pydantic')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"{rounds} rounds, in alternation; {versions}")
    print(f"{'candidate':<24} {'median':>8} {'min':>8} {'max':>8} {'over floor':>11}")
    for name, seconds in times.items():
        median = statistics.median(seconds)
        print(
            f"{name:<24} {median * 1000:>6.0f}ms {min(seconds) * 1000:>6.0f}ms "
            f"{max(seconds) * 1000:>6.0f}ms {(median - floor) * 1000:>9.0f}ms"
        )


if __name__ == "__main__":
    main()
