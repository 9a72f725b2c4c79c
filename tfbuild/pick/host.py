"""The machine a wheel must run on: its CPU, its Python and its NVIDIA driver's CUDA.

:func:`describe_host` is the edge: it reads ``/proc/cpuinfo`` (or a saved dump), asks nvidia-smi
and the interpreter; :class:`Host` is what it found, plain data.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.errors import InputError, UsageError

#: A Python or CUDA version as the user states it: X.Y, or X.Y.Z (the Z is dropped).
_X_Y = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")
#: The interpreter codes of wheel tags, as people name them.
IMPLEMENTATIONS = {"cp": "CPython", "pp": "PyPy", "py": "Python"}


@dataclass(frozen=True, kw_only=True)
class Host:
    """The machine and interpreter a wheel must run on."""

    source: str  # "this machine" or the --cpuinfo file
    live: bool  # this machine: glibc is checked
    cpu: CpuInfo
    target: str  # archspec's name for the CPU
    guard: tuple[str, ...]  # TensorFlow's guard features the CPU has
    python: str  # "3.11"
    implementation: str  # "cp"
    python_source: str
    glibc: str | None  # this machine's glibc (None: not glibc, or not checked for --cpuinfo)
    driver_cuda: str | None  # the newest CUDA the NVIDIA driver supports; None: no GPU
    driver_source: str

    @property
    def python_text(self) -> str:
        return f"{IMPLEMENTATIONS.get(self.implementation, self.implementation)} {self.python}"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "live": self.live,
            "architecture": self.cpu.architecture,
            "target": self.target,
            "tensorflow_features": list(self.guard),
            "python": self.python,
            "python_implementation": self.implementation,
            "python_source": self.python_source,
            "glibc": self.glibc,
            "driver_cuda": self.driver_cuda,
            "driver_cuda_source": self.driver_source,
        }


def parse_python(text: str) -> str:
    """``3.11`` (or ``3.11.7``) -> ``3.11``; anything else is a usage error."""
    found = _X_Y.match(text.strip())
    if not found:
        raise UsageError(
            f"--python {text!r} is not a Python version", fix="Write it as X.Y, e.g. 3.11."
        )
    return f"{int(found.group(1))}.{int(found.group(2))}"


def parse_driver_cuda(text: str) -> str | None:
    """``12.4`` (or ``12.4.1``) -> ``12.4``; ``none`` -> None (no GPU)."""
    if text.strip().lower() == "none":
        return None
    found = _X_Y.match(text.strip())
    if not found:
        raise UsageError(
            f"--driver-cuda {text!r} is not a CUDA version",
            fix="Write the newest CUDA the driver supports as X.Y (nvidia-smi prints it), or none.",
        )
    return f"{int(found.group(1))}.{int(found.group(2))}"


def version_key(text: str) -> tuple[int, ...]:
    """``"12.4"`` -> ``(12, 4)``: versions compared as numbers, not as text."""
    return tuple(int(p) for p in text.split("."))


def _abi_prefix(name: str) -> str:
    return {"cpython": "cp", "pypy": "pp"}.get(name, name)


def query_python(executable: str) -> tuple[str, str]:
    """(implementation code, "X.Y") of another interpreter, asked in a subprocess."""
    code = "import sys; print(sys.implementation.name, sys.version_info[0], sys.version_info[1])"
    what = f"cannot use --pip-python {executable}"
    try:
        proc = subprocess.run(  # argv built here, no shell
            [executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(what, why=str(exc), fix="Give the path of a Python interpreter.") from None
    parts = proc.stdout.split()
    if proc.returncode != 0 or len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
        last = (proc.stderr.strip().splitlines() or ["it printed no version"])[-1]
        raise InputError(what, why=last, fix="Give the path of a Python interpreter.")
    return _abi_prefix(parts[0]), f"{parts[1]}.{parts[2]}"


def _driver_here() -> tuple[str | None, str]:
    from tfbuild.detect.nvidia import detect_nvidia

    report = detect_nvidia()
    if report.driver is None:
        return None, "no NVIDIA driver found"
    if report.driver.cuda_version is None:
        return None, f"NVIDIA driver {report.driver.version}"
    return (
        report.driver.cuda_version,
        f"NVIDIA driver {report.driver.version} ({report.driver.cuda_version_source})",
    )


def describe_host(
    *,
    cpuinfo: Path | None = None,
    python: str | None = None,
    pip_python: str | None = None,
    driver_cuda: str | None = None,
    driver: Callable[[], tuple[str | None, str]] = _driver_here,
) -> Host:
    """This machine, or a saved cpuinfo; the Python and CUDA driver stated or found."""
    from tfbuild.detect.cpuinfo import read_cpuinfo

    live = cpuinfo is None
    info = cpu.host_cpuinfo() if cpuinfo is None else read_cpuinfo(cpuinfo)
    if python is not None:
        implementation, version, python_source = "cp", parse_python(python), "--python"
    elif pip_python is not None:
        implementation, version = query_python(pip_python)
        python_source = f"--pip-python {pip_python}"
    else:
        implementation = _abi_prefix(sys.implementation.name)
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        python_source = f"this interpreter, {sys.executable}"
    if driver_cuda is not None:
        cuda = parse_driver_cuda(driver_cuda)
        cuda_source = "--driver-cuda"
    elif not live:
        cuda, cuda_source = (
            None,
            "no GPU assumed for a --cpuinfo machine; state its driver's CUDA with --driver-cuda X.Y",
        )
    else:
        cuda, cuda_source = driver()
    glibc: str | None = None
    if live:
        from tfbuild.detect.system import glibc_version

        glibc = glibc_version()
    return Host(
        source="this machine" if live else str(cpuinfo),
        live=live,
        cpu=info,
        target=str(cpu.identify(info).name),
        guard=cpu.guard_features(info),
        python=version,
        implementation=implementation,
        python_source=python_source,
        glibc=glibc,
        driver_cuda=cuda,
        driver_source=cuda_source,
    )
