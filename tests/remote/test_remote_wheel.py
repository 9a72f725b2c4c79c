"""Remote execution that really runs: ``tfbuild wheel --remote-executor`` on the canary, with every
action executed by a worker of a real Remote Execution API service, inside the toolchain image
tfbuild pushed.

All on this machine's loopback (tests/remote/conftest.py): Debian's docker-registry, BuildGrid
(execution, bots, operations, CAS and action cache; its scheduler on a throwaway PostgreSQL) and the
bot of ``tests.remote.bot``, which pulls the image an action names by digest and runs the action in
it with ``docker run``. BuildGrid's own workers (buildbox) are not packaged for this machine; see
tests/remote/bot.py.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import as_a_process
from tests.docker.test_remote_cache import SilentServer, git_checkout, wheel
from tests.docker.test_wheel import wheel_args
from tests.remote.conftest import RemoteExecutor
from tests.remote.services import free_port

#: The bot's line for each action it ran (tests/remote/bot.py).
RAN = re.compile(r"ran (\S+) in (\S+): exit code (\d+)")


def manifest(reference: str) -> dict[str, Any]:
    """The registry's image manifest for HOST/REPO@DIGEST (Docker's schema 2, as pushed)."""
    host, _, rest = reference.partition("/")
    repository, _, digest = rest.partition("@")
    request = urllib.request.Request(
        f"http://{host}/v2/{repository}/manifests/{digest}",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        found: dict[str, Any] = json.load(response)
    return found


@pytest.mark.docker
@pytest.mark.slow
def test_every_canary_action_runs_on_the_remote_worker_in_the_pushed_toolchain_image(
    engine: Any, base_image: str, remote_executor: RemoteExecutor, registry: str, tmp_path: Path
) -> None:
    volume = f"tfbuild-test-rex-{uuid.uuid4().hex[:10]}"
    ran_before = len(RAN.findall(remote_executor.bot_log.read_text()))
    try:
        receipt, built = wheel(
            git_checkout(tmp_path),
            tmp_path / "dist",
            volume,
            "--no-disk-cache",
            "--remote-executor",
            remote_executor.url,
            "--remote-instance",
            remote_executor.instance,
            "--push-toolchain",
            registry,
        )
    finally:
        engine.remove_volume(volume)
    inputs = receipt["inputs"]

    # The pushed image is the toolchain image, by content: the registry's manifest for that digest
    # names the local image's id as its config. The push left no registry tag on the engine.
    exec_image = inputs["exec_image"]
    assert re.fullmatch(
        rf"{re.escape(registry)}/tfbuild/toolchain@sha256:[0-9a-f]{{64}}", exec_image
    )
    assert manifest(exec_image)["config"]["digest"] == inputs["toolchain_image_id"]
    tag = inputs["toolchain_image"].rpartition(":")[2]
    assert not engine.image_exists(f"{registry}/tfbuild/toolchain:{tag}")
    assert engine.image_id(inputs["toolchain_image"]) == inputs["toolchain_image_id"]

    # The plan asked for remote execution as TensorFlow's own rbe_base config does.
    options = receipt["plan"]["build_options"]
    for option in (
        f"--remote_executor={remote_executor.url}",
        f"--remote_instance_name={remote_executor.instance}",
        "--spawn_strategy=remote,worker,standalone,local",
        "--remote_download_toplevel",
    ):
        assert option in options
    assert receipt["plan"]["resources"]["jobs"] == 800  # bazel's --jobs=800, made from it

    # bazel's own count: the four actions (two compiles, the link, the wheel) ran remotely.
    log = Path(receipt["log"]).read_text()
    assert "INFO: 5 processes: 1 internal, 4 remote." in log, receipt["processes"]
    assert receipt["processes"]["remote"] == 4 and "local" not in receipt["processes"]
    assert f"[tfbuild] remote actions run in: {exec_image}" in log

    # ... and the worker ran each of them in that image, by digest, successfully.
    ran = RAN.findall(remote_executor.bot_log.read_text())[ran_before:]
    engine.remove_image(exec_image)  # the worker's pull, on this same engine
    assert len(ran) == 4, ran
    assert {(image, code) for _, image, code in ran} == {(exec_image, "0")}

    # What came back is the planned build: the compile used the plan's flags.
    built_wheel = Path(json.loads(built.stdout)["wheel"])
    with zipfile.ZipFile(built_wheel) as archive:
        flags = next(n for n in archive.namelist() if n.endswith("/BUILD_FLAGS"))
        assert archive.read(flags).decode().split() == receipt["plan"]["cflags"]


@pytest.mark.docker
def test_a_registry_that_cannot_be_reached_is_one_line_before_any_compile(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """The push fails (nothing listens on the port): exit 5 with the registry named, no traceback,
    and the build container never started."""
    volume = f"tfbuild-test-rex-{uuid.uuid4().hex[:10]}"
    registry = f"127.0.0.1:{free_port()}"
    executor = SilentServer()  # listens (tfbuild's connect succeeds); bazel never gets to it
    argv = wheel_args(
        tmp_path / "dist",
        volume,
        "--remote-executor",
        executor.url,
        "--push-toolchain",
        registry,
    )
    try:
        built = as_a_process(argv, dict(os.environ), timeout=900)
    finally:
        executor.close()
        engine.remove_volume(volume)
    assert built.returncode == 5, built.stderr
    errors = [line for line in built.stderr.splitlines() if line.startswith("tfbuild: error:")]
    assert len(errors) == 1 and f"cannot push {registry}/tfbuild/toolchain:" in errors[0]
    assert "Traceback" not in built.stderr
    log = next((tmp_path / "dist" / "logs").glob("*.log")).read_text()
    assert "[tfbuild] phase: compile" not in log
