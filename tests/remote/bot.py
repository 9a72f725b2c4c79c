"""A minimal Remote Workers API bot for BuildGrid: it runs each leased action inside the Docker
image the action names, never on this host.

BuildGrid's own workers (buildbox-worker, buildbox-run-*) are C++ and not packaged here, so the
tests use this one. It speaks google.devtools.remoteworkers.v1test2 (CreateBotSession, then
UpdateBotSession as a long poll) with BuildGrid's generated protos and CAS client. How BuildGrid
0.4.4 reads a lease: ``lease.payload`` packs the ``Action`` (or its ``Digest``), and a completed
lease's ``status`` and ``result`` (an ``Any`` packing an ``ActionResult``) become the
ExecuteResponse (buildgrid/server/sql/models.py ``to_lease_proto``, buildgrid/server/scheduler/impl.py
``_synchronize_completed_leases`` and ``_complete_job``).

An action must carry the platform property ``container-image=docker://HOST/REPO@sha256:DIGEST``
(on its Action or, as bazel 4.2.3 sends it, its Command). Without one, or with an image not pinned
by digest, the lease completes with INVALID_ARGUMENT and nothing runs. Each run is logged as
``ran <action digest> in <image>``.

One lease at a time, synchronously: enough for tests, not a production worker.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import logging
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

import docker
import grpc  # type: ignore[import-untyped]
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as rex  # type: ignore[import-untyped]
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc  # type: ignore[import-untyped]
from buildgrid._protos.google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]
from buildgrid.server.client.cas import Downloader, Uploader  # type: ignore[import-untyped]

LOG = logging.getLogger("tfbuild-test-bot")
IMAGE_PROPERTY = "container-image"
#: docker://HOST[:PORT]/REPO@sha256:64 hex: an image by content, so the log proves what ran.
IMAGE = re.compile(r"^docker://(?P<ref>[^/\s]+/[^@\s]+@sha256:[0-9a-f]{64})$")
#: BuildGrid holds an UpdateBotSession open up to 80% of its deadline waiting for work.
POLL_SECONDS = 30.0
#: How long the bot waits before asking again when the server is busy or restarting.
RETRY_SECONDS = 0.5


class Refused(Exception):
    """An action this bot will not run; its message becomes the lease's status."""


def image_of(action: rex.Action, command: rex.Command) -> str:
    """The pinned image reference (HOST/REPO@sha256:...) from the Action's or Command's platform."""
    platform = action.platform if action.HasField("platform") else command.platform
    values = [p.value for p in platform.properties if p.name == IMAGE_PROPERTY]
    if not values:
        raise Refused(
            f"no '{IMAGE_PROPERTY}' platform property: this executor runs actions only inside an "
            "image; pass --remote_default_exec_properties="
            f"{IMAGE_PROPERTY}=docker://HOST/REPO@sha256:DIGEST"
        )
    match = IMAGE.match(values[0])
    if len(values) > 1 or match is None:
        raise Refused(
            f"'{IMAGE_PROPERTY}' is {values}: it must be one docker://HOST/REPO@sha256:DIGEST "
            "(an image pinned by digest)"
        )
    return match["ref"]


def declared_outputs(command: rex.Command) -> list[str]:
    """REAPI v2.1+ ``output_paths``, or the older ``output_files`` + ``output_directories``
    (bazel 4.2.3 sends these)."""
    if command.output_paths:
        return list(command.output_paths)
    return [*command.output_files, *command.output_directories]


def run_in_image(
    client: docker.DockerClient, image: str, command: rex.Command, root: Path
) -> tuple[int, bytes, bytes]:
    """The command's argv in ``image``: the input root mounted at its own path, no network."""
    client.images.pull(image)
    container = client.containers.run(
        image,
        command=list(command.arguments),
        detach=True,
        environment={v.name: v.value for v in command.environment_variables},
        network_mode="none",
        user=f"{os.getuid()}:{os.getgid()}",
        volumes={str(root): {"bind": str(root), "mode": "rw"}},
        working_dir=str(root / command.working_directory),
        labels={"tfbuild.test": "remote-bot"},
    )
    try:
        exit_code = int(container.wait()["StatusCode"])
        stdout = container.logs(stdout=True, stderr=False)
        stderr = container.logs(stdout=False, stderr=True)
    finally:
        container.remove(force=True)
    return exit_code, stdout, stderr


def upload_outputs(
    uploader: Uploader, command: rex.Command, workdir: Path, result: rex.ActionResult
) -> None:
    """Each declared output that exists, as a file or as a Tree; missing outputs are left out
    (the client then reports them missing, as the REAPI says)."""
    for relative in declared_outputs(command):
        path = workdir / relative
        if path.is_dir() and not path.is_symlink():
            tree = uploader.upload_tree(str(path), queue=False)
            result.output_directories.add(path=relative, tree_digest=tree)
        elif path.is_file():
            digest = uploader.upload_file(str(path), queue=False)
            executable = os.access(path, os.X_OK)
            result.output_files.add(path=relative, digest=digest, is_executable=executable)


def execute(
    lease: bots_pb2.Lease, channel: grpc.Channel, instance: str, scratch: Path
) -> tuple[status_pb2.Status, rex.ActionResult]:
    """One lease, start to end: its status and, when it ran, its ActionResult."""
    downloader = Downloader(channel, instance=instance)
    uploader = Uploader(channel, instance=instance)
    action = rex.Action()
    if lease.payload.Is(rex.Action.DESCRIPTOR):
        lease.payload.Unpack(action)
    else:
        digest = rex.Digest()
        lease.payload.Unpack(digest)
        downloader.get_message(digest, action)
    blob = action.SerializeToString()
    name = f"{hashlib.sha256(blob).hexdigest()}/{len(blob)}"
    command = downloader.get_message(action.command_digest, rex.Command())
    try:
        image = image_of(action, command)
    except Refused as refused:
        LOG.warning("refused %s: %s", name, refused)
        return status_pb2.Status(
            code=code_pb2.INVALID_ARGUMENT, message=str(refused)
        ), rex.ActionResult()
    root = Path(tempfile.mkdtemp(prefix="input-root-", dir=scratch))
    try:
        downloader.download_directory(action.input_root_digest, str(root))
        workdir = root / command.working_directory
        for relative in declared_outputs(command):
            (workdir / relative).parent.mkdir(parents=True, exist_ok=True)
        exit_code, stdout, stderr = run_in_image(docker.from_env(), image, command, root)
        LOG.info("ran %s in %s: exit code %d", name, image, exit_code)
        result = rex.ActionResult(exit_code=exit_code)
        result.stdout_digest.CopyFrom(uploader.put_blob(io.BytesIO(stdout)))
        result.stderr_digest.CopyFrom(uploader.put_blob(io.BytesIO(stderr)))
        upload_outputs(uploader, command, workdir, result)
        uploader.flush()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        downloader.close()
        uploader.close()
    return status_pb2.Status(code=code_pb2.OK), result


def work_on(
    session: bots_pb2.BotSession, channel: grpc.Channel, instance: str, scratch: Path
) -> None:
    """Complete every active lease in ``session``, in place."""
    for lease in session.leases:
        if lease.state != bots_pb2.LeaseState.ACTIVE:
            continue
        try:
            status, result = execute(lease, channel, instance, scratch)
        except Exception as error:  # a broken action must not kill the bot; the client hears why
            LOG.exception("lease %s failed", lease.id)
            status, result = status_pb2.Status(code=code_pb2.UNKNOWN, message=str(error)), None
        lease.state = bots_pb2.LeaseState.COMPLETED
        lease.status.CopyFrom(status)
        if result is not None:
            lease.result.Pack(result)


def serve(remote: str, instance: str, scratch: Path) -> None:
    """Create a bot session, then long-poll UpdateBotSession forever, working leases as they come."""
    channel = grpc.insecure_channel(remote.removeprefix("grpc://"))
    bots = bots_pb2_grpc.BotsStub(channel)
    bot_id = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    session = bots.CreateBotSession(
        bots_pb2.CreateBotSessionRequest(
            parent=instance,
            bot_session=bots_pb2.BotSession(bot_id=bot_id, status=bots_pb2.BotStatus.OK),
        ),
        timeout=10,
    )
    LOG.info("bot session %s on %s, instance %r", session.name, remote, instance)
    while True:
        work_on(session, channel, instance, scratch)
        try:
            session = bots.UpdateBotSession(
                bots_pb2.UpdateBotSessionRequest(name=session.name, bot_session=session),
                timeout=POLL_SECONDS,
            )
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                continue  # no reply in time: keep the session as it was and ask again
            if error.code() not in (
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                grpc.StatusCode.UNAVAILABLE,
            ):
                raise
            # The server is busy (its concurrent RPC limit) or restarting: a bot waits and asks
            # again with the same session, as REAPI's bots do, instead of dying mid-build.
            LOG.warning(
                "UpdateBotSession: %s; asking again in %.1f s", error.code().name, RETRY_SECONDS
            )
            time.sleep(RETRY_SECONDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--remote", required=True, help="grpc://HOST:PORT of BuildGrid's bots service"
    )
    parser.add_argument("--instance", required=True, help="the REAPI instance name")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    serve(args.remote, args.instance, args.scratch)


if __name__ == "__main__":
    main()
