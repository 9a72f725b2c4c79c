"""``tfbuild cache`` on the real engine: tfbuild's images and volumes listed with their sizes, one a
running container uses said to be in use and never removed, an image a newer build of its tag
replaced found as such. Every object touched is the test's own (a name unique to the run); the
shared base image is only read (a container of the test's runs from it)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.docker.conftest import base_image, engine

__all__ = ["base_image", "engine"]
pytestmark = pytest.mark.docker


def _docker(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["docker", *args], input=stdin, capture_output=True, text=True, check=True, timeout=300
    )
    return done.stdout.strip()


@pytest.fixture
def own() -> Iterator[dict[str, str]]:
    """Names of the test's own: a volume, an image tag, a container label; all removed after."""
    run = uuid.uuid4().hex[:10]
    names = {
        "volume": f"tfbuild-test-cache-{run}",
        "tag": f"tfbuild-test/cache-{run}:x",
        "label": f"org.tfbuild.test-cache={run}",
    }
    yield names
    for container in _docker("ps", "-aq", "--filter", f"label={names['label']}").split():
        _docker("rm", "-f", container)
    subprocess.run(["docker", "rmi", "-f", names["tag"]], capture_output=True, check=False)
    subprocess.run(
        ["docker", "volume", "rm", "-f", names["volume"]], capture_output=True, check=False
    )


def test_its_volume_in_use_is_kept_and_its_replaced_image_found(
    engine: Any, base_image: str, own: dict[str, str]
) -> None:
    engine.ensure_volume(own["volume"])
    listed = {v.name: v for v in engine.kept_volumes()}
    assert own["volume"] in listed and not listed[own["volume"]].in_use
    container = _docker(
        "run", "-d", "--label", own["label"], "-v", f"{own['volume']}:/v", base_image,
        "sleep", "120",
    )  # fmt: skip
    ours = {v.name: v for v in engine.kept_volumes()}[own["volume"]]
    assert ours.in_use
    assert engine.remove_unused_volume(own["volume"]) is False  # a running container mounts it
    images = {i.id: i for i in engine.kept_images()}
    used = _docker("inspect", "--format", "{{.Image}}", container)
    assert images[used].in_use  # the base image, which our container runs
    _docker("rm", "-f", container)
    assert engine.remove_unused_volume(own["volume"]) is True
    assert own["volume"] not in {v.name for v in engine.kept_volumes()}

    # the same tag built twice: the first build is left without a tag, which --prune removes
    first = _docker(
        "build", "-q", "-t", own["tag"], "-", stdin=f"FROM {base_image}\nLABEL org.tfbuild=1 n=1\n"
    )
    second = _docker(
        "build", "-q", "-t", own["tag"], "-", stdin=f"FROM {base_image}\nLABEL org.tfbuild=1 n=2\n"
    )
    kept = {i.id: i for i in engine.kept_images()}
    assert kept[first].tags == () and kept[second].tags == (own["tag"],)
    assert engine.remove_unused_image(kept[first]) is True
    assert engine.remove_unused_image(kept[second]) is True
    assert not {first, second} & {i.id for i in engine.kept_images()}
