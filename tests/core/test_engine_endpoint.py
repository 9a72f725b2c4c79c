"""The engine's address, refused before any engine is asked (no Docker needed)."""

from __future__ import annotations

import pytest

from tests.conftest import one_error_line, run_cli
from tfbuild.core.engine import DockerEngine
from tfbuild.core.errors import EnvironmentProblem


def _socket_path(size: int) -> str:
    """A path of ``size`` bytes where no socket is (no temporary directory: its length varies)."""
    top = "/nonexistent/"
    return top + "s" * (size - len(top))


def test_a_socket_path_too_long_to_reach_is_said_as_that() -> None:
    """A socket in a deep directory (a checkout's, a long $TMPDIR's) cannot be connected to: a Unix
    socket's path has at most 107 bytes. Said as that, with the link that reaches it, never as an
    engine that is not running."""
    path = _socket_path(108)
    with pytest.raises(EnvironmentProblem) as caught:
        DockerEngine.connect(base_url=f"unix://{path}")
    assert caught.value.line() == (
        f"cannot reach the Docker engine at unix://{path}: the socket's path is 108 bytes, and a "
        f"Unix socket's may have at most 107. Link a shorter path to it (ln -s {path} "
        "/tmp/docker.sock) and set DOCKER_HOST=unix:///tmp/docker.sock."
    )
    result = run_cli("doctor", env={"DOCKER_HOST": f"unix://{path}"})
    assert "the socket's path is 108 bytes" in " ".join(result.stdout.split())
    one_error_line(result, 5, "1 check(s) failed: engine", report=True)


def test_the_longest_socket_path_is_still_tried() -> None:
    """107 bytes is a path a socket is reached by: it is tried, and what is there is said."""
    path = _socket_path(107)
    with pytest.raises(EnvironmentProblem) as caught:
        DockerEngine.connect(base_url=f"unix://{path}")
    assert caught.value.line().startswith(
        f"cannot reach the Docker engine at unix://{path}: there is no socket there."
    )
