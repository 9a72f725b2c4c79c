"""`tfbuild wheel`: run a BuildPlan in the Docker engine and deliver the wheel, its receipt and env file.

The steps, each visible as a phase of the display and each line kept in ``dist/logs/<build-id>.log``:

1. render the plan; the toolchain image is built from the Dockerfile alone, tagged by its input hash,
   so a change of target flags or jobs never rebuilds it;
2. prepare the bazel cache volume for the calling user (a short root container that only creates
   and chowns the top directories);
3. run ``build.sh`` in a container from the toolchain image as the calling uid:gid, with the source at
   /src, a private output directory at /out, the rendered context read-only at /tfbuild, the cache
   volume at /cache, the proxy variables and a read-only CA bundle; a compiler killed for lack of
   memory is retried with half the jobs (bazel resumes where it stopped);
4. publish: the wheel, ``<wheel>.json`` (the receipt) and ``<wheel>.env`` (runtime settings) go into
   ``dist/`` as one set under its lock (:func:`publish`): a reader never sees a wheel beside another
   build's receipt or env file, and a failure (no space, SIGINT, SIGTERM) leaves the previous set.

All work happens in ``dist/.tfbuild-<build-id>-*/`` (same filesystem as ``dist/``, so the renames are
atomic), removed on every way out. The container is removed on every way out too, Ctrl-C and SIGTERM
included, unless ``--keep-container``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import stat
import sys
import tempfile
import time
import urllib.parse
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from tfbuild import __version__
from tfbuild.build.preflight import preflight
from tfbuild.build.source_tree import Source, default_cache_dir, fetch_source, local_source
from tfbuild.core.engine import (
    ContainerGone,
    DockerEngine,
    DownloadFailed,
    ImageUnavailable,
    Mount,
    RunResult,
)
from tfbuild.core.errors import (
    BuildFailed,
    EnvironmentProblem,
    InputError,
    Interrupted,
    TfbuildError,
    Unreachable,
    UsageError,
)
from tfbuild.core.files import (
    DIST_LOCK,
    free_space,
    held_signals,
    human_size,
    locked,
    read_input,
    sha256_file,
    shown,
    write_files,
)
from tfbuild.core.stopping import Stopped, stop_on_signals
from tfbuild.core.variants import Variant
from tfbuild.plan import CACHE_ROOT, OUTPUT_BASE, OUTPUT_DIR, SOURCE_DIR, BuildPlan, with_jobs
from tfbuild.plan.render import CONTEXT_DIR, check, render_files, write_context
from tfbuild.plan.request import Planned
from tfbuild.recipes.tfversions import parse_version
from tfbuild.recipes.tools import load_tools
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.receipt import (
    SECTIONS,
    BuildAttempt,
    BuildHost,
    Inputs,
    Receipt,
    WheelFloor,
    WheelRecord,
    canonical_sha256,
    read_receipt,
    receipt_path,
)
from tfbuild.wheel.wheelfile import normalise, relabel, retag

TOOLCHAIN_REPOSITORY = "tfbuild/toolchain"
BUILD_LABEL = "org.tfbuild.build"  # the build id, on the build's containers
CA_PATH = "/etc/tfbuild/ca-bundle.pem"  # where --ca-bundle is seen in the container
#: Where --remote-header-file's private directory is seen in the container, read-only: bazel's
#: credential helper and the headers it prints, or (a bazel without credential helpers) an rc file.
REMOTE_DIR = "/etc/tfbuild/remote"
REMOTE_RC_NAME = "remote.bazelrc"
HELPER_NAME = "credential-helper"
HEADERS_NAME = "headers.json"
#: --remote-header-file holds a few 'Name: value' lines: more is refused while reading.
REMOTE_HEADERS_LIMIT = 64 * 1024
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
#: Lines of the log shown when a build fails.
TAIL_LINES = 40
#: Proxy variables passed through to the build container, both spellings.
PROXY_VARIABLES = tuple(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
    for name in (base, base.lower())
)
#: What a compiler (or bazel's JVM) killed for lack of memory leaves in the log.
_KILLED = re.compile(
    r"internal compiler error: Killed|Killed signal terminated program|"
    r"\(Exit 137\)|signal 9|^Killed$|: Killed$|\bOOM\b|java\.lang\.OutOfMemoryError"
)
#: The exit code of a container whose first process was killed by SIGKILL (128 + 9).
_SIGKILLED = 137
#: The memory limit of the build container: a number of bytes, or with a k, m or g suffix.
_MEMORY = re.compile(r"[1-9][0-9]*[bkmg]?", re.IGNORECASE)
#: Room kept beyond what publishing writes: directory entries, the log's last lines, metadata.
PUBLISH_MARGIN = 256 << 10
#: What a write says when the disk (or the user's quota) is full.
_FULL = (errno.ENOSPC, errno.EDQUOT)
#: apt's words for a pinned version its sources do not offer: (version, package).
_NO_VERSION = re.compile(r"Version '([^']+)' for '([^']+)' was not found")
_TOOL = re.compile(r"^\[tfbuild\] tool: (\w+) (.*)$")
#: bazel's summary of a build's processes: "INFO: 5 processes: 1 remote cache hit, 1 internal, 3 local."
_PROCESSES = re.compile(r"^INFO: (\d+) process(?:es)?: (.*?)\.?$")
_PROCESS_KIND = re.compile(r"^(\d+) ([a-z][a-z -]*)$")
#: Where a remote cache or executor on this machine's loopback lives (the build container then
#: shares the host's network to reach it).
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def bazel_processes(line: str) -> dict[str, int] | None:
    """bazel's process summary line as kind -> count (``total`` the whole), else None."""
    found = _PROCESSES.match(line)
    if not found:
        return None
    counts = {"total": int(found.group(1))}
    for part in found.group(2).split(", "):
        kind = _PROCESS_KIND.match(part.strip())
        if kind:
            counts[kind.group(2)] = counts.get(kind.group(2), 0) + int(kind.group(1))
    return counts


def remote_urls(plan: BuildPlan) -> tuple[str, ...]:
    """The plan's remote cache and executor URLs (``--remote_cache=``, ``--remote_executor=``)."""
    prefixes = ("--remote_cache=", "--remote_executor=")
    return tuple(
        option.split("=", 1)[1] for option in plan.build_options if option.startswith(prefixes)
    )


def host_network(plan: BuildPlan) -> bool:
    """Does the build reach a remote cache or executor on this machine's loopback? A container's
    127.0.0.1 is its own: only the host's network reaches the host's loopback."""
    hosts = {urllib.parse.urlsplit(url).hostname for url in remote_urls(plan)}
    return bool(hosts & _LOOPBACK)


class Display(Protocol):
    """What the build tells its user (tfbuild.build.progress.BuildDisplay, or a quiet one)."""

    def phase(self, name: str) -> None: ...
    def line(self, text: str) -> None: ...
    def note(self, text: str) -> None: ...


@dataclass(frozen=True, kw_only=True)
class BuildJob:
    """One build: the plan, where its source is, where the results go, and how to run it."""

    plan: BuildPlan
    source: Source
    dist: Path
    user: str  # uid:gid the build runs as
    build_id: str
    ca_bundle: Path | None = None
    remote_credentials: RemoteCredentials | None = None  # --remote-header-file, written privately
    proxies: tuple[tuple[str, str], ...] = ()
    memory_limit: str | None = None  # the build container's memory limit (e.g. "16g")
    keep_container: bool = False
    oom_retries: int = 2  # how many times a compiler OOM kill halves the jobs and retries
    recipe_sha256: str | None = None  # the recipe file's identity, for the receipt
    #: A source tree made for this build alone (the canary's copy): its output base goes with it.
    discard_output_base: bool = False


@dataclass(frozen=True, kw_only=True)
class Attempt:
    jobs: int
    exit_code: int
    oom_killed: bool
    seconds: float
    container_id: str

    def to_json(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "exit_code": self.exit_code,
            "oom_killed": self.oom_killed,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, kw_only=True)
class WheelResult:
    wheel: Path
    receipt: Path
    env_file: Path
    log: Path
    sha256: str
    size: int
    seconds: float
    image_built: bool
    attempts: tuple[Attempt, ...]
    replaced: bool  # a wheel of the same name was in dist/ and was replaced
    data: Receipt  # what the receipt file holds
    warnings: tuple[str, ...] = ()  # said loudly at the end: e.g. the wheel misses its glibc floor

    def to_json(self) -> dict[str, Any]:
        return {
            "wheel": str(self.wheel),
            "receipt": str(self.receipt),
            "env_file": str(self.env_file),
            "log": str(self.log),
            "sha256": self.sha256,
            "size": self.size,
            "seconds": round(self.seconds, 3),
            "image_built": self.image_built,
            "attempts": [a.to_json() for a in self.attempts],
            "replaced": self.replaced,
            "warnings": list(self.warnings),
        }


# --- inputs ---------------------------------------------------------------------------------------


def new_build_id(now: datetime | None = None) -> str:
    """Sortable and unique enough for one dist/: 20261123-091502-3fa9c1."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


def proxies_from(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((name, env[name]) for name in PROXY_VARIABLES if env.get(name))


def ca_bundle_from(option: Path | None, env: Mapping[str, str]) -> Path | None:
    """``--ca-bundle``, else SSL_CERT_FILE or REQUESTS_CA_BUNDLE when set; it must be a readable file."""
    if option is not None:
        chosen, origin = option, "--ca-bundle"
    else:
        name = next((n for n in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE") if env.get(n)), None)
        if name is None:
            return None
        chosen, origin = Path(env[name]), name
    if not chosen.is_file() or not os.access(chosen, os.R_OK):
        raise InputError(
            f"the CA bundle {chosen} (from {origin}) is not a readable file",
            fix="Pass a PEM file with --ca-bundle, or unset the variable.",
        )
    return chosen.resolve()


# --- the pieces -----------------------------------------------------------------------------------


def is_oom(result: RunResult, tail: list[str]) -> bool:
    """Was the build (or a compiler in it) killed for lack of memory? The engine says so for the
    container (``State.OOMKilled``); a compiler killed by the kernel says so in the log. Exit code
    137 alone is any SIGKILL: ``docker kill`` too (:func:`stopped_from_outside`)."""
    if result.exit_code == 0:
        return False
    if result.oom_killed:
        return True
    if stopped_from_outside(result):
        return False
    return any(_KILLED.search(line.strip()) for line in tail[-TAIL_LINES:])


def stopped_from_outside(result: RunResult) -> bool:
    """Was the container killed (SIGKILL, exit code 137) without running out of memory: ``docker
    kill``, or ``docker stop`` (whose SIGTERM the build's shell, process 1, does not take)?"""
    return result.exit_code == _SIGKILLED and not result.oom_killed


def build_key(source: Path, toolchain_tag: str) -> str:
    """One bazel output base per source tree and toolchain image."""
    text = f"{source.resolve()}\0{toolchain_tag}"
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def output_base_volume(cache_volume: str, key: str) -> str:
    """The volume mounted at OUTPUT_BASE for one source tree and toolchain: part of the cache
    volume (removing that removes it), and a path that is the same in every build container."""
    return f"{cache_volume}.output-base.{key}"


def _source_lock(source: Path) -> Path:
    """The lock file of a source tree, in this user's private directory of locks."""
    key = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]
    root = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    return _private_directory(root / f"tfbuild-{os.getuid()}") / f"source-{key}.lock"


def _private_directory(path: Path) -> Path:
    """``path``, a directory of this user's that no one else can write into (made if missing, its
    mode narrowed if an older tfbuild made it with the umask's): in a shared /tmp, someone else
    could have made it first, to plant links or hold its locks."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=True)
    found = path.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
        raise EnvironmentProblem(
            f"{shown(str(path))} is not a directory of this user",
            why="tfbuild keeps its lock files there, and another user could write into it",
            fix="Remove it, or set XDG_RUNTIME_DIR to a private directory.",
        )
    if found.st_mode & 0o077:
        path.chmod(0o700)
    return path


class _Log:
    """The build log file, the last lines for a failure message, and the tool versions seen."""

    def __init__(self, path: Path, display: Display) -> None:
        self.path = path
        self._file = path.open("a", encoding="utf-8", errors="replace")
        self._display = display
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.tools: dict[str, str] = {}
        self.processes: dict[str, int] = {}  # bazel's last process summary

    def line(self, text: str) -> None:
        self._file.write(text + "\n")
        self._file.flush()
        self.tail.append(text)
        tool = _TOOL.match(text)
        if tool:
            self.tools[tool.group(1)] = tool.group(2).strip()
        processes = bazel_processes(text)
        if processes is not None:
            self.processes = processes
        self._display.line(text)

    def note(self, text: str) -> None:
        self._file.write(f"[tfbuild] {text}\n")
        self._file.flush()
        self._display.note(text)

    def phase(self, name: str) -> None:
        self._file.write(f"[tfbuild] phase: {name}\n")
        self._file.flush()
        self._display.phase(name)

    def close(self) -> None:
        self._file.close()


def _toolchain_image(
    engine: DockerEngine,
    plan: BuildPlan,
    files: dict[str, str],
    work: Path,
    log: _Log,
    proxies: tuple[tuple[str, str], ...] = (),
) -> tuple[str, bool]:
    image_dir = work / "image"
    write_context({"Dockerfile": files["Dockerfile"]}, image_dir)
    try:
        # The proxy variables are Docker's predefined build arguments: the RUN steps' downloads
        # (apt, curl) use them, and the image keeps none of them.
        tag, built = engine.ensure_image(
            image_dir,
            repository=TOOLCHAIN_REPOSITORY,
            labels={},
            on_line=log.line,
            build_args=dict(proxies),
        )
    except ImageUnavailable as exc:
        raise EnvironmentProblem(exc.what, why=exc.why, fix=_image_fix(plan, exc.image)) from exc
    except DownloadFailed as exc:
        raise Unreachable(
            exc.headline(exc.failure, "the toolchain image"),
            why=exc.why,
            fix=_download_fix(exc, proxies),
            details=tuple(log.tail),
        ) from exc
    except BuildFailed as exc:
        gone = next((m for line in log.tail if (m := _NO_VERSION.search(line))), None)
        if gone is not None and plan.package_versions:
            raise EnvironmentProblem(
                f"{gone.group(2)} {gone.group(1)} can no longer be had",
                why="the rebuild installs every package at the version the receipt records, and "
                "the package sources no longer offer this one",
                fix="Rebuild where that version is still offered (a mirror or snapshot of the "
                "time), or build anew without --from-receipt.",
            ) from exc
        raise BuildFailed(
            exc.what, why=exc.why, fix=f"The whole log: {log.path}", details=tuple(log.tail)
        ) from exc
    log.note(f"toolchain image {tag}: {'built' if built else 'reused (unchanged)'}")
    return tag, built


def _image_fix(plan: BuildPlan, image: str) -> str:
    """What to do when the toolchain image's FROM ``image`` cannot be had (no registry here)."""
    sysroot = plan.sysroot.image if plan.sysroot else None
    for made in (plan.base_image, sysroot):
        if made is not None and made.image_id and image == made.reference:
            return (
                "It was made by tfbuild base: make it again "
                f"(sudo tfbuild base --suite {made.suite} --tag {made.reference})."
            )
    base = plan.base_image
    if image == base.reference:
        return (
            "Where no container registry can be reached, make a local one with "
            f"sudo tfbuild base --suite {base.suite} and pass --base-image tfbuild/base:{base.suite}."
        )
    if sysroot is not None and image == sysroot.reference:
        return (
            "Where no container registry can be reached, link against a local image's C library "
            "instead: --sysroot-from tfbuild/base:SUITE (made by sudo tfbuild base --suite SUITE; "
            "the wheel then needs that system's glibc), or --no-portable (the base image's own)."
        )
    return "Put it on this engine: docker save it where a registry is reachable, docker load here."


def _download_fix(exc: DownloadFailed, proxies: tuple[tuple[str, str], ...]) -> str:
    """What to do when a toolchain image step cannot download (apt.llvm.org, github.com, a package
    mirror or snapshot): the proxy the build uses, or the same image made where the host answers."""
    proxy = next((v for n, v in proxies if n.lower() in ("https_proxy", "http_proxy")), None)
    host = ""
    if proxy is not None:
        host = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}").hostname or ""
    hosts = " and ".join(exc.failure.hosts)
    where_ok = f"{hosts} can be reached" if hosts and host not in exc.failure.hosts else "it works"
    premade = (
        f"build this image where {where_ok} and load it here "
        f"(docker save {exc.tag} | docker load): tfbuild reuses it by that tag"
    )
    if exc.failure.tls:
        return (
            "A proxy that inspects TLS needs its CA certificates inside the image, and tfbuild "
            f"bakes none in (--ca-bundle reaches the build container only): {premade}."
        )
    if proxy is None:
        return (
            "Behind a proxy, set HTTP_PROXY and HTTPS_PROXY (passed to the image build); "
            f"or {premade}."
        )
    loopback = host in {"localhost", "::1"} or host.startswith("127.")
    where = (
        " (this machine's loopback is not the containers': name it by an address they reach)"
        if loopback
        else ""
    )
    return f"Check the proxy {proxy} that the image build uses{where}; or {premade}."


def _prepare_cache(
    engine: DockerEngine, tag: str, volume: str, output_base: str, user: str
) -> None:
    """A new volume belongs to root: give its top directories to the build's user (not -R: a big
    cache would take minutes, and everything below was written by that user anyway)."""
    engine.ensure_volume(volume)
    engine.ensure_volume(output_base, part_of=volume)
    if user.split(":", maxsplit=1)[0] == "0":
        return
    dirs = [f"{CACHE_ROOT}/{name}" for name in ("home", "output", "repository", "disk")]
    result = engine.run(
        tag,
        [
            "sh",
            "-c",
            f"mkdir -p {' '.join(dirs)} && chown {user} {CACHE_ROOT} {OUTPUT_BASE} {' '.join(dirs)}",
        ],
        mounts=[
            Mount(volume, CACHE_ROOT, kind="volume"),
            Mount(output_base, OUTPUT_BASE, kind="volume"),
        ],
        user="0:0",
    )
    if result.exit_code != 0:
        raise BuildFailed(
            f"cannot prepare the cache volume {volume} for user {user}",
            why=f"chown exited with {result.exit_code}",
            fix="Remove the volume (docker volume rm) or pass another --cache-volume.",
        )


def _mounts(request: BuildJob, context: Path, out: Path, output_base: str) -> list[Mount]:
    mounts = [
        Mount(str(request.source.path), SOURCE_DIR),
        Mount(str(out), OUTPUT_DIR),
        Mount(str(context), CONTEXT_DIR, read_only=True),
        Mount(request.plan.cache_volume, CACHE_ROOT, kind="volume"),
        Mount(output_base, OUTPUT_BASE, kind="volume"),
    ]
    if request.ca_bundle is not None:
        mounts.append(Mount(str(request.ca_bundle), CA_PATH, read_only=True))
    if request.remote_credentials is not None:
        mounts.append(Mount(str(request.remote_credentials.directory), REMOTE_DIR, read_only=True))
    return mounts


def _environment(request: BuildJob, exec_image: str | None) -> dict[str, str]:
    env = dict(request.proxies)
    if exec_image is not None:  # build.sh passes it as the remote actions' container-image
        env["TFBUILD_EXEC_IMAGE"] = exec_image
    env["TFBUILD_SOURCE_DATE_EPOCH"] = str(source_epoch(request.source))
    if request.ca_bundle is not None:
        for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT"):
            env[name] = CA_PATH
    if request.remote_credentials is not None:
        env.update(request.remote_credentials.environment())
    return env


# --- credentials for a remote cache or executor (--remote-header-file) -----------------------------


@dataclass(frozen=True, kw_only=True)
class RemoteHeaders:
    """--remote-header-file's headers, checked: (name, value) pairs. No value is ever shown: not in
    a repr, a message, a log line or bazel's command line."""

    pairs: tuple[tuple[str, str], ...] = field(repr=False)


def read_remote_headers(path: Path) -> RemoteHeaders:
    """``--remote-header-file``'s ``Name: value`` lines (blank lines and ``#`` comments skipped),
    read as every input file is (a regular file of at most 64 KiB, or ``-``). A bad line is named
    by its number, never by its value."""
    fix = "Name a file of 'Name: value' lines, e.g. 'Authorization: Bearer TOKEN'."
    what = f"--remote-header-file {path}"
    try:
        raw = read_input(path, limit=REMOTE_HEADERS_LIMIT, what=what, fix=fix)
    except FileNotFoundError:
        raise InputError(f"cannot read {what}", why="no such file", fix=fix) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"cannot read {what}", why="it is not UTF-8 text", fix=fix) from None
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not _HEADER_NAME.fullmatch(name) or not value.isprintable() or not value:
            raise InputError(
                f"{what}:{number} is not a 'Name: value' header",
                why="a header is a name of letters, digits, '-' and '_', a colon and a printable "
                "value (the value is not shown here)",
                fix="Write one header per line, e.g. 'Authorization: Bearer TOKEN'.",
            )
        pairs.append((name, value))
    if not pairs:
        raise InputError(
            f"{what} holds no header",
            fix="Write one 'Name: value' line per header, or drop the option.",
        )
    return RemoteHeaders(pairs=tuple(pairs))


#: Each spelling of bazel's credential helper flag, with the first bazel that has it:
#: --experimental_credential_helper came in 5.3.0 (bazelbuild/bazel#15966, the 5.3.0 cherry-pick of
#: #15947 "Wire up credential helper to command-line flag(s)"), and 6.3.0 declared it stable as
#: --credential_helper, keeping the old name (#18751, #18752; AuthAndTLSOptions.java: name
#: "credential_helper", oldName "experimental_credential_helper").
CREDENTIAL_HELPER_FLAGS: tuple[tuple[tuple[int, int], str], ...] = (
    ((6, 3), "--credential_helper"),
    ((5, 3), "--experimental_credential_helper"),
)
_BAZEL_VERSION = re.compile(r"(\d+)\.(\d+)")

#: bazel's credential helper: bazel runs it with the argument ``get``, writes ``{"uri": "..."}`` to
#: its standard input and reads ``{"headers": {"Name": ["value", ...]}}`` from its standard output
#: (the Credential Helper Specification, github.com/EngFlow/credential-helper-spec spec.md, which
#: bazel's --credential_helper help names). An unscoped helper is asked for every URI bazel reaches
#: (repository downloads too, from bazel 6.3), so this one answers the headers only for the hosts of
#: the remote cache and executor, and ``{}`` (no credentials) for any other.
CREDENTIAL_HELPER = f'''#!/usr/bin/env python3
"""tfbuild's bazel credential helper: --remote-header-file's headers, for the remote's hosts only."""
import json
import sys
import urllib.parse
from pathlib import Path

if sys.argv[1:] != ["get"]:
    sys.exit("usage: {HELPER_NAME} get (bazel's credential helper protocol)")
request = json.load(sys.stdin)
stored = json.loads(Path(__file__).with_name("{HEADERS_NAME}").read_text(encoding="utf-8"))
host = (urllib.parse.urlsplit(str(request.get("uri", ""))).hostname or "").lower()
json.dump({{"headers": stored["headers"] if host in stored["hosts"] else {{}}}}, sys.stdout)
'''


def credential_helper_flag(plan: BuildPlan) -> str | None:
    """The flag that gives the plan's bazel a credential helper; None where the bazel that runs has
    none: the canary's (Debian's bazel-bootstrap 4.2.3) and any bazel before 5.3."""
    if plan.standin:
        return None
    found = _BAZEL_VERSION.match(plan.bazel)
    if found is None:
        return None
    version = (int(found.group(1)), int(found.group(2)))
    return next((flag for first, flag in CREDENTIAL_HELPER_FLAGS if version >= first), None)


def remote_header_rc(headers: RemoteHeaders) -> str:
    """The rc text for a bazel without credential helpers (given with --bazelrc): one quoted
    ``--remote_header`` each, then ``--noannounce_rc``. build.sh also puts ``--noannounce_rc`` and
    empty build event outputs after every ``--config`` on the command line, where no rc file of the
    tree can turn them back on."""
    lines = [
        "build " + shlex.quote(f"--remote_header={name}={value}") for name, value in headers.pairs
    ]
    return "\n".join([*lines, "build --noannounce_rc", ""])


def helper_headers(headers: RemoteHeaders, plan: BuildPlan) -> str:
    """The JSON the credential helper answers from: the headers (a name given twice keeps both
    values) and the hosts of the plan's remote cache and executor."""
    merged: dict[str, list[str]] = {}
    for name, value in headers.pairs:
        merged.setdefault(name, []).append(value)
    hosts = sorted(
        {(urllib.parse.urlsplit(url).hostname or "").lower() for url in remote_urls(plan)}
    )
    return json.dumps({"hosts": [h for h in hosts if h], "headers": merged}, indent=2) + "\n"


@dataclass(frozen=True, kw_only=True)
class RemoteCredentials:
    """--remote-header-file's headers written for bazel into a private directory (0700, its files
    0600 or 0700), mounted read-only at REMOTE_DIR: a credential helper and its headers, or an rc
    file where the bazel that runs has no credential helper (``helper_flag`` None)."""

    directory: Path
    count: int
    helper_flag: str | None

    def environment(self) -> dict[str, str]:
        """What build.sh needs (paths and a count, never a value)."""
        env = {"TFBUILD_REMOTE_HEADERS": str(self.count)}
        if self.helper_flag is not None:
            env["TFBUILD_CREDENTIAL_HELPER"] = f"{self.helper_flag}={REMOTE_DIR}/{HELPER_NAME}"
        else:
            env["TFBUILD_REMOTE_RC"] = f"{REMOTE_DIR}/{REMOTE_RC_NAME}"
        return env


def _private_file(path: Path, text: str, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_remote_credentials(
    headers: RemoteHeaders, plan: BuildPlan, directory: Path
) -> RemoteCredentials:
    """Write ``headers`` for the plan's bazel into ``directory`` (new, private: the caller made it
    with mkdtemp and removes it on every way out)."""
    flag = credential_helper_flag(plan)
    if flag is not None:
        _private_file(directory / HEADERS_NAME, helper_headers(headers, plan), 0o600)
        _private_file(directory / HELPER_NAME, CREDENTIAL_HELPER, stat.S_IRWXU)
    else:
        _private_file(directory / REMOTE_RC_NAME, remote_header_rc(headers), 0o600)
    return RemoteCredentials(directory=directory, count=len(headers.pairs), helper_flag=flag)


#: What bazel leaves in its output base that can hold the options of a command, rc files' included:
#: the server's log (java.log, a link, and the java.log.* files it names: every request's argv,
#: rc options as --default_override) and the last command's output (command.log: what --announce_rc
#: printed). Found by a build with a planted token (tests/docker/test_remote_cache.py scans the
#: whole volume after each credentialed build).
SERVER_LOGS = ("java.log", "java.log.*", "command.log")


def _remove_server_logs(engine: DockerEngine, tag: str, output_base: str, log: _Log) -> None:
    """Remove bazel's server logs from the output base volume after a credentialed build, however
    it ended (the bazel server died with its container). Run as root: bazel's files are the build
    user's, and a root-owned leftover must go too."""
    names = " ".join(f"{OUTPUT_BASE}/{name}" for name in SERVER_LOGS)
    result = engine.run(
        tag,
        ["sh", "-c", f"rm -f {names}"],
        mounts=[Mount(output_base, OUTPUT_BASE, kind="volume")],
        user="0:0",
    )
    if result.exit_code != 0:
        log.note(
            f"WARNING: bazel's server logs in the volume {output_base} could not be removed (exit "
            f"code {result.exit_code}); they may hold the remote headers: docker volume rm it"
        )


def _give_to(private: Path, user: str) -> None:
    """Root building as another user: the private directory and its files become that user's, the
    only one that reads them in the build container."""
    uid, _, gid = user.partition(":")
    if os.geteuid() != 0 or int(uid) == 0:
        return
    for path in (private, *private.iterdir()):
        os.chown(path, int(uid), int(gid or uid), follow_symlinks=False)


# --- a remote cache that cannot be reached ---------------------------------------------------------

#: bazel's words when its first call to the remote (the capabilities check) fails, e.g.
#: "ERROR: Failed to query remote execution capabilities: Connection refused: /127.0.0.1:47999" or
#: "...: DEADLINE_EXCEEDED: deadline exceeded after 9.999591210s. [...]" (bazel 4.2.3).
_CAPABILITIES = re.compile(r"Failed to query remote execution capabilities: (.*)$")
_REFUSED = re.compile(r"Connection refused|UNAVAILABLE|UnknownHost|Name or service not known")
_DENIED = re.compile(r"UNAUTHENTICATED|PERMISSION_DENIED")
_DEADLINE = re.compile(r"DEADLINE_EXCEEDED")
#: How long the preflight connect waits for a TCP answer.
CONNECT_TIMEOUT_S = 5.0


def remotes(plan: BuildPlan) -> tuple[tuple[str, str], ...]:
    """The plan's remotes as (what, URL): "remote cache" and "remote executor"."""
    names = {"--remote_cache=": "remote cache", "--remote_executor=": "remote executor"}
    return tuple(
        (what, option[len(prefix) :])
        for option in plan.build_options
        for prefix, what in names.items()
        if option.startswith(prefix)
    )


def remote_failure(plan: BuildPlan, tail: list[str]) -> EnvironmentProblem | None:
    """A build that failed because its remote cache or executor failed bazel's first call, as one
    line (exit 5); None for any other failure."""
    found = next((m for line in reversed(tail) if (m := _CAPABILITIES.search(line))), None)
    named = remotes(plan)
    if found is None or not named:
        return None
    (what, url), cause = named[-1], found.group(1).strip()  # the executor, where there is one
    if _DEADLINE.search(cause):
        waited = _wait_bound(plan)
        return EnvironmentProblem(
            f"the {what} at {url} did not answer"
            + (f" (waited {waited} s)" if waited is not None else ""),
            why="it accepts connections but answers no call: " + cause[:200],
            fix=f"Check the {what}'s server, or build without it (drop the option).",
        )
    if _DENIED.search(cause):
        return EnvironmentProblem(
            f"the {what} at {url} refused the build's credentials",
            why=cause[:200],
            fix="Check the headers of --remote-header-file (their values are not shown).",
        )
    if _REFUSED.search(cause):
        return _unreachable(what, url, cause[:200])
    return None


def _unreachable(what: str, url: str, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"the {what} at {url} is unreachable",
        why=why,
        fix=f"Start the {what} or correct its URL, or build without it (drop the option).",
    )


def _wait_bound(plan: BuildPlan) -> int | None:
    """How long bazel waits for a remote that never answers: each call's --remote_timeout, tried
    1 + --remote_retries times (bazel's defaults 60 s and 5)."""
    values = dict(
        o.split("=", 1) for o in plan.build_options if o.startswith("--remote_") and "=" in o
    )
    try:
        timeout = int(values.get("--remote_timeout", "60").rstrip("s"))
        retries = int(values.get("--remote_retries", "5"))
    except ValueError:
        return None
    return timeout * (retries + 1)


def check_remote_reachable(plan: BuildPlan) -> None:
    """A TCP connect to each remote on this machine's loopback (which the build container shares),
    before any image or container: a closed port is one line, exit 5, in a second instead of after
    the toolchain image. A remote elsewhere is left to bazel (this host's network may not be the
    container's)."""
    for what, url in remotes(plan):
        parts = urllib.parse.urlsplit(url)
        if parts.hostname not in _LOOPBACK or parts.port is None:
            continue
        try:
            socket.create_connection(
                (parts.hostname, parts.port), timeout=CONNECT_TIMEOUT_S
            ).close()
        except OSError as exc:
            raise _unreachable(what, url, exc.strerror or str(exc)) from None


def waiting_note(plan: BuildPlan) -> str | None:
    """What the build waits for before its first action: bazel's first call to each remote."""
    named = remotes(plan)
    if not named:
        return None
    bound = _wait_bound(plan)
    each = " and ".join(f"the {what} at {url}" for what, url in named)
    limit = f" (bazel gives up after about {bound} s without an answer)" if bound else ""
    return f"waiting for {each}{limit}"


def _run_build(
    engine: DockerEngine,
    request: BuildJob,
    *,
    tag: str,
    output_base: str,
    work: Path,
    log: _Log,
    exec_image: str | None = None,
) -> tuple[BuildPlan, list[Attempt], Path]:
    """Run build.sh until it succeeds; halve the jobs after an OOM kill. The final plan, attempts, out."""
    plan, attempts = request.plan, []
    context, out = work / "context", work / "out"
    out.mkdir()
    uid, _, gid = request.user.partition(":")
    if os.geteuid() == 0 and uid != "0":  # root building for another user: the output is theirs
        os.chown(out, int(uid), int(gid or uid))
    retries = request.oom_retries
    while True:
        write_context(render_files(plan), context)
        log.tail.clear()
        waiting = waiting_note(plan)
        if waiting is not None:
            log.note(waiting)
        try:
            result = engine.run(
                tag,
                # One ordered stream: the engine copies stdout and stderr separately.
                ["bash", "-c", f"exec bash {CONTEXT_DIR}/build.sh 2>&1"],
                mounts=_mounts(request, context, out, output_base),
                env=_environment(request, exec_image),
                user=request.user,
                workdir=SOURCE_DIR,
                labels={BUILD_LABEL: request.build_id},
                mem_limit=request.memory_limit,
                on_line=log.line,
                keep=request.keep_container,
                network_mode="host" if host_network(plan) else None,
            )
        except ContainerGone as exc:
            raise BuildFailed(
                "the build container was removed from outside (docker rm -f?)",
                why=exc.why,
                fix=f"Find what removes containers on this engine (docker events), then rerun. "
                f"The log: {log.path}",
                details=tuple(log.tail),
            ) from exc
        attempts.append(
            Attempt(
                jobs=plan.resources.jobs,
                exit_code=result.exit_code,
                oom_killed=result.oom_killed,
                seconds=result.duration_s,
                container_id=result.container_id,
            )
        )
        if request.keep_container:
            log.note(f"container kept for a post-mortem: {result.container_id[:12]}")
        if result.exit_code == 0:
            return plan, attempts, out
        tail = list(log.tail)
        jobs = plan.resources.jobs
        if stopped_from_outside(result):
            raise BuildFailed(
                "the build container was stopped from outside (docker kill or docker stop?)",
                why=f"it was killed (exit code {result.exit_code}), and the engine recorded no "
                "out-of-memory kill",
                fix=f"Find what stops containers on this engine (docker events), then rerun. "
                f"The log: {log.path}",
                details=tuple(tail),
            )
        if is_oom(result, tail) and retries > 0 and jobs > 1:
            retries -= 1
            half = max(1, jobs // 2)
            log.note(
                f"the build ran out of memory with --jobs={jobs}: retrying with --jobs={half} "
                "(bazel resumes where it stopped)"
            )
            plan = with_jobs(plan, half, why=f"--jobs={jobs} ran out of memory (OOM kill)")
            continue
        if is_oom(result, tail):
            raise BuildFailed(
                f"the build ran out of memory (exit code {result.exit_code}) with --jobs={jobs}",
                why="a compiler was killed for lack of memory"
                + (", after halving the jobs" if len(attempts) > 1 else ""),
                fix=f"Give the engine more memory{' or lift --memory' if request.memory_limit else ''}, "
                f"or pass a lower --jobs / --local-ram-resources. The log: {log.path}",
                details=tuple(tail),
            )
        unreachable = remote_failure(plan, tail)
        if unreachable is not None:  # one line: the log has bazel's own words
            raise unreachable
        raise BuildFailed(
            f"the build failed (exit code {result.exit_code})",
            why=_last_error(tail),
            fix=f"The last {len(tail)} lines are above; the whole log is {log.path}"
            + ("" if request.keep_container else " (--keep-container keeps the container)"),
            details=tuple(tail),
        )


def _last_error(tail: list[str]) -> str:
    for line in reversed(tail):
        if line.startswith(("ERROR", "FAILED")) or " error: " in line or line.startswith("error:"):
            return line.strip()[:300]
    return "see the log"


#: NVIDIA's libraries a CUDA wheel loads at run time from NVIDIA's own wheels (nvidia-cudnn-cu12 and
#: the like, which TensorFlow's [and-cuda] extra installs) or the driver: no manylinux policy lists
#: them, and tfbuild never grafts them into the wheel, so the floor is taken without them.
CUDA_LIBRARIES = (
    "libcuda.so.*",
    "libcudart.so.*",
    "libcublas*.so.*",
    "libcudnn*.so.*",
    "libcufft.so.*",
    "libcusolver.so.*",
    "libcusparse.so.*",
    "libcurand.so.*",
    "libnccl.so.*",
    "libnvrtc*.so.*",
    "libnvJitLink.so.*",
)
#: SOURCE_DATE_EPOCH when the source gives none: 1980-01-01, the earliest time a wheel (zip) holds.
FALLBACK_EPOCH = 315532800
#: What dpkg-query prints for each installed package of the toolchain image.
_PACKAGE_LINE = re.compile(r"^(\S+)\t(\S+)$")


def source_epoch(source: Source) -> int:
    return source.epoch if source.epoch is not None else FALLBACK_EPOCH


def toolchain_packages(engine: DockerEngine, tag: str) -> dict[str, str]:
    """Every package installed in the toolchain image, with its exact version (dpkg-query -W)."""
    lines: list[str] = []
    result = engine.run(
        tag,
        ["dpkg-query", "-W", "-f", "${binary:Package}\t${Version}\n"],
        on_line=lines.append,
    )
    if result.exit_code != 0:
        raise BuildFailed(
            f"cannot list the packages of the toolchain image {tag}",
            why=f"dpkg-query exited with {result.exit_code}: {' '.join(lines[-3:])}",
            fix="The image must be a Debian or Ubuntu one (base-images.yaml).",
        )
    packages: dict[str, str] = {}
    for line in lines:
        found = _PACKAGE_LINE.match(line.strip())
        if found:
            packages[found.group(1).split(":")[0]] = found.group(2)
    return packages


def _finish(
    raw: Path, plan: BuildPlan, source: Source, log: _Log
) -> tuple[Path, WheelFloor | None, tuple[str, ...]]:
    """The built wheel made final: its floor found, then the label, the normalisation and the
    manylinux tag put on it, each a raw copy of the members (one pass where a label is given)."""
    floor = _inspect(raw, log, exclude=CUDA_LIBRARIES if plan.variant == Variant.cuda else ())
    missed = missed_floor(plan.floor_goal, floor)
    warnings = (missed,) if missed is not None else ()
    if missed is not None:
        log.note(f"WARNING: {raw.name}: {missed}")
    platform = floor.policy if floor is not None else None
    epoch = source_epoch(source) if plan.reproducible else None
    built, final = raw, raw.parent / "final"
    if plan.label:
        built = relabel(raw, plan.label, final, epoch=epoch, platform=platform)
        log.note(f"label: +{plan.label} -> {built.name}")
    else:
        if platform is not None:
            built = retag(built, platform, final)
        if epoch is not None:
            built = normalise(built, final, epoch=epoch)
    if epoch is not None:
        log.note(f"normalised: sorted members, times of SOURCE_DATE_EPOCH={epoch}")
    if built != raw:
        raw.unlink()
    return built, floor, warnings


def missed_floor(goal: str | None, floor: WheelFloor | None) -> str | None:
    """Why the wheel misses the recipe's glibc floor, in a sentence; None when it meets it."""
    if goal is None or floor is None:
        return None
    if floor.policy is None:
        return (
            f"it should load on glibc {goal} (its recipe's floor), but it satisfies no manylinux "
            f"policy: it needs {', '.join(floor.too_new) or 'what no policy allows'}"
        )
    if floor.glibc is not None and parse_version(floor.glibc) > parse_version(goal):
        libstdcxx = f" and libstdc++ {floor.libstdcxx}" if floor.libstdcxx else ""
        return (
            f"it should load on glibc {goal} (its recipe's floor, the stock wheel's), but it "
            f"needs glibc {floor.glibc}{libstdcxx}: most older clusters cannot load it; build with the "
            "release's portable toolchain or an older base image (docs/toolchain-facts.md)"
        )
    return None


def _inspect(wheel: Path, log: _Log, *, exclude: tuple[str, ...] = ()) -> WheelFloor | None:
    """The wheel's floor (auditwheel). A failure to inspect must not lose an hours-long build: the
    wheel is published untagged (linux_*), without a floor, and the log says so loudly."""
    try:
        floor = inspect_wheel(wheel, exclude=exclude)
    except TfbuildError as exc:
        log.note(f"WARNING: the wheel's glibc floor is unknown ({exc.line()}); it keeps its tag")
        return None
    if floor.policy is None:
        log.note(
            "WARNING: the wheel satisfies no manylinux policy, so it stays linux_*: it needs "
            + (", ".join(floor.too_new) or "what no policy allows")
            + f" (glibc {floor.glibc}); it will not load on older systems"
        )
    else:
        needs = floor.needs or "no versioned glibc symbol"
        log.note(f"floor: {needs} -> {floor.policy} ({floor.tool})")
    return floor


def _tools(plan: BuildPlan, seen: dict[str, str]) -> dict[str, str]:
    """bazel, the compiler and python as the build printed them; bazelisk as the image pins it."""
    tools = dict(seen)
    if not plan.standin:
        tools["bazelisk"] = load_tools()["bazelisk"].version
    return tools


def _receipt(
    job: BuildJob,
    *,
    plan: BuildPlan,
    wheel: Path,
    sha256: str,
    toolchain: tuple[str, str | None],
    exec_image: str | None = None,
    packages: dict[str, str],
    attempts: list[Attempt],
    tools: dict[str, str],
    floor: WheelFloor | None,
    host: BuildHost,
    timings: dict[str, float],
    log: Path,
    env_file: Path,
    processes: dict[str, int] | None = None,
) -> Receipt:
    plan_json = plan.to_json()
    processes = processes or {}
    inputs = Inputs(
        tfbuild=__version__,
        recipe=plan.recipe,
        recipe_sha256=job.recipe_sha256,
        source=job.source.record(),
        base_image=plan.base_image.reference,
        base_image_id=plan.base_image.image_id,
        toolchain_image=toolchain[0],
        toolchain_image_id=toolchain[1],
        packages=packages,
        tools=tools,
        snapshot=plan.snapshot.time if plan.snapshot else None,
        exec_image=exec_image,
    )
    return Receipt(
        build_id=job.build_id,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        standin=plan.standin,
        wheel=WheelRecord(name=wheel.name, sha256=sha256, size=wheel.stat().st_size),
        target=plan.target,
        variant=str(plan.variant),
        label=plan.label,
        cflags=plan.cflags,
        plan=plan_json,
        plan_sha256=canonical_sha256(plan_json),
        inputs=inputs,
        inputs_sha256=inputs.sha256,
        host=host,
        floor=floor,
        timings={k: round(v, 3) for k, v in timings.items()},
        attempts=tuple(BuildAttempt(**a.to_json()) for a in attempts),
        runtime_env_file=env_file.name,
        log=str(log),
        processes=processes,
        remote_cache_hits=processes.get("remote cache hit", 0)
        if any(o.startswith("--remote_cache=") for o in plan.build_options)
        else None,
    )


def publish(
    dist: Path, built: Path, receipt: Receipt, env_text: str
) -> tuple[Path, Path, Path, bool]:
    """Put the wheel ``built`` into ``dist`` with its receipt and env file, as one set.

    Under dist/'s lock (which ``update_receipt`` and ``tfbuild index`` take too), the three are
    staged under temp names in ``dist`` (the wheel hard linked: no copy, no space), then renamed
    with SIGINT and SIGTERM held off: an earlier wheel of the same name first out of view, the env
    file and the receipt, the wheel last (:func:`tfbuild.core.files.write_files` with ``key_last``).
    A reader never sees a wheel beside another build's receipt or env file; a failure restores the
    previous set; a signal is acted on just after, with the set whole.

    ``built`` is moved: once published, its old name is gone. Returns the wheel, receipt and env
    file published and whether a wheel was replaced. Raises
    :class:`InputError` (exit 3) when ``dist`` has not the room (checked first with ``statvfs``,
    and ENOSPC or EDQUOT while writing) or cannot be written: then nothing was published."""
    wheel = dist / built.name
    receipt_file = receipt_path(wheel)
    env_path = wheel.with_suffix(".env")
    receipt_text = json.dumps(receipt.to_json(), indent=2) + "\n"
    found = built.stat()
    copied = 0 if found.st_dev == dist.stat().st_dev else found.st_size  # else hard linked
    needed = len(receipt_text.encode()) + len(env_text.encode()) + copied + PUBLISH_MARGIN
    placed = False
    try:
        with locked(dist / DIST_LOCK):
            replaced = wheel.exists()
            check_space(dist, needed, what=wheel.name)
            with held_signals():  # milliseconds: two small files written, the wheel linked
                write_files(
                    dist,
                    {
                        env_path.name: (env_text, 0o644),
                        receipt_file.name: (receipt_text, 0o644),
                        wheel.name: (built, stat.S_IMODE(found.st_mode)),
                    },
                    key_last=True,
                )
                placed = True
            with contextlib.suppress(OSError):  # moved, not copied: its old name goes
                built.unlink()
    except OSError as exc:
        raise _cannot_publish(dist, exc, needed=needed, what=wheel.name) from None
    except KeyboardInterrupt as stop:  # stopping.Stopped (SIGINT, SIGTERM), or a plain Ctrl-C
        if not placed:
            raise
        # The signal came while publishing: the set went in whole first, as the message says.
        raise Interrupted(
            f"stopped by {stop.signal_name}" if isinstance(stop, Stopped) else "stopped by Ctrl-C",
            why=f"it came while publishing, which finished first: {shown(str(wheel))}, its "
            "receipt and env file are in place, whole; nothing else was left",
        ) from None
    return wheel, receipt_file, env_path, replaced


def check_space(dist: Path, needed: int, *, what: str) -> None:
    """Refuse (exit 3) to write ``needed`` bytes for ``what`` into ``dist`` without the room."""
    free = free_space(dist)
    if free < needed:
        raise _no_space(
            dist, f"publishing {shown(what)} needs {human_size(needed)}, {human_size(free)} free"
        )


def _no_space(dist: Path, detail: str) -> InputError:
    return InputError(
        f"no space left in {shown(str(dist))}",
        why=f"{detail}; nothing was published",
        fix="Free some space there (or inodes, or quota), or build into another --dist.",
    )


def _full(dist: Path, exc: OSError, doing: str = "writing the build's files") -> str:
    """What a write that met a full disk (or quota) in ``dist`` says: the file, why, what is free."""
    try:
        free = human_size(free_space(dist))
    except OSError:
        free = "unknown"
    where = shown(exc.filename) if isinstance(exc.filename, str) else doing
    return f"{where}: {exc.strerror or 'No space left on device'} ({free} free)"


def _is_full(exc: OSError) -> bool:
    if exc.errno in _FULL:
        return True
    # shutil.copytree gathers each file's error, as text, into one shutil.Error.
    gathered = exc.args[0] if isinstance(exc, shutil.Error) and exc.args else ()
    return isinstance(gathered, list) and any(
        f"[Errno {code}]" in str(entry) for entry in gathered for code in _FULL
    )


@contextlib.contextmanager
def _full_disk_is_input(dist: Path, *, doing: str = "writing the build's files") -> Iterator[None]:
    """A full disk (or quota) met while building into ``dist`` (the canary's copy, the log, the
    finished wheel) as one line naming ``dist`` (exit 3), not an internal error."""
    try:
        yield
    except OSError as exc:
        if not _is_full(exc):
            raise
        raise _no_space(dist, _full(dist, exc, doing)) from None


def _cannot_publish(dist: Path, exc: OSError, *, needed: int, what: str) -> InputError:
    """An OSError while publishing as one line: the directory, the file and the reason."""
    if exc.errno in _FULL:
        return _no_space(
            dist, f"{_full(dist, exc)} while publishing {shown(what)} ({human_size(needed)} needed)"
        )
    where = shown(exc.filename) if isinstance(exc.filename, str) else shown(str(dist))
    return InputError(
        f"cannot publish {shown(what)} into {shown(str(dist))}",
        why=f"{where}: {exc.strerror or exc}; nothing was published",
        fix="Let tfbuild write there (a writable --dist directory), or build into another --dist.",
    )


# --- the build ------------------------------------------------------------------------------------


def _announce(plan: BuildPlan, build_id: str, log: _Log) -> None:
    """The build's first lines: what it builds, then the plan's warnings, before the hours of work."""
    log.note(
        f"build {build_id}: TensorFlow {plan.tensorflow} ({plan.variant}, target {plan.target})"
        + (" — STAND-IN canary source, not TensorFlow" if plan.standin else "")
    )
    for warning in plan.warnings:
        log.note(f"warning: {warning}")


def _the_wheel(out: Path, log: _Log) -> Path:
    """The one wheel a finished build left in its output directory."""
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(
            f"the build finished but left {len(wheels)} wheels in its output",
            why=", ".join(w.name for w in wheels) or "none",
            fix=f"Check build.sh's package step in the log: {log.path}",
            details=tuple(log.tail),
        )
    return wheels[0]


def build_wheel(engine: DockerEngine, request: BuildJob, display: Display) -> WheelResult:
    """Build the wheel of ``request.plan`` in ``engine``; everything lands in ``request.dist``."""
    started = time.monotonic()
    dist = request.dist.resolve()
    try:
        (dist / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {dist / 'logs'}", why=exc.strerror or str(exc)) from None
    log = _Log(dist / "logs" / f"{request.build_id}.log", display)
    cleanup = contextlib.ExitStack()
    try:
        # No signal between making the work directory and registering its removal.
        with held_signals():
            work = Path(tempfile.mkdtemp(prefix=f".tfbuild-{request.build_id}-", dir=dist))
            cleanup.callback(shutil.rmtree, work, ignore_errors=True)
        busy = f"another tfbuild build is using the source {request.source.path}"
        with (
            _full_disk_is_input(dist),  # the log, the finished wheel: one line naming dist/
            locked(
                _source_lock(request.source.path),
                blocking=False,
                busy=busy,
                fix="Wait for the other build, or build from another copy of the source.",
            ),
        ):
            _announce(request.plan, request.build_id, log)
            check_remote_reachable(request.plan)  # a closed port: one line now, not after the image
            log.phase("toolchain image")
            files = render_files(request.plan)
            tag, image_built = _toolchain_image(
                engine, request.plan, files, work, log, request.proxies
            )
            image_done = time.monotonic()
            packages = toolchain_packages(engine, tag)
            exec_image = None
            if request.plan.exec_image is not None:
                log.phase("push toolchain")
                exec_image = engine.push_image(tag, request.plan.exec_image, on_line=log.line)
                log.note(f"remote actions run in {exec_image}")
            output_base = output_base_volume(
                request.plan.cache_volume, build_key(request.source.path, tag)
            )
            if request.discard_output_base:
                cleanup.callback(engine.remove_volume, output_base)
            if request.remote_credentials is not None:  # however the build ends (runs first)
                cleanup.callback(_remove_server_logs, engine, tag, output_base, log)
            _prepare_cache(engine, tag, request.plan.cache_volume, output_base, request.user)
            plan, attempts, out = _run_build(
                engine,
                request,
                tag=tag,
                output_base=output_base,
                work=work,
                log=log,
                exec_image=exec_image,
            )
            log.phase("publish")
            output = _the_wheel(out, log)
            # Room for the finished wheel (a copy, labelled and normalised), its receipt and env
            # file, checked before any of it is written.
            check_space(dist, output.stat().st_size + PUBLISH_MARGIN, what=output.name)
            built, floor, warnings = _finish(output, plan, request.source, log)
            sha256 = sha256_file(built)
            env_text = render_files(plan)["runtime.env"]
            finished = time.monotonic()
            receipt = _receipt(
                request,
                plan=plan,
                wheel=built,
                sha256=sha256,
                toolchain=(tag, engine.image_id(tag)),
                exec_image=exec_image,
                packages=packages,
                attempts=attempts,
                tools=_tools(plan, log.tools),
                floor=floor,
                host=BuildHost(
                    engine=engine.endpoint,
                    toolchain_image_built=image_built,
                    disk_free_gib=round(shutil.disk_usage(dist).free / 1024**3, 1),
                    cpus=os.cpu_count(),
                    user=request.user,
                ),
                timings={
                    "toolchain_image_s": image_done - started,
                    "build_s": sum(a.seconds for a in attempts),
                    "total_s": finished - started,
                },
                log=log.path,
                env_file=dist / Path(built.name).with_suffix(".env").name,
                processes=log.processes,
            )
            wheel, receipt_file, env_path, replaced = publish(dist, built, receipt, env_text)
            log.note(f"wheel: {wheel} ({wheel.stat().st_size} bytes, sha256 {sha256})")
            return WheelResult(
                wheel=wheel,
                receipt=receipt_file,
                env_file=env_path,
                log=log.path,
                sha256=sha256,
                size=wheel.stat().st_size,
                seconds=time.monotonic() - started,
                image_built=image_built,
                attempts=tuple(attempts),
                replaced=replaced,
                data=receipt,
                warnings=(*plan.warnings, *warnings),  # the plan's, then the wheel's own
            )
    finally:
        with held_signals():  # a signal now waits until everything of this build is gone
            with contextlib.suppress(Exception):  # never hides the build's own result or error
                cleanup.close()  # the output base (a discarded one), then the work directory
            log.close()


def update_receipt(receipt: Path, key: str, value: Any) -> None:
    """Add one section to a published receipt (the canary's instruction-set check and speedup),
    whole and under the lock of its ``dist/``, as the build published it."""
    with locked(receipt.parent / DIST_LOCK):
        found = read_receipt(receipt)
        if key not in SECTIONS:
            raise ValueError(f"{key!r} is a field of the receipt, not a section to add")
        text = json.dumps(replace(found, **{key: value}).to_json(), indent=2)
        write_files(receipt.parent, {receipt.name: (text + "\n", 0o644)})


# --- one `tfbuild wheel` run ------------------------------------------------------------------------


class _CleanUp(contextlib.ExitStack):
    """An ExitStack whose unwinding no signal cuts short (tfbuild.core.files.held_signals)."""

    def __exit__(self, *exc_details: Any) -> bool | None:
        with held_signals():
            return super().__exit__(*exc_details)


@dataclass(frozen=True, kw_only=True)
class BuildRun:
    """How to run a finished plan: source, output, and how to show it. ``tfbuild wheel`` and
    ``tfbuild doctor`` both build through it, so both clean up the same way on Ctrl-C and SIGTERM."""

    dist: Path
    source: Path | None = None
    source_sha256: str | None = None
    ca_bundle: Path | None = None
    memory: str | None = None
    keep_container: bool = False
    quiet: bool = False
    verbose: bool = False
    user: str | None = None  # uid:gid; default: the calling user's
    recipe_sha256: str | None = None  # a rebuild: the original recipe's identity, kept
    #: Headers for a remote cache or executor (credentials, read by read_remote_headers): never
    #: in the plan, receipt, log or any command line.
    remote_headers: RemoteHeaders | None = None

    def __post_init__(self) -> None:
        if self.memory is not None and not _MEMORY.fullmatch(self.memory):
            raise UsageError(
                f"--memory {self.memory!r} is not a size", fix="Write it like 8g or 16384m."
            )

    def execute(self, planned: Planned, *, engine: DockerEngine | None = None) -> WheelResult:
        """Build ``planned`` in ``engine`` (default: a new connection, closed afterwards)."""
        from tfbuild.build.progress import BuildDisplay, choose_mode

        plan, recipe = planned.plan, planned.recipe
        check(render_files(plan), recipe)
        ca_bundle = ca_bundle_from(self.ca_bundle, os.environ)
        user = self.user or f"{os.getuid()}:{os.getgid()}"
        # SIGINT and SIGTERM stop the build once; its clean-up then runs to the end.
        with stop_on_signals(), _CleanUp() as stack:
            credentials = None
            if self.remote_headers is not None:  # a private directory, removed on every way out
                with held_signals():
                    private = Path(tempfile.mkdtemp(prefix="tfbuild-remote-"))
                    stack.callback(shutil.rmtree, private, ignore_errors=True)
                credentials = write_remote_credentials(self.remote_headers, plan, private)
                _give_to(private, user)
            if engine is None:
                engine = DockerEngine.connect()
                stack.callback(engine.close)
            mode = choose_mode(quiet=self.quiet, stream=sys.stderr, env=os.environ)
            display = stack.enter_context(BuildDisplay(mode=mode, verbose=self.verbose))
            source = stack.enter_context(self._source(plan, ca_bundle, display))
            # The tree against the plan, before any image or container: seconds, not hours.
            failure = preflight(plan, recipe, source.path).error()
            if failure is not None:
                raise failure
            job = BuildJob(
                plan=plan,
                source=source,
                dist=self.dist,
                user=user,
                build_id=new_build_id(),
                ca_bundle=ca_bundle,
                remote_credentials=credentials,
                proxies=proxies_from(os.environ),
                memory_limit=self.memory,
                keep_container=self.keep_container,
                recipe_sha256=recipe.file_sha256 if recipe else self.recipe_sha256,
                discard_output_base=self.source is None and plan.standin,
            )
            return build_wheel(engine, job, display)

    @contextlib.contextmanager
    def _source(
        self, plan: BuildPlan, ca_bundle: Path | None, display: Display
    ) -> Iterator[Source]:
        if self.source is not None:
            yield local_source(self.source)
        elif plan.standin:
            from tfbuild.recipes import canary

            self.dist.mkdir(parents=True, exist_ok=True)
            with _CleanUp() as stack:
                with held_signals():
                    holder = Path(tempfile.mkdtemp(prefix=".tfbuild-canary-", dir=self.dist))
                    stack.callback(shutil.rmtree, holder, ignore_errors=True)
                with _full_disk_is_input(self.dist, doing="copying the canary source"):
                    tree = canary.copy_tree(holder / "src")
                yield local_source(tree)
        else:
            display.phase("source")
            yield fetch_source(
                str(plan.source.tarball),
                version=plan.tensorflow,
                sha256=self.source_sha256 or plan.source.sha256,
                cache_dir=default_cache_dir(),
                ca_bundle=ca_bundle,
                on_line=display.note,
            )
