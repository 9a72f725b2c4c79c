"""Where ``tfbuild overlay`` compiles by default: the overlay's toolchain image.

The recipe's clang, at its major version, from a suite that packages it (Debian trixie for clang 18:
1:18.1.8, the recipe's 18.1.8), compiling against a sysroot of an older suite's headers, C library,
libgcc and libstdc++ (:data:`SYSROOT_SUITE`), so that the overlay's two libraries need no newer
glibc or libstdc++ than that suite has, whatever the host or the compiler's own suite has. It is
made as the wheel build's toolchain image makes its sysroot stage (``templates/Dockerfile.j2``),
from the base images ``tfbuild base`` makes (no registry), rendered from
``templates/overlay.Dockerfile.j2`` and built or reused by the hash of that file
(:meth:`DockerEngine.ensure_image`): the base images' ids and every package it names are in it.

Each compiler command runs in a one-shot container of that image (:meth:`InImage.toolchain`): no
network, as the invoking uid:gid (what it writes is the user's), the stock TensorFlow package
read-only and the scratch directory read-write, each at its own path, so the command is the one the
host would run and the bytes do not depend on where it ran.

What the receipt records (:class:`OverlayImage`): the image's tag and id, the suites, the sysroot's
glibc, and the version of every package whose files the compile and link read (the compiler, its
headers and LLVM, binutils; the sysroot's libc6-dev, libstdc++ and libgcc). ``tfbuild verify``
reuses that image when the engine still has it (same id), and otherwise builds one with each of
those packages pinned to the receipt's version.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tfbuild.core.compilers import CompilerExecutable
from tfbuild.core.engine import DockerEngine, Mount
from tfbuild.core.engine_objects import input_hash
from tfbuild.core.engine_protocol import Engine
from tfbuild.core.errors import (
    BuildFailed,
    EnvironmentProblem,
    InputError,
    Unreachable,
    UnsupportedError,
)
from tfbuild.core.files import utc_stamp
from tfbuild.core.image_failure import DownloadFailed, ImageUnavailable
from tfbuild.overlay.compile import CompilerDrivers, Ran
from tfbuild.plan.render import SYSROOT_BUILDER_PACKAGES, template_environment
from tfbuild.plan.toolchain import IMAGE_SYSROOT
from tfbuild.recipes.images import SUITES, default_tag, load_base_images, suite_facts
from tfbuild.wheel.overlay_receipt import IMAGE_REPOSITORY, OverlayImage
from tfbuild.wheel.receipt import is_debian_package, is_debian_version

if TYPE_CHECKING:
    from tfbuild.recipes.images import BaseImage

Say = Callable[[str], None]

TEMPLATE = "overlay.Dockerfile.j2"
#: The suite whose C library and libstdc++ the overlay compiles against: Debian 11, glibc 2.31 and
#: GCC 10's libstdc++ (GLIBCXX_3.4.28), the oldest `tfbuild base` makes (jammy has 2.35, bookworm
#: 2.36). Older than every host tfbuild targets but RHEL 8 and Ubuntu 18.04/20.04; the stock wheel's
#: own 2.27 comes from TensorFlow's hermetic Ubuntu 18.04 sysroot, which no base image here has.
SYSROOT_SUITE = "bullseye"
#: The multiarch directory of the sysroot's libraries: an overlay is for x86-64 only.
MULTIARCH = "x86_64-linux-gnu"
#: What every command gets after the driver: the sysroot, and its GCC (libstdc++, crtbegin).
SYSROOT_FLAGS = (f"--sysroot={IMAGE_SYSROOT}", f"--gcc-toolchain={IMAGE_SYSROOT}/usr")
#: In the image: the compiler's --version and each recorded package's version (the template).
FACTS = "/usr/share/tfbuild/overlay-toolchain.tsv"
#: The sysroot's packages whose files the compile and link read, by dpkg-query pattern.
SYSROOT_RECORDED = (
    "libc6",
    "libc6-dev",
    "linux-libc-dev",
    "libgcc-s1",
    "libstdc++6",
    "libgcc-*-dev",
    "libstdc++-*-dev",
)
#: The lines of an image build that are shown as it runs (the rest goes to the log).
_STEP = re.compile(r"Step (\d+/\d+) : (.*)")
#: apt's words for a pinned version its sources do not offer: (version, package).
_NO_VERSION = re.compile(r"Version '([^']+)' for '([^']+)' was not found")
_COMPILER = re.compile(r"clang-([0-9]+)(?:\.[0-9]+)*")


def recorded(compiler: str) -> tuple[str, ...]:
    """The toolchain's packages whose files the compile and link read: the compiler (``clang-18``),
    its headers and LLVM, and binutils (the linker)."""
    major = compiler.removeprefix("clang-")
    return (
        compiler,
        f"libclang-common-{major}-dev",
        f"libclang-cpp{major}",
        f"libllvm{major}",
        "binutils",
        "binutils-x86-64-linux-gnu",  # the linker itself (Debian's name for the x86-64 one)
        "libbinutils",
    )


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    """What the overlay's toolchain image is rendered from."""

    compiler: str  # the package: "clang-18"
    suite: str  # the suite that packages it: "trixie"
    sysroot_suite: str
    glibc: str  # the sysroot suite's glibc: "2.31"
    base_id: str = ""  # its tfbuild base image's id (the engine has it)
    sysroot_base_id: str = ""
    #: A rebuild from a receipt: each recorded package at its version (None: as the suite has it).
    pins: Mapping[str, str] | None = None
    sysroot_pins: Mapping[str, str] | None = None

    @property
    def cxx(self) -> str:
        return f"clang++-{self.compiler.removeprefix('clang-')}"


def choose(recipe_compiler: str, known: Mapping[str, BaseImage] | None = None) -> ImageSpec:
    """The suites of the image for ``recipe_compiler`` (``clang-18.1.8``): the first suite
    ``tfbuild base`` makes that packages that clang's major version, and :data:`SYSROOT_SUITE`.
    The base image ids are left empty (the engine has them)."""
    found = _COMPILER.fullmatch(recipe_compiler)
    if found is None:
        raise UnsupportedError(
            f"the overlay's toolchain image has no {recipe_compiler}",
            why="it is made for the clang recipes name",
            fix="Build on the host with --compiler CXX.",
        )
    package = f"clang-{found.group(1)}"
    known = load_base_images() if known is None else known
    suite = next(
        (s for s in SUITES if (f := suite_facts(s, known)) and package in f.packaged_compilers),
        None,
    )
    sysroot = suite_facts(SYSROOT_SUITE, known)
    if suite is None or sysroot is None or sysroot.glibc is None:
        raise UnsupportedError(
            f"no suite tfbuild base makes packages {package} (the recipe's {recipe_compiler})",
            why="recipes/base-images.yaml lists the compilers each suite packages",
            fix="Build on the host with --compiler CXX.",
        )
    return ImageSpec(
        compiler=package, suite=suite, sysroot_suite=SYSROOT_SUITE, glibc=sysroot.glibc
    )


def _specs(pins: Mapping[str, str] | None, unpinned: Sequence[str]) -> list[str]:
    if pins is None:
        return sorted(unpinned)
    for name, version in pins.items():  # from a decoded receipt; checked again before apt
        if not (is_debian_package(name) and is_debian_version(version)):
            raise ValueError(f"{name}={version}")
    return [f"{name}={version}" for name, version in sorted(pins.items())]


def render_dockerfile(spec: ImageSpec) -> str:
    """The image's Dockerfile: the same text for the same spec (it is hashed for the tag)."""
    return str(
        template_environment()
        .get_template(TEMPLATE)
        .render(
            compiler_package=spec.compiler,
            cxx=spec.cxx,
            suite=spec.suite,
            base=default_tag(spec.suite),
            base_id=spec.base_id,
            sysroot_suite=spec.sysroot_suite,
            sysroot_base=default_tag(spec.sysroot_suite),
            sysroot_base_id=spec.sysroot_base_id,
            glibc=spec.glibc,
            sysroot=IMAGE_SYSROOT,
            multiarch=MULTIARCH,
            pinned=spec.pins is not None,
            packages=_specs(spec.pins, (spec.compiler, "binutils")),
            sysroot_packages=_specs(spec.sysroot_pins, SYSROOT_BUILDER_PACKAGES["image"]),
            recorded=recorded(spec.compiler),
            sysroot_recorded=SYSROOT_RECORDED,
            facts=FACTS,
        )
    )


# --- the engine -----------------------------------------------------------------------------------


def log_path() -> Path:
    """Where an image build keeps its output: ``<cache>/logs/overlay-image-TIME-PID.log``."""
    from tfbuild.core.cache import LOGS, cache_root

    return cache_root() / LOGS / f"overlay-image-{utc_stamp()}-{os.getpid()}.log"


class _BuildOutput:
    """The image build's lines: every one into the log (opened at the first), each step said."""

    def __init__(self, path: Path, say: Say) -> None:
        self.path = path
        self._say = say
        self._file: TextIO | None = None

    def line(self, text: str) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8", errors="replace")
        self._file.write(text + "\n")
        self._file.flush()
        step = _STEP.match(text)
        if step:
            words = " ".join(step.group(2).split())
            self._say(
                f"image step {step.group(1)}: {words[:100]}{'...' if len(words) > 100 else ''}"
            )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def connect(fallback: str) -> DockerEngine:
    """The engine; where there is none, the error says how to build on the host instead."""
    try:
        return DockerEngine.connect()
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(
            f"{exc.what} to compile the overlay in its toolchain image",
            why=exc.why,
            fix=f"{exc.fix} Or build on this host: {fallback}.",
        ) from exc


def with_base_images(engine: Engine, spec: ImageSpec, fallback: str) -> ImageSpec:
    """``spec`` with the ids of its two base images; both must be on the engine."""
    suites = dict.fromkeys((spec.suite, spec.sysroot_suite))
    ids = {suite: engine.image_id(default_tag(suite)) for suite in suites}
    missing = [suite for suite, image in ids.items() if image is None]
    if missing:
        tags = " and ".join(default_tag(s) for s in missing)
        make = " && ".join(f"sudo tfbuild base --suite {s}" for s in missing)
        raise EnvironmentProblem(
            f"the base image{'s' if len(missing) > 1 else ''} {tags} "
            f"{'are' if len(missing) > 1 else 'is'} missing",
            why=f"the overlay's toolchain image is made from them: {spec.compiler} from Debian "
            f"{spec.suite}, the C library of Debian {spec.sysroot_suite} (tfbuild pulls from no "
            "registry)",
            fix=f"Make {'them' if len(missing) > 1 else 'it'}: {make}; or build on this host: "
            f"{fallback}.",
        )
    return dataclasses.replace(
        spec, base_id=ids[spec.suite] or "", sysroot_base_id=ids[spec.sysroot_suite] or ""
    )


def ensure_overlay_image(
    engine: Engine, spec: ImageSpec, *, say: Say, proxies: Mapping[str, str] | None = None
) -> str:
    """The image's tag, built now unless the engine has it (by the hash of its Dockerfile)."""
    output = _BuildOutput(log_path(), say)
    with tempfile.TemporaryDirectory(prefix="tfbuild-overlay-image-") as context:
        (Path(context) / "Dockerfile").write_text(render_dockerfile(spec))
        tag = f"{IMAGE_REPOSITORY}:{input_hash(Path(context))[:16]}"
        if not engine.image_exists(tag):
            say(
                f"building the toolchain image {tag} ({spec.compiler} from Debian {spec.suite}, "
                f"the C library of Debian {spec.sysroot_suite}): once, a minute or two; its "
                f"output in {output.path}"
            )
        try:
            tag, built = engine.ensure_image(
                Path(context),
                repository=IMAGE_REPOSITORY,
                on_line=output.line,
                build_args=dict(proxies or {}),
            )
        except ImageUnavailable as exc:
            raise EnvironmentProblem(
                exc.what, why=exc.why, fix="Make it with sudo tfbuild base --suite SUITE."
            ) from exc
        except DownloadFailed as exc:
            raise Unreachable(
                exc.headline(exc.failure, "the overlay's toolchain image"),
                why=exc.why,
                fix=f"{exc.fix} The whole output: {output.path}.",
            ) from exc
        except BuildFailed as exc:
            gone = _gone(output.path) if spec.pins is not None else None
            if gone is not None:
                raise EnvironmentProblem(
                    f"{gone[1]} {gone[0]} can no longer be had",
                    why="the rebuild installs each package at the version the receipt records, "
                    "and the package sources no longer offer this one",
                    fix="Verify where that version is still offered, or where the receipt's "
                    "toolchain image still is (docker save TAG | docker load).",
                ) from exc
            raise BuildFailed(
                exc.what, why=exc.why, fix=f"The whole output: {output.path}", details=exc.details
            ) from exc
        finally:
            output.close()
    say(f"toolchain image {tag}: {'built' if built else 'reused (unchanged)'}")
    return tag


def _gone(log: Path) -> tuple[str, str] | None:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    found = _NO_VERSION.search(text)
    return (found.group(1), found.group(2)) if found else None


def read_facts(engine: Engine, tag: str, spec: ImageSpec) -> tuple[str, OverlayImage]:
    """The first line of the compiler's --version, and what the receipt records of the image: its
    id, and the recorded packages as the image build wrote them down."""
    lines: list[str] = []
    result = engine.run(tag, ["cat", FACTS], on_line=lines.append, network_mode="none")
    compiler = ""
    stages: dict[str, dict[str, str]] = {"toolchain": {}, "sysroot": {}}
    for line in lines:
        kind, _, rest = line.partition("\t")
        if kind == "compiler":
            compiler = rest.strip()
        elif kind in stages:
            name, _, version = rest.partition("\t")
            if is_debian_package(name) and is_debian_version(version):
                stages[kind][name] = version
    if result.exit_code != 0 or not compiler or not stages["toolchain"]:
        raise BuildFailed(
            f"cannot read what the toolchain image {tag} holds",
            why=f"cat {FACTS} exited with {result.exit_code}: {' '.join(lines[-3:])}",
            fix=f"Remove the image (docker rmi {tag}) and rerun: tfbuild builds it again.",
        )
    return compiler, OverlayImage(
        tag=tag,
        id=engine.image_id(tag) or "",
        compiler=spec.compiler,
        suite=spec.suite,
        sysroot_suite=spec.sysroot_suite,
        glibc=spec.glibc,
        packages=dict(sorted(stages["toolchain"].items())),
        sysroot_packages=dict(sorted(stages["sysroot"].items())),
    )


@dataclass(frozen=True, kw_only=True)
class InImage:
    """The image, ready: its compiler, what the receipt says of it, and its toolchain."""

    compiler: CompilerExecutable
    image: OverlayImage
    engine: Engine
    spec: ImageSpec

    def toolchain(self, read_only: Sequence[str]) -> CompilerDrivers:
        """Its commands each in a one-shot container that sees ``read_only`` (the stock TensorFlow)."""

        def run(argv: Sequence[str], cwd: Path) -> Ran:
            lines: list[str] = []
            mounts = [
                *(Mount(source=path, target=path, read_only=True) for path in read_only),
                Mount(source=str(cwd), target=str(cwd)),
            ]
            result = self.engine.run(
                self.image.tag,
                list(argv),
                mounts=mounts,
                user=f"{os.getuid()}:{os.getgid()}",
                workdir=str(cwd),
                on_line=lines.append,
                network_mode="none",
            )
            if result.oom_killed:
                lines.append("error: the compiler ran out of memory (the container was OOM-killed)")
            return Ran(code=result.exit_code, output="\n".join(lines))

        return CompilerDrivers(
            cxx=self.spec.cxx,
            cc=self.spec.compiler,  # the package's C driver: clang-18
            flags=SYSROOT_FLAGS,
            run=run,
            where=f"in {self.image.tag}",
        )


@contextlib.contextmanager
def image_toolchain(
    recipe_compiler: str,
    *,
    fallback: str,
    say: Say,
    pinned: OverlayImage | None = None,
    proxies: Mapping[str, str] | None = None,
    engine: Engine | None = None,
) -> Iterator[InImage]:
    """The toolchain of the overlay's image, for the recipe's compiler, or, from a receipt
    (``pinned``), that image again: the same one while the engine has it, else one with the same
    packages. ``fallback`` says how to build on the host instead (when there is no engine).
    ``engine``: the one to use (left open), else this machine's, connected now."""
    if pinned is not None and not {pinned.suite, pinned.sysroot_suite} <= set(SUITES):
        raise InputError(
            f"the receipt's toolchain image was made from suites tfbuild base does not make "
            f"({pinned.suite}, {pinned.sysroot_suite})",
            fix=f"Rebuild the overlay with tfbuild overlay; or on this host: {fallback}.",
        )
    spec = (
        choose(recipe_compiler)
        if pinned is None
        else ImageSpec(
            compiler=pinned.compiler,
            suite=pinned.suite,
            sysroot_suite=pinned.sysroot_suite,
            glibc=pinned.glibc,
            pins=pinned.packages,
            sysroot_pins=pinned.sysroot_packages,
        )
    )
    with contextlib.ExitStack() as stack:
        if engine is None:
            engine = stack.enter_context(contextlib.closing(connect(fallback)))
        if pinned is not None and engine.image_id(pinned.tag) == pinned.id:
            tag = pinned.tag
            say(f"toolchain image {tag}: the receipt's, reused")
        else:
            if pinned is not None:
                say(
                    f"the receipt's toolchain image {pinned.tag} ({pinned.id[:19]}) is not on this engine: building "
                    "one with the receipt's package versions"
                )
            tag = ensure_overlay_image(
                engine, with_base_images(engine, spec, fallback), say=say, proxies=proxies
            )
        version, image = read_facts(engine, tag, spec)
        yield InImage(
            engine=engine,
            spec=spec,
            compiler=CompilerExecutable(
                path=spec.cxx,
                family="clang",
                version=version,
                why=f"the recipe's {recipe_compiler}, in the overlay's toolchain image",
            ),
            image=image,
        )
