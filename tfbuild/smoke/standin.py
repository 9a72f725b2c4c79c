"""``tfbuild smoke`` of the canary's STAND-IN wheel: tested as what it is, not as TensorFlow.

The canary (``tfbuild wheel --canary``, ``tfbuild doctor``) is a miniature stand-in for TensorFlow's
source tree, and its wheel is ``tfbuild_canary``: no ``import tensorflow``, no stock wheel to be
compared with. A wheel is the stand-in when its name says so (the distribution ``tfbuild_canary``,
or the canary's version label ``0.0.0+tfbuild.canary`` of the canaries built before it had a name of
its own) or its receipt does (``standin: true``).

Its smoke, in a fresh virtual environment (:func:`tfbuild.measure.envs.ensure_env`, offline: it has no
dependencies): import ``tfbuild_canary``; run its kernel, the vector code compiled with the plan's
target flags (on a CPU without those instructions it dies with SIGILL, as a TensorFlow built for
them would); run its C++ part (a thread through pthread_create, a string of libstdc++, strtol), which
needs the glibc and libstdc++ the floor names. Then what proves the build's flags: the flags the
build recorded in the wheel (``tfbuild_canary/BUILD_FLAGS``) are its receipt's, and on x86-64 the
library's machine code (counted with objdump, as ``tfbuild doctor`` counts it) has the vector
registers and FMA those flags enable, and none they do not.

The timing needs two builds of the stand-in (``tfbuild doctor`` times the canary for this machine
against its x86_64 build), so there is no benchmark here.
"""

from __future__ import annotations

import math
import os
import platform
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tfbuild.core import commands
from tfbuild.core.defaults import STANDIN_WHEEL
from tfbuild.core.errors import InputError, TfbuildError
from tfbuild.measure.envs import WheelSpec, clean_env, ensure_env
from tfbuild.smoke.probe import failure_line
from tfbuild.wheel.labels import is_standin_name
from tfbuild.wheel.receipt import Receipt, read_receipt, receipt_path

SCHEMA: Literal["tfbuild.smoke-standin/1"] = "tfbuild.smoke-standin/1"
#: What the stand-in's C++ part is asked to make (a string this long, filled in another thread).
RUNTIME_N = 1000
#: The instructions counted in the library, as doctor counts them (tfbuild/scripts/canary_probe.py).
MARKERS = {"zmm": r"%zmm\d", "ymm": r"%ymm\d", "fma": r"\bvfn?m(?:add|sub)\w*"}
#: Which guard features let the compiler use each kind (any one of them).
ENABLED_BY = {"zmm": ("AVX512F",), "ymm": ("AVX", "AVX2", "AVX512F"), "fma": ("FMA", "AVX512F")}


def is_standin_wheel(wheel: Path) -> bool:
    """Is ``wheel`` (a .whl file) the canary's STAND-IN? Its name says so, or its receipt does
    (one that cannot be read says nothing here: the smoke reads it again, and says why)."""
    if wheel.suffix != ".whl" or not wheel.is_file():
        return False
    if is_standin_name(wheel.name):
        return True
    try:
        return read_receipt(receipt_path(wheel), wheel=wheel).standin
    except InputError:
        return False


@dataclass(frozen=True, kw_only=True)
class Instructions:
    """The library's vector instructions, counted, against what the build's flags enable."""

    counted: dict[str, int] | None = None  # None: not counted (see ``note``)
    enabled: tuple[str, ...] | None = None  # the kinds the flags enable; None without a receipt
    expected: tuple[str, ...] | None = None  # the kinds the kernel must use with them
    note: str | None = None  # why nothing was counted, or what was not checked


@dataclass(frozen=True, kw_only=True)
class StandinSmoke:
    """``tfbuild smoke`` of a stand-in wheel; its JSON form is ``tfbuild.smoke-standin/1``."""

    schema: Literal["tfbuild.smoke-standin/1"] = SCHEMA
    wheel: str  # the file's name
    standin: bool = True
    module: str
    environment: str | None  # the virtual environment it was installed into
    reused: bool  # that environment was made before, for the same wheel
    ran: bool  # imported, and its kernel and C++ part ran
    failure: str | None  # why not, in one line
    checksum: float | None  # the kernel's result
    runtime: int | None  # what the C++ part returned (RUNTIME_N when it works)
    flags: tuple[str, ...] | None  # BUILD_FLAGS, as the build recorded them in the wheel
    receipt_flags: tuple[str, ...] | None  # the receipt's cflags; None without a receipt
    target: str | None  # the receipt's target
    instructions: Instructions
    failures: tuple[str, ...]
    seconds: float
    passed: bool = field(init=False)  # no failures

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", not self.failures)


def receipt_beside(wheel: Path) -> Receipt | None:
    """The receipt beside ``wheel``: None when there is none or it is unusable (unreadable, another
    schema or wheel); one that is not a file at all (a FIFO, a device, a link to one) is refused
    (exit 3), as every reader of a receipt refuses it."""
    path = receipt_path(wheel)
    try:
        return read_receipt(path, wheel=wheel)
    except InputError:
        if os.path.lexists(path) and not _regular(path):
            raise
        return None


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return True  # a dangling or unreadable link: missing, as far as the smoke is concerned


@dataclass(frozen=True, kw_only=True)
class StandinFound:
    """What ``scripts/standin_probe.py`` says of the installed stand-in, decoded strictly."""

    module: str
    library: str  # libcanary.so, where it was installed
    checksum: float  # the kernel's result
    runtime: int  # what the C++ part returned
    flags: tuple[str, ...] | None  # BUILD_FLAGS beside it; None: there is none


def _probe(python: str, timeout: float = 120) -> tuple[StandinFound | None, str | None]:
    """Run ``scripts/standin_probe.py`` with ``python``: what it found, and why it failed (None
    when it ran)."""
    argv = commands.in_python(python, "standin_probe.py", STANDIN_WHEEL, str(RUNTIME_N))
    call = commands.Command(argv=argv, what="the stand-in", env=clean_env(), timeout=timeout)
    proc = commands.attempt(call)
    if proc.returncode is None:
        return (
            None,
            f"the stand-in {proc.problem.removeprefix('it ') if proc.problem else 'failed'}",
        )
    if proc.returncode != 0:
        return None, failure_line(proc.stderr, proc.returncode)
    try:
        return commands.decode_last_line(call, proc, StandinFound), None
    except TfbuildError as exc:
        return None, exc.why


def count_instructions(library: Path) -> dict[str, int] | str:
    """How many zmm, ymm and FMA instructions ``library`` holds (objdump), or why not counted."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return "not counted: no objdump on PATH (binutils)"
    proc = commands.attempt(
        commands.Command(
            argv=(objdump, "-d", "--no-show-raw-insn", str(library)),
            what="objdump",
            timeout=120,
        )
    )
    if not proc.ok:
        return f"not counted: objdump failed ({proc.last_line})"
    return {name: len(re.findall(pattern, proc.stdout)) for name, pattern in MARKERS.items()}


def enabled_kinds(covered: tuple[str, ...]) -> tuple[str, ...]:
    """The kinds of :data:`MARKERS` the guard features a build's flags turned on allow."""
    return tuple(kind for kind, features in ENABLED_BY.items() if set(features) & set(covered))


def expected_kinds(covered: tuple[str, ...]) -> tuple[str, ...]:
    """What the canary's kernel must use when built with them: the widest vectors, and FMA (the
    rule of ``tfbuild doctor``'s instruction check)."""
    wide = ("zmm",) if "AVX512F" in covered else ("ymm",) if "AVX2" in covered else ()
    return (*wide, "fma") if "FMA" in covered else wide


def instruction_failures(
    counted: dict[str, int], covered: tuple[str, ...], built_for: str
) -> list[str]:
    """Where the machine code disagrees with the flags: a kind they enable missing from the kernel,
    or one they do not enable present."""
    failures = []
    missing = [kind for kind in expected_kinds(covered) if not counted.get(kind)]
    if missing:
        failures.append(
            f"its library has no {' and no '.join(missing)} instructions, which its flags enable "
            f"(built for {built_for}): the planned flags did not reach the compiler"
        )
    enabled = enabled_kinds(covered)
    stray = [kind for kind in MARKERS if counted.get(kind) and kind not in enabled]
    if stray:
        failures.append(
            f"its library uses {' and '.join(stray)} instructions its flags do not enable "
            f"(built for {built_for})"
        )
    return failures


def run_standin_smoke(
    wheel: Path, *, python: str = sys.executable, say: Callable[[str], None] = lambda _line: None
) -> StandinSmoke:
    """Install the stand-in into a fresh environment, import and run it, and check its flags."""
    started = time.perf_counter()
    receipt = receipt_beside(wheel)
    spec = WheelSpec.parse(str(wheel))
    say(f"{wheel.name} is the STAND-IN canary (not TensorFlow): testing it as that")
    say(f"preparing an environment for {spec.label}")
    env = ensure_env(spec, python=python)
    say(f"importing {STANDIN_WHEEL} and running its kernel and C++ part")
    found, failure = _probe(env.python)
    failures: list[str] = []
    built_for = f", built for {receipt.built_for}" if receipt is not None else ""
    if failure is not None:
        failures.append(f"the stand-in does not work: {failure}{built_for}")
    checksum = found.checksum if found else None
    runtime = found.runtime if found else None
    if found is not None:
        if not math.isfinite(found.checksum) or found.checksum <= 0:
            failures.append(f"its kernel returned {checksum}, not a positive finite sum")
        if runtime != RUNTIME_N:
            failures.append(f"its C++ part returned {runtime}, not {RUNTIME_N}")
    flags = found.flags if found else None
    receipt_flags = receipt.cflags if receipt is not None else None
    if found is not None and flags is None:
        failures.append(f"it records no flags ({STANDIN_WHEEL}/BUILD_FLAGS is missing)")
    elif flags is not None and receipt_flags is not None and flags != receipt_flags:
        failures.append(
            f"it was built with {' '.join(flags) or 'no flags'}, and its receipt says "
            f"{' '.join(receipt_flags) or 'no flags'}"
        )
    instructions = Instructions(note="not counted: it did not run")
    architecture = (receipt.architecture if receipt else None) or platform.machine()
    if architecture != "x86_64":
        instructions = Instructions(note=f"not counted: the check is x86-64's ({architecture})")
    elif found is not None:
        say("counting its vector instructions (objdump)")
        counted = count_instructions(Path(found.library))
        if isinstance(counted, str):
            instructions = Instructions(note=counted)
        elif receipt is None:
            instructions = Instructions(
                counted=counted, note="not checked against its flags: no receipt beside the wheel"
            )
        else:
            instructions = Instructions(
                counted=counted,
                enabled=enabled_kinds(receipt.covered),
                expected=expected_kinds(receipt.covered),
            )
            failures += instruction_failures(counted, receipt.covered, receipt.built_for)
    return StandinSmoke(
        wheel=wheel.name,
        module=STANDIN_WHEEL,
        environment=env.location,
        reused=env.reused,
        ran=failure is None,
        failure=failure,
        checksum=checksum,
        runtime=runtime,
        flags=flags,
        receipt_flags=receipt_flags,
        target=receipt.target if receipt is not None else None,
        instructions=instructions,
        failures=tuple(failures),
        seconds=round(time.perf_counter() - started, 3),
    )
