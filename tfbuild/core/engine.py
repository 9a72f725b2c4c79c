"""The Docker engine: the one module that talks to Docker.

Everything else in tfbuild hands this module plain values (a build context directory, an image tag,
a command, mounts) and gets frozen results back. It uses the docker SDK, with two deliberate choices:

- Image builds go through the low-level ``client.api.build(..., decode=True)``: the high-level
  ``images.build`` swallows the whole stream and only returns at the end, so there would be no live
  progress. The SDK cannot use BuildKit either (docker/docker-py#2230), so Dockerfiles stay legacy-builder
  syntax; the heavy work (bazel) runs in a container from a small toolchain image instead.
- Containers are created and started separately (never ``containers.run``, which pulls a missing image
  and leaves a created container behind when the start fails), and are removed on every way out.

Every container, built image and volume made here carries the label ``org.tfbuild=1``, so leftovers
can be found (``docker ps -a --filter label=org.tfbuild=1``).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import docker
import docker.errors
import docker.types
import requests

from tfbuild.core.controls import printable, printable_line
from tfbuild.core.defaults import BASE_LABEL
from tfbuild.core.engine_objects import (
    INPUT_HASH_LABEL,
    LABEL,
    PART_OF_LABEL,
    RUN_LABEL,
    KeptImage,
    KeptVolume,
    engine_time,
    input_hash,
    own_labels,
)
from tfbuild.core.errors import (
    BuildFailed,
    EnvironmentProblem,
    InputError,
    TfbuildError,
    UsageError,
)
from tfbuild.core.files import held_signals
from tfbuild.core.image_failure import StepOutput, one_reason
from tfbuild.core.rounded import round_fields

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
# Where Docker's socket usually lives; the engine's own unix socket is added at connect time.
_SOCKET_PATHS = ("/var/run/docker.sock", "/run/docker.sock")
_FIX_CONNECT = (
    "Start the daemon (sudo systemctl start docker, or dockerd & as root), check that your user is "
    "in the docker group (sudo usermod -aG docker $USER, then log in again), "
    "or set DOCKER_HOST to the engine's address."
)
# Errors meaning "the engine went away or never answered", as opposed to "the engine said no".
_UNREACHABLE = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)

LineCallback = Callable[[str], None]


def _ignore(_line: str) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class EngineInfo:
    """What the engine says about itself, plus the free disk under its root directory."""

    endpoint: str
    server_version: str
    api_version: str
    storage_driver: str
    cgroup_version: str
    cgroup_driver: str
    docker_root_dir: str
    free_disk_bytes: int | None  # None when the engine is not on this machine
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Mount:
    """A host directory (``bind``) or a named volume (``volume``) seen at ``target`` in the container."""

    source: str
    target: str
    read_only: bool = False
    kind: Literal["bind", "volume"] = "bind"


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """How a container ended."""

    exit_code: int
    oom_killed: bool
    container_id: str
    duration_s: float

    def __post_init__(self) -> None:
        round_fields(self, "duration_s")  # written to the millisecond


class _Lines:
    """Turns chunks of text (or bytes) cut anywhere into whole lines, without the newline, each
    given to ``emit`` once whole."""

    def __init__(self, emit: LineCallback) -> None:
        # Incremental, so that a UTF-8 character split across two chunks decodes once whole.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._emit = emit

    def feed(self, chunk: str | bytes) -> None:
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._emit(line.rstrip("\r"))

    def flush(self) -> None:
        rest = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        if rest:
            self._emit(rest.rstrip("\r"))


class PushFailed(EnvironmentProblem):
    """A registry refused the toolchain image, or could not be reached."""

    def __init__(self, target: str, error: str) -> None:
        super().__init__(
            f"cannot push {target}",
            why=one_reason(error),
            fix="Check that the registry is up and reachable from the Docker engine, and log the "
            "engine in if it needs credentials (docker login HOST); a plain-HTTP registry other "
            "than 127.0.0.1 must be in the engine's insecure-registries.",
        )


def _chunk_error(chunk: Mapping[str, Any]) -> str | None:
    """The engine's error in one chunk of a build or push stream (plain text), else None."""
    if "error" not in chunk and "errorDetail" not in chunk:
        return None
    return printable(str(chunk.get("error") or chunk.get("errorDetail", {}).get("message", "")))


#: A manifest digest as a registry reports it.
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _why_unreachable(exc: BaseException, timeout: float) -> str:
    """The short reason behind the SDK's long nested connection error."""
    text = str(exc)
    for needle, why in (
        ("No such file or directory", "there is no socket there"),
        ("Permission denied", "permission denied on the socket"),
        ("Connection refused", "the connection was refused (the daemon is not running)"),
        ("timed out", f"no answer within {timeout:g} s"),
    ):
        if needle in text:
            return why
    return " ".join(text.split())[:300]


def _unix_socket(endpoint: str) -> str | None:
    return endpoint.removeprefix("unix://") if endpoint.startswith("unix://") else None


#: The longest path a Unix socket can be reached by, in bytes (sockaddr_un's 108 on Linux, less
#: the NUL that ends it).
_SOCKET_PATH_MAX = 107


def _probe_socket(endpoint: str, timeout: float) -> None:
    """Connect to a unix socket and hang up, raising the OSError when that fails.

    docker-py's UnixHTTPConnection.connect leaks its socket when connect() fails (7.1), which shows
    up as a ResourceWarning; asking first, with a socket that is always closed, avoids that and
    gives the plain errno (no such file, permission denied, refused) for the message. A path too
    long for any socket (a socket in a deep directory: a checkout's, a long $TMPDIR's) is said as
    that, not as an engine that is not running.
    """
    path = _unix_socket(endpoint)
    if path is None:
        return
    size = len(os.fsencode(path))
    if size > _SOCKET_PATH_MAX:
        raise EnvironmentProblem(
            f"cannot reach the Docker engine at {endpoint}",
            why=f"the socket's path is {size} bytes, and a Unix socket's may have at most "
            f"{_SOCKET_PATH_MAX}",
            fix=f"Link a shorter path to it (ln -s {path} /tmp/docker.sock) and set "
            "DOCKER_HOST=unix:///tmp/docker.sock.",
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        probe.connect(path)


#: A container's states once something removes it (``docker rm -f``).
_REMOVED = ("removing", "dead")


class ContainerGone(BuildFailed):
    """A running container was removed by someone else (``docker rm -f``)."""

    def __init__(self, short_id: str, why: str) -> None:
        super().__init__(
            f"the container {short_id} was removed from outside while it ran (docker rm -f?)",
            why=why,
            fix="Find what removes containers on this engine (docker events), then rerun.",
        )
        self.short_id = short_id


def container_gone(short_id: str, exc: docker.errors.APIError) -> ContainerGone | None:
    """The engine's answer ``exc`` about a container it was following, as ContainerGone when it
    means the container was removed ("no such container", 409 "dead or marked for removal", "in
    progress"); None for any other answer. (tests/engine_fake.py replays recorded answers here.)"""
    if isinstance(exc, docker.errors.NotFound):
        return ContainerGone(short_id, "the engine no longer knows it")
    if exc.status_code == 409:
        return ContainerGone(short_id, one_reason(str(exc.explanation or exc)))
    return None


def _unless_used(remove: Callable[..., Any], name: str) -> bool:
    """``remove(name)`` unless a container uses it (False then: the engine's 409); gone is fine."""
    try:
        remove(name, force=False)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code == 409:
            return False
        raise
    return True


class DockerEngine:
    """A connected Docker engine. Make one with :meth:`connect`; :meth:`close` it when done."""

    def __init__(self, client: Any, *, endpoint: str) -> None:
        self._client = client
        self.endpoint = endpoint
        own = _unix_socket(endpoint)
        self._local = own is not None or endpoint.startswith("npipe://")
        self._sockets = {os.path.realpath(path) for path in (*_SOCKET_PATHS, own) if path}

    # -- connection ---------------------------------------------------------------------------

    @classmethod
    def connect(cls, *, base_url: str | None = None, timeout: float = 30) -> DockerEngine:
        """Connect to ``base_url``, or to what DOCKER_HOST (or the default socket) names, and ping it."""
        endpoint = base_url or os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET
        client = None
        try:
            _probe_socket(endpoint, timeout)
            # The client asks the engine for its API version right here, so a dead socket fails at
            # once (connection refused / no such file) and a hung engine after `timeout` seconds.
            if base_url:
                client = docker.DockerClient(base_url=base_url, timeout=timeout)
            else:
                client = docker.from_env(timeout=timeout)
            client.ping()
        except EnvironmentProblem:
            raise  # a socket's path too long
        except Exception as exc:  # the SDK wraps everything differently; each means "not reachable"
            if client is not None:
                client.close()
            raise EnvironmentProblem(
                f"cannot reach the Docker engine at {endpoint}",
                why=_why_unreachable(exc, timeout),
                fix=_FIX_CONNECT,
            ) from exc
        return cls(client, endpoint=endpoint)

    def close(self) -> None:
        self._client.close()

    @contextlib.contextmanager
    def _talking(self, what: str) -> Iterator[None]:
        """Turn "the engine went away" during ``what`` into an EnvironmentProblem."""
        try:
            yield
        except _UNREACHABLE as exc:
            raise EnvironmentProblem(
                f"lost the Docker engine at {self.endpoint} while {what}",
                why=_why_unreachable(exc, self._client.api.timeout),
                fix=_FIX_CONNECT,
            ) from exc

    def info(self) -> EngineInfo:
        with self._talking("asking for its version"):
            data = self._client.info()
            version = self._client.version()
        root = str(data.get("DockerRootDir", ""))
        return EngineInfo(
            endpoint=self.endpoint,
            server_version=str(data.get("ServerVersion") or version.get("Version", "")),
            api_version=str(version.get("ApiVersion", "")),
            storage_driver=str(data.get("Driver", "")),
            # CgroupVersion arrived with cgroup v2 support (API 1.40); older engines only know v1.
            cgroup_version=str(data.get("CgroupVersion") or "1"),
            cgroup_driver=str(data.get("CgroupDriver", "")),
            docker_root_dir=root,
            free_disk_bytes=self._free_disk(root),
            warnings=tuple(str(w) for w in data.get("Warnings") or ()),
        )

    def _free_disk(self, root: str) -> int | None:
        # A remote engine's root directory is not this machine's; the same path here would lie.
        if not (self._local and root):
            return None
        try:
            return shutil.disk_usage(root).free
        except OSError:
            return None

    # -- images -------------------------------------------------------------------------------

    def image_id(self, tag: str) -> str | None:
        with self._talking(f"looking up image {tag}"):
            try:
                return str(self._client.api.inspect_image(tag)["Id"])
            except docker.errors.ImageNotFound:
                return None

    def image_labels(self, tag: str) -> dict[str, str] | None:
        """The image's labels ({} when it has none); None when there is no such image."""
        with self._talking(f"looking up image {tag}"):
            try:
                config = self._client.api.inspect_image(tag).get("Config") or {}
            except docker.errors.ImageNotFound:
                return None
        return {str(k): str(v) for k, v in (config.get("Labels") or {}).items()}

    def image_exists(self, tag: str) -> bool:
        return self.image_id(tag) is not None

    def remove_image(self, tag: str) -> None:
        """Untag ``tag`` (and delete its layers when nothing else uses them); a missing tag is fine."""
        with self._talking(f"removing image {tag}"), contextlib.suppress(docker.errors.NotFound):
            self._client.api.remove_image(tag)

    def kept_images(self) -> list[KeptImage]:
        """Every image tfbuild made (its label), dangling ones too."""
        with self._talking("listing images"):
            images = {
                str(i["Id"]): i
                for label in (f"{LABEL}=1", BASE_LABEL)  # tfbuild base's carry their own
                for i in self._client.api.images(all=False, filters={"label": label})
            }.values()
            running = self._client.api.containers(filters={"status": "running"})
        used = {str(c.get("ImageID", "")) for c in running}
        return [
            KeptImage(
                id=str(i["Id"]),
                tags=tuple(t for t in i.get("RepoTags") or () if t != "<none>:<none>"),
                size=int(i.get("Size") or 0),
                created=float(i.get("Created") or 0),
                in_use=str(i["Id"]) in used,
            )
            for i in images
        ]

    def remove_unused_image(self, image: KeptImage) -> bool:
        """Remove the image (each of its tags, then its layers) unless a container, running or
        stopped, uses it (False then, and it keeps its tags); gone already is fine."""
        with self._talking(f"removing image {image.id[:19]}"):
            remove = self._client.api.remove_image
            return all(_unless_used(remove, name) for name in (*image.tags, image.id))

    def build_image(
        self,
        context: Path,
        *,
        tag: str,
        labels: dict[str, str] | None = None,
        on_line: LineCallback | None = None,
        build_args: dict[str, str] | None = None,
    ) -> str:
        """Build ``context``/Dockerfile as ``tag``, streaming the output to ``on_line``; the image id."""
        if not (context / "Dockerfile").is_file():
            raise InputError(
                f"cannot build image {tag} from {context}",
                why="there is no Dockerfile in that directory",
                fix="Render the build context first (tfbuild render), or pass its directory.",
            )
        with self._talking(f"building image {tag}"):
            try:
                chunks = self._client.api.build(
                    path=str(context),
                    tag=tag,
                    labels={**own_labels(), **(labels or {}), LABEL: "1"},
                    buildargs=build_args,
                    rm=True,
                    forcerm=True,  # intermediate containers go even when a step fails
                    pull=False,  # base images are local (docker import); there is no registry
                    decode=True,
                )
                try:
                    self._follow_build(chunks, tag=tag, emit=on_line or _ignore)
                finally:
                    chunks.close()  # drops the HTTP response at once when we stop early
            except docker.errors.APIError as exc:  # refused before any step ran (bad context, ...)
                raise BuildFailed(
                    f"building image {tag} failed",
                    why=str(exc.explanation or exc),
                    fix="Check the Dockerfile in the build context.",
                ) from exc
        image = self.image_id(tag)
        if image is None:  # the stream ended without an error, yet no image: the engine went away?
            raise BuildFailed(
                f"building image {tag} ended without an image",
                fix="Check that the Docker engine is still running and rerun.",
            )
        return image

    @staticmethod
    def _follow_build(chunks: Iterable[dict[str, Any]], *, tag: str, emit: LineCallback) -> None:
        log = StepOutput()

        def say(line: str) -> None:
            log.note(line)
            emit(line)

        lines = _Lines(lambda line: say(printable_line(line)))
        for chunk in chunks:
            lines.feed(chunk.get("stream", ""))
            if chunk.get("status"):  # e.g. "Downloading" lines, one status per chunk
                say(" ".join(str(chunk[key]) for key in ("status", "progress") if chunk.get(key)))
            error = _chunk_error(chunk)
            if error is not None:
                lines.flush()
                # Not the builder's "The command '<the whole RUN again>' returned ...".
                emit(f"[the step failed: {one_reason(error)}]")
                raise log.failure(tag, error)
        lines.flush()

    def ensure_image(
        self,
        context: Path,
        *,
        repository: str,
        labels: dict[str, str] | None = None,
        on_line: LineCallback | None = None,
        build_args: dict[str, str] | None = None,
    ) -> tuple[str, bool]:
        """``(tag, built_now)``: ``repository:<input hash[:16]>``, built only if that tag is missing.

        ``build_args`` are not part of the hash: pass only what changes no layer, such as the
        proxy variables (Docker's predefined build arguments, which RUN steps see and the image
        keeps nowhere)."""
        digest = input_hash(context)
        tag = f"{repository}:{digest[:16]}"
        if self.image_exists(tag):
            return tag, False
        labels = {**(labels or {}), INPUT_HASH_LABEL: digest}
        self.build_image(context, tag=tag, labels=labels, on_line=on_line, build_args=build_args)
        return tag, True

    def import_image(
        self, archive: Path, *, repository: str, tag: str, changes: Sequence[str] = ()
    ) -> str:
        """``docker import`` a root filesystem tarball as ``repository:tag``; the image id."""
        if not archive.is_file():  # the SDK would take a missing path for a URL to fetch
            raise InputError(
                f"cannot import {archive}",
                why="the file does not exist",
                fix="Pass the path of a root filesystem tarball.",
            )
        own = [f"LABEL {key}={value}" for key, value in own_labels().items()]
        with self._talking(f"importing {archive}"):
            self._client.api.import_image_from_file(
                str(archive), repository=repository, tag=tag, changes=[*changes, *own] or None
            )
        image = self.image_id(f"{repository}:{tag}")
        if image is None:
            raise BuildFailed(
                f"importing {archive} as {repository}:{tag} left no image",
                fix="Check that the file is a tar archive of a root filesystem.",
            )
        return image

    def push_image(self, tag: str, repository: str, *, on_line: LineCallback | None = None) -> str:
        """Push local image ``tag`` to ``repository`` (``host[:port]/path``) under the same tag;
        the pushed manifest as ``repository@sha256:...``, the reference a worker pulls by digest.

        The engine's own credentials for that registry apply (``docker login``); none pass here.
        A registry that refuses or cannot be reached is an EnvironmentProblem naming it."""
        pushed_tag = tag.rpartition(":")[2] if ":" in tag.rpartition("/")[2] else "latest"
        target = f"{repository}:{pushed_tag}"
        emit = on_line or _ignore
        digest = None
        with self._talking(f"pushing {target}"):
            try:
                self._client.api.tag(tag, repository, tag=pushed_tag)
                for chunk in self._client.api.push(
                    repository, tag=pushed_tag, stream=True, decode=True
                ):
                    error = _chunk_error(chunk)
                    if error is not None:
                        raise PushFailed(target, error)
                    if chunk.get("status") and chunk.get("id") is None:
                        emit(printable_line(str(chunk["status"])))
                    found = (chunk.get("aux") or {}).get("Digest")
                    if found:
                        digest = str(found)
            except docker.errors.APIError as exc:
                raise PushFailed(target, str(exc.explanation or exc)) from exc
            finally:  # the registry's names were only the way to push: the image keeps its own
                for name in (target, *([f"{repository}@{digest}"] if digest else [])):
                    with contextlib.suppress(docker.errors.APIError):
                        self._client.api.remove_image(name, noprune=True)
        if digest is None or not _DIGEST.fullmatch(digest):
            raise PushFailed(target, "the registry named no manifest digest for the push")
        return f"{repository}@{digest}"

    # -- containers ---------------------------------------------------------------------------

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
        """Run ``command`` in a new container from ``image``, streaming its output to ``on_line``.

        ``network_mode`` is Docker's (None: the default bridge); ``"host"`` shares this machine's
        network, the only way a container reaches a service on the host's loopback (127.0.0.1).

        Lines of stdout keep their order, and so do those of stderr, but the engine copies the two
        streams separately: for one ordered log, make the command itself send stderr to stdout.

        The container is removed afterwards unless ``keep``; on any exception (Ctrl-C included) it is
        killed and removed before the exception goes on. One removed from outside while it runs
        raises :class:`ContainerGone`.
        """
        run_id = uuid.uuid4().hex
        options: dict[str, Any] = {
            "mounts": [self._docker_mount(mount) for mount in mounts],  # refuses the socket first
            "environment": dict(env or {}),
            "user": user or "",
            "working_dir": workdir,
            "labels": {**own_labels(), **(labels or {}), LABEL: "1", RUN_LABEL: run_id},
            "mem_limit": mem_limit,
            # The same as mem_limit: the limit means memory, not memory plus as much swap again.
            "memswap_limit": mem_limit,
            "name": name,
            "network_mode": network_mode,  # None: the SDK's "default"
        }
        try:
            container, started = self._start(image, command, options)
            result = self._follow(container, started=started, emit=on_line or _ignore)
            if not keep:
                self.remove_container(result.container_id)
            return result
        except BaseException:
            # By label, not by id: an interrupt can land after the engine created the container
            # but before its id reached us. A signal now waits until the container is gone. Best
            # effort on the way out of an exception: a second failure must not hide the first.
            with (
                held_signals(),
                contextlib.suppress(docker.errors.DockerException, TfbuildError, *_UNREACHABLE),
            ):
                for container_id in self.containers(label=f"{RUN_LABEL}={run_id}"):
                    self.remove_container(container_id)
            raise

    def _start(
        self, image: str, command: Sequence[str], options: dict[str, Any]
    ) -> tuple[Any, float]:
        """The created and started container, and when it started (time.monotonic)."""
        with self._talking(f"starting a container from {image}"):
            try:
                container = self._client.containers.create(
                    image, list(command), detach=True, **options
                )
                started = time.monotonic()
                container.start()
            except docker.errors.ImageNotFound as exc:
                raise BuildFailed(
                    f"cannot run a container from {image}",
                    why="there is no such image on this engine (tfbuild never pulls)",
                    fix="Build or import it first (tfbuild base for the base image).",
                ) from exc
            except docker.errors.APIError as exc:
                raise BuildFailed(
                    f"cannot run {' '.join(command)} in a container from {image}",
                    why=str(exc.explanation or exc),
                    fix="Check the command, the mounts and the user.",
                ) from exc
        return container, started

    def _follow(self, container: Any, *, started: float, emit: LineCallback) -> RunResult:
        lines = _Lines(emit)
        with self._talking(f"following container {container.short_id}"):
            try:
                seen = self._pass_logs(container, lines, follow=True)
                status = container.wait()
                duration = time.monotonic() - started
                # A follow can end before an unterminated last line (moby/moby#43860, seen on
                # 20.10). Once the container has exited its log is complete: pass on what the
                # follow missed.
                self._pass_logs(container, lines, follow=False, skip=seen)
                container.reload()
            except docker.errors.APIError as exc:  # removed from outside while followed?
                gone = container_gone(container.short_id, exc)
                if gone is None:
                    raise
                raise gone from exc
            if container.attrs["State"].get("Status") in _REMOVED:
                raise ContainerGone(container.short_id, str(container.attrs["State"]["Status"]))
        lines.flush()
        return RunResult(
            exit_code=int(status.get("StatusCode", -1)),
            oom_killed=bool(container.attrs["State"].get("OOMKilled")),
            container_id=str(container.id),
            duration_s=duration,
        )

    @staticmethod
    def _pass_logs(container: Any, lines: _Lines, *, follow: bool, skip: int = 0) -> int:
        """Send the output after its first ``skip`` bytes to ``lines``; the bytes read."""
        stream = container.logs(stream=True, follow=follow, stdout=True, stderr=True)
        offset = 0
        try:
            for chunk in stream:
                start = max(0, skip - offset)  # the part of this chunk that was passed on before
                offset += len(chunk)
                lines.feed(chunk[start:])
        finally:
            # Else an interrupted follow keeps its connection. Not stream.close(): in docker-py 7.1
            # it shuts the socket but leaves the response's file open (a ResourceWarning).
            getattr(stream, "_response", stream).close()
        return offset

    def _docker_mount(self, mount: Mount) -> Any:
        source = mount.source
        if mount.kind == "bind":
            source = str(Path(source).absolute())
            self._refuse_socket(source)
            if self._local and not Path(source).exists():
                # Unlike `docker run -v`, the mounts API does not create a missing directory.
                raise InputError(
                    f"cannot mount {source} at {mount.target}",
                    why="it does not exist",
                    fix="Create it first, or check the path.",
                )
        return docker.types.Mount(
            target=mount.target, source=source, type=mount.kind, read_only=mount.read_only
        )

    def _refuse_socket(self, source: str) -> None:
        """The Docker socket (or a directory holding it) in a container gives it root on the host."""
        real = os.path.realpath(source)
        for path in sorted(self._sockets):
            if real == path or path.startswith(real.rstrip("/") + "/"):
                raise UsageError(
                    f"refusing to mount {source} into a container",
                    why=f"it is or contains the Docker socket {path}, which gives root on this machine",
                    fix="Mount a directory that does not contain the Docker socket.",
                )

    def containers(self, label: str = f"{LABEL}=1", all: bool = True) -> list[str]:
        """The ids of the containers with ``label`` (``key=value`` or ``key``), stopped ones too."""
        with self._talking("listing containers"):
            found = self._client.api.containers(all=all, filters={"label": label})
        return [str(item["Id"]) for item in found]

    def remove_container(self, container_id: str) -> None:
        """Kill (if running) and remove a container with its anonymous volumes; gone already is fine."""
        with self._talking(f"removing container {container_id[:12]}"):
            try:
                self._client.api.remove_container(container_id, force=True, v=True)
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):  # another remover got there first
                    raise

    # -- volumes ------------------------------------------------------------------------------

    def ensure_volume(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        part_of: str | None = None,
    ) -> str:
        """A named volume (e.g. bazel's cache), created with ``labels`` when missing; its name.
        ``part_of``: another volume this one belongs to, removed with it (remove_volume)."""
        labels = {
            **own_labels(),
            **(labels or {}),
            LABEL: "1",
            **({PART_OF_LABEL: part_of} if part_of else {}),
        }
        with self._talking(f"creating volume {name}"):
            try:
                self._client.api.inspect_volume(name)
            except docker.errors.NotFound:
                self._client.api.create_volume(name=name, labels=labels)
        return name

    def volumes(self, label: str = f"{LABEL}=1") -> list[str]:
        """The names of the volumes with ``label`` (``key=value``), sorted."""
        with self._talking("listing volumes"):
            found = self._client.api.volumes(filters={"label": label}) or {}
        return sorted(str(v["Name"]) for v in found.get("Volumes") or ())

    def kept_volumes(self) -> list[KeptVolume]:
        """Every volume tfbuild made (its label), with its size where the engine says it."""
        with self._talking("measuring volumes"):
            usage = self._client.api.df().get("Volumes") or []
            running = self._client.api.containers(filters={"status": "running"})
        mounted = {
            str(m.get("Name")) for c in running for m in c.get("Mounts") or () if m.get("Name")
        }
        found = []
        for volume in usage:
            if (volume.get("Labels") or {}).get(LABEL) != "1":
                continue
            size = (volume.get("UsageData") or {}).get("Size")
            found.append(
                KeptVolume(
                    name=str(volume["Name"]),
                    size=int(size) if isinstance(size, int) and size >= 0 else None,
                    created=engine_time(str(volume.get("CreatedAt") or "")),
                    in_use=str(volume["Name"]) in mounted,
                )
            )
        return sorted(found, key=lambda v: v.name)

    def remove_unused_volume(self, name: str) -> bool:
        """Remove the volume unless a container uses it (False then); gone is fine."""
        with self._talking(f"removing volume {name}"):
            return _unless_used(self._client.api.remove_volume, name)

    def remove_volume(self, name: str) -> None:
        """Remove volume ``name`` and the volumes that are part of it; missing ones are fine."""
        parts = self.volumes(f"{PART_OF_LABEL}={name}")
        with self._talking(f"removing volume {name}"):
            for volume in (*parts, name):
                with contextlib.suppress(docker.errors.NotFound):
                    self._client.api.remove_volume(volume, force=True)
