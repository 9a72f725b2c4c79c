"""An in-memory engine that REPLAYS what the real Docker engine was recorded doing, for the build's
orchestration tests (tests/build/test_orchestration.py) and the other stages that use an engine
(tests/build/test_engine_stages.py: doctor, tfbuild base; tests/smoke/test_loads_replayed.py;
tests/overlay/test_image_replayed.py): fast, and no engine needed.

It implements :class:`tfbuild.core.engine_protocol.Engine`. Every container it "runs" is a recorded
run of a real one (tests/fixtures/engine/<scenario>.json, made by ``python -m tests.engine_recorder``
from real canary builds and real containers of the test base image): the same lines, exit code,
``State.OOMKilled`` and duration, the wheel the real build left in /out, and the engine's error when
the container was removed from outside (the recorded ``docker.errors.NotFound`` or 409
``APIError``, turned into ContainerGone by the engine's own ``container_gone``). What the fake does
itself is what the engine promises (``Engine``'s docstrings): a container is removed after its run
unless kept, and on any exception; a volume that is part of another goes with it. Nothing else is
invented: a run with no recording left fails the test, naming it. tests/docker/test_engine_recordings.py
re-runs every scenario on the real engine and checks that the recordings still say what it does.

Runs are matched by kind (:func:`kind_of`): the build container, the toolchain image's package
list, the cache volume's chown, smoke's load probe, doctor's canary probe, the overlay image's facts
and a compile in it; each kind replays its recordings in the order given. Images: the toolchain
image, whatever its tag, is the recordings' one, there already (image builds are the real engine's
tests', tests/docker/test_engine.py); any other image is as the recording found it when first asked
(its id, or missing), then as the scenario made it (``import_image``, ``ensure_image``'s build); an
image no recording asked about fails the test. ``info()`` is the engine's recorded answer. The world
outside the engine (a signal, a disk filling up) acts through ``world``: callbacks keyed by a
moment, ``"build:3"`` (after the build container's third line), ``"build:exit"`` (once its lines
are out, before it ends) or an engine method's name (``"remove_volume"``: when the build calls it).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import docker.errors
import requests

from tfbuild.build.container import BUILD_LABEL
from tfbuild.core import serial
from tfbuild.core.defaults import TOOLCHAIN_REPOSITORY
from tfbuild.core.engine import (
    ContainerGone,
    EngineInfo,
    LineCallback,
    Mount,
    RunResult,
    container_gone,
    input_hash,
)
from tfbuild.core.files import held_signals
from tfbuild.overlay.image import FACTS
from tfbuild.plan import OUTPUT_DIR

#: Where the recordings live: one JSON file per scenario, and files/ (what containers left in /out).
RECORDINGS = Path(__file__).resolve().parent / "fixtures" / "engine"
FORMAT = "tfbuild-tests.engine-recording/1"
#: What the fake answers for the engine's address (the receipt records it).
ENDPOINT = "unix:///var/run/docker.sock"


@dataclass(frozen=True, kw_only=True)
class RecordedError:
    """What the engine raised: ``error`` (tfbuild's class) from ``cause`` (the docker SDK's)."""

    error: str  # ContainerGone
    why: str
    cause: str | None  # NotFound or APIError; None when the engine said "removing" or "dead"
    status_code: int | None
    message: str  # the SDK exception's message (its first argument)
    explanation: str | None


@dataclass(frozen=True, kw_only=True)
class RecordedRun:
    """One ``engine.run`` as the real engine answered it."""

    kind: str  # kind_of(): build, packages, prepare-cache, loadprobe, ..., container
    image: str
    command: tuple[str, ...]
    user: str | None
    mem_limit: str | None
    lines: tuple[str, ...]
    # How it ended: a result, or the engine's error (then no result).
    exit_code: int | None
    oom_killed: bool | None
    container_id: str
    duration_s: float | None
    error: RecordedError | None
    #: Files the container left in its output mount (/out), stored in files/<short id>/.
    left: tuple[str, ...] = ()

    @property
    def files(self) -> Path:
        return RECORDINGS / "files" / self.container_id[:12]

    def as_kind(self, kind: str) -> RecordedRun:
        """This run's answer given for a container of another kind (the engine's own OOM kill of
        a container of the base image, as the build container's)."""
        return replace(self, kind=kind)

    def result(self) -> RunResult:
        assert self.exit_code is not None and self.oom_killed is not None, self
        return RunResult(
            exit_code=self.exit_code,
            oom_killed=self.oom_killed,
            container_id=self.container_id,
            duration_s=self.duration_s or 0.0,
        )


@dataclass(frozen=True, kw_only=True)
class Recording:
    """A scenario as recorded: what was done, on which engine, and every container it ran."""

    format: str = FORMAT
    scenario: str
    how: str
    engine: str  # the engine's version and cgroup version when it was recorded
    toolchain_image_id: str | None  # what image_id() said of the toolchain image
    runs: tuple[RecordedRun, ...]
    #: Every other image the scenario asked about, as the engine had it when first asked: its id,
    #: or None (missing).
    images: dict[str, str | None] = field(default_factory=dict)
    #: The images the scenario made (``import_image``, or built by ``ensure_image``): their ids.
    made: dict[str, str] = field(default_factory=dict)
    #: What ``info()`` answered, when the scenario asked.
    info: EngineInfo | None = None

    def of_kind(self, kind: str) -> tuple[RecordedRun, ...]:
        return tuple(run for run in self.runs if run.kind == kind)

    def build(self, number: int = 1) -> RecordedRun:
        """The ``number``-th build container (1: the first attempt)."""
        return self.of_kind("build")[number - 1]


def recording(scenario: str, directory: Path = RECORDINGS) -> Recording:
    data = json.loads((directory / f"{scenario}.json").read_text())
    found = serial.from_data(data, Recording)
    assert found.format == FORMAT, found.format
    return found


def canary_wheel() -> Path:
    """The canary's wheel (the STAND-IN, for x86_64) that the ``success`` recording's build left in
    /out: what the recorded load and canary probes were given."""
    build = recording("success").build()
    (name,) = build.left
    return build.files / name


def save(found: Recording, directory: Path) -> Path:
    path = directory / f"{found.scenario}.json"
    path.write_text(json.dumps(serial.to_data(found), indent=2, ensure_ascii=False) + "\n")
    return path


#: The containers of the other stages, by their command's first two words.
_STAGE_KINDS = {
    ("python3", "/tfbuild/loadprobe.py"): "loadprobe",  # smoke --in-image (smoke.loads)
    ("python3", "/probe/probe.py"): "canary-probe",  # doctor's canary probe
    ("cat", FACTS): "overlay-facts",  # what the overlay's toolchain image holds (overlay.image)
}


def kind_of(command: Sequence[str], labels: Mapping[str, str] | None, user: str | None) -> str:
    """Which of tfbuild's containers a run is."""
    if BUILD_LABEL in (labels or {}):
        return "build"
    if list(command[:1]) == ["dpkg-query"]:
        return "packages"
    if user == "0:0" and "chown" in " ".join(command):
        return "prepare-cache"
    stage = _STAGE_KINDS.get(tuple(command[:2]))
    if stage is not None:
        return stage
    if command[:1] and command[0].startswith("clang"):
        return "compile"  # a compiler command in the overlay's toolchain image (InImage.toolchain)
    return "container"


#: What varies between two runs of the same scenario: numbers (times, counts, ids, sizes) and hex.
_VARYING = re.compile(r"[0-9a-f]{12,}|\d+(\.\d+)?")


def shape(lines: Sequence[str]) -> list[str]:
    """The lines build.sh itself says (``[tfbuild] ...``: phases, tools), numbers masked: what two
    runs of one scenario say alike, whatever bazel's own progress lines did meanwhile."""
    return [_VARYING.sub("#", line) for line in lines if line.startswith("[tfbuild] ")]


@dataclass
class Call:
    """One run the build asked for, as it asked."""

    kind: str
    image: str
    command: tuple[str, ...]
    mounts: tuple[Mount, ...]
    env: dict[str, str]
    user: str | None
    labels: dict[str, str]
    mem_limit: str | None
    keep: bool
    network_mode: str | None
    container_id: str = ""


@dataclass
class FakeEngine:
    """The engine, replaying ``runs`` (see the module's text). After a build, look at ``calls``,
    ``containers`` (those still there: kept or never removed), ``volumes`` and ``removed_volumes``."""

    runs: Sequence[RecordedRun]
    #: The answer of a kind when ``runs`` has none of it (left): as often as asked.
    defaults: Mapping[str, RecordedRun] = field(default_factory=dict)
    world: Mapping[str, Callable[[], None]] = field(default_factory=dict)
    toolchain_image_id: str | None = None
    #: The engine's images (their ids; None: asked about and missing), and those it will make.
    images: dict[str, str | None] = field(default_factory=dict)
    made: Mapping[str, str] = field(default_factory=dict)
    engine_info: EngineInfo | None = None
    endpoint: str = ENDPOINT

    calls: list[Call] = field(default_factory=list)
    containers: dict[str, Call] = field(default_factory=dict)
    volumes: dict[str, str | None] = field(default_factory=dict)  # name: the volume it is part of
    removed_volumes: list[str] = field(default_factory=list)
    _queues: dict[str, list[RecordedRun]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in self.world:
            kind, _, moment = key.partition(":")
            if moment:
                assert moment == "exit" or moment.isdigit(), key
            else:
                assert hasattr(self, kind), f"no engine method {kind!r} to act at"
        for run in self.runs:
            self._queues.setdefault(run.kind, []).append(run)

    @classmethod
    def replaying(
        cls,
        *runs: RecordedRun | Recording,
        world: Mapping[str, Callable[[], None]] | None = None,
    ) -> FakeEngine:
        """The runs of each recording given (whole scenarios, or single runs of one), in order.
        The toolchain image's package list and the cache volume's chown (made only for a user other
        than root), when none is given, are answered by the ``success`` and ``prepare-cache``
        recordings."""
        found: list[RecordedRun] = []
        image_id = None
        images: dict[str, str | None] = {}
        made: dict[str, str] = {}
        info = None
        for item in runs:
            if isinstance(item, Recording):
                found.extend(item.runs)
                image_id = image_id or item.toolchain_image_id
                images = {**item.images, **images}
                made = {**item.made, **made}
                info = info or item.info
            else:
                found.append(item)
        defaults = {
            "packages": recording("success").of_kind("packages")[0],
            "prepare-cache": recording("prepare-cache").of_kind("prepare-cache")[0],
        }
        return cls(
            runs=found,
            defaults=defaults,
            world=world or {},
            toolchain_image_id=image_id or recording("success").toolchain_image_id,
            images=images,
            made=made,
            engine_info=info,
        )

    def _act(self, moment: str) -> None:
        act = self.world.get(moment)
        if act is not None:
            act()

    # -- images ---------------------------------------------------------------------------------

    def info(self) -> EngineInfo:
        self._act("info")
        assert self.engine_info is not None, "no answer of the engine's info() was recorded"
        return self.engine_info

    def image_id(self, tag: str) -> str | None:
        self._act("image_id")
        if tag.startswith(f"{TOOLCHAIN_REPOSITORY}:"):
            return self.images.get(tag)  # there once ensure_image was asked for it
        assert tag in self.images, f"no recording asked the engine about the image {tag}"
        return self.images[tag]

    def image_exists(self, tag: str) -> bool:
        return self.image_id(tag) is not None

    def ensure_image(
        self,
        context: Path,
        *,
        repository: str,
        labels: dict[str, str] | None = None,
        on_line: LineCallback | None = None,
        build_args: dict[str, str] | None = None,
    ) -> tuple[str, bool]:
        """The image the real engine tags for ``context``: the toolchain image there already (the
        recordings' builds reused it), any other as recorded (there, or made by the scenario)."""
        self._act("ensure_image")
        tag = f"{repository}:{input_hash(context)[:16]}"
        if repository == TOOLCHAIN_REPOSITORY:
            self.images[tag] = self.toolchain_image_id
        if self.image_id(tag) is not None:
            return tag, False
        assert tag in self.made, f"no build of {tag} was recorded"
        self.images[tag] = self.made[tag]
        return tag, True

    def import_image(
        self, archive: Path, *, repository: str, tag: str, changes: Sequence[str] = ()
    ) -> str:
        self._act("import_image")
        name = f"{repository}:{tag}"
        assert archive.is_file(), archive
        assert name in self.made, f"no import of {name} was recorded"
        self.images[name] = self.made[name]
        return self.made[name]

    def push_image(self, tag: str, repository: str, *, on_line: LineCallback | None = None) -> str:
        raise AssertionError(f"no push of {tag} to {repository} was recorded")

    # -- containers -----------------------------------------------------------------------------

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
        self._act("run")
        kind = kind_of(command, labels, user)
        queue = self._queues.get(kind)
        if queue:
            recorded = queue.pop(0)
        elif kind in self.defaults:
            recorded = self.defaults[kind]
        else:
            raise AssertionError(f"no recorded {kind} run left for {' '.join(command)}")
        call = Call(
            kind=kind,
            image=image,
            command=tuple(command),
            mounts=tuple(mounts),
            env=dict(env or {}),
            user=user,
            labels=dict(labels or {}),
            mem_limit=mem_limit,
            keep=keep,
            network_mode=network_mode,
            container_id=recorded.container_id,
        )
        self.calls.append(call)
        self.containers[recorded.container_id] = call
        try:
            for number, line in enumerate(recorded.lines, start=1):
                if on_line is not None:
                    on_line(line)
                self._act(f"{kind}:{number}")
            self._act(f"{kind}:exit")
            if recorded.error is not None:
                raise _replayed_error(recorded)
            self._leave(recorded, mounts)
            if not keep:
                del self.containers[recorded.container_id]
            return recorded.result()
        except BaseException:
            with held_signals():  # as the engine: the container goes before the exception does
                self.remove_container(recorded.container_id)
            raise

    def _leave(self, recorded: RecordedRun, mounts: Sequence[Mount]) -> None:
        """What the real container left in its output mount, put where that mount is here."""
        if not recorded.left:
            return
        (out,) = (Path(m.source) for m in mounts if m.target == OUTPUT_DIR)
        for name in recorded.left:
            shutil.copyfile(recorded.files / name, out / name)

    def remove_container(self, container_id: str) -> None:
        self._act("remove_container")
        self.containers.pop(container_id, None)

    # -- volumes --------------------------------------------------------------------------------

    def ensure_volume(
        self, name: str, *, labels: Mapping[str, str] | None = None, part_of: str | None = None
    ) -> str:
        self._act("ensure_volume")
        self.volumes.setdefault(name, part_of)
        return name

    def remove_volume(self, name: str) -> None:
        self._act("remove_volume")
        for volume in [*(v for v, whole in self.volumes.items() if whole == name), name]:
            if volume in self.volumes:
                del self.volumes[volume]
                self.removed_volumes.append(volume)

    def unplayed(self) -> dict[str, int]:
        """The recorded runs of each kind that the build did not ask for."""
        return {kind: len(queue) for kind, queue in self._queues.items() if queue}


def _replayed_error(recorded: RecordedRun) -> BaseException:
    """The engine's recorded answer, as the SDK raised it, through the engine's own translation."""
    error = recorded.error
    assert error is not None
    response = requests.Response()
    if error.status_code is not None:
        response.status_code = error.status_code
    if error.cause is None:  # the container's state said it: no error of the SDK's
        return ContainerGone(recorded.container_id[:12], error.why)
    kinds = {"NotFound": docker.errors.NotFound, "APIError": docker.errors.APIError}
    cause = kinds[error.cause](error.message, response=response, explanation=error.explanation)
    gone = container_gone(recorded.container_id[:12], cause)
    assert gone is not None and type(gone).__name__ == error.error, (gone, error)
    assert gone.why == error.why, (gone.why, error.why)
    gone.__cause__ = cause
    return gone
