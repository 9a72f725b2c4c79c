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
import dataclasses
import hashlib
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild.build.container import (
    Attempt,
    BuildJob,
    output_base_volume,
    prepare_cache,
    run_build,
)
from tfbuild.build.credentials import (
    RemoteHeaders,
    give_to,
    remove_server_logs,
    write_remote_credentials,
)
from tfbuild.build.finish import finish_wheel, make_receipt
from tfbuild.build.log import BuildLog, Progress
from tfbuild.build.preflight import preflight
from tfbuild.build.publish import PUBLISH_MARGIN, check_space, full_disk_is_input, publish
from tfbuild.build.remotes import check_remote_reachable
from tfbuild.build.source_tree import Source, fetch_source, local_source
from tfbuild.build.toolchain_image import ensure_toolchain_image, toolchain_packages
from tfbuild.core import serial
from tfbuild.core.engine import DockerEngine
from tfbuild.core.engine_protocol import Engine
from tfbuild.core.errors import (
    BuildFailed,
    EnvironmentProblem,
    InputError,
    UsageError,
)
from tfbuild.core.files import (
    held_signals,
    locked,
    sha256_file,
    shown,
    utc_stamp,
)
from tfbuild.core.stopping import stop_on_signals
from tfbuild.plan import BuildPlan
from tfbuild.plan.render import check, render_files
from tfbuild.plan.request import Planned
from tfbuild.wheel.receipt import BuildHost, Receipt

#: Proxy variables passed through to the build container, both spellings.
PROXY_VARIABLES = tuple(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
    for name in (base, base.lower())
)
#: The memory limit of the build container: a number of bytes, or with a k, m or g suffix.
_MEMORY = re.compile(r"[1-9][0-9]*[bkmg]?", re.IGNORECASE)


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

    # ``data`` is not written here: the CLI adds the receipt's own (checked) JSON
    def to_json(self) -> dict[str, Any]:
        kept = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "data"}
        written: dict[str, Any] = serial.to_data(kept | {"seconds": round(self.seconds, 3)})
        return written


# --- inputs ---------------------------------------------------------------------------------------


def new_build_id() -> str:
    """Sortable and unique enough for one dist/: 20261123-091502-3fa9c1."""
    return f"{utc_stamp()}-{secrets.token_hex(3)}"


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


# --- the source tree's lock ---------------------------------------------------------------------


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


# --- the build ------------------------------------------------------------------------------------


def _announce(plan: BuildPlan, build_id: str, log: BuildLog) -> None:
    """The build's first lines: what it builds, then the plan's warnings, before the hours of work."""
    log.note(
        f"build {build_id}: TensorFlow {plan.tensorflow} ({plan.variant}, target {plan.target})"
        + (" — STAND-IN canary source, not TensorFlow" if plan.canary else "")
    )
    for warning in plan.warnings:
        log.note(f"warning: {warning}")


def _the_wheel(out: Path, log: BuildLog) -> Path:
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


def build_wheel(engine: Engine, request: BuildJob, progress: Progress) -> WheelResult:
    """Build the wheel of ``request.plan`` in ``engine``; everything lands in ``request.dist``."""
    started = time.monotonic()
    dist = request.dist.resolve()
    try:
        (dist / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {dist / 'logs'}", why=exc.strerror or str(exc)) from None
    log = BuildLog(dist / "logs" / f"{request.build_id}.log", progress)
    cleanup = contextlib.ExitStack()
    try:
        # No signal between making the work directory and registering its removal.
        with held_signals():
            work = Path(tempfile.mkdtemp(prefix=f".tfbuild-{request.build_id}-", dir=dist))
            cleanup.callback(shutil.rmtree, work, ignore_errors=True)
        busy = f"another tfbuild build is using the source {request.source.path}"
        with (
            full_disk_is_input(dist),  # the log, the finished wheel: one line naming dist/
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
            tag, image_built = ensure_toolchain_image(
                engine, request.plan, files, work, log, request.proxies
            )
            image_done = time.monotonic()
            packages = toolchain_packages(engine, tag)
            exec_image = None
            if request.plan.exec_image is not None:
                log.phase("push toolchain")
                exec_image = engine.push_image(tag, request.plan.exec_image, on_line=log.line)
                log.note(f"remote actions run in {exec_image}")
            output_base = output_base_volume(request.plan.cache_volume, request.source.path, tag)
            if request.discard_output_base:
                cleanup.callback(engine.remove_volume, output_base)
            if request.remote_credentials is not None:  # however the build ends (runs first)
                cleanup.callback(remove_server_logs, engine, tag, output_base, log)
            prepare_cache(engine, tag, request.plan.cache_volume, output_base, request.user)
            plan, attempts, out = run_build(
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
            built, floor, warnings = finish_wheel(output, plan, request.source, log)
            sha256 = sha256_file(built)
            env_text = render_files(plan)["runtime.env"]
            finished = time.monotonic()
            receipt = make_receipt(
                request,
                plan=plan,
                wheel=built,
                sha256=sha256,
                toolchain=(tag, engine.image_id(tag)),
                exec_image=exec_image,
                packages=packages,
                attempts=attempts,
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
                log=log,
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
    #: Whose progress lines they are: ``[tfbuild] ...``, ``[verify] ...``, ``[doctor] ...``.
    tag: str = "tfbuild"
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

    def execute(self, planned: Planned, *, engine: Engine | None = None) -> WheelResult:
        """Build ``planned`` in ``engine`` (default: a new connection, closed afterwards)."""
        from tfbuild.build.progress import BuildProgress, choose_mode

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
                give_to(private, user)
            if engine is None:
                connected = DockerEngine.connect()
                stack.callback(connected.close)
                engine = connected
            mode = choose_mode(quiet=self.quiet, stream=sys.stderr, env=os.environ)
            progress = stack.enter_context(
                BuildProgress(mode=mode, verbose=self.verbose, tag=self.tag)
            )
            source = stack.enter_context(self._source(plan, ca_bundle, progress))
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
                memory=self.memory,
                keep_container=self.keep_container,
                recipe_sha256=recipe.file_sha256 if recipe else self.recipe_sha256,
                discard_output_base=self.source is None and plan.canary,
            )
            return build_wheel(engine, job, progress)

    @contextlib.contextmanager
    def _source(
        self, plan: BuildPlan, ca_bundle: Path | None, progress: Progress
    ) -> Iterator[Source]:
        if self.source is not None:
            yield local_source(self.source)
        elif plan.canary:
            from tfbuild.recipes import canary

            self.dist.mkdir(parents=True, exist_ok=True)
            with _CleanUp() as stack:
                with held_signals():
                    holder = Path(tempfile.mkdtemp(prefix=".tfbuild-canary-", dir=self.dist))
                    stack.callback(shutil.rmtree, holder, ignore_errors=True)
                with full_disk_is_input(self.dist, doing="copying the canary source"):
                    tree = canary.copy_tree(holder / "src")
                yield local_source(tree)
        else:
            progress.phase("source")
            yield fetch_source(
                str(plan.source.tarball),
                version=plan.tensorflow,
                sha256=self.source_sha256 or plan.source.sha256,
                ca_bundle=ca_bundle,
                on_line=progress.note,
            )
