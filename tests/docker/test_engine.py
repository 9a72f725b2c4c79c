"""tfbuild.engine against the real Docker engine: builds, runs, mounts, limits and clean-up.

Every container a test makes carries its own ``org.tfbuild.test=<uuid>`` label, every image and volume
a unique name, and the fixtures remove them all, whatever the test's outcome.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tfbuild.engine import DEFAULT_SOCKET, DockerEngine, Mount
from tfbuild.errors import BuildFailed, EnvironmentProblem, UsageError

pytestmark = pytest.mark.docker


@dataclass
class Scratch:
    """What one test made, so that its teardown can remove it."""

    key: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    images: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    @property
    def labels(self) -> dict[str, str]:
        return {"org.tfbuild.test": self.key}

    @property
    def label(self) -> str:
        return f"org.tfbuild.test={self.key}"

    @property
    def repository(self) -> str:
        return f"tfbuild-test-engine-{self.key}"


@pytest.fixture
def scratch(engine: Any) -> Iterator[Scratch]:
    made = Scratch()
    yield made
    for container_id in engine.containers(label=made.label):
        engine.remove_container(container_id)
    for tag in made.images:
        engine.remove_image(tag)
    for volume in made.volumes:
        engine.remove_volume(volume)


def _context(root: Path, dockerfile: str, *, data: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "Dockerfile").write_text(dockerfile)
    (root / "data.txt").write_text(data)
    return root


# -- connection -----------------------------------------------------------------------------------


def test_connect_and_info(engine: Any) -> None:
    info = engine.info()
    assert info.server_version
    assert info.api_version
    assert info.storage_driver  # overlay2 here
    assert info.cgroup_version in {"1", "2"}
    assert info.docker_root_dir.startswith("/")
    if engine.endpoint.startswith("unix://"):
        assert info.free_disk_bytes is not None
        assert info.free_disk_bytes > 0
    assert info.to_json()["storage_driver"] == info.storage_driver


def test_unreachable_engine_names_the_socket_quickly(engine: Any) -> None:
    started = time.monotonic()
    with pytest.raises(EnvironmentProblem) as caught:
        DockerEngine.connect(base_url="unix:///nonexistent/docker.sock")
    assert time.monotonic() - started < 5
    line = caught.value.line()
    assert "unix:///nonexistent/docker.sock" in line
    assert "dockerd" in line
    assert "DOCKER_HOST" in line
    assert "\n" not in line
    assert caught.value.exit_code == 5


def test_default_endpoint_is_docker_host_or_the_default_socket(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/other.sock")
    with pytest.raises(EnvironmentProblem, match=re.escape("unix:///nonexistent/other.sock")):
        DockerEngine.connect()
    monkeypatch.delenv("DOCKER_HOST")
    if not Path(DEFAULT_SOCKET.removeprefix("unix://")).exists():
        with pytest.raises(EnvironmentProblem, match=re.escape(DEFAULT_SOCKET)):
            DockerEngine.connect()


# -- images ---------------------------------------------------------------------------------------


def test_build_streams_lines_while_it_runs_and_reuses_by_hash(
    engine: Any, base_image: str, scratch: Scratch, tmp_path: Path
) -> None:
    # The unique data file comes before the RUN, so the layer cache cannot skip the echo.
    context = _context(
        tmp_path / "ctx",
        f"FROM {base_image}\nCOPY data.txt /data.txt\nRUN echo hello-from-build && sleep 2\n",
        data=scratch.key,
    )
    seen: list[tuple[float, str]] = []
    tag, built_now = engine.ensure_image(
        context,
        repository=scratch.repository,
        labels=scratch.labels,
        on_line=lambda line: seen.append((time.monotonic(), line)),
    )
    returned = time.monotonic()
    scratch.images.append(tag)
    assert built_now
    assert tag == f"{scratch.repository}:{engine.input_hash(context)[:16]}"
    lines = [line for _, line in seen]
    hello = lines.index("hello-from-build")
    # The engine adds one LABEL step per label after ours, so only the step number is fixed.
    step = next(i for i, line in enumerate(lines) if line.startswith("Step 3/"))
    assert lines[step].endswith(" : RUN echo hello-from-build && sleep 2")
    assert step < hello
    assert any(line.startswith("Successfully built") for line in lines[hello:])
    # Streamed, not handed over at the end: the line came while the step was still sleeping.
    assert returned - seen[hello][0] > 1.0
    labels = engine._client.api.inspect_image(tag)["Config"]["Labels"]
    assert labels["org.tfbuild"] == "1"
    assert labels["org.tfbuild.test"] == scratch.key
    assert labels["org.tfbuild.input-hash"] == engine.input_hash(context)

    again, built_again = engine.ensure_image(context, repository=scratch.repository)
    assert (again, built_again) == (tag, False)
    assert engine.image_id(tag) == engine.image_id(again) is not None


def test_input_hash_follows_content_paths_modes_and_links(engine: Any, tmp_path: Path) -> None:
    context = _context(tmp_path / "a", "FROM scratch\n", data="one")
    (context / "tool.sh").write_text("#!/bin/sh\n")
    (context / "link").symlink_to("data.txt")
    first = engine.input_hash(context)
    assert engine.input_hash(context) == first
    # The same files elsewhere hash the same: only relative paths count.
    twin = _context(tmp_path / "b", "FROM scratch\n", data="one")
    (twin / "tool.sh").write_text("#!/bin/sh\n")
    (twin / "link").symlink_to("data.txt")
    assert engine.input_hash(twin) == first

    seen = {first}

    def changed() -> bool:
        digest = engine.input_hash(context)
        new = digest not in seen
        seen.add(digest)
        return new

    (context / "data.txt").write_text("two")
    assert changed()
    (context / "tool.sh").chmod(0o755)
    assert changed()
    (context / "link").unlink()
    (context / "link").symlink_to("Dockerfile")
    assert changed()
    (context / "empty").mkdir()
    assert changed()
    (context / "data.txt").rename(context / "renamed.txt")
    assert changed()


def test_failing_step_raises_build_failed_naming_it(
    engine: Any, base_image: str, scratch: Scratch, tmp_path: Path
) -> None:
    context = _context(tmp_path / "ctx", f"FROM {base_image}\nRUN echo about-to-fail && false\n")
    tag = f"{scratch.repository}:failing"
    scratch.images.append(tag)
    lines: list[str] = []
    with pytest.raises(BuildFailed) as caught:
        engine.build_image(context, tag=tag, on_line=lines.append)
    line = caught.value.line()
    assert "Step 2/3 : RUN echo about-to-fail && false" in line
    assert "about-to-fail" in line.split("last lines:")[1]
    assert "returned a non-zero code: 1" in lines[-1]
    assert not engine.image_exists(tag)


def test_interrupted_build_stops_and_leaves_no_build_container(
    engine: Any, base_image: str, scratch: Scratch, tmp_path: Path
) -> None:
    # No step before the RUN, so an interrupted build leaves no cached layer behind either.
    context = _context(tmp_path / "ctx", f"FROM {base_image}\nRUN echo {scratch.key} && sleep 60\n")
    tag = f"{scratch.repository}:interrupted"
    scratch.images.append(tag)

    def interrupt(line: str) -> None:
        if line == scratch.key:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.build_image(context, tag=tag, on_line=interrupt)

    def build_containers() -> list[str]:
        listed = engine._client.api.containers(all=True, filters={"ancestor": base_image})
        return [item["Id"] for item in listed if scratch.key in item["Command"]]

    # The engine cancels a build whose client hung up, and forcerm removes its container.
    deadline = time.monotonic() + 15
    while build_containers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert build_containers() == []
    assert not engine.image_exists(tag)


# -- containers -----------------------------------------------------------------------------------


def test_run_streams_output_in_order_and_returns_the_exit_code(
    engine: Any, base_image: str, scratch: Scratch
) -> None:
    lines: list[str] = []
    result = engine.run(
        base_image,
        ["sh", "-c", "echo a; echo b; printf unterminated; exit 3"],
        labels=scratch.labels,
        on_line=lines.append,
    )
    # The last line has no newline: a plain follow of the log would lose it on this engine.
    assert lines == ["a", "b", "unterminated"]
    assert result.exit_code == 3
    assert not result.oom_killed
    assert result.duration_s > 0
    assert engine.containers(label=scratch.label) == []


def test_run_passes_env_user_and_workdir(engine: Any, base_image: str, scratch: Scratch) -> None:
    lines: list[str] = []
    result = engine.run(
        base_image,
        ["sh", "-c", 'echo "$TFBUILD_GREETING"; pwd; id -u'],
        env={"TFBUILD_GREETING": "hello there"},
        workdir="/tmp",
        user="1234:1234",
        labels=scratch.labels,
        on_line=lines.append,
    )
    assert result.exit_code == 0
    assert lines == ["hello there", "/tmp", "1234"]


def test_bind_mount_written_by_the_user_is_owned_by_that_user(
    engine: Any, base_image: str, scratch: Scratch, tmp_path: Path
) -> None:
    # As root here, so a non-root user in the container proves the ownership does not come from us.
    uid, gid = (1000, 1000) if os.getuid() == 0 else (os.getuid(), os.getgid())
    out = tmp_path / "out"
    out.mkdir()
    os.chown(out, uid, gid)
    result = engine.run(
        base_image,
        ["sh", "-c", "echo built > /out/wheel.txt"],
        mounts=[Mount(str(out), "/out")],
        user=f"{uid}:{gid}",
        labels=scratch.labels,
    )
    assert result.exit_code == 0
    written = out / "wheel.txt"
    assert written.read_text() == "built\n"
    assert (written.stat().st_uid, written.stat().st_gid) == (uid, gid)


def test_read_only_mount_refuses_writes(
    engine: Any, base_image: str, scratch: Scratch, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "input.txt").write_text("keep me")
    lines: list[str] = []
    result = engine.run(
        base_image,
        ["sh", "-c", "cat /src/input.txt; echo; echo changed > /src/input.txt"],
        mounts=[Mount(str(source), "/src", read_only=True)],
        labels=scratch.labels,
        on_line=lines.append,
    )
    assert result.exit_code != 0
    # stdout and stderr are copied by separate goroutines of the engine: no order between them.
    assert "keep me" in lines
    assert any("Read-only file system" in line for line in lines)
    assert (source / "input.txt").read_text() == "keep me"


def test_keep_keeps_the_container_until_removed(
    engine: Any, base_image: str, scratch: Scratch
) -> None:
    result = engine.run(base_image, ["true"], labels=scratch.labels, keep=True)
    assert engine.containers(label=scratch.label) == [result.container_id]
    engine.remove_container(result.container_id)
    assert engine.containers(label=scratch.label) == []
    engine.remove_container(result.container_id)  # gone already is fine


def test_memory_limit_reports_the_oom_kill(engine: Any, base_image: str, scratch: Scratch) -> None:
    result = engine.run(
        base_image,
        ["python3", "-c", "b = bytearray(400 * 1024 * 1024)"],
        mem_limit="64m",
        labels=scratch.labels,
    )
    assert result.exit_code == 137
    assert result.oom_killed


def test_interrupt_while_streaming_removes_the_container(
    engine: Any, base_image: str, scratch: Scratch
) -> None:
    seen: list[str] = []

    def interrupt(line: str) -> None:
        seen.append(line)
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        engine.run(
            base_image,
            ["sh", "-c", "echo started; sleep 60"],
            labels=scratch.labels,
            on_line=interrupt,
        )
    assert seen == ["started"]
    assert engine.containers(label=scratch.label) == []
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("source", ["/var/run/docker.sock", "/run", "/"])
def test_mounting_the_docker_socket_is_refused(
    engine: Any, base_image: str, scratch: Scratch, source: str
) -> None:
    with pytest.raises(UsageError, match="Docker socket") as caught:
        engine.run(base_image, ["true"], mounts=[Mount(source, "/mnt")], labels=scratch.labels)
    assert f"refusing to mount {source}" in caught.value.line()
    assert engine.containers(label=scratch.label) == []


def test_missing_image_fails_without_pulling_or_leftovers(engine: Any, scratch: Scratch) -> None:
    with pytest.raises(BuildFailed, match="no such image"):
        engine.run(f"{scratch.repository}:missing", ["true"], labels=scratch.labels)
    assert engine.containers(label=scratch.label) == []


def test_named_volume_keeps_data_between_runs(
    engine: Any, base_image: str, scratch: Scratch
) -> None:
    name = engine.ensure_volume(f"{scratch.repository}-cache", labels=scratch.labels)
    scratch.volumes.append(name)
    assert engine.ensure_volume(name, labels=scratch.labels) == name
    cache = [Mount(name, "/cache", kind="volume")]
    engine.run(
        base_image, ["sh", "-c", "echo warm > /cache/state"], mounts=cache, labels=scratch.labels
    )
    lines: list[str] = []
    engine.run(
        base_image,
        ["cat", "/cache/state"],
        mounts=cache,
        labels=scratch.labels,
        on_line=lines.append,
    )
    assert lines == ["warm"]
