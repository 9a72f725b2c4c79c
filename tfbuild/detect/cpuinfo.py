"""Reading a Linux ``/proc/cpuinfo`` dump into plain facts, on any machine.

The architecture comes from the dump's contents (x86 lists ``vendor_id`` and ``flags``, Arm lists
``CPU implementer`` and ``Features``, POWER names itself in ``cpu``), never from the machine tfbuild
runs on, so that a login host can describe the cluster nodes it plans builds for.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild.core.errors import InputError
from tfbuild.core.files import STDIN, read_input
from tfbuild.detect import features
from tfbuild.detect.values import FlagSet

#: Largest file accepted as a cpuinfo dump. A 512-thread server writes about 1.5 MB.
MAX_BYTES = 16 * 1024 * 1024

_FIX = "Save one on the machine with 'cat /proc/cpuinfo > node.cpuinfo' and pass that file."
_FIX_NEWLINE = f"{_FIX} If the line is complete, add the final newline."


def _unusable(what: str, why: str, fix: str = _FIX) -> InputError:
    return InputError(what, why=why, fix=fix)


@dataclass(frozen=True, kw_only=True)
class CpuInfo:
    """What a /proc/cpuinfo dump says about a machine's processors, as ``tfbuild.detect/1`` says it."""

    source: str
    architecture: str  # x86_64, i686, aarch64, armv7l, ppc64, riscv64
    vendor: str  # GenuineIntel, AuthenticAMD, an Arm implementer name, IBM, generic
    brand: str | None  # "model name" (x86), "cpu" (POWER); None where the dump has none
    family: int | None = None  # x86 "cpu family"
    model: int | None = None
    stepping: int | None = None
    cpu_part: str | None = None  # Arm "CPU part"
    generation: int | None = None  # POWER generation (9 for POWER9)
    flags: FlagSet = field(default_factory=FlagSet)  # x86 "flags" or Arm "Features"
    processors_listed: int = 1  # how many "processor" blocks the dump holds
    logical_cpus: int | None = None  # the best estimate of hardware threads
    physical_cores: int | None = None
    sockets: int | None = None
    cache_size_kib: int | None = None  # x86 "cache size" (the last level the kernel reports)
    mhz: float | None = None
    # What reading the dump left out and why (a last flag that may be cut short), each a sentence.
    warnings: tuple[str, ...] = ()

    @property
    def byte_order_known(self) -> bool:
        """False for plain ``ppc64``: a POWER dump does not say ppc64 or ppc64le (the live host's
        kernel names ppc64le itself, see :func:`tfbuild.detect.cpu.host_cpuinfo`)."""
        return self.architecture != "ppc64"


def read_cpuinfo(path: Path) -> CpuInfo:
    """Read and parse a cpuinfo dump; every way the file can be wrong is an :class:`InputError`.

    ``-`` reads standard input: ``ssh node cat /proc/cpuinfo | tfbuild detect --cpuinfo -``. A
    file is read by :func:`read_input`: a FIFO or a device (or a link to one) is refused at once,
    and no more than :data:`MAX_BYTES` is read.
    """
    what = f"cannot use --cpuinfo {path}"
    try:
        raw = read_input(path, limit=MAX_BYTES, what=f"--cpuinfo {path}", fix=_FIX)
    except FileNotFoundError:
        raise _unusable(what, "the file does not exist") from None
    if b"\0" in raw:
        raise _unusable(what, "it is a binary file, not text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _unusable(what, "it is not UTF-8 text") from None
    return parse_cpuinfo(text, source="<stdin>" if str(path) == STDIN else str(path))


def _blocks(text: str) -> list[dict[str, str]]:
    """Split the dump into one key/value dict per processor (blank-line separated)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if current:
                blocks.append(current)
                current = {}
            continue
        key = key.strip()
        if key == "processor" and "processor" in current:
            # Some dumps lose the blank separator lines; a new "processor" starts a new block.
            blocks.append(current)
            current = {}
        current.setdefault(key, value.strip())
    if current:
        blocks.append(current)
    return blocks


#: Largest processor count believed: Linux's own ceiling is CONFIG_NR_CPUS (at most 8192 on x86-64
#: with MAXSMP, 4096 on arm64), so anything far beyond is a corrupt field, not a machine.
MAX_CPUS = 65536

#: The fields this parser reads. A dump without a final newline may end inside its last line; when
#: that line is one of these and nothing else in the dump shows it complete, it is refused.
_READ_FIELDS = frozenset(
    {
        "flags", "Features", "vendor_id", "model name", "cpu family", "model", "stepping",
        "cpu MHz", "cache size", "siblings", "cpu cores", "physical id", "CPU implementer",
        "CPU architecture", "CPU part", "cpu", "isa", "uarch",
    }
)  # fmt: skip


def _int(value: str | None, base: int = 10) -> int | None:
    if value is None:
        return None
    try:
        return int(value, base)
    except ValueError:
        return None


def _architecture(first: dict[str, str]) -> str | None:
    if "vendor_id" in first or ("flags" in first and "cpu family" in first):
        return "x86_64" if "lm" in first.get("flags", "").split() else "i686"
    if "CPU implementer" in first or "Features" in first:
        # "8", "7", or "AArch64" (early arm64 kernels); the default is 8 when the line is absent.
        words = first.get("CPU architecture", "8").split()
        if not words:
            return ""  # an empty 'CPU architecture:' line: the caller refuses it
        arch = _int(words[0]) or 8
        return "aarch64" if arch >= 8 else "armv7l"
    if re.search(r"POWER\d+", first.get("cpu", "")):
        return "ppc64"
    if "isa" in first and first.get("isa", "").startswith("rv64"):
        return "riscv64"
    return None


def _arm_vendor(first: dict[str, str]) -> str:
    # archspec's own table of Arm implementer codes ("0x41" -> "ARM"), so names match its targets.
    from archspec.cpu.schema import TARGETS_JSON

    code = first.get("CPU implementer")
    if code is None:
        return "generic"
    vendors: dict[str, str] = TARGETS_JSON["conversions"]["arm_vendors"]
    return vendors.get(code, code)


def _count(block: dict[str, str], key: str, what: str) -> int | None:
    """A processor count the dump states (``siblings``, ``cpu cores``): absent is None, anything
    but a whole number from 1 to MAX_CPUS is a corrupt dump (it would become OMP_NUM_THREADS)."""
    text = block.get(key)
    if text is None:
        return None
    if not re.fullmatch(r"[0-9]{1,6}", text) or not 1 <= int(text) <= MAX_CPUS:
        raise _unusable(
            what, f"its '{key}' line says {text!r}, not a processor count from 1 to {MAX_CPUS}"
        )
    return int(text)


def _counts(blocks: list[dict[str, str]], what: str) -> tuple[int | None, int | None, int | None]:
    """Logical CPUs, physical cores and sockets, from what the dump lists."""
    first = blocks[0]
    sockets_seen = {b["physical id"] for b in blocks if "physical id" in b}
    sockets = len(sockets_seen) if sockets_seen else None
    logical = len(blocks)
    siblings = _count(first, "siblings", what)
    cores = _count(first, "cpu cores", what)
    if siblings is not None:
        # archspec-style dumps keep only the first processor; "siblings" is threads per socket.
        logical = max(logical, siblings * (sockets or 1))
    physical = cores * (sockets or 1) if cores is not None else None
    return logical, physical, sockets


def _check_complete(
    text: str,
    blocks: list[dict[str, str]],
    cpu_blocks: list[dict[str, str]],
    *,
    feature_key: str,
    what: str,
) -> bool:
    """Refuse a dump cut short; read one that merely lacks its final newline. True when the dump is
    one processor block that ends, without a final newline, inside its ``feature_key`` line: its
    last token may be cut (see :func:`_flags`).

    Archives and tools often store a dump without its final newline (archspec's own test data does),
    so that alone proves nothing. What does: a last processor block without a field the first one
    has (the dump stops inside it), and, when the file ends without a newline, a last line that may
    be cut -- its value a strict prefix of the same field in the first block (``flags ... avx5``
    against ``... avx512f ...``), or, with one block only, a field the parser reads other than the
    feature line: nothing in the dump shows that line complete, and a cut there changes a value
    (``cpu MHz : 24`` for 2400). A cut feature line only loses flags from its end, which makes the
    plan safer, never wrong; its last token alone can mislead, and :func:`_flags` deals with it.
    """
    last_block = cpu_blocks[-1]
    if len(cpu_blocks) > 1:
        missing = [key for key in cpu_blocks[0] if key not in last_block]
        if missing:
            raise _unusable(
                what,
                f"it is truncated: its last processor block (processor "
                f"{last_block['processor']}) stops before its '{missing[0]}' line",
            )
    if text.endswith(("\n", "\r")):
        return False
    key, sep, value = text.splitlines()[-1].partition(":")
    key, value = key.strip(), value.strip()
    if not sep or blocks[-1] is not last_block or last_block.get(key) != value:
        return False  # the last line is not a field of the last processor (a trailer, a comment)
    if len(cpu_blocks) > 1:
        full = cpu_blocks[0].get(key)
        if full is not None and full != value and full.startswith(value):
            raise _unusable(
                what,
                f"it is truncated: its last line ('{key}') is cut short of the first processor's",
            )
    elif key == feature_key:
        return True
    elif key in _READ_FIELDS:
        raise _unusable(
            what,
            f"it may be truncated: it ends inside its '{key}' line without a final newline, "
            "and it lists one processor, so nothing shows that line is complete",
            _FIX_NEWLINE,
        )
    return False


@functools.cache
def flags_read() -> frozenset[str]:
    """Every feature flag a decision reads: archspec's microarchitectures (all families) and the
    /proc/cpuinfo spellings of TensorFlow's guard features."""
    from archspec.cpu.schema import TARGETS_JSON

    from tfbuild.core.targets import targets as extended

    extended()  # tfbuild's additions in archspec's table first
    targets: dict[str, dict[str, Any]] = TARGETS_JSON["microarchitectures"]
    known = {flag for target in targets.values() for flag in target["features"]}
    known.update(name for feature in features.GUARD_FEATURES for name in feature.cpuinfo)
    return frozenset(known)


#: Linux flag names (arch/x86/include/asm/cpufeatures.h) that no decision reads but that start with
#: the name of one that does: a cut ``3dnowprefetch`` (every recent Intel CPU) reads as ``3dnow``,
#: which the CPU lacks. Every such name in the recorded dumps is here (a test checks).
LONGER_LINUX_FLAGS = frozenset(
    {"3dnowprefetch", "cpuid_fault", "fpu", "mmxext", "smep", "xsaveerptr", "xsaves"}
)


#: How many of the longer flags a warning names.
_SHOWN = 3


def _flags(
    tokens: list[str], *, cut: bool, feature_key: str, source: str
) -> tuple[frozenset[str], tuple[str, ...]]:
    """The flag set, and a warning when the last token of a feature line that may be cut is left
    out: a token that starts a longer known flag (``avx512`` of ``avx512f``, ``fma`` of ``fma4``)
    may be that flag cut short, and a cut ``fma4`` would claim FMA for a Bulldozer, which has FMA4
    and no FMA. Any other last token is kept: if it was cut, what is left is a flag no decision
    reads (unless Linux names a longer flag after a read one and :data:`LONGER_LINUX_FLAGS` lacks it).
    """
    flags = frozenset(tokens)
    if not cut or not tokens or tokens[-1] in tokens[:-1]:
        return flags, ()
    last, others = tokens[-1], frozenset(tokens[:-1])
    longer = sorted(
        (f for f in flags_read() | LONGER_LINUX_FLAGS | others if f != last and f.startswith(last)),
        key=lambda f: (len(f), f),
    )
    if not longer:
        return flags, ()
    shown = ", ".join(longer[:_SHOWN]) + (", ..." if len(longer) > _SHOWN else "")
    return others, (
        f"--cpuinfo {source} ends without a final newline inside its {feature_key} line; its last "
        f"token '{last}' may be cut from a longer flag ({shown}), so it is left out: add the final "
        "newline if the line is complete",
    )


def parse_cpuinfo(text: str, *, source: str) -> CpuInfo:
    """Parse the text of a /proc/cpuinfo dump (only the first processor's features are used)."""
    what = f"cannot use --cpuinfo {source}"
    if not text.strip():
        raise _unusable(what, "the file is empty")
    blocks = [b for b in _blocks(text) if b]
    cpu_blocks = [b for b in blocks if "processor" in b]
    if not cpu_blocks:
        raise _unusable(what, "it has no 'processor' entries, so it is not a /proc/cpuinfo dump")
    first = cpu_blocks[0]
    arch = _architecture(first)
    if arch == "":
        raise _unusable(what, "its 'CPU architecture' line is empty")
    if arch is None:
        raise _unusable(
            what,
            "it names no known CPU architecture (no x86 'flags', Arm 'Features' or POWER 'cpu')",
        )
    feature_key = "flags" if arch in ("x86_64", "i686") else "Features"
    if arch in ("x86_64", "i686", "aarch64", "armv7l") and feature_key not in first:
        raise _unusable(what, f"it is truncated: the first processor has no '{feature_key}' line")
    if arch in ("aarch64", "armv7l") and "CPU revision" not in cpu_blocks[-1]:
        # Linux writes "CPU revision" last in every Arm processor block, after the implementer and
        # part this parser reads (arch/arm64/kernel/cpuinfo.c, c_show; arch/arm/kernel/setup.c).
        raise _unusable(
            what, "it is truncated: its last processor block stops before its 'CPU revision' line"
        )
    cut = _check_complete(text, blocks, cpu_blocks, feature_key=feature_key, what=what)
    tokens = first.get(feature_key, "").split()
    bad = sorted(f for f in tokens if not re.fullmatch(r"[A-Za-z0-9_.]+", f))
    if bad:
        raise _unusable(what, f"its {feature_key} line holds garbage ({bad[0]!r})")
    flags, warnings = _flags(tokens, cut=cut, feature_key=feature_key, source=source)
    if cut and arch == "i686":
        # "lm" (long mode) is what tells x86-64 from 32-bit x86: a cut before it would make a
        # 64-bit machine a 32-bit one, which is a wrong answer, not a safer one.
        raise _unusable(
            what,
            "it may be truncated: it ends inside its 'flags' line without a final newline, "
            "before any 'lm' flag, which tells a 64-bit x86 CPU from a 32-bit one",
            _FIX_NEWLINE,
        )

    logical, physical, sockets = _counts(cpu_blocks, what)
    mhz_text = first.get("cpu MHz")
    if mhz_text and not re.fullmatch(r"[0-9]{1,7}(\.[0-9]{1,9})?", mhz_text):
        raise _unusable(what, f"its 'cpu MHz' line says {mhz_text!r}, not a number")
    cache = re.match(r"(\d+)\s*KB", first.get("cache size", ""))
    common: dict[str, Any] = {
        "source": source,
        "architecture": arch,
        "flags": FlagSet(flags),
        "processors_listed": len(cpu_blocks),
        "logical_cpus": logical,
        "physical_cores": physical,
        "sockets": sockets,
        "warnings": warnings,
    }
    if arch in ("x86_64", "i686"):
        return CpuInfo(
            **common,
            vendor=first.get("vendor_id", "generic"),
            brand=first.get("model name"),
            family=_int(first.get("cpu family")),
            model=_int(first.get("model")),
            stepping=_int(first.get("stepping")),
            cache_size_kib=int(cache.group(1)) if cache else None,
            mhz=float(mhz_text) if mhz_text else None,
        )
    if arch in ("aarch64", "armv7l"):
        return CpuInfo(
            **common,
            vendor=_arm_vendor(first),
            brand=None,
            cpu_part=first.get("CPU part") or None,
        )
    if arch == "ppc64":
        generation = re.search(r"POWER(\d+)", first.get("cpu", ""))
        return CpuInfo(
            **common,
            vendor="IBM",
            brand=first.get("cpu"),
            generation=int(generation.group(1)) if generation else None,
        )
    return CpuInfo(**common, vendor="generic", brand=first.get("uarch"))
