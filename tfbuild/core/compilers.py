"""Compiler executables: finding one on this host and asking it what it is.

The one place tfbuild runs a compiler to learn about it. detect asks it the release of a bare
``--compiler gcc``; the forecast and the overlay find their C++ compiler here (the plan's family
first) and the overlay the C driver beside it. What a compiler *release* spells for a CPU target
(archspec's ``-march`` and the guard features' ``-m`` options) is :mod:`tfbuild.detect.compilers`'.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from tfbuild.core.commands import Command, Finished, attempt
from tfbuild.core.errors import EnvironmentProblem

#: C++ compilers by family, in the order they are looked for on PATH.
CXX_NAMES: dict[str, tuple[str, ...]] = {
    "clang": ("clang++", *(f"clang++-{v}" for v in range(22, 13, -1))),
    "gcc": ("g++", *(f"g++-{v}" for v in range(15, 8, -1))),
}
#: The C driver beside each C++ driver's name.
_C_DRIVERS = (("clang++", "clang"), ("g++", "gcc"), ("c++", "cc"))

# clang and its kin: "Debian clang version 16.0.6 (15~deb12u1)", "Apple clang version 15.0.0 (...)".
_VERSION_WORD = re.compile(r"version (\d+(?:\.\d+)*)")
# gcc: "g++ (Debian 12.2.0-14+deb12u1) 12.2.0", "g++ (GCC) 13.2.1 20230801".
_AFTER_PACKAGE = re.compile(r"\) (\d+(?:\.\d+)+)")


def release_in(version_line: str) -> str | None:
    """The release a compiler's ``--version`` line names ("16.0.6", "12.2.0"), or None."""
    found = _VERSION_WORD.search(version_line) or _AFTER_PACKAGE.search(version_line)
    return found.group(1) if found else None


@dataclass(frozen=True, kw_only=True)
class CompilerExecutable:
    """A compiler program that runs: where it is, its family, what its ``--version`` says first,
    and why it is the one used."""

    path: str
    family: str  # "clang" or "gcc"
    version: str  # the first line of --version
    why: str  # why this one, in words

    @property
    def major(self) -> int | None:
        """The major release its version line names (16 for clang 16.0.6), None when none."""
        release = release_in(self.version)
        return int(release.split(".")[0]) if release else None


def _ask(*argv: str) -> Finished:
    """What a compiler answers, in the C locale, within 30 s (a cold compiler on a busy machine is
    slow)."""
    env = {**os.environ, "LC_ALL": "C"}
    return attempt(Command(argv=argv, what=f"{argv[0]} did not run", env=env, timeout=30.0))


def version_line(program: str) -> str | None:
    """The first line ``program --version`` prints, or None when it does not run, fails or says
    nothing."""
    result = _ask(program, "--version")
    if not result.ok:
        return None
    first = next(iter(result.stdout.strip().splitlines()), "")
    return first or None


def release_of(program: str, *, family: str) -> str | None:
    """The release ``program`` of ``family`` says it is ("12.2.0"), or None. gcc tells it whole
    with ``-dumpfullversion`` (``-dumpversion`` before GCC 7, which knows no -dumpfullversion);
    every other compiler names it in ``--version``."""
    if family == "gcc":
        result = _ask(program, "-dumpfullversion", "-dumpversion")
        return (result.stdout.strip() or None) if result.ok else None
    line = version_line(program)
    return release_in(line) if line else None


def compiler_at(program: str, *, why: str) -> CompilerExecutable | None:
    """The compiler ``program`` names (on PATH, or a path), when it runs and says its version."""
    path = shutil.which(program)
    line = version_line(path) if path is not None else None
    if path is None or line is None:
        return None
    family = "clang" if "clang" in line.lower() else "gcc"  # Apple's and vendors' clang too
    return CompilerExecutable(path=path, family=family, version=line, why=why)


def find_compiler(wanted: str, *, needed_for: str) -> CompilerExecutable:
    """The C++ compiler of ``wanted``'s family (a plan's "clang-18.1.8", or "gcc") when this host
    has one on PATH, else the other family's, else ``c++``. ``needed_for`` says, when there is
    none, what needs one ("the forecast compiles a small benchmark twice")."""
    family = "clang" if wanted.startswith("clang") else "gcc"
    other = "gcc" if family == "clang" else "clang"
    for name in (*CXX_NAMES[family], *CXX_NAMES[other], "c++"):
        found = compiler_at(name, why=f"the plan's compiler family ({wanted})")
        if found is None:
            continue
        if found.family != family:
            why = f"this host has no {family} (the plan's {wanted}): its {found.family} instead"
            found = replace(found, why=why)
        return found
    raise EnvironmentProblem(
        "no C++ compiler on this host",
        why=f"{needed_for} (clang++, g++ or c++ on PATH)",
        fix="Install one (apt-get install g++, or clang), or put it on PATH.",
    )


def c_driver(cxx: str) -> str:
    """The C driver beside a C++ one, by path or on PATH as ``cxx`` is (/usr/bin/clang++-16 ->
    /usr/bin/clang-16, g++ -> gcc), else ``cxx`` itself."""
    path = Path(cxx)
    for cxx_name, c_name in _C_DRIVERS:
        if path.name.startswith(cxx_name):
            found = shutil.which(str(path.with_name(c_name + path.name[len(cxx_name) :])))
            if found:
                return found
    return cxx
