"""The probe: import TensorFlow in the wheel's own interpreter, run ops, and read what it says.

It runs in a subprocess with ``TF_CPP_MIN_LOG_LEVEL`` unset (the CPU-feature message is INFO level),
so a wheel that dies on import (SIGILL, a missing symbol, a too-new glibc) is reported as such,
never as a traceback from tfbuild.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tfbuild.core import commands
from tfbuild.core.errors import TfbuildError
from tfbuild.smoke.messages import TensorFlowMessages, parse_messages

#: What tf.sysconfig.get_build_info() values become in the probe's JSON (others as their str).
BuildInfoValue = str | int | float | bool | None


@dataclass(frozen=True, kw_only=True)
class ProbeResult:
    """What importing the wheel said and did."""

    ok: bool
    returncode: int
    signal: str | None  # "SIGILL" when the wheel died on an instruction the CPU lacks
    failure: str | None  # one line: why the import or the op failed
    version: str | None
    git_version: str | None
    build_info: dict[str, BuildInfoValue] = field(default_factory=dict)  # kept sorted by key
    guard: TensorFlowMessages
    tcmalloc_loaded: bool = field(init=False)
    tcmalloc_maps: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "build_info", dict(sorted(self.build_info.items())))
        object.__setattr__(self, "tcmalloc_loaded", bool(self.tcmalloc_maps))


@dataclass(frozen=True, kw_only=True)
class Imported:
    """What ``scripts/import_tf.py`` says, decoded strictly (it runs the wheel under test)."""

    ok: bool
    version: str
    git_version: str | None
    build_info: dict[str, BuildInfoValue]
    tcmalloc_maps: tuple[str, ...]
    python: str


def failure_line(stderr: str, returncode: int) -> str:
    if returncode < 0:
        name = commands.signal_name(-returncode)
        if name == "SIGILL":
            return (
                "died with SIGILL (Illegal instruction): the wheel uses instructions this CPU lacks"
            )
        return f"died with {name}"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("ImportError", "OSError", "ModuleNotFoundError", "RuntimeError")) or (
            "Error:" in line and not line.startswith(" ")
        ):
            return line.strip()
    return lines[-1].strip() if lines else f"exited with code {returncode}"


def run_probe(python: str, *, env: Mapping[str, str], timeout: float = 600) -> ProbeResult:
    """Import TensorFlow with ``python`` and report; never raises for a broken wheel."""
    call = commands.Command(
        argv=commands.in_python(python, "import_tf.py", paths=commands.python_path(env)),
        what="the import probe",
        env=env,
        timeout=timeout,
    )
    done = commands.attempt(call)
    stdout, stderr = done.stdout, done.stderr
    code = -9 if done.returncode is None else done.returncode
    if done.problem:
        stderr += f"\nthe probe {done.problem.removeprefix('it ')}"
    guard = parse_messages(stderr + "\n" + stdout)
    said: Imported | None = None
    if done.ok:
        try:
            said = commands.decode_last_line(call, done, Imported)
        except TfbuildError as exc:
            stderr += f"\n{exc.why}"
    ok = said is not None and said.ok
    failure = None if ok else failure_line(stderr, code)
    if not ok and guard.missing:
        failure = (
            f"{failure}; the binary was compiled for {' '.join(guard.missing)}, "
            "which this CPU lacks"
        )
    return ProbeResult(
        ok=ok,
        returncode=code,
        signal=commands.signal_name(-code) if code < 0 else None,
        failure=failure,
        version=said.version if said else None,
        git_version=said.git_version if said else None,
        build_info=dict(said.build_info) if said else {},
        guard=guard,
        tcmalloc_maps=said.tcmalloc_maps if said else (),
    )
