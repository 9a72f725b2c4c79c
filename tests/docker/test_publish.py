"""`tfbuild wheel` on the canary into a small tmpfs --dist (issue 21, items 11 and 13): the lock
files it takes are gone afterwards, and a full --dist is one line, exit 3, naming it, with the
previous wheel, receipt and env file as they were. Real Docker, real tmpfs (we mount it: root only).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import mounted_tmpfs
from tests.docker.test_wheel import leftovers, wheel_cli
from tfbuild.core.files import DIST_LOCK, sha256_file, wheel_files
from tfbuild.wheel.receipt import receipt_path

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: root only"),
]


@pytest.fixture
def dist(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "dist", size="4m") as where:
        yield where


@pytest.mark.parametrize("free_kib", [48, 108, 156])  # the issue's: 48k to 156k
def test_a_full_dist_is_one_line_and_no_lock_file_is_left(
    base_image: str, volume: str, dist: Path, tmp_path: Path, free_kib: int
) -> None:
    runtime = tmp_path / "run"  # where the source lock goes (XDG_RUNTIME_DIR), watched whole
    runtime.mkdir(mode=0o700)
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    first = wheel_cli(dist, volume, env=env)
    assert first.returncode == 0, first.stderr
    (wheel,) = wheel_files(dist)
    assert sha256_file(wheel) in receipt_path(wheel).read_text()
    before = {p.name: p.read_bytes() for p in dist.iterdir() if p.is_file()}
    # Item 13: no lock file left, neither the source's nor dist/'s.
    assert [p.name for p in runtime.rglob("*") if p.is_file()] == []
    assert not (dist / DIST_LOCK).exists()

    # Item 11: the same build again into a --dist with little left. Before: "internal error:
    # OSError: [Errno 28]" with no path, or the env file published without its receipt. With 48
    # KiB the canary's copy of its source does not fit; with more, the finished wheel does not.
    found = os.statvfs(dist)
    filler = dist / "logs" / "filler"
    filler.write_bytes(b"\0" * (found.f_bavail * found.f_frsize - (free_kib << 10)))
    second = wheel_cli(dist, volume, env=env)
    assert second.returncode == 3, second.stderr
    last = second.stderr.splitlines()[-1]
    assert last.startswith(f"tfbuild: error: no space left in {dist}: "), second.stderr
    if free_kib > 100:
        assert f": publishing {wheel.name.split('+')[0]}" in last  # the wheel, before its label
    assert "; nothing was published. Free some space there" in last
    assert "Traceback" not in second.stderr
    assert {p.name: p.read_bytes() for p in dist.iterdir() if p.is_file()} == before
    assert leftovers(dist) == []
    assert [p.name for p in runtime.rglob("*") if p.is_file()] == []
