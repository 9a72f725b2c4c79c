"""The overlay's toolchain image against the engine's recording (tests/fixtures/engine/
overlay-image.json): ``image_toolchain`` and a compile in the image, as the real engine answered
them, replayed by the fake (tests/engine_fake.py). What the overlay decides from those answers: the
image reused (the recipe's, or a receipt's by its id), what the receipt records of it, a compiler
that refuses a flag or is OOM-killed in its container, in one error line."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from tests.engine_fake import FakeEngine, recording
from tests.engine_recorder import BAD_FLAG, FALLBACK, OVERLAY_COMPILER
from tfbuild.core.errors import BuildFailed
from tfbuild.overlay.compile import predefined
from tfbuild.overlay.image import SYSROOT_FLAGS, image_toolchain


def _quiet(_line: str) -> None:
    return None


def recorded_tag() -> str:
    (tag,) = (t for t in recording("overlay-image").images if t.startswith("tfbuild/overlay-"))
    return tag


def test_the_image_the_engine_has_is_reused_and_the_receipt_says_what_it_holds() -> None:
    stored = recording("overlay-image")
    engine = FakeEngine.replaying(stored)
    said: list[str] = []
    with image_toolchain(
        OVERLAY_COMPILER, fallback=FALLBACK, say=said.append, engine=engine
    ) as found:
        image = found.image
    tag = recorded_tag()
    assert said == [f"toolchain image {tag}: reused (unchanged)"]  # no "building ..." line
    assert (image.tag, image.id) == (tag, stored.images[tag])
    assert (image.compiler, image.suite, image.sysroot_suite, image.glibc) == (
        "clang-18",
        "trixie",
        "bullseye",
        "2.31",
    )
    assert image.packages["clang-18"].startswith("1:18.1.8-")
    assert image.sysroot_packages["libc6-dev"].startswith("2.31-")
    assert found.compiler.version.startswith("Debian clang version 18.1.8")
    (facts,) = engine.calls
    assert (facts.kind, facts.image, facts.network_mode) == ("overlay-facts", tag, "none")
    assert engine.containers == {}


def test_a_receipts_image_still_there_by_its_id_is_reused_and_a_refused_flag_is_one_line(
    tmp_path: Path,
) -> None:
    engine = FakeEngine.replaying(recording("overlay-image"))
    with image_toolchain(OVERLAY_COMPILER, fallback=FALLBACK, say=_quiet, engine=engine) as found:
        pinned = found.image
    said: list[str] = []
    with image_toolchain(
        pinned.compiler, fallback=FALLBACK, say=said.append, pinned=pinned, engine=engine
    ) as again:
        assert again.image == pinned
        toolchain = again.toolchain(())
        with pytest.raises(BuildFailed) as caught:
            predefined(toolchain, [BAD_FLAG], cwd=tmp_path)
    assert said == [f"toolchain image {pinned.tag}: the receipt's, reused"]
    assert caught.value.what == (
        f"asking the compiler what the target enables failed (in {pinned.tag})"
    )
    assert caught.value.why == f"clang++-18: error: unknown argument: '{BAD_FLAG}'"

    compile_call = engine.calls[-1]
    assert compile_call.kind == "compile"
    assert compile_call.command[: 1 + len(SYSROOT_FLAGS)] == ("clang++-18", *SYSROOT_FLAGS)
    assert compile_call.user == f"{os.getuid()}:{os.getgid()}"
    assert compile_call.network_mode == "none"
    assert [(m.source, m.target, m.read_only) for m in compile_call.mounts] == [
        (str(tmp_path), str(tmp_path), False)
    ]
    assert engine.containers == {} and engine.unplayed() == {}


def test_a_compiler_killed_for_memory_in_its_container_says_so(tmp_path: Path) -> None:
    """The engine's own OOM kill (the oom-killed recording), as a compile's container's end."""
    oom = recording("oom-killed").runs[0].as_kind("compile")
    stored = recording("overlay-image")
    image = dataclasses.replace(stored, runs=stored.of_kind("overlay-facts"))  # not its compile
    engine = FakeEngine.replaying(image, oom)
    with (
        image_toolchain(OVERLAY_COMPILER, fallback=FALLBACK, say=_quiet, engine=engine) as found,
        pytest.raises(BuildFailed) as caught,
    ):
        predefined(found.toolchain(()), ["-mavx2"], cwd=tmp_path)
    assert (
        caught.value.why == "error: the compiler ran out of memory (the container was OOM-killed)"
    )
