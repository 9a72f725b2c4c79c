"""`tfbuild base`: a base image made from a distribution mirror, for sites without registry access.

debootstrap installs a minimal Debian or Ubuntu into a temporary directory, which is then imported as
an image (``docker import``), tagged ``tfbuild/base:<suite>`` and reused by that tag. It needs root
(debootstrap creates device nodes and chowns files) and the ``debootstrap`` program.

Every suite of :data:`SUITES` is made on any host that has debootstrap, whatever that host's
distribution and release (:func:`debootstrap_for`, checked before debootstrap runs):

- The script: debootstrap's ``scripts/<suite>`` files are links to one script per distribution
  (``sid`` for Debian, ``gutsy`` for every Ubuntu since 7.10), and a debootstrap older than a suite
  lacks its link (Debian 12's has no ``noble``). tfbuild then names the script itself, as
  debootstrap's fourth argument (``debootstrap SUITE TARGET MIRROR SCRIPT``, see debootstrap(8)).
- The keyring: the distribution's archive keyring from the host's package where it is installed
  (``debian-archive-keyring``, ``ubuntu-keyring``), else the one tfbuild brings
  (``recipes/keyrings/``: Debian 12 has no ``ubuntu-keyring``, only bookworm-backports does). It is
  always passed with ``--keyring``, so debootstrap never runs without checking the Release file.

A debootstrap that fails is read back (its output and its ``debootstrap.log``): a mirror that cannot
be reached, or has no such suite, is said in one line as the mirror's fault (exit 5).

What the user sees meanwhile: a line per stage of debootstrap (the release checked, dependencies
resolved, packages downloaded, unpacked, configured: each count again at most every
:data:`PROGRESS_EVERY_S` seconds, :class:`DebootstrapProgress`), then the tar and the import. The
tools' own lines (several hundred: one per package and stage) go to a log file, named at the start
(``<cache>/logs/base-<suite>-<time>.log``), and are shown only with ``verbose``, or their last lines
when debootstrap fails for a reason tfbuild cannot name.

The suites, their default tags and the label that names an image's suite are in
:mod:`tfbuild.recipes.images`; :mod:`tfbuild.plan.here` reads such an image back for a plan.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tfbuild.core.engine_protocol import Engine

from tfbuild.build.progress import ticking
from tfbuild.core import commands
from tfbuild.core.errors import (
    BuildFailed,
    EnvironmentProblem,
    TfbuildError,
    UsageError,
)
from tfbuild.core.files import utc_stamp
from tfbuild.core.resources import data_dir
from tfbuild.core.rounded import Round1, round_fields
from tfbuild.recipes.images import BASE_LABEL, SUITES, default_tag

#: Where each distribution's packages come from unless --mirror says otherwise.
MIRRORS = {
    "debian": "http://deb.debian.org/debian",
    "ubuntu": "http://archive.ubuntu.com/ubuntu",
}
#: Debian's security archive (a plain Debian mirror does not carry it).
DEBIAN_SECURITY = "http://deb.debian.org/debian-security"
#: The debootstrap script every suite of a distribution runs: its scripts/<suite> are links to it.
FAMILY_SCRIPTS = {"debian": "sid", "ubuntu": "gutsy"}
#: Each distribution's archive keyring: the host package that installs it, and where.
HOST_KEYRINGS = {
    "debian": ("debian-archive-keyring", Path("/usr/share/keyrings/debian-archive-keyring.gpg")),
    "ubuntu": ("ubuntu-keyring", Path("/usr/share/keyrings/ubuntu-archive-keyring.gpg")),
}
#: The keyrings tfbuild brings, in recipes/keyrings/ (README.md there: where each came from).
SHIPPED_KEYRINGS = {"ubuntu": "ubuntu-archive-keyring.gpg"}
#: What the test pipeline needs inside: a compiler, Python, and objdump for instruction checks.
DEFAULT_PACKAGES = ("binutils", "ca-certificates", "gcc", "libc6-dev", "python3", "python3-venv")


@dataclass(frozen=True, kw_only=True)
class MadeImage:
    """What ``tfbuild base`` left on the engine."""

    tag: str
    image_id: str
    created: bool  # False when the tag already existed and was reused
    seconds: float  # written to a tenth of a second

    def __post_init__(self) -> None:
        round_fields(self, "seconds", kind=Round1)


@dataclass(frozen=True, kw_only=True)
class Debootstrap:
    """How debootstrap makes one suite on this host: the script and keyring it needs, found."""

    suite: str
    distro: str
    mirror: str
    #: None: the host's own scripts/<suite>; else the distribution's script, named for debootstrap.
    script: str | None
    keyring: Path
    #: What was found, said before debootstrap runs.
    notes: tuple[str, ...] = ()

    def sources_list(self) -> str:
        """The image's /etc/apt/sources.list: the suite with its updates and security pockets, as
        the registry's images of the suite have them (debootstrap writes the suite alone, and
        Ubuntu puts its later packages, such as jammy's clang-15, in the updates pocket only)."""
        components = "main universe" if self.distro == "ubuntu" else "main"
        security = self.mirror if self.distro == "ubuntu" else DEBIAN_SECURITY
        return "".join(
            f"deb {url} {suite} {components}\n"
            for url, suite in (
                (self.mirror, self.suite),
                (self.mirror, f"{self.suite}-updates"),
                (security, f"{self.suite}-security"),
            )
        )

    def argv(self, rootfs: Path, packages: Sequence[str]) -> list[str]:
        return [
            "debootstrap",
            "--variant=minbase",
            # Ubuntu packages clang, gperftools and python3-*-dev in universe, not main.
            *(["--components=main,universe"] if self.distro == "ubuntu" else []),
            f"--keyring={self.keyring}",
            f"--include={','.join(sorted(set(packages)))}",
            self.suite,
            str(rootfs),
            self.mirror,
            *([self.script] if self.script else []),
        ]


def debootstrap_scripts(env: Mapping[str, str]) -> Path:
    """Where this host's debootstrap keeps its suite scripts (it honours DEBOOTSTRAP_DIR too)."""
    return Path(env.get("DEBOOTSTRAP_DIR") or "/usr/share/debootstrap") / "scripts"


def shipped_keyrings() -> Path:
    return data_dir("recipes") / "keyrings"


def debootstrap_for(
    suite: str,
    *,
    mirror: str | None = None,
    scripts: Path,
    shipped: Path,
    root: Path = Path("/"),
) -> Debootstrap:
    """How debootstrap makes ``suite`` (one of SUITES: :func:`_check_prerequisites`) here, from its
    ``scripts`` directory, the host's keyrings (below ``root``) and tfbuild's ``shipped`` ones;
    refused with the reason when it cannot."""
    distro = SUITES[suite]
    name = distro.capitalize()
    notes: list[str] = []
    script: str | None = None
    if not (scripts / suite).exists():
        family = FAMILY_SCRIPTS[distro]
        if not (scripts / family).exists():
            raise EnvironmentProblem(
                f"this debootstrap cannot make {suite}",
                why=f"{scripts} has neither {suite} nor {family}, the script every {name} suite "
                "runs",
                fix="Install a current debootstrap (apt-get install debootstrap).",
            )
        script = family
        notes.append(
            f"script: {family} (this debootstrap has no {suite} script; every {name} suite runs "
            f"{family}, its scripts/{suite} is a link to it in newer debootstraps)"
        )
    package, installed = HOST_KEYRINGS[distro]
    host_keyring = root / installed.relative_to("/")
    if host_keyring.is_file():
        keyring = host_keyring
        notes.append(f"keyring: {keyring} (from the host's {package})")
    elif distro in SHIPPED_KEYRINGS and (shipped / SHIPPED_KEYRINGS[distro]).is_file():
        keyring = shipped / SHIPPED_KEYRINGS[distro]
        notes.append(f"keyring: {keyring} (tfbuild's copy: the host has no {package})")
    else:
        raise EnvironmentProblem(
            f"tfbuild base --suite {suite} needs {name}'s archive keyring",
            why=f"{installed} is missing, and without it the {suite} Release file cannot be checked",
            fix=f"Install it: apt-get install {package}.",
        )
    return Debootstrap(
        suite=suite,
        distro=distro,
        mirror=mirror or MIRRORS[distro],
        script=script,
        keyring=keyring,
        notes=tuple(notes),
    )


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


# --- why debootstrap failed ----------------------------------------------------------------------

#: debootstrap's words for a file it could not get from the mirror (its functions: NOGETREL,
#: NOGETRELSIG, COULDNTDL, COULDNTDLPKGS).
_NOT_DOWNLOADED = re.compile(
    r"E: (Failed getting release (signature )?file|Couldn't download( packages:)?) (?P<what>.*)"
)
_BAD_SIGNATURE = re.compile(r"E: (Release signed by unknown key|Invalid Release signature).*")
_WRONG_SUITE = re.compile(r"E: Asked to install suite.*")
_MISSING_DEBS = re.compile(r"E: Couldn't find these debs: (?P<debs>.*)")
#: wget's words in debootstrap.log for why a download failed.
_WGET_HTTP = re.compile(r"ERROR (?P<code>\d{3}): (?P<reason>[^.]*)")
_WGET_RESOLVE = re.compile(r"unable to resolve host address")
_WGET_FAILED = re.compile(r"failed: (?P<reason>[^.]*)")


def _wget_reason(log: Sequence[str], host: str) -> tuple[str, bool]:
    """Why wget could not download, from debootstrap.log: (reason, whether the mirror answered)."""
    for line in reversed(log):
        http = _WGET_HTTP.search(line)
        if http:
            return f"it answered HTTP {http['code']} {http['reason'].strip()}", True
        if _WGET_RESOLVE.search(line):
            return f"{host} does not resolve", False
        failed = _WGET_FAILED.search(line)
        if failed:
            return f"{host}: {failed['reason'].strip().lower()}", False
    return "", False


def debootstrap_failure(
    boot: Debootstrap,
    code: int,
    output: Sequence[str],
    log: Sequence[str],
    *,
    kept: Path | None = None,
) -> TfbuildError:
    """The one-line error for debootstrap exiting with ``code``, from its ``output`` and the
    target's ``debootstrap.log``: the mirror's fault (exit 5) where it is, else a failed build
    (with the last lines of ``output`` shown above it, and ``kept``, the file of all of them)."""
    name = boot.distro.capitalize()
    an = "an" if name[0] in "AEIOU" else "a"
    host = urllib.parse.urlsplit(boot.mirror).hostname or boot.mirror
    said = next((m for line in reversed(output) if (m := _NOT_DOWNLOADED.search(line))), None)
    if said is not None:
        reason, answered = _wget_reason(log, host)
        if answered:
            return EnvironmentProblem(
                f"the {name} mirror {boot.mirror} has no {boot.suite}",
                why=f"{reason} for {said['what'].strip()}",
                fix=f"Pass --mirror URL of {an} {name} archive that has {boot.suite} "
                f"(the default is {MIRRORS[boot.distro]}).",
            )
        return EnvironmentProblem(
            f"cannot reach the {name} mirror {boot.mirror}",
            why=reason or f"debootstrap could not get {said['what'].strip()}",
            fix=f"Pass --mirror URL of {an} {name} mirror this machine reaches, or set http_proxy "
            "(debootstrap's wget uses it).",
        )
    signature = next((line for line in output if _BAD_SIGNATURE.search(line)), None)
    if signature is not None:
        package = HOST_KEYRINGS[boot.distro][0]
        return EnvironmentProblem(
            f"the {boot.suite} Release file from {boot.mirror} does not verify against "
            f"{boot.keyring}",
            why=signature.strip().removeprefix("E: "),
            fix=f"Install a current {package}, and check that the mirror is {an} {name} archive.",
        )
    wrong = next((line for line in output if _WRONG_SUITE.search(line)), None)
    if wrong is not None:
        return EnvironmentProblem(
            f"the {name} mirror {boot.mirror} serves another suite under {boot.suite}",
            why=wrong.strip().removeprefix("E: "),
            fix=f"Pass --mirror URL of {an} {name} archive that has {boot.suite}.",
        )
    missing = next((m for line in output if (m := _MISSING_DEBS.search(line))), None)
    lines = [line for line in output if line.strip()]
    where = f"its last lines above, all of them in {kept}" if kept else "its last lines above"
    return BuildFailed(
        f"debootstrap {boot.suite} from {boot.mirror} failed (exit code {code})",
        why=f"the mirror has no {missing['debs'].strip()}"
        if missing
        else " | ".join(lines[-3:]) or "no output",
        fix=f"Read debootstrap's output ({where}); check --mirror URL and that the suite exists "
        "there.",
        details=tuple(lines[-FAILURE_TAIL:]),
    )


# --- what debootstrap is doing, in a few lines ------------------------------------------------------

#: Seconds between two counts of the same stage (downloading, unpacking, configuring).
PROGRESS_EVERY_S = 10.0
#: The lines of a failed debootstrap's output shown above its error.
FAILURE_TAIL = 20
#: debootstrap's stages, by the start of the line that opens each: what the user is told.
_STAGES = (
    ("I: Retrieving InRelease", "checking the release file"),
    ("I: Retrieving Release", "checking the release file"),
    ("I: Valid Release signature", "the release file's signature is valid"),
    ("I: Retrieving Packages", "reading the package lists"),
    ("I: Resolving dependencies", "resolving the packages' dependencies"),
    ("I: Installing core packages", "installing the core packages"),
    ("I: Unpacking required packages", "unpacking the required packages"),
    ("I: Configuring required packages", "configuring the required packages"),
    ("I: Unpacking the base system", "unpacking the base system"),
    ("I: Configuring the base system", "configuring the base system"),
    ("I: Base system installed successfully", "the base system is installed"),
)
#: debootstrap's per-package lines: "I: Retrieving adduser 3.134", "I: Unpacking bash...".
_PACKAGE_STEP = re.compile(r"I: (Retrieving|Extracting|Unpacking|Configuring) \S+(?:\.\.\.| \S+)$")
#: The stages per-package lines open themselves (the others open with a line of their own).
_OPENED_BY = {
    "Retrieving": "downloading packages",
    "Extracting": "extracting the essential packages",
}


class DebootstrapProgress:
    """debootstrap's output read as it comes: each stage said once, then where it is at most every
    :data:`PROGRESS_EVERY_S` seconds (its count of packages as lines come, or, from :meth:`tick`,
    how long a stage that prints nothing has taken); its warnings and errors as they are. The
    steps after it that print nothing (tar, docker import) are stages too (:meth:`stage`)."""

    def __init__(
        self, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._say = say
        self._clock = clock
        self._stage = ""
        self._count = 0
        self._last = clock()  # when something was last said
        self._opened = clock()  # when the stage opened
        self._lock = threading.Lock()  # the ticker says things too

    def line(self, text: str) -> None:
        text = text.rstrip()
        with self._lock:
            for start, said in _STAGES:
                if text.startswith(start):
                    self.stage(said)
                    return
            step = _PACKAGE_STEP.match(text)
            if step is not None:
                opened = _OPENED_BY.get(step.group(1))
                if opened is not None and opened != self._stage:
                    self.stage(opened)
                self._count += 1
                if self._clock() - self._last >= PROGRESS_EVERY_S:
                    self._tell(f"{self._stage}: {self._count} so far")
            elif text.startswith(("E:", "W:")):
                self._tell(f"debootstrap says: {text}")

    def tick(self) -> None:
        """Say where debootstrap is when nothing was said for :data:`PROGRESS_EVERY_S` seconds."""
        with self._lock:
            if not self._stage or self._clock() - self._last < PROGRESS_EVERY_S:
                return
            seconds = self._clock() - self._opened
            if self._count:
                self._tell(f"{self._stage}: {self._count} so far, {seconds:.0f} s")
            else:
                self._tell(f"{self._stage}: {seconds:.0f} s so far")

    def stage(self, stage: str) -> None:
        """``stage`` opens: said now, then by :meth:`tick` while nothing else is said."""
        if stage == self._stage:
            return  # "Resolving dependencies" of the required packages, then of the base ones
        if self._stage == _OPENED_BY["Retrieving"]:
            self._tell(f"downloaded {self._count} packages")
        self._stage, self._count, self._opened = stage, 0, self._clock()
        self._tell(stage)

    def _tell(self, text: str) -> None:
        self._last = self._clock()
        self._say(text)


def base_log_path(suite: str) -> Path:
    """Where a `tfbuild base` run keeps its tools' output: ``<cache>/logs/base-SUITE-TIME.log``."""
    from tfbuild.core.cache import LOGS, cache_root

    return cache_root() / LOGS / f"base-{suite}-{utc_stamp()}-{os.getpid()}.log"


def _stream(argv: Sequence[str], on_line: Callable[[str], None]) -> tuple[int, list[str]]:
    """Run a command, passing its output on line by line; its exit code and its last lines."""
    call = commands.Command(
        argv=tuple(argv), what=f"{argv[0]} did not run", error=BuildFailed, on_line=on_line
    )
    done = commands.attempt(call)
    if done.returncode is None:
        raise commands.failure(call, done)
    return done.returncode, done.stdout.splitlines()


def _log_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
    except OSError:
        return []


def make_base_image(
    engine: Engine,
    *,
    suite: str = "bookworm",
    mirror: str | None = None,
    tag: str | None = None,
    force: bool = False,
    on_line: Callable[[str], None] = lambda _line: None,
    verbose: bool = False,
    log_path: Path | None = None,
) -> MadeImage:
    """The base image for ``suite``, made with debootstrap and imported; reused when it exists.

    ``on_line`` is told what is being done (:class:`DebootstrapProgress`); debootstrap's and
    tar's own lines go to ``log_path`` (default :func:`base_log_path`), and to ``on_line`` as
    well only with ``verbose``."""
    started = time.perf_counter()
    name = tag or default_tag(suite)
    if not force and engine.image_exists(name):
        return MadeImage(tag=name, image_id=engine.image_id(name) or "", created=False, seconds=0.0)
    _check_prerequisites(suite)
    boot = debootstrap_for(
        suite, mirror=mirror, scripts=debootstrap_scripts(os.environ), shipped=shipped_keyrings()
    )
    for note in boot.notes:
        on_line(note)
    kept = log_path or base_log_path(suite)
    progress = DebootstrapProgress(lambda text: on_line(f"debootstrap: {text}"))
    kept.parent.mkdir(parents=True, exist_ok=True)
    log = kept.open("a", encoding="utf-8", errors="replace")

    def tool_line(text: str) -> None:
        """A tool's own line: into the log, and shown with ``verbose``, else read by ``progress``."""
        log.write(text + "\n")
        log.flush()
        (on_line if verbose else progress.line)(text)

    workdir = Path(tempfile.mkdtemp(prefix="tfbuild-base-"))
    try:
        rootfs = workdir / "rootfs"
        on_line(
            f"debootstrap {suite} from {boot.mirror} into a temporary directory; its output: {kept}"
        )
        with ticking(progress.tick):  # a stage that prints nothing for a while is said too
            code, output = _stream(boot.argv(rootfs, DEFAULT_PACKAGES), tool_line)
        if code != 0:
            lines = _log_lines(rootfs / "debootstrap" / "debootstrap.log")
            raise debootstrap_failure(boot, code, output, lines, kept=kept)
        (rootfs / "etc/apt/sources.list").write_text(boot.sources_list(), encoding="utf-8")
        # Package lists and caches make the image bigger and are stale the day after.
        for leftover in ("var/lib/apt/lists", "var/cache/apt/archives"):
            shutil.rmtree(rootfs / leftover, ignore_errors=True)
        archive = workdir / "rootfs.tar"
        steps = DebootstrapProgress(on_line)
        steps.stage(f"packing the {suite} root filesystem (tar)")
        with ticking(steps.tick):
            code, output = _stream(
                ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."], tool_line
            )
        if code != 0:
            raise BuildFailed(
                f"tar of the {suite} root filesystem failed (exit code {code})",
                why=" | ".join(output[-3:]) or "no output",
                fix=f"Check the free space under {workdir.parent}.",
            )
        repository, _, image_tag = name.rpartition(":")
        size = archive.stat().st_size / 1024**2
        steps.stage(f"importing it into the engine as {name} ({size:.0f} MiB)")
        with ticking(steps.tick):
            image_id = engine.import_image(
                archive,
                repository=repository,
                tag=image_tag,
                changes=[
                    'CMD ["/bin/bash"]',
                    "ENV LANG=C.UTF-8",
                    f"LABEL {BASE_LABEL}={suite} org.tfbuild.mirror={boot.mirror}",
                ],
            )
    finally:
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return MadeImage(
        tag=name, image_id=image_id, created=True, seconds=time.perf_counter() - started
    )
