"""Real overlays for the tests of ``tfbuild overlay``, ``index`` and ``pick``: one built per session
against the real stock wheel (the smoke tests' cached environment), for the target tfbuild plans for
this host, and unpacked into a directory named site-packages, which TensorFlow scans for
tensorflow-plugins/ when it is on PYTHONPATH. Building takes about 25 s on 2 cores; the numerical
check is its own test. The fixtures are registered in tests/conftest.py, so that every directory
shares the one build.

:func:`place_overlay` copies the real wheel into a test's directory, under its own name or another,
with the real receipt beside it, decoded and encoded again with the changes a test asks for (another
target, another TensorFlow): what ``index`` and ``pick`` read is the receipt tfbuild wrote.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import archspec.cpu
import pytest

from tfbuild.core import serial
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.wheel.labels import cpu_label
from tfbuild.wheel.overlay_receipt import OverlayReceipt
from tfbuild.wheel.receipt import WheelRecord, receipt_path

if TYPE_CHECKING:  # imported where used: tests/conftest.py loads this module for every test run
    from tfbuild.overlay.build import OverlayRequest, OverlayResult

STOCK = "tensorflow-cpu==2.21.0"


@dataclass(frozen=True)
class BuiltOverlay:
    python: str  # the stock interpreter
    site: str  # a site-packages directory holding the overlay's tensorflow-plugins/
    result: OverlayResult


def request_for(target: str | None, out: Path, python: str) -> OverlayRequest:
    from tfbuild.overlay.build import OverlayRequest
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    plan = plan_here(PlanOptions(tf="2.21", target=target)).plan
    return OverlayRequest.of_plan(
        plan,
        python=python,
        out=out,
        check=False,
    )


def unpack(wheel: Path, into: Path) -> Path:
    site = into / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            target = site / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))
    return site


@pytest.fixture(scope="session")
def stock_python() -> str:
    if sys.version_info[:2] != (3, 11):
        pytest.skip(f"{STOCK} is tested on Python 3.11, this is {sys.version.split()[0]}")
    from tfbuild.measure.envs import WheelSpec, ensure_env

    return ensure_env(WheelSpec.parse(STOCK)).python


@pytest.fixture(scope="session")
def built_overlay(
    stock_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BuiltOverlay]:
    from tfbuild.overlay.build import build_overlay

    out = tmp_path_factory.mktemp("overlay")
    result = build_overlay(request_for(None, out / "dist", stock_python))
    yield BuiltOverlay(python=stock_python, site=str(unpack(result.wheel, out)), result=result)


def foreign_target() -> tuple[str, set[str]]:
    """An x86 target whose overlay this CPU cannot run, and what it lacks, read from this host's
    /proc/cpuinfo (never assumed): the instruction sets it lacks that an overlay's loader checks
    (not the system-only ones a hypervisor hides, which the kernels are compiled without)."""
    from tfbuild.overlay.compile import MACROS, SYSTEM_FLAGS

    host = set(read_cpuinfo(Path("/proc/cpuinfo")).flags)
    host |= {"sse3"} if "pni" in host else set()  # archspec's name of what the kernel calls pni
    checked = set(MACROS.values()) - SYSTEM_FLAGS - {""}  # what a loader can check, by name
    for name in ("sapphirerapids", "icelake", "cascadelake", "skylake_avx512", "zen4", "haswell"):
        missing = (set(archspec.cpu.TARGETS[name].features) & checked) - host
        if missing:
            return name, missing
    pytest.skip("this CPU runs every target tried")


@dataclass(frozen=True)
class Compiled:
    """What ``tfbuild overlay`` would compile a target with, as the real compiler says: the
    flags, the instruction sets the loader checks, and those left out of the kernels."""

    cflags: tuple[str, ...]
    features: tuple[str, ...]
    left_out: tuple[Any, ...]  # LeftOut


def compiled_for(march: str, scratch: Path, program: str = "clang++-16") -> Compiled:
    """``-march=MARCH`` as the overlay's build compiles it with ``program`` on this host (the
    workarounds, then the features its macros name); skips where the compiler is missing."""
    from tfbuild.core.compilers import compiler_at
    from tfbuild.overlay.compile import host_toolchain, target_features, workarounds

    compiler = compiler_at(program, why="this test")
    if compiler is None:
        pytest.skip(f"no {program} on this machine")
    toolchain = host_toolchain(compiler.path)
    scratch.mkdir(parents=True, exist_ok=True)
    left_out = workarounds(compiler, toolchain, [f"-march={march}"], cwd=scratch)
    cflags = (f"-march={march}", *(o.flag for o in left_out))
    return Compiled(cflags, target_features(toolchain, cflags, cwd=scratch), left_out)


def overlay_name(built: BuiltOverlay, *, release: str = "2.21.0", target: str) -> str:
    """The file name tfbuild overlay gives an overlay of ``release`` for ``target``, with the real
    overlay's tags (py3-none-PLATFORM)."""
    tags = built.result.wheel.name.split("-", 2)[2]
    return f"tfbuild_overlay-{release}+{cpu_label(target)}-{tags}"


def place_overlay(
    built: BuiltOverlay, directory: Path, *, name: str | None = None, **changes: Any
) -> Path:
    """The real overlay's wheel copied into ``directory`` (as ``name``), and beside it its real
    receipt with ``changes`` (:class:`OverlayReceipt` fields) and the copy's own name, sha256 and
    size; returns the wheel's path."""
    directory.mkdir(parents=True, exist_ok=True)
    data = built.result.wheel.read_bytes()
    wheel = directory / (name or built.result.wheel.name)
    wheel.write_bytes(data)
    record = WheelRecord(name=wheel.name, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    receipt = dataclasses.replace(built.result.receipt, wheel=record, **changes)
    write_overlay_receipt(wheel, receipt)
    return wheel


def write_overlay_receipt(wheel: Path, receipt: OverlayReceipt | dict[str, Any]) -> Path:
    """``receipt`` (a receipt, or its JSON data to spoil) beside ``wheel``, as tfbuild writes it."""
    data = serial.to_data(receipt) if isinstance(receipt, OverlayReceipt) else receipt
    path = receipt_path(wheel)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def venv_seeing_stock(stock_python: str, where: Path) -> tuple[Path, Path]:
    """A venv (no pip of its own) whose .pth adds the stock environment's site-packages: pick
    imports TensorFlow there to judge overlays, and pip installs into it offline."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"

    def purelib(interpreter: str) -> str:
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        done = subprocess.run([interpreter, "-c", code], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    site = Path(purelib(str(python)))
    (site / "stock.pth").write_text(purelib(stock_python) + "\n")
    return python, site
