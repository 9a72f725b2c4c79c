"""What a plan says of this machine and of its recipe, and what it never refuses for.

A CUDA plan without a GPU to decide its compute capabilities says so first, with the list it chose
instead and why; a disk short of what the build needs is a plan warning and ``tfbuild wheel``'s
refusal (exit 5), never the planner's; a recipe not yet checked against its release's own files
says so once among the plan's warnings, with how to check it; and a bad option value is refused
(exit 2) before anything of the machine is looked at, by every command that takes it.

The GPUs are recorded nvidia-smi and kernel-module texts (tests/fixtures/nvidia, read by the same
parser detection uses), the CPU a recorded dump: the same on a machine with or without a GPU. The
command-line tests that read this machine's GPUs compare with what detection finds here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import ROOT, mounted_tmpfs, one_error_line, run_cli
from tests.plan.test_plan import IMAGES, MODEL, host, recipe_221
from tfbuild.core.errors import EnvironmentProblem, UsageError
from tfbuild.detect.host import HostFacts
from tfbuild.detect.nvidia import detect_nvidia, report_from_outputs
from tfbuild.detect.system import Disk
from tfbuild.plan import GIB, PlanOptions, make_plan
from tfbuild.plan.cuda import describe_capabilities, generation, gpu_lead
from tfbuild.plan.make import unchecked_recipe
from tfbuild.plan.request import Planned, plan_request
from tfbuild.plan.resources import DISK_NEEDED_GIB, check_disk, disk_warning
from tfbuild.recipes import canary
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import VERIFIED_PARTS, Recipe, parse_recipe

NVIDIA = ROOT / "tests" / "fixtures" / "nvidia"
NARROW = {"COLUMNS": "80"}
CUDA = PlanOptions(variant="cuda")


def gpu_host(
    *, query: str | None = None, smi: str | None = None, proc: str | None = None
) -> HostFacts:
    """The recorded host with the driver and GPUs of recorded nvidia-smi (``query``: its
    --query-gpu CSV, ``smi``: its table) or kernel module (``proc``) texts, taken as host_facts
    takes them from detection's report: the driver's version and CUDA, each GPU's capability."""
    text = {
        k: (NVIDIA / v).read_text() if v else None
        for k, v in (("q", query), ("s", smi), ("p", proc))
    }
    report = report_from_outputs(query_csv=text["q"], smi_text=text["s"], proc_text=text["p"])
    return host(
        driver_version=report.driver.version if report.driver else None,
        driver_cuda=report.driver.cuda_version if report.driver else None,
        gpu_capabilities=tuple(g.compute_capability for g in report.gpus if g.compute_capability),
    )


def planned(options: PlanOptions, facts: HostFacts | None = None) -> Planned:
    """What ``tfbuild plan`` prints: the plan, and what this host means for it."""
    return plan_request(options, base_images=IMAGES, recipe=recipe_221(), host=facts or host())


def reason(planned: Planned, what: str) -> str:
    (found,) = [r for r in planned.plan.reasons if r.what == what]
    return found.why


# --- no GPU to decide the compute capabilities: said first ------------------------------------------


def test_no_gpu_nor_driver_is_said_first_with_the_list_chosen_instead_and_why() -> None:
    result = planned(CUDA)  # the recorded host: no driver, no GPU
    assert result.plan.cuda is not None
    defaults = recipe_221().cuda.capabilities  # type: ignore[union-attr]
    assert result.plan.cuda.capabilities == defaults == (
        "sm_60", "sm_70", "sm_80", "sm_89", "compute_90",
    )  # fmt: skip
    (lead,) = result.lead
    assert lead.startswith(
        "no NVIDIA GPU or driver on this machine, so the wheel is built for TensorFlow 2.21's "
        "default GPU list instead: sm_60, sm_70, sm_80 and sm_89 (Pascal to Ada Lovelace) and "
        "PTX compute_90 (Hopper and newer compile it on first load). "
    ), lead
    assert "--cuda-capabilities, e.g. 8.9" in lead  # how to build for the GPUs it will run on
    assert reason(result, "compute capabilities").startswith(
        "no NVIDIA GPU or driver on this machine: TensorFlow 2.21's own default list"
    )
    # Not a plan warning: the plan's reasons say it; the lead is said by tfbuild plan.
    assert not any("GPU" in w for w in result.plan.warnings)


def test_a_driver_without_a_gpu_capability_is_named() -> None:
    # The kernel module is loaded, nvidia-smi answered nothing: a driver and no GPU.
    facts = gpu_host(proc="proc-version/open-565.57.01.txt")
    assert (facts.driver_version, facts.gpu_capabilities) == ("565.57.01", ())
    (lead,) = planned(CUDA, facts).lead
    assert lead.startswith(
        "no GPU with a known compute capability here (NVIDIA driver 565.57.01), so the wheel is "
        "built for TensorFlow 2.21's default GPU list instead: sm_60"
    ), lead


def test_this_machines_gpus_decide_and_nothing_is_said_first() -> None:
    facts = gpu_host(query="l40s-595.80/query.csv", smi="l40s-595.80/nvidia-smi.txt")
    assert facts.gpu_capabilities == ("8.9",)
    result = planned(CUDA, facts)
    assert result.lead == ()
    assert result.plan.cuda is not None
    assert result.plan.cuda.capabilities == ("sm_89", "compute_89")
    assert reason(result, "compute capabilities").startswith("this machine's GPUs")


@pytest.mark.parametrize(
    "options",
    [
        PlanOptions(variant="cuda", cuda_capabilities=("8.6",)),
        PlanOptions(variant="mkl"),
        PlanOptions(variant="cpu"),
    ],
    ids=["capabilities-asked", "mkl", "cpu"],
)
def test_nothing_is_said_first_when_no_gpu_had_to_decide(options: PlanOptions) -> None:
    assert planned(options).lead == ()


def test_a_cpuinfo_machines_gpus_are_unknown() -> None:
    dump = Path("node.cpuinfo")
    facts = replace(host(), machine_is_build_host=False)
    lead = gpu_lead(replace(CUDA, cpuinfo=dump), recipe_221(), facts, ("sm_80", "compute_80"))
    assert lead is not None
    assert lead.startswith(
        "the GPUs of the machine of node.cpuinfo are unknown, so the wheel is built for "
        "TensorFlow 2.21's default GPU list instead: sm_80 (Ampere) and PTX compute_80 (newer "
        "GPUs compile it on first load)."
    ), lead
    # The CI matrix's nominal runner: no dump, and not the machine the wheel is for.
    runner = gpu_lead(CUDA, recipe_221(), facts, ("sm_80", "compute_80"))
    assert runner is not None
    assert runner.startswith("the GPUs of the machine it is for are unknown, so "), runner


@pytest.mark.parametrize(
    ("capability", "name"),
    [
        ((3, 5), "Kepler"),
        ((5, 2), "Maxwell"),
        ((6, 1), "Pascal"),
        ((7, 0), "Volta"),
        ((7, 2), "Volta"),
        ((7, 5), "Turing"),
        ((8, 0), "Ampere"),
        ((8, 7), "Ampere"),
        ((8, 9), "Ada Lovelace"),
        ((9, 0), "Hopper"),
        ((10, 0), "Blackwell"),
        ((12, 0), "Blackwell"),
    ],
)
def test_each_capability_has_its_gpu_generation(capability: tuple[int, int], name: str) -> None:
    assert generation(capability) == name


def test_every_recipes_default_list_is_described() -> None:
    from tfbuild.recipes.recipe import load_recipes

    for recipe in load_recipes().recipes:
        if recipe.cuda is None:
            continue
        text = describe_capabilities(recipe.cuda.capabilities)
        for capability in recipe.cuda.capabilities:
            assert capability in text, (recipe.path, text)
    assert describe_capabilities(("sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80")) == (
        "sm_35, sm_50, sm_60, sm_70 and sm_75 (Kepler to Turing) and PTX compute_80 (Ampere and "
        "newer compile it on first load)"
    )


def test_the_plan_prints_the_lead_right_below_its_title(capsys: pytest.CaptureFixture[str]) -> None:
    from tfbuild.cli.display import print_plan

    result = planned(CUDA, replace(host(), build_disk_free_bytes=10 * GIB))
    assert result.lead and result.here
    print_plan(result.plan, lead=result.lead, here=result.here)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("TensorFlow 2.21.0 cuda wheel")
    assert lines[1].startswith("warning: no NVIDIA GPU or driver on this machine, so the wheel")
    shown = " ".join(" ".join(lines).split())
    assert shown.count("no NVIDIA GPU or driver") == 1  # said once (the row's reason is --why's)
    # The plan's own warnings, then this host's disk, then the hint to --why.
    at = [
        shown.index(f"warning: {' '.join(w.split())}")
        for w in (*result.plan.warnings, *result.here)
    ]
    assert at == sorted(at)
    assert lines[-1] == "every choice with its reason: the same command with --why"


def test_plan_cuda_here_says_first_what_detection_finds_here() -> None:
    """This machine, read by the command as by detection in this test: without a GPU the second
    line says none was seen; with GPUs, they decide the capabilities and nothing is said first."""
    nvidia = detect_nvidia()
    capabilities = [g.compute_capability for g in nvidia.gpus if g.compute_capability]
    result = run_cli("plan", "--cuda", "--skip-disk-check", env=NARROW)
    if capabilities:
        if result.returncode == 4:  # a driver too old for the release, or a GPU too new for it
            line = one_error_line(result, 4)
            assert "is too old for CUDA" in line or "cannot compile for compute capability" in line
            return
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert not lines[1].startswith("warning:"), result.stdout
        row = next(line for line in lines if line.startswith("compute capabilities"))
        for capability in capabilities:
            assert f"sm_{capability.replace('.', '')}" in row, row
        return
    assert result.returncode == 0, result.stderr
    second = result.stdout.splitlines()[1]
    seen = (
        "no NVIDIA GPU or driver on this machine"
        if nvidia.driver is None
        else f"no GPU with a known compute capability here (NVIDIA driver {nvidia.driver.version})"
    )
    assert second.startswith(f"warning: {seen}"), result.stdout
    assert "default GPU list instead: sm_60" in " ".join(result.stdout.split())


# --- the disk: a plan warns, tfbuild wheel refuses ------------------------------------------------


def test_a_disk_short_of_the_build_is_a_warning_of_the_plan_never_its_refusal() -> None:
    short = replace(host(), build_disk_free_bytes=10 * GIB)
    result = planned(CUDA, short)
    (warning,) = result.here
    assert warning == (
        "a cuda build needs about 70 GiB free at /cache, 10.0 GiB are free: tfbuild wheel will "
        "refuse to start. Free some space, point TFBUILD_CACHE_DIR at a larger disk, or pass "
        "--skip-disk-check."
    )
    # Kept out of the plan (plan.json and a receipt hold no fact of the moment).
    assert warning not in result.plan.warnings
    assert result.plan == planned(CUDA, replace(short, build_disk_free_bytes=900 * GIB)).plan


@pytest.mark.parametrize(
    ("options", "free_gib"),
    [
        (PlanOptions(variant="mkl"), DISK_NEEDED_GIB["mkl"]),  # just enough
        (PlanOptions(variant="cuda", skip_disk_check=True), 10),  # asked to build anyway
        (PlanOptions(canary=True, base_image="debian-12"), 1),  # the stand-in is megabytes
        (PlanOptions(variant="cuda"), None),  # unknown: not second-guessed
    ],
    ids=["enough", "skip-disk-check", "canary", "unknown"],
)
def test_no_disk_warning_when_it_does_not_apply(options: PlanOptions, free_gib: int | None) -> None:
    free = None if free_gib is None else free_gib * GIB
    assert disk_warning(options, replace(host(), build_disk_free_bytes=free)) is None
    disk = None if free is None else Disk(path="/cache", free_bytes=free, total_bytes=1000 * GIB)
    check_disk(options, disk)  # and tfbuild wheel builds


def test_wheel_refuses_a_disk_short_of_the_build() -> None:
    disk = Disk(path="/cache", free_bytes=10 * GIB, total_bytes=100 * GIB)
    with pytest.raises(EnvironmentProblem) as caught:
        check_disk(CUDA, disk)
    assert caught.value.exit_code == 5
    assert caught.value.line() == (
        "not enough free disk for a cuda build at /cache: 10.0 GiB free, about 70 GiB needed for "
        "bazel's output, caches and the wheel. Free some space, point TFBUILD_CACHE_DIR at a "
        "larger disk, or pass --skip-disk-check."
    )
    with pytest.raises(EnvironmentProblem, match="about 40 GiB needed"):
        check_disk(PlanOptions(variant="mkl"), disk)


@pytest.fixture
def short_disk(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a command whose builds go to a 1 MiB filesystem ($TFBUILD_CACHE_DIR):
    a disk far short of any build, on any machine (mounting it needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    with mounted_tmpfs(tmp_path / "cache", size="1m") as where:
        yield {"TFBUILD_CACHE_DIR": str(where), **NARROW}


def test_plan_and_render_on_a_short_disk_warn_and_wheel_refuses(
    short_disk: dict[str, str], tmp_path: Path
) -> None:
    where = short_disk["TFBUILD_CACHE_DIR"]
    shown = run_cli("plan", "--cuda", "--cuda-capabilities", "8.9", env=short_disk)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""
    text = " ".join(shown.stdout.split())
    assert f"warning: a cuda build needs about 70 GiB free at {where}, 0.0 GiB are free: " in text
    assert text.count("GiB are free") == 1
    skipped = run_cli(
        "plan", "--cuda", "--cuda-capabilities", "8.9", "--skip-disk-check", env=short_disk
    )
    assert skipped.returncode == 0, skipped.stderr
    assert "GiB are free" not in skipped.stdout
    # render writes a context and builds nothing: no refusal either.
    out = tmp_path / "ctx"
    rendered = run_cli(
        "render", "--cuda", "--cuda-capabilities", "8.9", "-o", str(out), env=short_disk
    )
    assert rendered.returncode == 0, rendered.stderr
    assert (out / "plan.json").is_file()
    # The build refuses, before the Docker engine is reached (none is needed to hear it).
    refused = run_cli("wheel", "--cuda", "--dist", str(tmp_path / "dist"), env=short_disk)
    one_error_line(
        refused, 5, f"not enough free disk for a cuda build at {where}: 0.0 GiB free, about 70 GiB"
    )


# --- option values: refused first, by every command that takes them --------------------------------

#: Each command that takes the plan options, with what it needs besides them.
COMMANDS = {
    "plan": (),
    "render": ("-o", "{tmp}/ctx"),
    "wheel": ("--dist", "{tmp}/dist"),
    "forecast": (),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            ("--cuda", "--cuda-capabilities", "5"),
            "--cuda-capabilities value '5' is not a compute capability: one is a major and a "
            "one-digit minor version, from 1.0 up. Use 8.9, sm_89 or compute_90",
        ),
        (
            ("--cuda-capabilities", "8.9"),
            "--cuda-capabilities without --cuda: it applies to a CUDA build only. Add --cuda, or "
            "drop --cuda-capabilities.",
        ),
        (
            ("--cuda", "--cuda-version", "12.x"),
            "--cuda-version '12.x' is not a version: it is X.Y.Z or X.Y",
        ),
        (("--mkl", "--jobs", "5001"), "--jobs 5001 is above its maximum: it must be at most 5000"),
    ],
    ids=["malformed-capability", "capability-without-cuda", "malformed-cuda-version", "jobs"],
)
def test_a_bad_value_is_refused_before_the_machine_is_looked_at(
    short_disk: dict[str, str], tmp_path: Path, command: str, options: tuple[str, ...], line: str
) -> None:
    """On a disk far short of any build (which a wheel refuses with exit 5), a bad value is still
    its own refusal: one line, exit 2, before the disk, the engine, or the GPUs are looked at."""
    extra = [arg.format(tmp=tmp_path) for arg in COMMANDS[command]]
    result = run_cli(command, *options, *extra, env=short_disk)
    assert one_error_line(result, 2).startswith(f"tfbuild: error: {line}")
    assert not (tmp_path / "ctx").exists() and not (tmp_path / "dist").exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"variant": "cuda", "cuda_capabilities": ("5",)}, "'5' is not a compute capability"),
        ({"variant": "cuda", "cudnn_version": "9.3.0;x"}, "--cudnn-version '9.3.0;x' is not"),
        ({"variant": "mkl", "cudnn_version": "9.3.0"}, "--cudnn-version without --cuda"),
        (
            {"cuda_capabilities": ("8.9",), "cuda_version": "12.5.1"},
            "--cuda-capabilities and --cuda-version without --cuda: they apply",
        ),
        ({"jobs": 5001}, "--jobs 5001 is above its maximum: it must be at most 5000"),
    ],
)
def test_the_request_checks_its_values_when_it_is_made(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        PlanOptions(**fields)  # type: ignore[arg-type]
    assert caught.value.exit_code == 2


# --- a recipe not yet checked against its release: said once ----------------------------------------


def test_a_recipe_not_yet_checked_is_said_once_last_among_the_warnings() -> None:
    p = planned(CUDA).plan
    unchecked = [w for w in p.warnings if "was not yet checked" in w]
    assert unchecked == [p.warnings[-1]]
    assert unchecked[0] == (
        "recipes/tf-2.21.yaml was not yet checked against TensorFlow 2.21.0's own files (none of "
        "its 8 parts read there: 4 cited elsewhere, 4 not verified). To check it: tfbuild recipes "
        "verify 2.21 (it downloads the release)."
    )


def test_the_canary_plan_says_nothing_of_the_recipe() -> None:
    options = PlanOptions(canary=True, base_image="debian-12")
    p = make_plan(options, canary.recipe(recipe_221()), host(), base_images=load_base_images())
    assert not any("checked against" in w for w in p.warnings), p.warnings


def _with_record(block: str, path: str = "recipes/tf-2.21.yaml") -> Recipe:
    return parse_recipe(MODEL[: MODEL.index("\nverified:") + 1] + block, path=path)


def test_a_recipe_read_in_its_release_is_not_warned_of() -> None:
    block = "verified:\n  date: 2027-01-05\n" + "".join(
        f"  {part}: 'read: the v2.21.0 tarball (tfbuild recipes verify)'\n"
        for part in VERIFIED_PARTS
    )
    recipe = _with_record(block)
    assert recipe.verified is not None and recipe.verified.checked == "yes (8 of 8)"
    assert unchecked_recipe(recipe) is None
    p = make_plan(CUDA, recipe, host(), base_images=IMAGES)
    assert not any("checked against" in w for w in p.warnings), p.warnings


def test_a_recipe_read_in_part_names_what_was_not() -> None:
    block = (
        "verified:\n  date: 2027-01-05\n  bazel: 'read: .bazelversion of the tarball'\n"
        "  configs: 'not verified: inferred'\n  cuda: 'cited: the docs'\n"
    )
    recipe = _with_record(block)
    assert recipe.verified is not None and recipe.verified.checked == "some (1 of 3)"
    assert unchecked_recipe(recipe) == (
        "recipes/tf-2.21.yaml was checked against TensorFlow 2.21.0's own files only in part (not "
        "its configs, cuda). To check it: tfbuild recipes verify 2.21 (it downloads the release)."
    )


def test_a_users_recipe_without_a_record_says_so_and_where_it_is() -> None:
    recipe = parse_recipe(
        MODEL[: MODEL.index("\nverified:") + 1], path="/site/recipes/tf-2.21.yaml"
    )
    assert recipe.verified is None
    assert unchecked_recipe(recipe) == (
        "/site/recipes/tf-2.21.yaml was not yet checked against TensorFlow 2.21.0's own files (it "
        "has no verified record). To check it: tfbuild recipes verify 2.21 --recipes-dir "
        "/site/recipes (it downloads the release)."
    )
