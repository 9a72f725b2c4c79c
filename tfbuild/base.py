"""`tfbuild base`: a base image made from a distribution mirror, for sites without registry access.

debootstrap installs a minimal Debian or Ubuntu into a temporary directory, which is then imported as
an image (``docker import``), tagged ``tfbuild/base:<suite>`` and reused by that tag. It needs root
(debootstrap creates device nodes and chowns files) and the ``debootstrap`` program.

Planning with base images: :func:`plan_here` plans a request on this host, looking up a local base
image (or the canary's default one) on the engine first, and connecting to it only when needed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfbuild.detect.host import HostFacts
    from tfbuild.engine import DockerEngine

from tfbuild.errors import BuildFailed, EnvironmentProblem, UnsupportedError, UsageError
from tfbuild.recipes import BaseImage, load_base_images
from tfbuild.request import PlanArgs, Planned, choose_recipe, plan_request

#: Where each distribution's packages come from unless --mirror says otherwise.
MIRRORS = {
    "debian": "http://deb.debian.org/debian",
    "ubuntu": "http://archive.ubuntu.com/ubuntu",
}
SUITES = {
    "bullseye": "debian",
    "bookworm": "debian",
    "trixie": "debian",
    "jammy": "ubuntu",
    "noble": "ubuntu",
}
#: What the test pipeline needs inside: a compiler, Python, and objdump for instruction checks.
DEFAULT_PACKAGES = ("binutils", "ca-certificates", "gcc", "libc6-dev", "python3", "python3-venv")


@dataclass(frozen=True, kw_only=True)
class MadeImage:
    """What ``tfbuild base`` left on the engine."""

    tag: str
    image_id: str
    created: bool  # False when the tag already existed and was reused
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "image_id": self.image_id,
            "created": self.created,
            "seconds": round(self.seconds, 1),
        }


def default_tag(suite: str) -> str:
    return f"tfbuild/base:{suite}"


def _check_prerequisites(suite: str) -> None:
    if suite not in SUITES:
        raise UsageError(
            f"unknown --suite {suite!r}",
            fix=f"Use one of {', '.join(sorted(SUITES))}.",
        )
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "tfbuild base needs root",
            why="debootstrap creates device nodes and files owned by other users",
            fix="Run it as root (sudo tfbuild base), or import a base image another way.",
        )
    if shutil.which("debootstrap") is None:
        raise EnvironmentProblem(
            "tfbuild base needs debootstrap",
            why="it is not on PATH",
            fix="Install it: apt-get install debootstrap.",
        )


def _stream(argv: Sequence[str], on_line: Callable[[str], None], what: str) -> None:
    """Run a command, passing its output on line by line; failure keeps the last lines."""
    tail: list[str] = []
    with subprocess.Popen(  # argv built here, no shell
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            tail = [*tail[-9:], line]
            on_line(line)
        code = proc.wait()
    if code != 0:
        raise BuildFailed(
            f"{what} failed (exit code {code})",
            why=" | ".join(tail[-3:]) or "no output",
            fix="Check that the mirror is reachable (--mirror URL) and the suite exists there.",
        )


def make_base_image(
    engine: DockerEngine,
    *,
    suite: str = "bookworm",
    mirror: str | None = None,
    tag: str | None = None,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    force: bool = False,
    on_line: Callable[[str], None] = lambda _line: None,
) -> MadeImage:
    """The base image for ``suite``, made with debootstrap and imported; reused when it exists."""
    started = time.perf_counter()
    name = tag or default_tag(suite)
    if not force and engine.image_exists(name):
        return MadeImage(tag=name, image_id=engine.image_id(name) or "", created=False, seconds=0.0)
    _check_prerequisites(suite)
    source = mirror or MIRRORS[SUITES[suite]]
    workdir = Path(tempfile.mkdtemp(prefix="tfbuild-base-"))
    try:
        rootfs = workdir / "rootfs"
        include = ",".join(sorted(set(packages)))
        _stream(
            [
                "debootstrap",
                "--variant=minbase",
                # Ubuntu packages clang, gperftools and python3-*-dev in universe, not main.
                *(["--components=main,universe"] if SUITES[suite] == "ubuntu" else []),
                f"--include={include}",
                suite,
                str(rootfs),
                source,
            ],
            on_line,
            f"debootstrap {suite} from {source}",
        )
        # Package lists and caches make the image bigger and are stale the day after.
        for leftover in ("var/lib/apt/lists", "var/cache/apt/archives"):
            shutil.rmtree(rootfs / leftover, ignore_errors=True)
        archive = workdir / "rootfs.tar"
        _stream(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."], on_line, "tar"
        )
        repository, _, image_tag = name.rpartition(":")
        image_id = engine.import_image(
            archive,
            repository=repository,
            tag=image_tag,
            changes=[
                'CMD ["/bin/bash"]',
                "ENV LANG=C.UTF-8",
                f"LABEL org.tfbuild.base={suite} org.tfbuild.mirror={source}",
            ],
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return MadeImage(
        tag=name, image_id=image_id, created=True, seconds=time.perf_counter() - started
    )


# --- base images on the engine, for planning -----------------------------------------------------


def local_base_image(engine: DockerEngine, tag: str, known: Mapping[str, BaseImage]) -> BaseImage:
    """A base image made by ``tfbuild base``: its suite's facts from base-images.yaml, its own id."""
    labels = engine.image_labels(tag)
    if labels is None:
        raise UnsupportedError(
            f"unknown base image {tag!r}",
            why=f"it is neither an entry of base-images.yaml ({', '.join(sorted(known))}) nor an "
            "image on this engine",
            fix="Make one with tfbuild base --suite SUITE --tag TAG, or name an entry.",
        )
    suite = labels.get("org.tfbuild.base")
    facts = next((b for b in known.values() if b.suite == suite and b.cuda is None), None)
    if suite is None or facts is None:
        raise UnsupportedError(
            f"{tag} cannot be a base image here",
            why=f"it has no org.tfbuild.base label naming a known suite (it has {suite!r})",
            fix="Use an image made by tfbuild base (bookworm, trixie, jammy or noble).",
        )
    return BaseImage(
        name=tag,
        reference=tag,
        distro=facts.distro,
        suite=facts.suite,
        python=facts.python,
        tcmalloc_package=facts.tcmalloc_package,
        packaged_compilers=facts.packaged_compilers,
        image_id=engine.image_id(tag),
        glibc=facts.glibc,
    )


def canary_base_image(engine: DockerEngine) -> str:
    """The canary's base image: the local one made by tfbuild base, else Debian 12 from the registry."""
    from tfbuild import canary

    local = default_tag(canary.SUITE)
    return local if engine.image_exists(local) else "debian-12"


def plan_here(
    args: PlanArgs, engine: DockerEngine | None = None, *, host: HostFacts | None = None
) -> Planned:
    """Plan ``args`` on this host. A base image that is no base-images.yaml entry (a local image made
    by ``tfbuild base``), and the canary's default one, are looked up on ``engine``; without one,
    the engine is connected only when such a lookup is needed."""
    recipe = choose_recipe(args)
    images = load_base_images(args.recipes_dir)
    wanted = args.base_image
    local = [i for i in (args.sysroot_from,) if i is not None and i not in images]
    if (wanted in images or (wanted is None and not args.canary)) and not local:
        return plan_request(args, base_images=images, recipe=recipe, host=host)
    with contextlib.ExitStack() as stack:
        if engine is None:
            from tfbuild.engine import DockerEngine  # only now: plan and render run without docker

            engine = DockerEngine.connect()
            stack.callback(engine.close)
        if wanted is None and args.canary:
            wanted = canary_base_image(engine)
            args = replace(args, base_image=wanted)
        for tag in (wanted, *local):
            if tag is not None and tag not in images:
                images[tag] = local_base_image(engine, tag, images)
    return plan_request(args, base_images=images, recipe=recipe, host=host)
