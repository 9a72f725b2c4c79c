"""The glibc floor is real: the canary's receipt says what it needs, pick refuses it for an older
glibc, and an older system's loader really refuses it (its library and its import), while the
build's own system loads and imports it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import as_a_process
from tests.conftest import CliResult
from tests.docker.test_wheel import wheel_cli
from tfbuild.recipes import canary

pytestmark = pytest.mark.docker


def smoke_in(wheel: Path, *images: str) -> CliResult:
    """`tfbuild smoke WHEEL --in-image IMAGE ...`: each image's own loader loads the wheel's code,
    and its python3 imports it."""
    argv = ["smoke", str(wheel), "--json"]
    for image in images:
        argv += ["--in-image", image]
    return as_a_process(argv, dict(os.environ), timeout=300)


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
    def pick(glibc: str) -> CliResult:
        argv = ["pick", str(wheel.parent), "--glibc", glibc, "--json"]
        return as_a_process(argv, dict(os.environ), timeout=120)

    old = pick("2.31")
    assert old.returncode == 4, old.stderr
    (refused,) = json.loads(old.stdout)["wheels"]
    assert refused["stage"] == "glibc" and "needs glibc 2.34" in refused["reason"]
    assert pick("2.36").returncode == 0

    # And the loaders agree, shown by tfbuild smoke --in-image: Debian 11 (glibc 2.31) refuses the
    # library with its loader's own words, Debian 12 (the build's system) loads it.
    both = smoke_in(wheel, old_base_image, base_image)
    assert both.returncode == 7, both.stderr
    old_image, own_image = json.loads(both.stdout)["images"]
    assert (old_image["glibc"], old_image["loads"]) == ("2.31", False)
    (library,) = old_image["libraries"]
    assert library["path"] == canary.LIBRARY
    assert "version `GLIBC_2.34' not found" in library["error"]
    assert (own_image["glibc"], own_image["loads"]) == ("2.36", True)
    # The import agrees too: run in each image's own python3, it fails on Debian 11 with the
    # loader's words and, on Debian 12, really runs the wheel's package.
    (old_import,) = old_image["modules"]
    assert (old_image["imports"], old_import["name"], old_import["ok"]) == (
        False,
        "tfbuild_canary",
        False,
    )
    assert old_import["error"].startswith("OSError: ")
    assert "version `GLIBC_2.34' not found" in old_import["error"]
    assert own_image["imports"] is True
    assert own_image["modules"] == [
        {
            "name": "tfbuild_canary",
            "ok": True,
            "file": "tfbuild_canary/__init__.py",
            "error": None,
            "cause": None,
        }
    ]
    assert "does not load on tfbuild/base:bullseye" in both.stderr.splitlines()[-1]
    assert smoke_in(wheel, base_image).returncode == 0


def test_a_build_that_misses_its_floor_says_so_loudly(
    engine: Any, base_image: str, volume: str, tmp_path: Path
) -> None:
    """A recipe aims at a floor (the stock wheel's); a wheel above it is published with a warning
    that names what it needs, in the result and in the log: never quietly."""
    import dataclasses

    from tfbuild.build.run import BuildRun
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    args = PlanOptions(
        canary=True, base_image=base_image, cache_volume=volume, skip_disk_check=True
    )
    planned = plan_here(args, engine)
    aiming = dataclasses.replace(planned, plan=dataclasses.replace(planned.plan, floor_goal="2.31"))
    result = BuildRun(dist=tmp_path / "dist", quiet=True).execute(aiming, engine=engine)
    (warning,) = result.warnings
    assert "should load on glibc 2.31" in warning and "needs glibc 2.34" in warning
    assert "WARNING: " in result.log.read_text()
    assert result.data.floor is not None and result.data.floor.glibc == "2.34"
