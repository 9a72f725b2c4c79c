"""The build container: cache prepared, build.sh run, an OOM kill retried with half the jobs."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from tfbuild.build.credentials import REMOTE_DIR, RemoteCredentials, give_to
from tfbuild.build.log import TAIL_LINES, BuildLog
from tfbuild.build.remotes import host_network, remote_failure, waiting_note
from tfbuild.build.source_tree import Source
from tfbuild.core.defaults import ZIP_EPOCH
from tfbuild.core.engine import (
    ContainerGone,
    Mount,
    RunResult,
)
from tfbuild.core.engine_protocol import Engine
from tfbuild.core.errors import BuildFailed
from tfbuild.core.rounded import round_fields
from tfbuild.plan import CACHE_ROOT, OUTPUT_BASE, OUTPUT_DIR, SOURCE_DIR, BuildPlan, with_jobs
from tfbuild.plan.render import CONTEXT_DIR, render_files, write_context

BUILD_LABEL = "org.tfbuild.build"  # the build id, on the build's containers
CA_PATH = "/etc/tfbuild/ca-bundle.pem"  # where --ca-bundle is seen in the container
#: What a compiler (or bazel's JVM) killed for lack of memory leaves in the log.
_KILLED = re.compile(
    r"internal compiler error: Killed|Killed signal terminated program|"
    r"\(Exit 137\)|signal 9|^Killed$|: Killed$|\bOOM\b|java\.lang\.OutOfMemoryError"
)
#: The exit code of a container whose first process was killed by SIGKILL (128 + 9).
_SIGKILLED = 137


@dataclass(frozen=True, kw_only=True)
class BuildJob:
    """One build, resolved: the plan, its source tree in hand, its id, and how to run its container.

    :class:`tfbuild.build.run.BuildRun` is what was asked (a source path or none, an optional CA
    bundle, headers in memory); ``BuildRun.execute`` makes this once the source is fetched or
    copied, the credentials written, the user, CA bundle and proxies read from the environment and
    the build id drawn. Only ``dist``, ``memory`` and ``keep_container`` pass through unchanged."""

    plan: BuildPlan
    source: Source
    dist: Path
    user: str  # uid:gid the build runs as
    build_id: str
    ca_bundle: Path | None = None
    remote_credentials: RemoteCredentials | None = None  # --remote-header-file, written privately
    proxies: tuple[tuple[str, str], ...] = ()
    memory: str | None = None  # --memory: the build container's memory limit (e.g. "16g")
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
    seconds: float  # written to the millisecond

    def __post_init__(self) -> None:
        round_fields(self, "seconds")


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


def output_base_volume(cache_volume: str, source: Path, toolchain_tag: str) -> str:
    """The volume mounted at OUTPUT_BASE, one per source tree and toolchain image: part of the
    cache volume (removing that removes it), and a path that is the same in every build container."""
    text = f"{source.resolve()}\0{toolchain_tag}"
    key = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{cache_volume}.output-base.{key}"


def prepare_cache(engine: Engine, tag: str, volume: str, output_base: str, user: str) -> None:
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


def run_build(
    engine: Engine,
    request: BuildJob,
    *,
    tag: str,
    output_base: str,
    work: Path,
    log: BuildLog,
    exec_image: str | None = None,
) -> tuple[BuildPlan, list[Attempt], Path]:
    """Run build.sh until it succeeds; halve the jobs after an OOM kill. The final plan, attempts, out."""
    plan, attempts = request.plan, []
    context, out = work / "context", work / "out"
    out.mkdir()
    give_to(out, request.user)  # root building for another user: the output is theirs
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
                mem_limit=request.memory,
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
                fix=f"Give the engine more memory{' or lift --memory' if request.memory else ''}, "
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


def source_epoch(source: Source) -> int:
    return source.epoch if source.epoch is not None else ZIP_EPOCH
