"""Does a wheel load, install and import on another system? ``tfbuild smoke --in-image IMAGE``:
shown, not assumed.

The wheel is mounted read-only into a container of ``IMAGE`` (for example an older suite made by
``tfbuild base --suite bullseye``), where ``tfbuild/scripts/loadprobe.py`` runs with the image's ``python3``:

- that system's own dynamic loader is asked to load every shared object in the wheel. A library
  needing a newer glibc or libstdc++ than the image has fails there with the loader's own words
  ("version `GLIBC_2.34' not found"), which the report keeps (``LoadReport.loads``);
- the wheel's tags are checked against the image's interpreter (a cp311 wheel does not install on
  Python 3.9: ``installable``, with both versions in ``not_installable``), and its Requires-Dist
  against the distributions the image has (``requirements``; markers are not evaluated);
- each top-level import name is imported in a fresh ``python3`` with the unpacked wheel first on
  ``sys.path`` (``modules``, ``imports``), or, with ``--wheelhouse DIR`` (mounted read-only) and
  pip in the image, from ``pip install --no-index --find-links DIR --target TMP WHEEL``: the
  dependencies come from that directory, offline.

A wheel passes in an image when its libraries load, it suits the image's Python, and its imports
succeed (``LoadReport.passed``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tfbuild.core import commands, serial
from tfbuild.core.errors import EnvironmentProblem, InputError, SmokeFailed, UsageError

if TYPE_CHECKING:
    from tfbuild.core.engine_protocol import Engine

PROBE = commands.script("loadprobe.py")

RequirementState = Literal["installed", "missing", "unknown", "not evaluated"]


@dataclass(frozen=True, kw_only=True)
class LibraryLoad:
    path: str
    loads: bool
    error: str | None


@dataclass(frozen=True, kw_only=True)
class Requirement:
    """One Requires-Dist of the wheel (those for an extra are left out), as the image has it."""

    requirement: str  # the Requires-Dist line
    name: str  # the distribution it names
    # installed; missing; unknown (the image's Python has no importlib.metadata); not evaluated
    # (it has an environment marker, which the probe does not evaluate)
    state: RequirementState
    version: str | None  # the version the image has (not checked against the specifier)


@dataclass(frozen=True, kw_only=True)
class ModuleImport:
    """``import NAME`` of one top-level name, in a fresh interpreter of the image."""

    name: str
    ok: bool
    file: str | None  # the file the import ran, relative to the installed wheel: its own code
    error: str | None  # the exception's last line (or the signal that killed the interpreter)
    cause: str | None  # the missing dependency the error most likely comes from


@dataclass(frozen=True, kw_only=True)
class Install:
    """How the imports saw the wheel: unpacked, or installed by the image's pip from a wheelhouse."""

    by: Literal["unpacked", "pip"]
    wheelhouse: bool  # a --wheelhouse was given
    pip: str | None  # the image's pip version (asked only with a wheelhouse)
    error: str | None  # pip's words when it could not install from the wheelhouse


@dataclass(frozen=True, kw_only=True)
class LoadReport:
    image: str
    glibc: str | None  # the image's glibc
    loads: bool = field(init=False)  # every library loads
    libraries: tuple[LibraryLoad, ...]
    python: str | None  # the image's python3 version
    distribution: str | None  # the wheel's Name
    tags: tuple[str, ...]  # the wheel's tags (WHEEL's Tag lines)
    installable: bool  # its Python/ABI tags and Requires-Python suit the image's interpreter
    not_installable: str | None  # why not, with both versions
    install: Install
    requirements: tuple[Requirement, ...]
    missing: tuple[str, ...] = field(init=False)  # the requirements the image lacks
    imports: bool | None = field(init=False)  # every top-level name imports; None: none tried
    modules: tuple[ModuleImport, ...]
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        loads = all(library.loads for library in self.libraries)
        imports = all(module.ok for module in self.modules) if self.modules else None
        missing = tuple(r.name for r in self.requirements if r.state == "missing")
        object.__setattr__(self, "loads", loads)
        object.__setattr__(self, "missing", missing)
        object.__setattr__(self, "imports", imports)
        object.__setattr__(self, "passed", loads and self.installable and imports is not False)

    @property
    def no_pip(self) -> bool:
        """A wheelhouse was given, but the image has no pip to install from it."""
        return self.install.wheelhouse and self.install.pip is None

    def problem(self) -> str | None:
        """The first reason the wheel fails here, in the loader's, the tags' or Python's words."""
        failed = next((lib for lib in self.libraries if not lib.loads), None)
        if failed is not None:
            return f"{failed.path}: {failed.error or 'the loader refused it'}"
        if not self.installable:
            return self.not_installable or "its tags do not suit the image's Python"
        module = next((m for m in self.modules if not m.ok), None)
        if module is not None:
            cause = f" (missing dependency: {module.cause})" if module.cause else ""
            return f"import {module.name}: {module.error}{cause}"
        return None

    @classmethod
    def from_probe(cls, image: str, data: Any) -> LoadReport:
        """The report from the probe's JSON object (``tfbuild/scripts/loadprobe.py``), decoded
        strictly (it ran in another system, beside the wheel under test); a ValueError says why
        it is not the probe's."""
        said = serial.from_data(data, ProbeAnswer)
        return cls(
            image=image,
            glibc=said.glibc,
            libraries=said.libraries,
            python=said.python,
            distribution=said.wheel.name,
            tags=said.wheel.tags,
            installable=said.installable,
            not_installable=said.not_installable,
            install=said.install,
            requirements=said.requirements,
            modules=said.imports,
        )


@dataclass(frozen=True, kw_only=True)
class ProbeWheel:
    """The wheel as the probe read it (its METADATA and WHEEL)."""

    name: str | None = None
    version: str | None = None
    tags: tuple[str, ...] = ()
    requires_python: str | None = None
    top_level: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ProbeAnswer:
    """What ``tfbuild/scripts/loadprobe.py`` prints, field for field."""

    glibc: str | None = None
    libraries: tuple[LibraryLoad, ...]
    python: str | None = None
    wheel: ProbeWheel = ProbeWheel()
    installable: bool = True
    not_installable: str | None = None
    install: Install = Install(by="unpacked", wheelhouse=False, pip=None, error=None)
    requirements: tuple[Requirement, ...] = ()
    imports: tuple[ModuleImport, ...] = ()


def loads_in(
    engine: Engine, wheel: Path, image: str, *, wheelhouse: Path | None = None
) -> LoadReport:
    """Load every shared object of ``wheel`` with the dynamic loader of a container of ``image``,
    check its tags and requirements against the image's Python and import it there (its
    dependencies installed from ``wheelhouse`` with the image's pip, when given)."""
    from tfbuild.core.engine import Mount

    if not wheel.is_file() or wheel.suffix != ".whl":
        raise InputError(f"no wheel at {wheel}", fix="Name a .whl file for --in-image.")
    if wheelhouse is not None and not wheelhouse.is_dir():
        raise InputError(
            f"no directory at {wheelhouse}",
            why="--wheelhouse names the directory of the dependencies' wheels",
            fix="Fill one with pip download -d DIR --only-binary=:all: REQUIREMENTS.",
        )
    if not engine.image_exists(image):
        raise EnvironmentProblem(
            f"no image {image} on this engine",
            fix="Make one with tfbuild base --suite SUITE (an older suite shows an older glibc).",
        )
    wheel = wheel.resolve()
    mounts = [
        Mount(str(PROBE), "/tfbuild/loadprobe.py", read_only=True),
        Mount(str(wheel.parent), "/wheel", read_only=True),
    ]
    command = ["python3", "/tfbuild/loadprobe.py", f"/wheel/{wheel.name}"]
    if wheelhouse is not None:
        mounts.append(Mount(str(wheelhouse.resolve()), "/wheelhouse", read_only=True))
        command += ["--wheelhouse", "/wheelhouse"]
    lines: list[str] = []
    result = engine.run(image, command, mounts=mounts, env={"HOME": "/tmp"}, on_line=lines.append)
    found = next((line for line in reversed(lines) if line.startswith("{")), None)
    if result.exit_code != 0 or found is None:
        raise EnvironmentProblem(
            f"cannot check {wheel.name} in {image}",
            why=" ".join(lines[-3:]) or f"the probe exited with {result.exit_code}",
            fix="The image needs python3 (tfbuild base images have it).",
        )
    try:
        return LoadReport.from_probe(image, json.loads(found))
    except ValueError as exc:
        raise EnvironmentProblem(
            f"cannot check {wheel.name} in {image}",
            why=f"loadprobe.py's answer is not what tfbuild asked for: {exc}",
            fix="Report it with the output of 'tfbuild --debug smoke --in-image'.",
        ) from None


def check_in_image_request(wheel: str | None, images: list[str], wheelhouse: Path | None) -> None:
    """``smoke``'s options for ``--in-image``, checked before any work: ``--wheelhouse`` only with
    ``--in-image``, and ``--in-image`` with a .whl file."""
    if wheelhouse is not None and not images:
        raise UsageError(
            "--wheelhouse works only with --in-image",
            why="it is the dependencies' wheels to install in that image",
            fix="Add --in-image IMAGE, or drop --wheelhouse.",
        )
    if images and (wheel is None or not wheel.endswith(".whl")):
        raise UsageError("--in-image needs a .whl file", fix="Name the wheel file to check.")


def loads_in_images(
    wheel: Path, images: list[str], *, wheelhouse: Path | None = None
) -> list[LoadReport]:
    """:func:`loads_in` for each image, on this machine's Docker engine."""
    from tfbuild.core.engine import DockerEngine

    with contextlib.closing(DockerEngine.connect()) as engine:
        return [loads_in(engine, wheel, image, wheelhouse=wheelhouse) for image in images]


def loads_failure(wheel: Path, reports: list[LoadReport]) -> SmokeFailed | None:
    """The error of ``smoke --in-image`` when the wheel fails in an image: one verb per image that
    failed, and the fix of the first failure; None when it passes in every image."""
    failed = [r for r in reports if not r.passed]
    if not failed:
        return None
    # One verb per image, in the order of the checks: load, then install, then import.
    verbs = [
        "does not load"
        if not r.loads
        else "does not install"
        if not r.installable
        else "does not import"
        for r in failed
    ]
    said = ", ".join(f"{verb} on {r.image}" for verb, r in zip(verbs, failed, strict=True))
    first = failed[0]
    if not first.loads:
        fix = (
            "Build it for that system: tfbuild wheel --sysroot-from IMAGE (or the recipe's "
            "portable route, the default); tfbuild pick refuses this wheel there."
        )
    elif not first.installable:
        fix = (
            "Build the wheel for that system's Python (tfbuild wheel --python X.Y), or check it "
            "in an image with the Python it was built for."
        )
    elif first.install.error:
        fix = (
            "Put the wheels pip could not find into the wheelhouse (pip download -d DIR "
            "REQUIREMENT) and rerun."
        )
    elif first.missing and (first.no_pip or not first.install.wheelhouse):
        fix = (
            "Give its dependencies with --wheelhouse DIR (pip download -d DIR ...), in an image "
            "with pip."
        )
    else:
        fix = "Read the import error above (--json has every module's)."
    return SmokeFailed(f"{wheel.name} {said}", why=first.problem() or "it failed there", fix=fix)
