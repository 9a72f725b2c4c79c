"""Fixtures for remote execution on this machine: a registry, BuildGrid with execution (over its
own PostgreSQL) and the bot of ``tests.remote.bot``, for one test module at a time.

Like the other real-engine tests, a missing tool fails the run in CI (.ci/run installs them) and
skips elsewhere, saying why."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker.conftest import IN_CI, base_image, engine
from tests.remote import services

__all__ = ["RemoteExecutor", "base_image", "engine", "real_bazel", "registry", "remote_executor"]

INSTANCE = "tfbuild-test"


def _require(present: bool, message: str) -> None:
    if not present:
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def real_bazel() -> str:
    """Debian's bazel (4.2.3) on the host."""
    bazel = shutil.which("bazel")
    _require(bazel is not None, "no bazel here: apt-get install bazel-bootstrap (as .ci/run does)")
    assert bazel is not None
    return bazel


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """HOST:PORT of a fresh registry on 127.0.0.1 for this module; stopped afterwards."""
    _require(
        services.REGISTRY.is_file(),
        "no docker-registry here: apt-get install docker-registry (as .ci/run does)",
    )
    process, address = services.start_registry(tmp_path_factory.mktemp("registry"))
    yield address
    services.stop(process)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RemoteExecutor:
    """What a client needs (url, instance) and what proves where actions ran (the bot's log)."""

    url: str
    instance: str
    bot_log: Path


@pytest.fixture(scope="module")
def remote_executor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteExecutor]:
    """PostgreSQL, BuildGrid (execution, bots, operations, CAS, action cache) and one bot."""
    _require(
        any(Path("/usr/lib/postgresql").glob("*/bin/postgres")),
        "no PostgreSQL here (BuildGrid's scheduler needs it): apt-get install postgresql",
    )
    _require(
        importlib.util.find_spec("psycopg2") is not None,
        "no psycopg2 (BuildGrid's PostgreSQL driver): pip install 'buildgrid[database]==0.4.4'",
    )
    work = tmp_path_factory.mktemp("remote-execution")
    database, dsn = services.start_postgres(work)
    try:
        buildgrid, url = services.start_buildgrid_execution(work, INSTANCE, dsn)
        try:
            bot, log = services.start_bot(work, url, INSTANCE)
            try:
                yield RemoteExecutor(url=url, instance=INSTANCE, bot_log=log)
            finally:
                services.stop(bot)
        finally:
            services.stop(buildgrid)
    finally:
        services.stop_postgres(database)
