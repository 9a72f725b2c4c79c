"""Impossible plans are refused when planned, each with one line: another architecture than the build
host's, memory settings beyond the machine, a target the recipe's compiler cannot build for. And a
machine with few cores is warned about, in the same words as ``tfbuild doctor``.

Pure: recorded hosts (tests/conftest.py) and recorded dumps, never this machine's live features.
"""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

import pytest

from tests.conftest import ROOT, cpuinfo_fixture, one_error_line, recorded_host, run_cli
from tests.plan.test_plan import IMAGES, host, plan, recipe_221
from tfbuild.core.errors import UnsupportedError
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.plan import GIB, PlanOptions, make_plan
from tfbuild.plan.resources import FEW_CPUS, few_cpus
from tfbuild.plan.target import check_architecture
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes

ARMV7 = ROOT / "tests" / "fixtures" / "cpuinfo" / "android-mt6735-armv7"


def refusal(options: PlanOptions, **changes: object) -> UnsupportedError:
    with pytest.raises(UnsupportedError) as caught:
        plan(options, facts=host(**changes) if changes else None)
    assert caught.value.exit_code == 4
    assert "\n" not in caught.value.line()
    return caught.value


# --- another architecture than the build host's ---------------------------------------------------


def test_a_target_of_another_architecture_is_refused() -> None:
    error = refusal(PlanOptions(target="neoverse_v2"))  # the recorded Zen 5 VM builds
    assert error.what == "--target neoverse_v2 is an aarch64 target, and this build host is x86_64"
    assert "without a cross compiler" in error.why
    assert error.fix.startswith(
        "Run tfbuild on an aarch64 machine: until cross-compilation is real"
    )


@pytest.mark.parametrize(("dump", "arch"), [("neoverse_v2", "aarch64"), ("power9", "ppc64")])
def test_a_cpuinfo_machine_of_another_architecture_is_refused(dump: str, arch: str) -> None:
    facts = host(dump, machine_is_build_host=False, build_architecture="x86_64")
    with pytest.raises(UnsupportedError) as caught:
        plan(PlanOptions(), facts=facts)
    assert caught.value.what.endswith(f"-{dump} is {arch}, and this build host is x86_64")


def test_an_armv7_machine_is_refused_on_x86_64() -> None:
    facts = dataclasses.replace(
        host(),
        machine=read_cpuinfo(ARMV7),
        machine_is_build_host=False,
        build_architecture="x86_64",
    )
    with pytest.raises(UnsupportedError, match=r"is armv7l, and this build host is x86_64"):
        plan(PlanOptions(), facts=facts)


def test_an_aarch64_build_host_plans_for_itself_and_refuses_x86() -> None:
    arm = host("neoverse_v2")  # the recorded Neoverse V2 as the build host
    p = plan(PlanOptions(), facts=arm)
    assert (p.architecture, p.cflags) == ("aarch64", ("-mcpu=neoverse-v2",))
    assert next(iter(p.runtime_env.items())) == (
        "LD_PRELOAD",
        "/usr/lib/aarch64-linux-gnu/libtcmalloc.so.4",
    )
    with pytest.raises(UnsupportedError, match="x86_64_v3 is an x86_64 target, and this build "):
        plan(PlanOptions(target="x86_64_v3"), facts=arm)


def test_a_power_dump_does_not_say_its_byte_order() -> None:
    # /proc/cpuinfo of a POWER machine does not tell ppc64 from ppc64le: either build host fits.
    for build in ("ppc64le", "ppc64"):
        facts = host("power9", machine_is_build_host=False, build_architecture=build)
        check_architecture(PlanOptions(), facts)  # no refusal
    with pytest.raises(UnsupportedError):
        check_architecture(PlanOptions(), host("power9", build_architecture="aarch64"))


def test_the_matrix_leaves_other_architectures_out_with_the_planners_reason() -> None:
    from tfbuild.plan.matrix import build_matrix

    matrix = build_matrix(
        load_recipes(),
        load_base_images(),
        tf=["2.21"],
        python=["3.12"],
        targets=["x86_64_v3,neoverse_v2"],
    )
    assert [job.target for job in matrix.jobs] == ["x86_64_v3"]
    (skipped,) = matrix.skipped
    assert skipped.reason.startswith(
        "--target neoverse_v2 is an aarch64 target, and this build host is x86_64: tfbuild builds"
    )


# --- memory settings beyond the machine -------------------------------------------------------------


def test_a_heap_bigger_than_memory_is_refused() -> None:
    error = refusal(PlanOptions(jvm_heap=100000))  # 24 GiB recorded
    assert error.what == "--jvm-heap 100000 is more than this machine's memory"
    assert "24576 MiB of usable memory" in error.why
    # 24576 - 1024 for the system - 2560 for one compile job
    assert error.fix.startswith("Pass at most --jvm-heap 20992")


def test_a_heap_that_leaves_no_room_for_one_compile_job_is_refused() -> None:
    error = refusal(PlanOptions(jvm_heap=20993))
    assert error.what == "--jvm-heap 20993 leaves bazel's compile actions no room"
    p = plan(PlanOptions(jvm_heap=20992))  # the largest that fits
    assert p.resources.jvm_heap_mb == 20992 and p.resources.jobs == 1
    cuda = refusal(PlanOptions(variant="cuda", jvm_heap=20992))  # a CUDA job needs 4 GiB
    assert "one compile job (4096 MiB)" in cuda.why


def test_a_memory_budget_bigger_than_memory_is_refused() -> None:
    error = refusal(PlanOptions(local_ram_resources=1_000_000))
    assert error.what == "--local-ram-resources 1000000 is more than this machine's memory"
    assert error.fix.startswith("Pass at most --local-ram-resources 21095")  # less 2457 and 1024
    both = refusal(PlanOptions(local_ram_resources=20000, jvm_heap=8000))
    assert both.what.startswith("--local-ram-resources 20000 and the 8000 MiB bazel server heap")


def test_an_unknown_memory_size_is_not_second_guessed() -> None:
    p = plan(PlanOptions(jvm_heap=100000), facts=host(build_memory_bytes=None))
    assert p.resources.jvm_heap_mb == 100000


# --- a target the recipe's compiler cannot build for --------------------------------------------------


def test_a_recipe_compiler_that_cannot_build_for_the_machine_is_refused() -> None:
    old = dataclasses.replace(recipe_221(), compiler="gcc-9.4")
    with pytest.raises(UnsupportedError) as caught:
        plan(PlanOptions(), recipe=old, facts=host("zen4"))
    assert caught.value.what == "gcc-9.4.0 cannot build for zen4"
    assert "leaves AVX512_BF16 off" in caught.value.why
    assert (
        caught.value.fix
        == "Use gcc 10.3 or newer (archspec spells zen4 from there on), or build for zen2."
    )
    # The fallback it names works: zen2's flags plus the -m options gcc 9.4 has.
    assert plan(PlanOptions(target="zen2"), recipe=old, facts=host("zen4")).target == "zen2"


def test_a_fallback_that_covers_every_guard_feature_is_a_warning() -> None:
    # TensorFlow 2.19-2.21's clang 18 does not know zen5 (archspec: 19.1); zen4's flags plus
    # -mavxvnni enable all that Zen 5 has.
    p = plan(PlanOptions(target="zen5"))
    assert p.cflags == ("-march=znver4", "-mtune=znver4", "-mavxvnni")
    assert any("does not know zen5" in w and "using zen4's flags" in w for w in p.warnings)


def test_no_shipped_recipe_refuses_its_default_x86_targets() -> None:
    recipes = load_recipes()
    facts = host()
    for recipe in recipes.recipes:
        for target in ("x86_64_v2", "x86_64_v3", "x86_64_v4"):
            options = PlanOptions(target=target, python=recipe.python[-1], skip_disk_check=True)
            assert make_plan(options, recipe, facts, base_images=IMAGES).target == target


# --- few cores: the plan's warning, doctor's words ----------------------------------------------------


def test_few_cores_are_a_plan_warning_with_doctors_words() -> None:
    from tfbuild.build.doctor import resource_check

    what, advice = few_cpus(2) or ("", "")
    p = plan()  # the recorded host has 2 cpus
    assert f"{what}. {advice}" in p.warnings
    assert "--remote-cache URL" in advice
    check = resource_check(p, cpus=2, memory_bytes=24 * GIB)
    assert check.status == "warn" and check.detail.endswith(what) and check.fix == advice


@pytest.mark.parametrize(
    "options",
    [
        PlanOptions(remote_cache="grpcs://cache.example.org:443"),
        PlanOptions(canary=True, base_image="debian-12"),
    ],
    ids=["remote-cache", "canary"],
)
def test_no_slow_build_warning_when_it_does_not_apply(options: PlanOptions) -> None:
    what, _ = few_cpus(2) or ("", "")
    assert what
    if options.canary:
        from tfbuild.recipes import canary

        p = make_plan(options, canary.recipe(recipe_221()), host(), base_images=load_base_images())
    else:
        p = plan(options)
    assert not any(w.startswith(what) for w in p.warnings)


def test_enough_cores_give_no_warning() -> None:
    assert few_cpus(FEW_CPUS) is None
    p = plan(facts=recorded_host("zen5-vm", memory_gib=64, disk_gib=100, build_cpus=FEW_CPUS))
    assert not any("many hours" in w for w in p.warnings)


# --- on the command line: one line, the exit code ------------------------------------------------------

#: A target and a recorded machine of another architecture than the one these tests run on.
FOREIGN_TARGET, FOREIGN_DUMP = (
    ("neoverse_v2", "neoverse_v2") if platform.machine() == "x86_64" else ("x86_64_v3", "haswell")
)


@pytest.mark.parametrize("command", ["plan", "render"])
def test_cli_refuses_a_target_of_another_architecture(command: str, tmp_path: Path) -> None:
    out = ("-o", str(tmp_path / "ctx")) if command == "render" else ()
    line = one_error_line(run_cli(command, "--target", FOREIGN_TARGET, *out), 4)
    assert f"--target {FOREIGN_TARGET} is an" in line
    assert "until cross-compilation is real" in line
    assert not (tmp_path / "ctx").exists()


@pytest.mark.parametrize("dump", ["foreign", "armv7"])
def test_cli_refuses_a_cpuinfo_machine_of_another_architecture(dump: str) -> None:
    path = ARMV7 if dump == "armv7" else cpuinfo_fixture(FOREIGN_DUMP)
    line = one_error_line(run_cli("plan", "--cpuinfo", str(path)), 4)
    assert f"the machine of {path} is" in line and "until cross-compilation is real" in line


def test_cli_refuses_a_heap_beyond_this_machines_memory() -> None:
    from tfbuild.detect.system import system_info

    usable = system_info().memory.usable_bytes or 0
    heap = max(100000, 2 * usable // (1 << 20))
    line = one_error_line(run_cli("plan", "--jvm-heap", str(heap)), 4)
    assert f"--jvm-heap {heap} is more than this machine's memory" in line


def test_cli_a_malformed_python_is_a_usage_error() -> None:
    line = one_error_line(run_cli("plan", "--python", "abc"), 2)
    assert (
        line == "tfbuild: error: --python 'abc' names no Python: it is not a version (3.Y), and no "
        "'abc' is on PATH. Pass a version such as 3.12, or an interpreter: its path "
        "(.venv/bin/python) or name (python3.12)."
    )
    # Well formed, but no recipe allows it: a request that cannot be met.
    assert "cannot be built for Python 3.99" in one_error_line(
        run_cli("plan", "--python", "3.99"), 4
    )
