"""The oldest Linux a wheel loads on, and the best manylinux tag it may carry, found by auditwheel.

``inspect_wheel`` asks PyPA's auditwheel (its Python API, the analysis ``auditwheel show`` prints)
which symbol versions the wheel's ELF files need and which manylinux policies allow them. tfbuild
reads no ELF file itself. From auditwheel's answer it keeps a :class:`~tfbuild.wheel.receipt.WheelFloor`:
the newest ``GLIBC_``, ``GLIBCXX_`` and ``GCC_`` (libgcc_s) versions needed, and the
highest-priority policy (the one with the oldest glibc) the wheel satisfies, e.g.
``manylinux_2_27_x86_64``, which ``tfbuild.wheel.wheelfile.retag`` then puts on the wheel.

What is decided here, and why:

- tfbuild inspects and retags; it never grafts libraries into a wheel (``auditwheel repair`` does).
  So a wheel that needs a library outside every policy's whitelist satisfies no policy, unless that
  library is in ``exclude``. ``exclude`` is auditwheel's own ``--exclude``: sonames or
  ``fnmatch`` patterns (``libcudart.so.*``) of libraries the wheel is allowed to need from the
  system: they are left out of the library tree, so they neither limit the policy nor get scanned.
- The instruction-set check is off (``--disable-isa-ext-check``): an ELF file marked as needing
  x86-64-v3 would otherwise make every policy fail. Which CPU a wheel needs is the label's business
  (``x86_64v4`` in the version, checked by ``tfbuild pick``); the tag says which glibc, as with
  TensorFlow's own wheels, which need AVX and are tagged manylinux.
- No policy is not an error: the floor has ``policy=None``, the wheel keeps its ``linux_*`` tag and
  ``too_new`` says what keeps it out: symbol versions no policy allows (``GLIBC_2.42``), libraries
  no policy allows (their soname), blacklisted symbols (``symbol (library)``).
- A wheel with no ELF file (pure Python) is not an error either: it needs no glibc and runs
  anywhere, so every field is None and ``too_new`` is empty. It gets no manylinux tag (its tag would
  be ``py3-none-any``). ELF files auditwheel cannot place (an unknown machine) are an error.

auditwheel unpacks the wheel into a temporary directory (``TMPDIR``: the stock TensorFlow wheel
takes 1.3 GB) and works there with the process's current directory changed, so one inspection runs
at a time per process. The stock tensorflow-cpu 2.21.0 wheel takes about two minutes on a 2-core
machine (``benchmarks/floor_speed.py``): auditwheel parses every symbol table with pyelftools.
"""

from __future__ import annotations

import logging
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.wheel.receipt import WheelFloor

log = logging.getLogger(__name__)

# A numbered symbol version: GLIBC_2.27 (glibc), GLIBCXX_3.4.22 (libstdc++), GCC_7.0.0 (libgcc_s).
# Only these make the floor (GLIBC_PRIVATE, GLIBC_ABI_DT_RELR do not; the policy still counts them).
_NUMBERED = re.compile(r"(?P<family>[A-Z]+)_(?P<version>\d+(?:\.\d+)*)")
_ELF_MAGIC = b"\x7fELF"


def inspect_wheel(wheel: Path, *, exclude: Iterable[str] = ()) -> WheelFloor:
    """``wheel``'s floor (glibc, libstdc++, libgcc) and best manylinux policy, by auditwheel
    (``exclude``: auditwheel's ``--exclude``, as above)."""
    try:  # imported when first needed
        from importlib.metadata import version

        from auditwheel import wheel_abi
        from auditwheel.error import AuditwheelError, NonPlatformWheelError

        tool = f"auditwheel {version('auditwheel')}"
    except ImportError as error:
        raise EnvironmentProblem(
            "auditwheel is not installed",
            why=f"tfbuild finds a wheel's glibc floor and manylinux tag with it ({error})",
            fix="Run `pip install auditwheel` in tfbuild's environment.",
        ) from None
    if not wheel.is_file():
        raise InputError(
            f"{wheel} does not exist",
            why="only an existing wheel file can be inspected",
            fix="Point tfbuild at the .whl the build produced.",
        )
    if not wheel.name.endswith(".whl"):
        raise InputError(
            f"{wheel.name} is not a wheel file name",
            why="auditwheel inspects .whl files",
            fix="Point tfbuild at the .whl the build produced.",
        )
    _check_archive(wheel)
    excluded = frozenset((exclude,) if isinstance(exclude, str) else exclude)
    try:
        info = wheel_abi.analyze_wheel_abi(
            None,  # libc: from the ELF files
            None,  # architecture: from the ELF files
            wheel.absolute(),
            excluded,
            disable_isa_ext_check=True,
            allow_graft=False,
        )
    except NonPlatformWheelError as error:
        if _has_elf(wheel):
            raise InputError(
                f"auditwheel cannot inspect {wheel.name}",
                why=f"its ELF files are for no machine auditwheel knows ({error.message})",
                fix="Inspect a wheel built for a Linux architecture auditwheel supports.",
            ) from None
        log.info("%s has no ELF file: a pure-Python wheel has no floor", wheel.name)
        return WheelFloor(glibc=None, libstdcxx=None, libgcc=None, policy=None, tool=tool)
    except (AuditwheelError, RuntimeError, ValueError) as error:
        raise InputError(
            f"auditwheel cannot inspect {wheel.name}",
            why=str(error),
            fix="Rebuild the wheel; a wheel pip installs is one auditwheel reads.",
        ) from None
    except OSError as error:
        raise EnvironmentProblem(
            f"auditwheel could not unpack {wheel.name} to inspect it",
            why=str(error),
            fix="Free space in the temporary directory, or point TMPDIR at a larger disk.",
        ) from None
    finally:
        # auditwheel caches the ELF analysis by file path: a wheel rewritten under the same name
        # would get the old answer, and the cache holds the whole library tree.
        wheel_abi.get_wheel_elfdata.cache_clear()
    needed: set[str] = set().union(*info.versioned_symbols.values())
    allowed = info.overall_policy != info.policies.linux
    return WheelFloor(
        glibc=_newest(needed, "GLIBC"),
        libstdcxx=_newest(needed, "GLIBCXX"),
        libgcc=_newest(needed, "GCC"),
        policy=info.overall_policy.name if allowed else None,
        too_new=() if allowed else _keeping_out(info, needed),
        tool=tool,
    )


def _keeping_out(info: Any, needed: set[str]) -> tuple[str, ...]:
    """What keeps a wheel out of the most permissive manylinux policy (the newest glibc's)."""
    policies = info.policies
    widest = policies.lowest  # auditwheel's "lowest": the lowest priority but ``linux``
    symbols = sorted(
        (
            symbol
            for symbol in needed
            if (family := symbol.partition("_")[0]) in widest.symbol_versions
            and symbol.partition("_")[2] not in widest.symbol_versions[family]
        ),
        key=_symbol_key,
    )
    reference = info.external_refs[widest.name]
    libraries = sorted(reference.libs)
    blacklisted = sorted(
        f"{symbol} ({library})"
        for library, found in reference.blacklist.items()
        for symbol in found
    )
    python = [
        name
        for name, policy in (("PyFPE_jbuf", info.pyfpe_policy), ("UCS2", info.ucs_policy))
        if policy == policies.linux
    ]
    reasons = (*symbols, *libraries, *blacklisted, *python)
    return reasons or (f"auditwheel: consistent only with {info.overall_policy.name}",)


def _newest(symbols: Iterable[str], family: str) -> str | None:
    versions = [
        match["version"]
        for symbol in symbols
        if (match := _NUMBERED.fullmatch(symbol)) and match["family"] == family
    ]
    return max(versions, key=_version_key, default=None)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def _symbol_key(symbol: str) -> tuple[str, tuple[int, ...], str]:
    family, _, version = symbol.partition("_")
    return family, _version_key(version), version


def _check_archive(wheel: Path) -> None:
    """A zip archive with a RECORD, or one clear error (auditwheel would leave its unpacking
    directory behind, and call a missing RECORD a missing file)."""
    why = "it has no .dist-info/RECORD, which lists the files auditwheel reads"
    try:
        with zipfile.ZipFile(wheel) as archive:
            if any(re.fullmatch(r"[^/]+\.dist-info/RECORD", name) for name in archive.namelist()):
                return
    except (zipfile.BadZipFile, OSError) as error:
        why = str(error)
    raise InputError(f"auditwheel cannot inspect {wheel.name}", why=why, fix="Rebuild the wheel.")


def _has_elf(wheel: Path) -> bool:
    """Whether any member starts like an ELF file (four bytes each: no symbol is read)."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir() or info.file_size < len(_ELF_MAGIC):
                continue
            with archive.open(info) as member:
                if member.read(len(_ELF_MAGIC)) == _ELF_MAGIC:
                    return True
    return False
