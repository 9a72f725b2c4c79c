"""The glibc floor is real: the canary's receipt says what it needs, pick refuses it for an older
glibc, and an older system's loader really refuses it, while the build's own system loads it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docker.test_wheel import wheel_cli
from tfbuild import canary

pytestmark = pytest.mark.docker

#: Loads the canary's library the way its package does (ctypes), in the image's own python3.
LOAD = (
    "import ctypes, sys, zipfile; "
    "open('/tmp/libcanary.so', 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2])); "
    "print(ctypes.CDLL('/tmp/libcanary.so').canary_runtime(7))"
)


@pytest.fixture
def volume(engine: Any) -> Iterator[str]:
    name = f"tfbuild-test-floor-{uuid.uuid4().hex[:10]}"
    yield name
    engine.remove_volume(name)


def load_in(image: str, wheel: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{wheel.parent}:/wheels:ro",
            image,
            "python3",
            "-c",
            LOAD,
            f"/wheels/{wheel.name}",
            canary.LIBRARY,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_floor_is_recorded_enforced_by_pick_and_real(
    base_image: str, old_base_image: str, volume: str, tmp_path: Path
) -> None:
    built = wheel_cli(tmp_path / "dist", volume, "--json")
    assert built.returncode == 0, built.stderr
    wheel = Path(json.loads(built.stdout)["wheel"])
    floor = json.loads(wheel.with_suffix(".json").read_text())["floor"]
    # Built on Debian 12: pthread_create binds to GLIBC_2.34, std::string to libstdc++'s GLIBCXX.
    assert floor["glibc"] == "2.34"
    assert floor["libstdcxx"] and floor["libstdcxx"].startswith("3.4.")
    assert floor["policy"] == "manylinux_2_34_x86_64"
    assert wheel.name.endswith("-py3-none-manylinux_2_34_x86_64.whl")  # retagged, label kept
    assert "+tfbuild.canary." in wheel.name

    # pick refuses it for a machine with glibc 2.31, and says why; it takes it for glibc 2.36.
    def pick(glibc: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "tfbuild",
                "pick",
                str(wheel.parent),
                "--glibc",
                glibc,
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    old = pick("2.31")
    assert old.returncode == 4, old.stderr
    (refused,) = json.loads(old.stdout)["wheels"]
    assert refused["stage"] == "glibc" and "needs glibc 2.34" in refused["reason"]
    assert pick("2.36").returncode == 0

    # And the loaders agree: Debian 11 (glibc 2.31) refuses the library, Debian 12 loads it.
    on_old = load_in(old_base_image, wheel)
    assert on_old.returncode != 0
    assert "GLIBC_2.34' not found" in on_old.stderr, on_old.stderr
    on_own = load_in(base_image, wheel)
    assert on_own.returncode == 0, on_own.stderr
    assert on_own.stdout.strip() == "7"
