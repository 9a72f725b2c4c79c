"""The portable route, end to end on the real engine: a canary built on Debian 13 with the image's own
C library needs glibc 2.38 and Debian 12's loader refuses it; the same build linked against Debian
12's C library through TF_SYSROOT (``--sysroot-from``, the mechanism of TensorFlow's /dt9 route) needs
no more than Debian 12 has, and Debian 12 loads it."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.docker.test_wheel import wheel_cli
from tfbuild.recipes import canary

pytestmark = pytest.mark.docker


#: The real CLI in a subprocess, with a build's time to finish.
tfbuild = functools.partial(run_cli, timeout=600)


def build(dist: Path, volume: str, base: str, *args: str) -> tuple[Path, dict[str, Any]]:
    """`tfbuild wheel --canary` on ``base``: the wheel and its receipt."""
    built = wheel_cli(dist, volume, "--json", *args, base=base, timeout=600)
    assert built.returncode == 0, built.stderr
    wheel = Path(json.loads(built.stdout)["wheel"])
    return wheel, json.loads(wheel.with_suffix(".json").read_text())


def test_a_newer_build_is_refused_by_an_older_system_and_the_sysroot_route_takes_it_back(
    base_image: str, new_base_image: str, volume: str, tmp_path: Path
) -> None:
    # Plain, on Debian 13: strtol binds to glibc 2.38's __isoc23_strtol.
    plain, plain_receipt = build(tmp_path / "plain", volume, new_base_image)
    assert plain_receipt["plan"]["route"] == "image"
    assert plain_receipt["floor"]["glibc"] == "2.38", plain_receipt["floor"]
    assert plain.name.endswith("-manylinux_2_38_x86_64.whl")
    refused = tfbuild("pick", str(plain.parent), "--glibc", "2.36", "--json")
    assert refused.returncode == 4, refused.stderr
    (why,) = json.loads(refused.stdout)["wheels"]
    assert why["stage"] == "glibc" and "needs glibc 2.38" in why["reason"]
    on_bookworm = tfbuild("smoke", str(plain), "--in-image", base_image, "--json")
    assert on_bookworm.returncode == 7, on_bookworm.stderr
    (image,) = json.loads(on_bookworm.stdout)["images"]
    assert (image["glibc"], image["loads"]) == ("2.36", False)
    (library,) = image["libraries"]
    assert library["path"] == canary.LIBRARY
    assert "version `GLIBC_2.38' not found" in library["error"]
    assert image["imports"] is False

    # The same image's clang against Debian 12's C library and libstdc++ (TF_SYSROOT).
    portable, receipt = build(
        tmp_path / "portable", volume, new_base_image, "--sysroot-from", base_image
    )
    plan = receipt["plan"]
    assert (plan["route"], plan["sysroot"]["name"], plan["sysroot"]["glibc"]) == (
        "sysroot",
        "/sysroot",
        "2.36",
    )
    assert plan["compiler"].startswith("clang-") and "/sysroot" in plan["toolchain"]
    assert 'build --repo_env=TF_SYSROOT="/sysroot"' in plan["rc_lines"]
    # What the build printed of its tools: the image's clang and the sysroot's own glibc.
    assert "clang version" in receipt["inputs"]["tools"]["compiler"]
    assert receipt["inputs"]["tools"]["sysroot"] == "/sysroot glibc 2.36"
    assert receipt["floor"]["glibc"] == "2.34", receipt["floor"]  # pthread_create; no 2.38
    assert plan["floor_goal"] == "2.36"
    assert portable.name.endswith("-manylinux_2_34_x86_64.whl")
    assert tfbuild("pick", str(portable.parent), "--glibc", "2.36").returncode == 0
    loads = tfbuild("smoke", str(portable), "--in-image", base_image, "--json")
    assert loads.returncode == 0, loads.stdout + loads.stderr
    (image,) = json.loads(loads.stdout)["images"]
    assert (image["glibc"], image["loads"], image["imports"]) == ("2.36", True, True)


def test_a_rebuild_needs_the_very_image_its_sysroot_was_made_from(
    engine: Any, base_image: str, new_base_image: str
) -> None:
    import dataclasses

    from tfbuild.build.rebuild import check_base_image
    from tfbuild.core.errors import EnvironmentProblem
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    args = PlanOptions(
        canary=True, base_image=new_base_image, sysroot_from=base_image, skip_disk_check=True
    )
    plan = plan_here(args, engine).plan
    assert plan.sysroot is not None and plan.sysroot.image is not None
    assert plan.sysroot.image.image_id == engine.image_id(base_image)
    check_base_image(engine, plan)  # both images are the ones planned with
    remade = dataclasses.replace(plan.sysroot.image, image_id="sha256:" + "0" * 64)
    other = dataclasses.replace(plan, sysroot=dataclasses.replace(plan.sysroot, image=remade))
    with pytest.raises(EnvironmentProblem, match="the sysroot image tfbuild/base:bookworm"):
        check_base_image(engine, other)
