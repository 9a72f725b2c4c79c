"""`tfbuild doctor`'s base image check: it names what this machine lacks to make the canary's base
image (debootstrap, root), says its fix once, and a failed canary build repeats no fix."""

from __future__ import annotations

import pytest

from tfbuild.build.doctor import Check, DoctorReport, base_image_warning, base_lacks, canary_failure
from tfbuild.core.errors import BuildFailed, EnvironmentProblem


@pytest.mark.parametrize(
    ("root", "debootstrap", "lacking"),
    [
        (True, "/usr/sbin/debootstrap", ()),
        (True, None, ("debootstrap",)),
        (False, "/usr/sbin/debootstrap", ("root",)),
        (False, None, ("debootstrap", "root")),
    ],
)
def test_what_the_machine_lacks_to_make_a_base_image(
    root: bool, debootstrap: str | None, lacking: tuple[str, ...]
) -> None:
    assert base_lacks(root=root, debootstrap=debootstrap) == lacking


def test_a_missing_debootstrap_is_named_and_its_install_comes_first() -> None:
    check = base_image_warning("tfbuild/base:bookworm", "bookworm", ("debootstrap",))
    assert check.status == "warn"
    assert check.detail == (
        "no local base image tfbuild/base:bookworm, and debootstrap is not installed to make one: "
        "the canary pulls debian:12 from a registry"
    )
    assert check.fix == (
        "Where no registry can be reached, install debootstrap (sudo apt-get install "
        "debootstrap), then sudo tfbuild base --suite bookworm."
    )


def test_without_root_only_root_is_asked_for() -> None:
    check = base_image_warning("tfbuild/base:bookworm", "bookworm", ("root",))
    assert "tfbuild base needs root" in check.detail
    assert "debootstrap" not in check.fix.replace("tfbuild base", "")
    assert check.fix.endswith("sudo tfbuild base --suite bookworm.")


def test_a_failed_canary_build_says_its_fix_beside_not_inside_its_detail() -> None:
    error = BuildFailed("building image x failed: boom", why="step 2/3", fix="Fix that step.")
    ok = Check(name="base image", status="ok", detail="tfbuild/base:bookworm")
    check = canary_failure(error, ok)
    assert check.detail == "building image x failed: boom: step 2/3"
    assert check.fix == "Fix that step."
    line = DoctorReport(checks=[ok, check]).failure()
    assert line is not None
    assert line.line().count("Fix that step.") == 1


def test_a_failure_without_a_fix_takes_the_warning_checks() -> None:
    warned = base_image_warning("tfbuild/base:bookworm", "bookworm", ("debootstrap",))
    failed = Check(name="canary build", status="fail", detail="cannot get the image debian:12")
    error = DoctorReport(checks=[warned, failed]).failure()
    assert isinstance(error, EnvironmentProblem)
    assert error.line() == (
        "1 check(s) failed: canary build: cannot get the image debian:12. " + warned.fix
    )
