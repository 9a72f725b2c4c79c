"""``smoke --in-image`` against the engine's recording (tests/fixtures/engine/smoke-loads.json): the
canary's wheel probed in Debian 12 and 11 base images by the real engine, replayed by the fake
(tests/engine_fake.py) through ``loads_in``'s own code. What the user reads: a line per image, the
loader's words, the one error line; an image the engine lacks is refused before any container."""

from __future__ import annotations

import pytest

from tests.engine_fake import FakeEngine, canary_wheel, recording
from tfbuild.cli.wheel_display import print_loads
from tfbuild.core.errors import EnvironmentProblem
from tfbuild.smoke.loads import loads_failure, loads_in

GLIBC_ERROR = "version `GLIBC_2.34' not found"
NEW, OLD, MISSING = (
    "tfbuild/base:bookworm",
    "tfbuild/base:bullseye",
    "tfbuild-test/no-such-image:never",
)


def test_the_wheel_loads_on_its_own_system_and_not_on_an_older_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    engine = FakeEngine.replaying(recording("smoke-loads"))
    wheel = canary_wheel()
    reports = [loads_in(engine, wheel, image) for image in (NEW, OLD)]

    new, old = reports
    assert (new.glibc, new.python, new.passed) == ("2.36", "3.11.2", True)
    assert [(m.name, m.ok, m.file) for m in new.modules] == [
        ("tfbuild_canary", True, "tfbuild_canary/__init__.py")
    ]
    assert (old.glibc, old.python, old.loads, old.installable, old.imports) == (
        "2.31",
        "3.9.2",
        False,
        True,
        False,
    )
    problem = old.problem()
    assert problem is not None
    assert problem.startswith("tfbuild_canary/libcanary.so: ") and GLIBC_ERROR in problem

    print_loads(wheel, reports)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        wheel.name,
        f"  {NEW} (glibc 2.36, Python 3.11.2): loads, imports tfbuild_canary",
        f"  {OLD} (glibc 2.31, Python 3.9.2): does NOT load, does NOT import tfbuild_canary",
    ]
    assert GLIBC_ERROR in lines[3] and lines[4].startswith("    import tfbuild_canary: OSError: ")
    failure = loads_failure(wheel, reports)
    assert failure is not None and failure.exit_code == 7
    assert failure.what == f"{wheel.name} does not load on {OLD}"
    assert failure.fix.startswith("Build it for that system: tfbuild wheel --sysroot-from IMAGE")

    # Each probe ran once, read-only, in the image asked for, and its container went.
    assert [(call.kind, call.image) for call in engine.calls] == [
        ("loadprobe", NEW),
        ("loadprobe", OLD),
    ]
    assert all(mount.read_only for call in engine.calls for mount in call.mounts)
    assert engine.containers == {} and engine.unplayed() == {}


def test_an_image_the_engine_lacks_is_refused_before_any_container() -> None:
    engine = FakeEngine.replaying(recording("smoke-loads"))
    with pytest.raises(EnvironmentProblem) as caught:
        loads_in(engine, canary_wheel(), MISSING)
    assert caught.value.what == f"no image {MISSING} on this engine"
    assert "tfbuild base --suite SUITE" in caught.value.fix
    assert engine.calls == []
