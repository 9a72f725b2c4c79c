"""The services the remote cache and remote execution tests need, started on this machine's loopback
only: BuildGrid as a cache alone, or with execution, bots and operations; a Docker registry
(Debian's ``docker-registry``), a PostgreSQL cluster (BuildGrid's scheduler refuses any other
database) and the bot of ``tests.remote.bot``.

Each ``start_*`` returns the process and its address once the service answers; ``stop`` ends it.
They are plain functions so that fixtures (``tests/remote/conftest.py``) and other test modules
can combine them with their own lifetimes.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import cast

__all__ = [
    "REPO_ROOT",
    "free_port",
    "start_bot",
    "start_buildgrid",
    "start_buildgrid_execution",
    "start_postgres",
    "start_registry",
    "stop",
    "stop_postgres",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
REGISTRY = Path("/usr/bin/docker-registry")
#: Debian's distribution/registry 2.8 configuration format:
#: https://distribution.github.io/distribution/about/configuration/ (version 0.1 schema).
REGISTRY_CONFIG = """\
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {root}
http:
  addr: 127.0.0.1:{port}
"""

#: BuildGrid as a remote cache only: an in-memory CAS, an action cache over it, nothing else (no
#: execution service), on the loopback only.
CACHE_CONFIG = """\
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
storages:
  - !lru-storage &main-storage
    size: 256M
caches:
  - !lru-action-cache &main-action
    storage: *main-storage
    max-cached-refs: 1024
    allow-updates: true
instances:
  - name: ""
    services:
      - !action-cache
        cache: *main-action
      - !cas
        storage: *main-storage
      - !bytestream
        storage: *main-storage
"""
#: BuildGrid's line once it serves.
READY = "Starting BuildGrid server..."

#: BuildGrid 0.4.4 with remote execution: its SQL scheduler accepts only PostgreSQL
#: (buildgrid/server/sql/utils.py is_postgresql_connection_string, used by SqlProvider). Actions may
#: name a ``container-image`` platform property; it is a wildcard key (the bot reads it, the
#: scheduler does not match bots on it), so one bot with no properties takes every action
#: (buildgrid/server/scheduler/properties.py DynamicPropertySet). Schema:
#: buildgrid/server/app/settings/reference.yml and parser.py in the installed buildgrid 0.4.4.
EXECUTION_CONFIG = """\
# BuildGrid serves at most thread-pool-size RPCs at once (grpc's maximum_concurrent_rpcs; its default
# is 5 per CPU, 10 here) and refuses the next with RESOURCE_EXHAUSTED: bazel's many Execute and
# WaitExecution streams took them all, and the bot's own long poll was refused.
thread-pool-size: 200
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
connections:
  - !sql-connection &sql
    connection-string: {database}
    pool-size: 5
    max-overflow: 5
storages:
  - !lru-storage &main-storage
    size: 512M
caches:
  - !lru-action-cache &main-action
    storage: *main-storage
    max-cached-refs: 1024
    allow-updates: true
    cache-failed-actions: false
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    storage: *main-storage
    action-cache: *main-action
    bot-session-keepalive-timeout: 600
    max-job-attempts: 1
    property-set: !dynamic-property-set
      wildcard-property-keys:
        - container-image
instances:
  - name: "{instance}"
    services:
      - !action-cache
        cache: *main-action
      - !execution
        scheduler: *scheduler
        endpoints: [execution, operations, bots]
      - !cas
        storage: *main-storage
      - !bytestream
        storage: *main-storage
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait(process: subprocess.Popen[bytes], log: Path, ready: object, what: str) -> None:
    """Until ``ready()`` is true; an exit or two minutes without it fails with the log."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited with {process.returncode}: {log.read_text()}")
        if callable(ready) and ready():
            return
        time.sleep(0.3)
    process.kill()
    raise AssertionError(f"{what} did not start in 120 s: {log.read_text()}")


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def start_registry(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Debian's docker-registry on a free loopback port, storing under ``work``; ready when
    ``GET /v2/`` answers 200. Docker pushes to it over plain HTTP: the engine treats 127.0.0.0/8
    as an insecure registry by default (https://docs.docker.com/reference/cli/dockerd/#insecure-registries)."""
    assert REGISTRY.is_file(), "apt-get install docker-registry (as .ci/run does)"
    port = free_port()
    config = work / "registry.yml"
    config.write_text(REGISTRY_CONFIG.format(root=work / "registry", port=port))
    log = work / "registry.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(REGISTRY), "serve", str(config)], stdout=out, stderr=subprocess.STDOUT
        )

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    _wait(process, log, answers, "docker-registry")
    return process, f"127.0.0.1:{port}"


def _postgres_bin() -> Path:
    """Debian's versioned PostgreSQL directory (postgresql-15 on bookworm)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    assert found, "apt-get install postgresql (as .ci/run does): BuildGrid's scheduler needs it"
    return found[-1].parent


def start_postgres(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A throwaway PostgreSQL cluster on a free loopback port, trusting local connections.

    PostgreSQL refuses to run as root, so the cluster belongs to Debian's ``postgres`` user and
    lives in its own directory under /tmp (pytest's ``work`` is private to root); ``stop_postgres``
    removes it. Returns the postmaster and a SQLAlchemy URL for ``bgd``."""
    bin_dir = _postgres_bin()
    data = Path(tempfile.mkdtemp(prefix="tfbuild-test-pg-"))
    shutil.chown(data, "postgres", "postgres")
    subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data / "db"), "-A", "trust", "-U", "postgres"],
        user="postgres",
        check=True,
        capture_output=True,
        cwd=data,
    )
    port = free_port()
    log = work / "postgres.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(str(bin_dir / "postgres"), "-D", str(data / "db"), "-p", str(port)),
                *("-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}"),
            ],
            user="postgres",
            cwd=data,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait(process, log, lambda: _listens(port), "postgres")
    # psycopg2, not SQLAlchemy 2.1's default psycopg 3: BuildGrid's LISTEN/NOTIFY notifiers call
    # psycopg2's connection.poll() (buildgrid/server/scheduler/notifier.py); with psycopg 3 they fail
    # with "'Connection' object has no attribute 'poll'" and jobs wait for the next poll.
    return process, f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"


def stop_postgres(process: subprocess.Popen[bytes]) -> None:
    """A fast shutdown (SIGINT: disconnect clients), then its directory goes."""
    data = Path(cast(list[str], process.args)[2]).parent
    process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    shutil.rmtree(data, ignore_errors=True)


def _bgd() -> Path:
    bgd = Path(sys.executable).with_name("bgd")
    assert bgd.is_file(), "buildgrid is a dev dependency: pip install -e '.[dev]'"
    return bgd


def start_buildgrid_execution(
    work: Path, instance: str, database: str
) -> tuple[subprocess.Popen[bytes], str]:
    """BuildGrid serving ``instance`` with CAS, bytestream, action cache, execution, operations and
    bots, its scheduler in ``database`` (a PostgreSQL URL from ``start_postgres``), which
    ``bgd migrate apply`` gives BuildGrid's tables first."""
    migrated = subprocess.run(
        [str(_bgd()), "migrate", "apply", database], capture_output=True, text=True, check=False
    )
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    port = free_port()
    config = EXECUTION_CONFIG.format(port=port, database=database, instance=instance)
    return _serve_buildgrid(work, config, port)


def start_buildgrid(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """BuildGrid as a remote cache only (CACHE_CONFIG) on a free loopback port."""
    port = free_port()
    return _serve_buildgrid(work, CACHE_CONFIG.format(port=port), port)


def _serve_buildgrid(work: Path, config: str, port: int) -> tuple[subprocess.Popen[bytes], str]:
    """``bgd server start`` with ``config``, once it says it serves and listens on ``port``."""
    path = work / "buildgrid.yml"
    path.write_text(config)
    log = work / "buildgrid.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(_bgd()), "server", "start", str(path)], stdout=out, stderr=subprocess.STDOUT
        )
    _wait(process, log, lambda: READY in log.read_text() and _listens(port), "BuildGrid")
    return process, f"grpc://127.0.0.1:{port}"


def start_bot(
    work: Path, remote: str, instance: str, log: Path | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    """``python -m tests.remote.bot`` against ``remote``; ready once it says it has a bot
    session. Returns the process and its log, where it names the image each action ran in."""
    log = log or work / "bot.log"
    scratch = work / "bot-scratch"
    scratch.mkdir(exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "tests.remote.bot", "--remote", remote),
                *("--instance", instance, "--scratch", str(scratch)),
            ],
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait(process, log, lambda: "bot session " in log.read_text(), "the bot")
    return process, log
