"""The machine a wheel must run on: its CPU, its Python, its C and C++ runtimes, its driver's CUDA.

:func:`describe_host` is the edge: it reads ``/proc/cpuinfo`` (or a saved dump), asks nvidia-smi
and the interpreter, reads glibc's version and the newest ``GLIBCXX_`` version that the loader's
libstdc++ defines (:func:`libstdcxx_here`, pyelftools); :class:`Host` is what it found, plain data.
A saved dump carries neither runtime: ``--glibc`` and ``--libstdcxx`` state them, else they are not
checked.

An overlay goes on the TensorFlow of the interpreter pick chooses for, so when there is one to judge
:func:`with_tensorflow` asks that interpreter (``--python PATH``, else tfbuild's own; no interpreter
for ``--python X.Y`` or a ``--cpuinfo`` machine) what it has installed (:func:`tensorflow_of`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.utils import canonicalize_name

from tfbuild.core.errors import TfbuildError, UsageError
from tfbuild.core.pythons import packages_of, query_interpreter
from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.measure.stock import read_stock
from tfbuild.recipes.tfversions import parse_version

#: A Python or CUDA version as the user states it: X.Y, or X.Y.Z (the Z is dropped).
_X_Y = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")
#: Each X.Y option: the pattern its value must match (a glibc version is X.Y), what it states, and
#: how to write it.
_STATED = {
    "--python": (_X_Y, "a Python version", "Write it as X.Y, e.g. 3.11."),
    "--driver-cuda": (
        _X_Y,
        "a CUDA version",
        "Write the newest CUDA the driver supports as X.Y (nvidia-smi prints it), or none.",
    ),
    "--glibc": (
        re.compile(r"^(\d+)\.(\d+)$"),
        "a glibc version",
        "Write the machine's glibc as X.Y, e.g. 2.28 (ldd --version prints it).",
    ),
}
#: A libstdc++ symbol version as the user states it (the part after GLIBCXX_): X.Y or X.Y.Z.
_GLIBCXX_STATED = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
#: A version definition of libstdc++ that counts: GLIBCXX_3.4.32 (not GLIBCXX_LDBL_3.4, CXXABI_*).
_GLIBCXX_DEFINED = re.compile(r"^GLIBCXX_(\d+(?:\.\d+)+)$")
#: dlinfo's request for a library's ``struct link_map`` (<dlfcn.h>).
_RTLD_DI_LINKMAP = 2
#: The interpreter codes of wheel tags, as people name them.
IMPLEMENTATIONS = {"cp": "CPython", "pp": "PyPy", "py": "Python"}


@dataclass(frozen=True, kw_only=True)
class InstalledTensorFlow:
    """The TensorFlow an interpreter has, as that interpreter says (decoded, each value checked)."""

    python: str  # the interpreter asked
    distribution: str  # the distribution that installed it, normalised: tensorflow-cpu
    version: str  # tensorflow.__version__: 2.21.0
    framework_size: int | None  # its libtensorflow_framework.so.2 (None: it has none)

    @property
    def text(self) -> str:
        return f"{self.distribution} {self.version}"


#: Host.tensorflow_source when no overlay was to be judged, so no interpreter was asked.
TENSORFLOW_NOT_ASKED = "not asked: no overlay among the wheels"
#: How a host's python_source begins when no --python was given: tfbuild's own interpreter.
OWN_INTERPRETER = "this interpreter"


@dataclass(frozen=True, kw_only=True)
class Host:
    """The machine and interpreter a wheel must run on."""

    source: str  # "this machine" or the --cpuinfo file
    live: bool  # this machine (not a --cpuinfo dump)
    cpu: CpuInfo
    target: str  # archspec's name for the CPU
    guard: tuple[str, ...]  # TensorFlow's guard features the CPU has
    python: str  # "3.11"
    implementation: str  # "cp"
    python_source: str
    glibc: str | None  # the machine's glibc (None: not glibc, or unknown for --cpuinfo)
    glibc_checked: bool  # False: a --cpuinfo machine without --glibc, whose C library is unknown
    glibc_source: str  # where glibc came from, or why it is not checked
    libstdcxx: str | None  # the newest GLIBCXX_ version its libstdc++ defines (None: not checked)
    libstdcxx_source: str  # where that came from, or why it is not checked
    driver_cuda: str | None  # the newest CUDA the NVIDIA driver supports; None: no GPU
    driver_source: str
    # The TensorFlow an overlay would go on (:func:`with_tensorflow`); None: none, or not known.
    tensorflow: InstalledTensorFlow | None = None
    tensorflow_source: str = TENSORFLOW_NOT_ASKED  # where it was read, or why there is none

    @property
    def python_text(self) -> str:
        return f"{IMPLEMENTATIONS.get(self.implementation, self.implementation)} {self.python}"

    @property
    def glibc_text(self) -> str:
        """``glibc 2.28``, and ``(--glibc)`` when the user stated it."""
        stated = " (--glibc)" if self.glibc_source.startswith("--glibc") else ""
        return f"glibc {self.glibc}{stated}"

    @property
    def libstdcxx_text(self) -> str:
        """``GLIBCXX_3.4.30``, and ``(--libstdcxx)`` when the user stated it."""
        stated = " (--libstdcxx)" if self.libstdcxx_source.startswith("--libstdcxx") else ""
        return f"GLIBCXX_{self.libstdcxx}{stated}"


def _x_y(text: str, option: str) -> str:
    """``option``'s value as ``X.Y`` (``3.11.7`` -> ``3.11``); else one usage error line."""
    pattern, noun, fix = _STATED[option]
    found = pattern.match(text.strip())
    if not found:
        raise UsageError(f"{option} {text!r} is not {noun}", fix=fix)
    return f"{int(found.group(1))}.{int(found.group(2))}"


def parse_libstdcxx(text: str) -> str:
    """``3.4.32`` (the newest GLIBCXX_ version of a libstdc++) -> ``3.4.32``; else a usage error."""
    stripped = text.strip().removeprefix("GLIBCXX_")
    if not _GLIBCXX_STATED.match(stripped):
        raise UsageError(
            f"--libstdcxx {text!r} is not a GLIBCXX version",
            fix="Write the newest GLIBCXX_ version of the machine's libstdc++ as X.Y.Z, e.g. "
            "3.4.25 (strings libstdc++.so.6 | grep GLIBCXX_ lists them).",
        )
    return ".".join(str(int(p)) for p in stripped.split("."))


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


def newest_glibcxx(library: Path) -> str | None:
    """The newest ``GLIBCXX_`` version a libstdc++ file defines (``.gnu.version_d``, read by
    pyelftools): ``"3.4.32"``; None when it defines none. OSError or ELFError when unreadable."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection

    found: list[tuple[int, ...]] = []
    with library.open("rb") as handle:
        for section in ELFFile(handle).iter_sections():
            if not isinstance(section, GNUVerDefSection):
                continue
            for _definition, names in section.iter_versions():
                # The first name is the version this entry defines; the rest are its parents.
                name = next(iter(names), None)
                matched = _GLIBCXX_DEFINED.match(name.name) if name is not None else None
                if matched:
                    found.append(parse_version(matched.group(1)))
    return ".".join(map(str, max(found))) if found else None


class _LinkMap(ctypes.Structure):
    """The head of <link.h>'s ``struct link_map``: the load address and the file's path."""

    _fields_ = (("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p))


def find_libstdcxx() -> Path | None:
    """The libstdc++ a program started here gets: ``find_library("stdc++")``'s soname, loaded by
    the dynamic loader (its search path: LD_LIBRARY_PATH, ld.so.cache, the default directories),
    and the file it chose (dlinfo RTLD_DI_LINKMAP)."""
    soname = ctypes.util.find_library("stdc++")
    dlinfo = None
    for where in (None, "libdl.so.2"):  # glibc 2.34+ has dlinfo in libc, older ones in libdl
        try:
            dlinfo = ctypes.CDLL(where).dlinfo
            break
        except (OSError, AttributeError):
            continue
    if soname is None or dlinfo is None:
        return None
    try:
        library = ctypes.CDLL(soname)
    except OSError:
        return None
    link = ctypes.POINTER(_LinkMap)()
    if dlinfo(ctypes.c_void_p(library._handle), _RTLD_DI_LINKMAP, ctypes.byref(link)) != 0:
        return None
    name = link.contents.l_name if link else None
    return Path(name.decode()) if name else None


def libstdcxx_here() -> tuple[str | None, str]:
    """(the newest GLIBCXX_ version of this machine's libstdc++, where it was read or why not)."""
    from elftools.common.exceptions import ELFError

    library = find_libstdcxx()
    if library is None:
        return None, "not checked: the dynamic loader finds no libstdc++ on this machine"
    try:
        newest = newest_glibcxx(library)
    except (OSError, ELFError) as exc:
        return None, f"not checked: cannot read {library} ({exc})"
    if newest is None:
        return None, f"not checked: {library} defines no GLIBCXX_ symbol versions"
    return newest, f"{library} (its GLIBCXX_ symbol versions)"


def _glibc_of(live: bool, stated: str | None) -> tuple[str | None, bool, str]:
    """(glibc, checked, source): stated with --glibc, detected on this machine, else unknown."""
    if not live:
        if stated is not None:
            return stated, True, "--glibc"
        return (
            None,
            False,
            "not checked: a --cpuinfo dump does not say the machine's glibc; state it with "
            "--glibc X.Y",
        )
    from tfbuild.detect.system import glibc_version

    detected = glibc_version()
    own = f"glibc {detected}" if detected else "not glibc"
    if stated is not None:
        return stated, True, f"--glibc (this machine's own C library: {own})"
    if detected is None:
        return None, True, "this machine: its C library is not glibc"
    return detected, True, "this machine"


def _libstdcxx_of(live: bool, stated: str | None) -> tuple[str | None, str]:
    """(newest GLIBCXX_ version, source): stated with --libstdcxx, read here, else unknown."""
    if not live:
        if stated is not None:
            return stated, "--libstdcxx"
        return (
            None,
            "not checked: a --cpuinfo dump does not say the machine's libstdc++; state its "
            "newest GLIBCXX_ version with --libstdcxx X.Y.Z",
        )
    detected, source = libstdcxx_here()
    if stated is not None:
        own = f"GLIBCXX_{detected}" if detected else source
        return stated, f"--libstdcxx (this machine's own libstdc++: {own})"
    return detected, source


def describe_host(
    *,
    cpuinfo: Path | None = None,
    python: str | None = None,
    interpreter: str | None = None,
    driver_cuda: str | None = None,
    glibc: str | None = None,
    libstdcxx: str | None = None,
) -> Host:
    """This machine, or a saved cpuinfo; the Python, C/C++ runtimes and CUDA driver stated or
    found."""
    from tfbuild.detect.cpuinfo import read_cpuinfo

    stated_glibc = _x_y(glibc, "--glibc") if glibc is not None else None
    stated_libstdcxx = parse_libstdcxx(libstdcxx) if libstdcxx is not None else None
    live = cpuinfo is None
    info = cpu.host_cpuinfo() if cpuinfo is None else read_cpuinfo(cpuinfo)
    if interpreter is not None:
        asked = query_interpreter(interpreter)
        implementation, version = asked.implementation, asked.version
        python_source = f"--python {interpreter}"
    elif python is not None:
        implementation, version, python_source = "cp", _x_y(python, "--python"), "--python"
    else:
        name = sys.implementation.name
        implementation = {"cpython": "cp", "pypy": "pp"}.get(name, name)
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        python_source = f"{OWN_INTERPRETER}, {sys.executable}"
    if driver_cuda is not None:  # none: no GPU
        none = driver_cuda.strip().lower() == "none"
        cuda = None if none else _x_y(driver_cuda, "--driver-cuda")
        cuda_source = "--driver-cuda"
    elif not live:
        cuda, cuda_source = (
            None,
            "no GPU assumed for a --cpuinfo machine; state its driver's CUDA with --driver-cuda X.Y",
        )
    else:
        cuda, cuda_source = _driver_here()
    glibc_found, glibc_checked, glibc_source = _glibc_of(live, stated_glibc)
    libstdcxx_found, libstdcxx_source = _libstdcxx_of(live, stated_libstdcxx)
    return Host(
        source="this machine" if live else str(cpuinfo),
        live=live,
        cpu=info,
        target=str(cpu.identify(info).name),
        guard=cpu.guard_features(info),
        python=version,
        implementation=implementation,
        python_source=python_source,
        glibc=glibc_found,
        glibc_checked=glibc_checked,
        glibc_source=glibc_source,
        libstdcxx=libstdcxx_found,
        libstdcxx_source=libstdcxx_source,
        driver_cuda=cuda,
        driver_source=cuda_source,
    )


# --- the TensorFlow an overlay goes on ----------------------------------------------------------------


def tensorflow_of(python: str) -> tuple[InstalledTensorFlow | None, str]:
    """(the TensorFlow ``python`` has, where that was read) or (None, why there is none: not
    installed, not importable, or an answer that is not the probe's). Imports TensorFlow there
    (:func:`tfbuild.measure.stock.read_stock`, any overlay installed off), so it takes a few
    seconds."""
    try:
        if packages_of(python).tensorflow is None:
            return None, f"{python} has no TensorFlow installed"
        probed = read_stock(python, env=os.environ)
    except TfbuildError as exc:
        return None, f"the TensorFlow of {python} does not import or is not known: {exc.why}"
    found = InstalledTensorFlow(
        python=python,
        distribution=str(canonicalize_name(probed.distribution)),
        version=probed.version,
        framework_size=probed.framework_size,
    )
    return found, f"import tensorflow in {python}"


def with_tensorflow(
    host: Host,
    *,
    interpreter: str | None,
    python: str | None,
) -> Host:
    """``host`` with the TensorFlow an overlay would go on: that of the interpreter pick chooses
    for, ``--python``'s (where ``--install`` installs), else tfbuild's own on this machine. A
    ``--python X.Y`` version or a ``--cpuinfo`` machine names no interpreter to ask."""
    if interpreter is None and not host.live:
        why = (
            "the TensorFlow of a --cpuinfo machine is not known; name an interpreter with the "
            "same TensorFlow with --python PATH"
        )
        return replace(host, tensorflow=None, tensorflow_source=why)
    if interpreter is None and python is not None:
        why = (
            f"--python {python} names a version, not an interpreter whose TensorFlow can be asked; "
            "name one with --python PATH"
        )
        return replace(host, tensorflow=None, tensorflow_source=why)
    found, source = tensorflow_of(interpreter or sys.executable)
    return replace(host, tensorflow=found, tensorflow_source=source)
