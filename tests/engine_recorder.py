"""Records what the real Docker engine does in each scenario of the fake engine (tests/engine_fake.py).

Re-record (a Docker engine, the test base image ``make base-image`` makes, and the canary's
toolchain image, which the first build makes when missing; a few minutes)::

    .venv/bin/python -m tests.engine_recorder             # every scenario
    .venv/bin/python -m tests.engine_recorder success     # one or more by name

Each scenario runs the real thing: the build's own code (``BuildRun.execute`` on the canary, the
STAND-IN source), or another stage's (``smoke --in-image``'s loads, doctor's checks and canary
probe, ``tfbuild base``, the overlay's toolchain image), or one container of the test base image,
on the real engine, through :class:`RecordingEngine`, which passes every call on and writes down
each container's run (its lines, exit code, ``State.OOMKilled``, duration, the engine's error, and
the files it left in /out), the images asked about and made, and the engine's ``info()``.
The same functions re-run the scenarios in tests/docker/test_engine_recordings.py, which checks
that the stored recordings still agree with the engine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import docker.errors

from tests.docker.conftest import BASE_TAG, OLD_BASE_TAG  # the test base images (make base-image)
from tests.engine_fake import (
    RECORDINGS,
    RecordedError,
    RecordedRun,
    Recording,
    canary_wheel,
    kind_of,
    recording,
    save,
)
from tfbuild.build import base_images
from tfbuild.build.base_images import make_base_image
from tfbuild.build.container import prepare_cache
from tfbuild.build.doctor import _probe, canary_base, engine_checks
from tfbuild.build.run import BuildRun
from tfbuild.core.defaults import TOOLCHAIN_REPOSITORY
from tfbuild.core.engine import (
    ContainerGone,
    DockerEngine,
    EngineInfo,
    LineCallback,
    Mount,
    RunResult,
    input_hash,
)
from tfbuild.core.errors import BuildFailed, EnvironmentProblem
from tfbuild.overlay.compile import predefined
from tfbuild.overlay.image import choose, ensure_overlay_image, image_toolchain, with_base_images
from tfbuild.plan import OUTPUT_DIR, PlanOptions
from tfbuild.plan.here import plan_here
from tfbuild.plan.resources import DISK_NEEDED_GIB
from tfbuild.recipes import canary
from tfbuild.smoke.loads import loads_in

#: Like a compile action, each job holds 400 MB (touched, so really resident) for a few seconds.
HUNGRY = (
    "python3 -c 'import time; b = bytearray(400 << 20);"
    ' b[::4096] = b"x" * len(b[::4096]); time.sleep(4)\''
)
#: The line bazel says while the long genrule of the "from outside" scenarios runs.
LONG_ACTION = "Compiling for a long time"
_TEST_LABEL = "org.tfbuild.test"


@dataclass
class RecordingEngine:
    """The real engine, every call passed on; each container's run written down in ``runs``.

    ``outside``: ``(line, docker command)``: once a container says ``line``, run ``docker COMMAND
    <that container>`` as another program would (``kill``, ``rm -f``)."""

    engine: DockerEngine
    files: Path  # where the files a container left in /out go: files/<short id>/
    key: str  # the value of its label on every container it runs, to find them
    outside: tuple[str, Sequence[str]] | None = None
    runs: list[RecordedRun] = field(default_factory=list)
    toolchain_image_id: str | None = None
    images: dict[str, str | None] = field(default_factory=dict)  # Recording.images
    made: dict[str, str] = field(default_factory=dict)
    engine_info: EngineInfo | None = None
    _outside_id: str = ""

    @property
    def endpoint(self) -> str:
        return self.engine.endpoint

    def info(self) -> EngineInfo:
        self.engine_info = self.engine.info()
        return self.engine_info

    def image_id(self, tag: str) -> str | None:
        found = self.engine.image_id(tag)
        if tag.startswith(f"{TOOLCHAIN_REPOSITORY}:"):
            self.toolchain_image_id = found
        else:
            self.images.setdefault(tag, found)
        return found

    def image_exists(self, tag: str) -> bool:
        return self.image_id(tag) is not None

    def import_image(
        self, archive: Path, *, repository: str, tag: str, changes: Sequence[str] = ()
    ) -> str:
        self.image_id(f"{repository}:{tag}")  # as it was before
        found = self.engine.import_image(archive, repository=repository, tag=tag, changes=changes)
        self.made[f"{repository}:{tag}"] = found
        return found

    def ensure_image(
        self,
        context: Path,
        *,
        repository: str,
        labels: dict[str, str] | None = None,
        on_line: LineCallback | None = None,
        build_args: dict[str, str] | None = None,
    ) -> tuple[str, bool]:
        if repository != TOOLCHAIN_REPOSITORY:
            self.image_id(f"{repository}:{input_hash(context)[:16]}")  # as it was before
        tag, built = self.engine.ensure_image(
            context, repository=repository, labels=labels, on_line=on_line, build_args=build_args
        )
        if built and repository != TOOLCHAIN_REPOSITORY:
            self.made[tag] = self.engine.image_id(tag) or ""
        return tag, built

    def push_image(self, tag: str, repository: str, *, on_line: LineCallback | None = None) -> str:
        return self.engine.push_image(tag, repository, on_line=on_line)

    def ensure_volume(
        self, name: str, *, labels: Mapping[str, str] | None = None, part_of: str | None = None
    ) -> str:
        return self.engine.ensure_volume(name, labels=labels, part_of=part_of)

    def remove_volume(self, name: str) -> None:
        self.engine.remove_volume(name)

    def run(
        self,
        image: str,
        command: Sequence[str],
        *,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        workdir: str | None = None,
        labels: Mapping[str, str] | None = None,
        mem_limit: str | None = None,
        name: str | None = None,
        on_line: LineCallback | None = None,
        keep: bool = False,
        network_mode: str | None = None,
    ) -> RunResult:
        lines: list[str] = []
        acted: list[str] = []

        def seen(line: str) -> None:
            lines.append(line)
            if on_line is not None:
                on_line(line)
            if self.outside is not None and self.outside[0] in line and not acted:
                acted.append(line)
                self._from_outside(self.outside[1])

        def recorded(
            result: RunResult | None, error: RecordedError | None, container_id: str
        ) -> RecordedRun:
            return RecordedRun(
                kind=kind_of(command, labels, user),
                image=image,
                command=tuple(command),
                user=user,
                mem_limit=mem_limit,
                lines=tuple(lines),
                exit_code=result.exit_code if result else None,
                oom_killed=result.oom_killed if result else None,
                container_id=container_id,
                duration_s=result.duration_s if result else None,
                error=error,
                left=self._keep_output(container_id, mounts) if result else (),
            )

        try:
            result = self.engine.run(
                image,
                command,
                mounts=mounts,
                env=env,
                user=user,
                workdir=workdir,
                labels={**(labels or {}), _TEST_LABEL: self.key},
                mem_limit=mem_limit,
                name=name,
                on_line=seen,
                keep=keep,
                network_mode=network_mode,
            )
        except ContainerGone as exc:
            cause = exc.__cause__
            error = RecordedError(
                error=type(exc).__name__,
                why=exc.why,
                cause=type(cause).__name__ if cause is not None else None,
                status_code=cause.status_code
                if isinstance(cause, docker.errors.APIError)
                else None,
                message=str(cause.args[0]) if cause is not None and cause.args else "",
                explanation=cause.explanation
                if isinstance(cause, docker.errors.APIError)
                else None,
            )
            self.runs.append(recorded(None, error, self._gone_id(exc)))
            raise
        self.runs.append(recorded(result, None, result.container_id))
        return result

    def _from_outside(self, command: Sequence[str]) -> None:
        """``docker COMMAND <this recorder's running container>``, as another program would."""
        (container_id,) = self.engine.containers(label=f"{_TEST_LABEL}={self.key}", all=False)
        subprocess.run(["docker", *command, container_id], capture_output=True, check=True)
        self._outside_id = container_id

    def _gone_id(self, exc: ContainerGone) -> str:
        assert self._outside_id.startswith(exc.short_id), (self._outside_id, exc.short_id)
        return self._outside_id

    def _keep_output(self, container_id: str, mounts: Sequence[Mount]) -> tuple[str, ...]:
        """A copy of the files the container left in its /out mount, under files/<short id>/."""
        out = next((Path(m.source) for m in mounts if m.target == OUTPUT_DIR), None)
        if out is None:
            return ()
        left = sorted(p for p in out.iterdir() if p.is_file())
        if left:
            keep = self.files / container_id[:12]
            keep.mkdir(parents=True, exist_ok=True)
            for path in left:
                shutil.copyfile(path, keep / path.name)
        return tuple(p.name for p in left)

    def recording(self, scenario: str, how: str) -> Recording:
        info = self.engine.info()
        return Recording(
            scenario=scenario,
            how=how,
            engine=f"Docker {info.server_version}, cgroup v{info.cgroup_version}",
            toolchain_image_id=self.toolchain_image_id,
            runs=tuple(self.runs),
            images=dict(self.images),
            made=dict(self.made),
            info=self.engine_info,
        )


# -- the scenarios -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """What a scenario runs with: the real engine, a work directory, a fresh cache volume."""

    engine: DockerEngine
    work: Path
    volume: str
    files: Path  # RecordingEngine.files
    key: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def recorder(self, outside: tuple[str, Sequence[str]] | None = None) -> RecordingEngine:
        return RecordingEngine(self.engine, self.files, self.key, outside=outside)


def _canary_build(
    where: Where,
    recorder: RecordingEngine,
    *,
    source: Path | None = None,
    memory: str | None = None,
) -> None:
    """``tfbuild wheel --canary --target x86_64 --jobs 2`` on the test base image, through the
    recorder (the build's own code, the real engine)."""
    args = PlanOptions(
        canary=True,
        base_image=BASE_TAG,
        target="x86_64",
        jobs=2,
        cache_volume=where.volume,
        skip_disk_check=True,
    )
    run = BuildRun(dist=where.work / "dist", source=source, memory=memory, quiet=True)
    run.execute(plan_here(args, where.engine), engine=recorder)


def _tree_with(where: Where, count: int, command: str, message: str) -> Path:
    """The canary's tree with ``count`` genrules more, each running ``command`` (real bazel
    actions the wheel's library needs)."""
    from tests.docker.test_wheel import add_generated_sources

    source = canary.copy_tree(where.work / "src")
    add_generated_sources(source, count, command, message)
    return source


def record_success(where: Where) -> Recording:
    recorder = where.recorder()
    _canary_build(where, recorder)
    return recorder.recording(
        "success",
        "tfbuild wheel --canary --target x86_64 --jobs 2 (no --source: the canary's own copy): "
        "the toolchain image's packages listed, then build.sh, which leaves the wheel in /out",
    )


def record_oom_retry(where: Where) -> Recording:
    recorder = where.recorder()
    source = _tree_with(where, 4, HUNGRY, "Holding 400 MB")
    _canary_build(where, recorder, source=source, memory="800m")
    return recorder.recording(
        "oom-retry",
        "the canary with 4 genrules of 400 MB each, --memory 800m --jobs 2: bazel's server and 2 "
        "such actions do not fit, the first attempt is OOM-killed; the retry with --jobs=1 builds",
    )


def _record_from_outside(where: Where, scenario: str, command: Sequence[str]) -> Recording:
    recorder = where.recorder(outside=(LONG_ACTION, command))
    source = _tree_with(where, 1, "sleep 600", LONG_ACTION)
    with contextlib.suppress(BuildFailed):
        _canary_build(where, recorder, source=source)
    return recorder.recording(
        scenario,
        f"the canary with a genrule that sleeps 600 s: docker {' '.join(command)} on the build "
        f"container once bazel says {LONG_ACTION!r}",
    )


def record_killed_from_outside(where: Where) -> Recording:
    return _record_from_outside(where, "killed-from-outside", ["kill"])


def record_removed_from_outside(where: Where) -> Recording:
    return _record_from_outside(where, "removed-from-outside", ["rm", "-f"])


def record_oom_killed(where: Where) -> Recording:
    recorder = where.recorder()
    recorder.run(BASE_TAG, ["python3", "-c", "b = bytearray(400 * 1024 * 1024)"], mem_limit="64m")
    return recorder.recording(
        "oom-killed",
        f"python3 allocating 400 MB in a container of {BASE_TAG} limited to 64m: the engine's "
        "own OOM kill of the container's first process",
    )


def record_prepare_cache(where: Where) -> Recording:
    recorder = where.recorder()
    prepare_cache(recorder, BASE_TAG, where.volume, f"{where.volume}.output-base.test", "4321:4321")
    return recorder.recording(
        "prepare-cache",
        f"the cache volume's top directories given to user 4321:4321 (a root container of "
        f"{BASE_TAG}), as every build by a user other than root does first",
    )


def _quiet(_line: str) -> None:
    return None


#: What ``smoke --in-image`` is asked to probe in, and the engine has no image of.
MISSING_IMAGE = "tfbuild-test/no-such-image:never"


def record_smoke_loads(where: Where) -> Recording:
    recorder = where.recorder()
    wheel = canary_wheel()
    for image in (BASE_TAG, OLD_BASE_TAG):
        loads_in(recorder, wheel, image)
    with contextlib.suppress(EnvironmentProblem):
        loads_in(recorder, wheel, MISSING_IMAGE)
    return recorder.recording(
        "smoke-loads",
        f"tfbuild smoke {wheel.name} --in-image {BASE_TAG} --in-image {OLD_BASE_TAG} "
        f"--in-image {MISSING_IMAGE} (smoke.loads.loads_in): the canary's x86_64 wheel that "
        "success left loads and imports on bookworm (glibc 2.36), not on bullseye (2.31); no "
        "image of the third, so no probe",
    )


def record_doctor(where: Where) -> Recording:
    recorder = where.recorder()
    engine_checks(recorder.info(), disk_needed_gib=DISK_NEEDED_GIB["cpu"])
    canary_base(recorder, on_line=_quiet)
    wheel = canary_wheel()
    _probe(recorder, BASE_TAG, wheel, wheel)
    return recorder.recording(
        "doctor",
        "tfbuild doctor's engine checks (the engine's info()), its canary base image (there: "
        f"reused) and its canary probe, run in {BASE_TAG} (doctor runs it in the toolchain image: "
        "the same Debian, python3-venv and objdump) on the canary's x86_64 wheel that success "
        "left, given as both the host and the baseline wheel",
    )


#: The repository of the base image the base-image scenario imports (and removes).
IMPORTED_REPOSITORY = "tfbuild-test/engine-recording"


@contextlib.contextmanager
def stand_in_debootstrap(where: Path) -> Iterator[None]:
    """``tfbuild base --suite bookworm`` without a mirror or root: on PATH, a debootstrap that
    makes a root filesystem of two empty directories and says so as debootstrap does; its scripts
    directory and a keyring for bookworm; root as far as tfbuild base asks (``os.geteuid``). The
    tar and the engine's import are real."""
    (where / "bin").mkdir(parents=True)
    (where / "scripts").mkdir()
    (where / "scripts" / "bookworm").write_text("")
    keyring = where / "debian-archive-keyring.gpg"
    keyring.write_bytes(b"")
    program = where / "bin" / "debootstrap"
    program.write_text(
        "#!/bin/sh\n"
        "# tfbuild's tests: --variant --keyring --include SUITE TARGET MIRROR\n"
        'mkdir -p "$5/etc/apt" "$5/tmp"\n'
        'echo "I: Base system installed successfully."\n'
    )
    program.chmod(0o755)
    path = f"{where / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    with (
        mock.patch.dict(os.environ, {"PATH": path, "DEBOOTSTRAP_DIR": str(where)}),
        mock.patch.dict(base_images.HOST_KEYRINGS, {"debian": ("debian-archive-keyring", keyring)}),
        mock.patch.object(base_images.os, "geteuid", return_value=0),
    ):
        yield


def record_base_image(where: Where) -> Recording:
    recorder = where.recorder()
    make_base_image(recorder, suite="bookworm", tag=BASE_TAG)
    tag = f"{IMPORTED_REPOSITORY}:base-{where.key}"
    try:
        with stand_in_debootstrap(where.work / "debootstrap"):
            make_base_image(recorder, suite="bookworm", tag=tag, log_path=where.work / "base.log")
    finally:
        where.engine.remove_image(tag)
    return recorder.recording(
        "base-image",
        f"tfbuild base --suite bookworm --tag {BASE_TAG} (there: reused), then with a tag the "
        "engine has not (missing: made), debootstrap's stand-in making the root filesystem, "
        "tar and the engine's import real (the image is removed after)",
    )


#: How the overlay scenario says to build on the host instead; the recipe's compiler it asks for;
#: a flag its compiler refuses.
FALLBACK = "--compiler clang++"
OVERLAY_COMPILER = "clang-18.1.8"
BAD_FLAG = "-mno-such-extension"


def record_overlay_image(where: Where) -> Recording:
    # The image built first where this engine lacks it (once, about a minute, not recorded): the
    # scenario is its reuse, as every overlay but the first on a machine has it.
    compiler = OVERLAY_COMPILER
    ensure_overlay_image(
        where.engine,
        with_base_images(where.engine, choose(compiler), FALLBACK),
        say=_quiet,
    )
    recorder = where.recorder()
    with image_toolchain(compiler, fallback=FALLBACK, say=_quiet, engine=recorder) as found:
        receipts = found.image
    with image_toolchain(
        receipts.compiler,
        fallback=FALLBACK,
        say=_quiet,
        pinned=receipts,
        engine=recorder,
    ) as again:
        scratch = where.work / "scratch"
        scratch.mkdir()
        with contextlib.suppress(BuildFailed):
            predefined(again.toolchain(()), [BAD_FLAG], cwd=scratch)
    return recorder.recording(
        "overlay-image",
        f"tfbuild overlay's toolchain image for {compiler} (overlay.image.image_toolchain): "
        "there, reused; again as a receipt pins it (the same id: reused); then, in it, the "
        f"compiler asked what {BAD_FLAG} enables (overlay.compile.predefined): it refuses the flag",
    )


SCENARIOS: dict[str, Callable[[Where], Recording]] = {
    "success": record_success,
    "oom-retry": record_oom_retry,
    "oom-killed": record_oom_killed,
    "killed-from-outside": record_killed_from_outside,
    "removed-from-outside": record_removed_from_outside,
    "prepare-cache": record_prepare_cache,
    "smoke-loads": record_smoke_loads,
    "doctor": record_doctor,
    "base-image": record_base_image,
    "overlay-image": record_overlay_image,
}


@contextlib.contextmanager
def scenario_place(engine: DockerEngine, files: Path) -> Iterator[Where]:
    """A work directory and a cache volume (with its output bases), removed afterwards, as are
    the containers the recorder made."""
    volume = f"tfbuild-test-recorder-{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory(prefix="tfbuild-recorder-") as work:
        where = Where(engine=engine, work=Path(work), volume=volume, files=files)
        try:
            yield where
        finally:
            for container_id in engine.containers(label=f"{_TEST_LABEL}={where.key}"):
                engine.remove_container(container_id)
            engine.remove_volume(volume)


def record(engine: DockerEngine, scenario: str, directory: Path) -> Recording:
    """Run ``scenario`` on ``engine`` and save its recording (and files) under ``directory``."""
    with scenario_place(engine, directory / "files") as where:
        found = SCENARIOS[scenario](where)
    save(found, directory)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.engine_recorder", description=__doc__)
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=f"{', '.join(SCENARIOS)} (default: all)"
    )
    parser.add_argument("--into", type=Path, default=RECORDINGS, help="default: %(default)s")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}")
    engine = DockerEngine.connect()
    try:
        for scenario in args.scenarios or SCENARIOS:
            old = args.into / f"{scenario}.json"
            if old.exists():  # the files its runs left go with it
                for run in recording(scenario, args.into).runs:
                    shutil.rmtree(args.into / "files" / run.container_id[:12], ignore_errors=True)
            found = record(engine, scenario, args.into)
            print(f"{scenario}: {len(found.runs)} runs ({found.engine})", file=sys.stderr)
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
