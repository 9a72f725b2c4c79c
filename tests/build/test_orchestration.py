"""`tfbuild wheel`'s orchestration against the engine's recordings (tests/engine_fake.py): the OOM
retry, a build container killed or removed from outside, a second signal during the clean-up, a
publish that meets a full disk. The build's own code runs whole (``BuildRun.execute``: the canary's
copy, preflight, the rendered context, finishing the wheel with auditwheel, the receipt, publishing
under dist/'s lock); only the engine replays what the real one did in the same scenario
(tests/engine_recorder.py recorded it; tests/docker/test_engine_recordings.py keeps it true). Each
test asserts what the user sees: the result or the one error line and its exit code, what is left
in dist/, and what the engine was left with.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import docker.errors
import pytest

from tests.conftest import mounted_tmpfs, recorded_host
from tests.engine_fake import ENDPOINT, FakeEngine, recording
from tfbuild.build.container import BUILD_LABEL
from tfbuild.build.run import BuildRun, WheelResult
from tfbuild.core.engine import ContainerGone
from tfbuild.core.errors import BuildFailed, InputError, Interrupted
from tfbuild.core.files import DIST_LOCK, wheel_files
from tfbuild.plan import OUTPUT_BASE, PlanOptions
from tfbuild.plan.here import plan_here
from tfbuild.plan.render import CONTEXT_DIR
from tfbuild.plan.request import Planned
from tfbuild.wheel.receipt import receipt_path

IN_CI = bool(os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS"))
CACHE = "tfbuild-test-orchestration"


def canary() -> Planned:
    """The canary's plan (the STAND-IN source) for a recorded machine: no engine, no detection."""
    args = PlanOptions(
        canary=True, base_image="debian-12", jobs=4, cache_volume=CACHE, skip_disk_check=True
    )
    return plan_here(args, host=recorded_host("haswell", memory_gib=16, disk_gib=100))


@pytest.fixture(autouse=True)
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The source trees' locks in a directory of the test's own (XDG_RUNTIME_DIR)."""
    where = tmp_path / "run"
    where.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(where))
    return where


def build(
    engine: FakeEngine, dist: Path, *, user: str | None = None, memory: str | None = None
) -> WheelResult:
    """``tfbuild wheel --canary --jobs 4`` (``--memory``, as ``user``) in ``engine``."""
    run = BuildRun(dist=dist, quiet=True, user=user, memory=memory)
    return run.execute(canary(), engine=engine)


def leftovers(dist: Path) -> list[str]:
    """What a build may never leave in dist/: its work directories, the canary's copy, a lock."""
    return sorted(p.name for p in dist.iterdir() if p.name.startswith((".tfbuild", DIST_LOCK)))


def contents(dist: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in dist.iterdir() if p.is_file()}


def output_base(engine: FakeEngine) -> str:
    """The volume the build container had at /output-base (bazel's output base)."""
    (built, *_) = (call for call in engine.calls if call.kind == "build")
    (volume,) = (m.source for m in built.mounts if m.target == OUTPUT_BASE and m.kind == "volume")
    return volume


def the_log(dist: Path) -> str:
    (log,) = (dist / "logs").glob("*.log")
    return log.read_text()


def test_a_build_publishes_what_its_container_left(tmp_path: Path) -> None:
    """The whole conversation of a real canary build replayed, as a user other than root: the
    cache volume is given to that user first (a root container), the receipt takes the toolchain
    image's packages and the tools from the build's own lines."""
    success = recording("success")
    engine = FakeEngine.replaying(success)
    dist = tmp_path / "dist"
    result = build(engine, dist, user="4321:4321")

    assert result.wheel == dist.resolve() / result.wheel.name
    assert result.wheel.name.startswith("tfbuild_canary-0.0.0+tfbuild.canary.haswell-")
    assert [(a.jobs, a.exit_code, a.oom_killed) for a in result.attempts] == [(4, 0, False)]
    receipt = json.loads(receipt_path(result.wheel).read_text())
    assert receipt["wheel"]["sha256"] == result.sha256
    assert receipt["inputs"]["toolchain_image_id"] == success.toolchain_image_id
    assert receipt["inputs"]["packages"]["gcc-12"].startswith("12.2.0")
    assert receipt["inputs"]["tools"]["compiler"].startswith("gcc-12 (Debian 12.2.0")
    assert receipt["host"]["engine"] == ENDPOINT
    assert result.wheel.with_suffix(".env").is_file()
    assert leftovers(dist) == []

    kinds = [(call.kind, call.user) for call in engine.calls]
    assert kinds == [("packages", None), ("prepare-cache", "0:0"), ("build", "4321:4321")]
    assert "chown 4321:4321 /cache" in engine.calls[1].command[-1]
    (built,) = (call for call in engine.calls if call.kind == "build")
    assert built.labels[BUILD_LABEL] == receipt["build_id"]
    assert engine.containers == {}  # each removed after its run
    # The canary's own copy was made for this build alone: its output base went with it; the
    # cache volume is the user's to keep.
    assert engine.volumes == {CACHE: None}
    assert engine.removed_volumes == [output_base(engine)]
    assert engine.unplayed() == {}


def _jobs_in_context(engine: FakeEngine, seen: list[int]) -> Callable[[], None]:
    """What --jobs build.sh had while its container ran: the context mounted for the last run."""

    def look() -> None:
        (context,) = (Path(m.source) for m in engine.calls[-1].mounts if m.target == CONTEXT_DIR)
        found = re.findall(r"--jobs=(\d+)", (context / "build.sh").read_text())
        assert len(found) == 1, found  # made from the plan's resources, once
        seen.append(int(found[0]))

    return look


@pytest.mark.parametrize(
    "killed",
    [
        # A bazel action killed by the cgroup's OOM killer: bash's "Killed", exit code 1, and on
        # this cgroup v1 engine State.OOMKilled set for the container.
        "oom-retry",
        # The container's first process killed for memory: exit code 137 and State.OOMKilled.
        "oom-killed",
    ],
)
def test_an_oom_kill_is_retried_with_half_the_jobs(tmp_path: Path, killed: str) -> None:
    if killed == "oom-killed":
        (first,) = (run.as_kind("build") for run in recording(killed).runs)
    else:
        first = recording(killed).build(1)
    then = recording("oom-retry").build(2)
    jobs: list[int] = []
    engine = FakeEngine.replaying(first, then)
    engine.world = {"build:exit": _jobs_in_context(engine, jobs)}
    dist = tmp_path / "dist"
    result = build(engine, dist, memory="800m")

    assert jobs == [4, 2]  # build.sh was rendered again with half the jobs
    attempts = [(a.jobs, a.exit_code, a.oom_killed) for a in result.attempts]
    assert attempts == [(4, first.exit_code, True), (2, 0, False)]
    receipt = json.loads(receipt_path(result.wheel).read_text())
    assert receipt["plan"]["resources"]["jobs"] == 2  # the plan's one record of the jobs
    assert not [o for o in receipt["plan"]["build_options"] if o.startswith("--jobs")]
    assert {"what": "jobs", "why": "--jobs=4 ran out of memory (OOM kill)"}.items() <= next(
        r for r in receipt["plan"]["reasons"] if r["what"] == "jobs" and "memory" in r["why"]
    ).items()
    assert [a["jobs"] for a in receipt["attempts"]] == [4, 2]
    assert "the build ran out of memory with --jobs=4: retrying with --jobs=2" in the_log(dist)
    assert [call.mem_limit for call in engine.calls if call.kind == "build"] == ["800m", "800m"]
    assert engine.containers == {}
    assert engine.unplayed() == {}
    assert leftovers(dist) == []


def test_oom_kills_past_the_retries_are_one_line(tmp_path: Path) -> None:
    """Two retries (4, 2, then 1 job), each OOM-killed again: the last attempt's error, once."""
    oom = recording("oom-retry").build(1)
    engine = FakeEngine.replaying(oom, oom, oom)
    dist = tmp_path / "dist"
    with pytest.raises(BuildFailed) as caught:
        build(engine, dist)
    error = caught.value
    assert error.exit_code == 6
    log = next((dist / "logs").glob("*.log"))
    assert error.line() == (
        "the build ran out of memory (exit code 1) with --jobs=1: a compiler was killed for lack "
        "of memory, after halving the jobs. Give the engine more memory, or pass a lower --jobs / "
        f"--local-ram-resources. The log: {log}"
    )
    assert error.details[-1] == oom.lines[-1]  # the build's last lines, shown above the line
    assert [call.kind for call in engine.calls].count("build") == 3
    assert not wheel_files(dist)
    assert leftovers(dist) == []
    assert engine.containers == {}


def test_a_kill_from_outside_is_one_line_and_no_retry(tmp_path: Path) -> None:
    """docker kill: exit code 137 like an OOM kill, but the engine recorded none."""
    killed = recording("killed-from-outside")
    assert (killed.build().exit_code, killed.build().oom_killed) == (137, False)
    engine = FakeEngine.replaying(killed)
    dist = tmp_path / "dist"
    with pytest.raises(BuildFailed) as caught:
        build(engine, dist)
    error = caught.value
    assert error.exit_code == 6
    log = next((dist / "logs").glob("*.log"))
    assert error.line() == (
        "the build container was stopped from outside (docker kill or docker stop?): it was killed "
        "(exit code 137), and the engine recorded no out-of-memory kill. Find what stops containers "
        f"on this engine (docker events), then rerun. The log: {log}"
    )
    assert "Compiling for a long time" in error.details[-1]
    assert [call.kind for call in engine.calls].count("build") == 1  # jobs=4, yet no retry
    assert "retrying" not in the_log(dist) and "out of memory" not in the_log(dist)
    assert not wheel_files(dist)
    assert leftovers(dist) == []
    assert engine.containers == {}
    assert engine.unplayed() == {}


def test_a_container_removed_from_outside_is_one_line(tmp_path: Path) -> None:
    """docker rm -f while the engine follows the build: its recorded answer (404 "no such
    container" here) is ContainerGone, and the build says so in one line, exit 6."""
    removed = recording("removed-from-outside")
    recorded = removed.build().error
    assert recorded is not None
    engine = FakeEngine.replaying(removed)
    dist = tmp_path / "dist"
    with pytest.raises(BuildFailed) as caught:
        build(engine, dist)
    error = caught.value
    assert error.exit_code == 6
    log = next((dist / "logs").glob("*.log"))
    assert error.line() == (
        f"the build container was removed from outside (docker rm -f?): {recorded.why}. Find what "
        f"removes containers on this engine (docker events), then rerun. The log: {log}"
    )
    gone = error.__cause__
    assert isinstance(gone, ContainerGone)
    assert isinstance(gone.__cause__, docker.errors.APIError)
    assert type(gone.__cause__).__name__ == recorded.cause
    assert gone.__cause__.status_code == recorded.status_code
    assert not wheel_files(dist)
    assert leftovers(dist) == []
    assert engine.containers == {}


class Signal:
    """Sends ``signum`` to the main thread when called (where a blocked one stays pending: see
    tests/build/test_build.py's _signalled), and notes that the code went on after it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.went_on: list[str] = []

    def __call__(self) -> None:
        signal.pthread_kill(threading.main_thread().ident or 0, self.signum)
        self.went_on.append(signal.Signals(self.signum).name)


@pytest.mark.usefixtures("own_signals")
@pytest.mark.parametrize(
    ("first", "second", "when"),
    [
        (signal.SIGINT, signal.SIGINT, "remove_container"),  # while the container is removed
        (signal.SIGTERM, signal.SIGINT, "remove_volume"),  # while the output base is removed
        (signal.SIGTERM, signal.SIGTERM, "remove_volume"),
    ],
)
def test_a_second_signal_during_the_clean_up_does_not_cut_it_short(
    tmp_path: Path, first: int, second: int, when: str
) -> None:
    """The first signal comes while the build container runs (after its 5th line); the second
    while the build cleans up. The clean-up runs to its end: the container, the canary's output
    base, the work directory and the canary's copy all go; one line, exit 130."""
    stop, again = Signal(first), Signal(second)
    engine = FakeEngine.replaying(recording("success"), world={"build:5": stop, when: again})
    dist = tmp_path / "dist"
    with pytest.raises(Interrupted) as caught:
        build(engine, dist)
    assert caught.value.exit_code == 130
    assert caught.value.line() == (
        f"stopped by {signal.Signals(first).name}: the build container was stopped and removed, "
        "no partial files were left."
    )
    assert again.went_on == [signal.Signals(second).name]
    assert engine.containers == {}
    assert engine.volumes == {CACHE: None}
    assert engine.removed_volumes == [output_base(engine)]
    assert leftovers(dist) == []
    assert not wheel_files(dist)
    assert recording("success").build().lines[4] in the_log(dist)  # the lines before the stop


@pytest.fixture
def small_dist(tmp_path: Path) -> Iterator[Path]:
    """A filesystem of its own for dist/ (a tmpfs: root only; CI runs as root and never skips)."""
    if os.geteuid() != 0:
        message = "a tmpfs for dist/ needs root"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    with mounted_tmpfs(tmp_path / "dist", size="4m") as where:
        yield where


def _fill(dist: Path, *, leave: int) -> Callable[[], None]:
    """Fill ``dist``'s filesystem up to ``leave`` bytes free (another program's files)."""

    def fill() -> None:
        found = os.statvfs(dist)
        filler = dist / "logs" / "filler"
        filler.write_bytes(b"\0" * (found.f_bavail * found.f_frsize - leave))

    return fill


@pytest.mark.parametrize(
    "when",
    [
        "build:exit",  # while the container runs: the room for the wheel is checked after it
        "image_id",  # after the wheel was finished, as the receipt is made: publish checks
    ],
)
def test_a_full_dist_fails_the_publish_and_keeps_the_previous_set(
    small_dist: Path, when: str
) -> None:
    dist = small_dist
    build(FakeEngine.replaying(recording("success")), dist)
    (wheel,) = wheel_files(dist)
    before = contents(dist)

    engine = FakeEngine.replaying(recording("success"), world={when: _fill(dist, leave=64 << 10)})
    with pytest.raises(InputError) as caught:
        build(engine, dist)
    error = caught.value
    assert error.exit_code == 3
    line = error.line()
    assert line.startswith(f"no space left in {dist}: publishing "), line
    assert line.endswith(
        "; nothing was published. Free some space there (or inodes, or quota), or build into "
        "another --dist."
    ), line
    assert contents(dist) == before  # the previous wheel, receipt and env file, byte for byte
    assert wheel_files(dist) == [wheel]
    assert leftovers(dist) == []
    assert engine.containers == {}
