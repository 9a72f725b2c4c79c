"""Doctor and ``tfbuild base`` against the engine's recordings (tests/fixtures/engine/doctor.json,
base-image.json), replayed by the fake (tests/engine_fake.py) through their own code: doctor's
checks of what the engine said of itself, its canary base image found, its canary probe's output
judged; a base image reused by its tag, or made and imported when the engine lacks it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.engine_fake import FakeEngine, canary_wheel, recording
from tests.engine_recorder import stand_in_debootstrap
from tfbuild.build.base_images import make_base_image
from tfbuild.build.doctor import _probe, canary_base, canary_check, engine_checks, isa_text
from tfbuild.plan.resources import DISK_NEEDED_GIB

BOOKWORM = "tfbuild/base:bookworm"


def test_doctor_judges_what_the_engine_said_of_itself() -> None:
    """The recorded engine: Docker 20.10 on overlay2 and cgroup v1, 33 GiB free under its root,
    less than a build needs: that check fails, with its fix."""
    engine = FakeEngine.replaying(recording("doctor"))
    checks = {
        c.name: c for c in engine_checks(engine.info(), disk_needed_gib=DISK_NEEDED_GIB["cpu"])
    }
    assert list(checks) == ["engine", "storage driver", "disk"]
    assert (checks["engine"].status, checks["engine"].detail) == (
        "ok",
        "Docker 20.10.24+dfsg1 (API 1.41) at unix:///var/run/docker.sock, cgroup v1",
    )
    assert (checks["storage driver"].status, checks["storage driver"].detail) == ("ok", "overlay2")
    disk = checks["disk"]
    assert (disk.status, disk.fix) == ("fail", "Free space there, or move the engine's data-root.")
    assert disk.detail == (
        "33 GiB free under /var/lib/docker (images, bazel caches); a build needs about 40 GiB"
    )


def test_doctor_takes_the_base_image_the_engine_has() -> None:
    engine = FakeEngine.replaying(recording("doctor"))
    said: list[str] = []
    tag, check = canary_base(engine, on_line=said.append)
    assert tag == BOOKWORM
    assert (check.status, check.detail) == (
        "ok",
        f"{BOOKWORM}, made by tfbuild base (no container registry needed)",
    )
    assert said == [] and engine.calls == []


def test_doctor_reads_its_canary_probe_and_finds_the_planned_instructions_missing() -> None:
    """The probe ran the x86_64 canary as both wheels: each installs, imports and runs, and has no
    wide vectors; so a host build planned with AVX2 and FMA would fail the instruction check."""
    engine = FakeEngine.replaying(recording("doctor"))
    wheel = canary_wheel()
    probe = _probe(engine, BOOKWORM, wheel, wheel)

    assert {name: smoke.ok for name, smoke in probe.smoke.items()} == {
        "host": True,
        "baseline": True,
    }
    planned = canary_check(probe, ["ymm", "fma"])
    assert planned.smoke_ok and not planned.isa.ok
    assert isa_text(planned.isa) == (
        "host build uses ymm and fma (0 zmm, 0 ymm, 0 fma instructions), "
        "the baseline none (0 zmm, 0 ymm, 0 fma)"
    )
    assert canary_check(probe, []).isa.ok  # a host build planned without them
    assert planned.rounds == 75 and set(planned.median_ms) == {"host", "baseline"}

    (call,) = engine.calls
    assert call.kind == "canary-probe"
    assert call.user == f"{os.getuid()}:{os.getgid()}" and call.env == {"HOME": "/tmp"}
    assert all(mount.read_only for mount in call.mounts)
    assert engine.containers == {} and engine.unplayed() == {}


def test_a_base_image_the_engine_has_is_reused_by_its_tag() -> None:
    stored = recording("base-image")
    engine = FakeEngine.replaying(stored)
    made = make_base_image(engine, suite="bookworm", tag=BOOKWORM)
    assert (made.tag, made.image_id, made.created, made.seconds) == (
        BOOKWORM,
        stored.images[BOOKWORM],
        False,
        0.0,
    )


def test_a_base_image_the_engine_lacks_is_made_and_imported(tmp_path: Path) -> None:
    stored = recording("base-image")
    ((tag, image_id),) = stored.made.items()
    assert stored.images[tag] is None  # the engine had no such image
    engine = FakeEngine.replaying(stored)
    said: list[str] = []
    with stand_in_debootstrap(tmp_path / "debootstrap"):
        made = make_base_image(
            engine, suite="bookworm", tag=tag, on_line=said.append, log_path=tmp_path / "base.log"
        )
    assert (made.tag, made.image_id, made.created) == (tag, image_id, True)
    assert engine.image_id(tag) == image_id
    assert "debootstrap: the base system is installed" in said
    assert said[-2:] == [
        "packing the bookworm root filesystem (tar)",
        f"importing it into the engine as {tag} (0 MiB)",
    ]
