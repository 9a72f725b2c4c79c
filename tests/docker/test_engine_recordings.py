"""The fake engine's recordings (tests/fixtures/engine/) against the real engine: each scenario run
again, here, and what the fake replays compared with what was stored. A failure means the engine
(or the build, or the toolchain image) now does something else than the fake says: look at what
changed, and re-record (``python -m tests.engine_recorder SCENARIO``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine_fake import RecordedRun, Recording, recording, shape
from tests.engine_recorder import IMPORTED_REPOSITORY, SCENARIOS, record
from tfbuild.build.container import is_oom, stopped_from_outside
from tfbuild.build.doctor import decode_probe, engine_checks
from tfbuild.core.engine import EngineInfo

pytestmark = pytest.mark.docker

#: The base images a scenario needs besides the test base image (fixtures of tests/docker).
NEEDS = {"smoke-loads": ("old_base_image",), "overlay-image": ("old_base_image", "new_base_image")}


def _lines(run: RecordedRun) -> list[str]:
    """What must read alike in two runs of one container: a build's own ``[tfbuild]`` lines, the
    names of a package list (not their versions), the canary probe's findings (not its timings),
    any other container's lines whole."""
    if run.kind == "build":
        return shape(run.lines)
    if run.kind == "packages":
        return sorted(line.split("\t")[0] for line in run.lines)
    if run.kind == "canary-probe":
        probe = decode_probe(list(run.lines), exit_code=run.exit_code or 0)
        smoke = {name: found.ok for name, found in probe.smoke.items()}
        return [json.dumps({"smoke": smoke, "instructions": probe.instructions}, sort_keys=True)]
    return list(run.lines)


def _images(found: Recording) -> dict[str, str]:
    """Each image the scenario asked about, as the engine had it when first asked, and whether the
    scenario made it; its own image by its repository (its tag names the run)."""
    return {
        tag.rpartition(":")[0] if tag.startswith(f"{IMPORTED_REPOSITORY}:") else tag: (
            ("missing" if image is None else "there") + (", made" if tag in found.made else "")
        )
        for tag, image in found.images.items()
    }


def _judged(info: EngineInfo | None) -> list[tuple[str, str]] | None:
    """What doctor makes of the engine's own facts (the disk aside: this machine's)."""
    if info is None:
        return None
    checks = engine_checks(info, disk_needed_gib=0)
    return [(c.name, c.status) for c in checks] + [
        ("disk measured", str(info.free_disk_bytes is not None))
    ]


def _decisions(run: RecordedRun) -> tuple[bool, bool] | None:
    """What the build makes of how the container ended: an OOM kill, a kill from outside."""
    if run.error is not None:
        return None
    return is_oom(run.result(), list(run.lines)), stopped_from_outside(run.result())


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_recording_agrees_with_the_real_engine(
    engine: Any, base_image: str, tmp_path: Path, scenario: str, request: pytest.FixtureRequest
) -> None:
    for fixture in NEEDS.get(scenario, ()):
        request.getfixturevalue(fixture)
    stored = recording(scenario)
    again = record(engine, scenario, tmp_path)
    assert _images(again) == _images(stored), scenario
    assert set(again.made) <= set(again.images), scenario
    assert _judged(again.info) == _judged(stored.info), scenario
    assert [run.kind for run in again.runs] == [run.kind for run in stored.runs]
    for old, new in zip(stored.runs, again.runs, strict=True):
        where = f"{scenario}, {old.kind} container"
        assert new.command == old.command, where
        assert (new.exit_code, new.oom_killed) == (old.exit_code, old.oom_killed), where
        assert _decisions(new) == _decisions(old), where
        assert _lines(new) == _lines(old), where
        assert new.left == old.left, where  # the files left in /out, by name
        if old.error is None:
            assert new.error is None, (where, new.error)
            continue
        assert new.error is not None, where
        assert new.error.error == old.error.error, where
        # Which answer the engine gives to a follow whose container went depends on where the
        # follow was (logs, wait or inspect): "no such container", 409 "marked for removal", or
        # the state "removing"/"dead". Each is the same ContainerGone.
        assert new.error.cause in {"NotFound", "APIError", None}, where
        if new.error.cause == "APIError":
            assert new.error.status_code == 409, (where, new.error)
