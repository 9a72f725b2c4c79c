"""Real Docker engine tests. In CI (CI or GITHUB_ACTIONS set) an unreachable engine fails the run;
elsewhere these tests skip and say why. The base image is made with `tfbuild base` (debootstrap +
docker import, no registry) and reused by tag."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

IN_CI = bool(os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS"))
BASE_TAG = os.environ.get("TFBUILD_TEST_BASE_IMAGE", "tfbuild/base:bookworm")


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    from tfbuild.core.engine import DockerEngine
    from tfbuild.core.errors import EnvironmentProblem

    try:
        docker_engine = DockerEngine.connect()
    except EnvironmentProblem as exc:
        if IN_CI:
            pytest.fail(f"CI must provide a Docker engine (.ci/run starts one): {exc.line()}")
        pytest.skip(f"no Docker engine here: {exc.line()}")
    yield docker_engine
    docker_engine.close()


def _made_image(engine: Any, tag: str) -> str:
    """``tag``, which `make base-image` (as root) makes with `tfbuild base`; CI fails without it."""
    if not engine.image_exists(tag):
        message = f"the base image {tag} is missing: run 'make base-image' (as root) first"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return tag


@pytest.fixture(scope="session")
def base_image(engine: Any) -> str:
    """The test base image; .ci/run creates it with `tfbuild base`, cached by tag."""
    return _made_image(engine, BASE_TAG)


OLD_BASE_TAG = "tfbuild/base:bullseye"


@pytest.fixture(scope="session")
def old_base_image(engine: Any) -> str:
    """An older system (Debian 11, glibc 2.31) to load wheels in; .ci/run makes it (make base-image)."""
    return _made_image(engine, OLD_BASE_TAG)


NEW_BASE_TAG = "tfbuild/base:trixie"


@pytest.fixture(scope="session")
def new_base_image(engine: Any) -> str:
    """The newest system tfbuild base makes here (Debian 13, glibc 2.41): a plain build there needs
    more than Debian 12 has; .ci/run makes it (make base-image)."""
    return _made_image(engine, NEW_BASE_TAG)


def _volume_name(request: pytest.FixtureRequest) -> str:
    """A fresh cache volume's name that says which test module made it: tfbuild-test-wheel-1a2b..."""
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    return f"tfbuild-test-{module}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def volume(engine: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh cache volume for one test, removed afterwards (the build makes it on first use)."""
    name = _volume_name(request)
    yield name
    engine.remove_volume(name)


@pytest.fixture
def volumes(engine: Any, request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """Fresh cache volumes on demand (call it for each), all removed afterwards."""
    made: list[str] = []

    def new() -> str:
        made.append(_volume_name(request))
        return made[-1]

    yield new
    for name in made:
        engine.remove_volume(name)
