"""Real remote execution on this machine: the host's bazel (Debian's 4.2.3) sends an action to
BuildGrid, whose bot runs it inside the image the action names, pulled by digest from a local
registry, and never on the host.

The image carries a marker file with random text that exists nowhere else; the action copies it
into its output, so an output holding that text was made inside that image. The bot's log names
the image digest each action ran in.
"""

from __future__ import annotations

import io
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.remote.conftest import RemoteExecutor

MARKER = "/etc/remote-marker"
GENRULE = """\
genrule(
    name = "probe",
    outs = ["probe.txt"],
    cmd = "{cmd}",
)
"""


@pytest.fixture(scope="module")
def marked_image(engine: Any, base_image: str, registry: str) -> Iterator[tuple[str, str]]:
    """(marker text, HOST/REPO@sha256:DIGEST): a one-file image over the base, pushed to the test
    registry; the local image is removed afterwards (the registry goes with its directory)."""
    client = docker.from_env()
    marker = f"tfbuild-remote-{uuid.uuid4().hex}"
    repository = f"{registry}/tfbuild-test-remote-{uuid.uuid4().hex[:8]}"
    dockerfile = f"FROM {base_image}\nRUN echo {marker} > {MARKER}\n"
    image, _ = client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()), tag=f"{repository}:test", rm=True
    )
    try:
        client.images.push(repository, tag="test")
        image.reload()
        digests = [d for d in image.attrs["RepoDigests"] if d.startswith(f"{repository}@")]
        assert digests, image.attrs["RepoDigests"]
        yield marker, digests[0]
    finally:
        client.images.remove(image.id, force=True)
        client.close()


def bazel_build(
    bazel: str, tmp_path: Path, remote: RemoteExecutor, cmd: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    """A one-genrule workspace built with every action remote, from a fresh output base."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "WORKSPACE").write_text("")
    (workspace / "BUILD").write_text(GENRULE.format(cmd=cmd))
    argv = [bazel, f"--output_base={tmp_path / 'output'}", "--max_idle_secs=30", "build"]
    argv += ["--color=no", "--curses=no", "--spawn_strategy=remote"]
    argv += [f"--remote_executor={remote.url}", f"--remote_instance_name={remote.instance}"]
    argv += [*flags, "//:probe"]
    return subprocess.run(
        argv, cwd=workspace, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.docker
@pytest.mark.slow
def test_an_action_runs_in_the_image_it_names(
    real_bazel: str,
    remote_executor: RemoteExecutor,
    marked_image: tuple[str, str],
    tmp_path: Path,
) -> None:
    marker, image = marked_image
    assert not Path(MARKER).exists(), "the marker must exist only in the image"
    built = bazel_build(
        real_bazel,
        tmp_path,
        remote_executor,
        f"cat {MARKER} > $@; uname -a >> $@; cat /etc/os-release >> $@",
        f"--remote_default_exec_properties=container-image=docker://{image}",
    )
    assert built.returncode == 0, built.stderr
    # bazel's own count: the genrule ran remotely, nothing locally.
    assert "INFO: 2 processes: 1 internal, 1 remote." in built.stderr
    output = (tmp_path / "workspace" / "bazel-bin" / "probe.txt").read_text()
    assert output.splitlines()[0] == marker
    assert "Debian GNU/Linux 12 (bookworm)" in output
    # The bot says which image, by digest, the action ran in.
    assert f" in {image}: exit code 0" in remote_executor.bot_log.read_text()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        ((), "no 'container-image' platform property"),
        (("--remote_default_exec_properties=container-image=docker://{tag}",), "pinned by digest"),
    ],
    ids=["no-image", "image-by-tag"],
)
def test_an_action_without_a_pinned_image_is_refused_and_never_runs(
    real_bazel: str,
    remote_executor: RemoteExecutor,
    marked_image: tuple[str, str],
    tmp_path: Path,
    flags: tuple[str, ...],
    reason: str,
) -> None:
    """The bot completes the lease with an error instead of running the command anywhere: the
    command would have touched a file on the host (and the bot's host has it nowhere)."""
    _, image = marked_image
    tag = image.split("@", 1)[0] + ":test"
    sentinel = tmp_path / "ran-on-host"
    before = remote_executor.bot_log.read_text()
    built = bazel_build(
        real_bazel,
        tmp_path,
        remote_executor,
        f"touch {sentinel}; echo x > $@",
        *(flag.format(tag=tag) for flag in flags),
    )
    assert built.returncode != 0
    assert reason in built.stderr, built.stderr
    assert "INFO: 2 processes: 2 internal." in built.stderr
    assert not sentinel.exists()
    added = remote_executor.bot_log.read_text()[len(before) :]
    assert " WARNING refused " in added and reason in added
    assert " INFO ran " not in added
