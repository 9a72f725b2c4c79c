"""The typed request: the plan options declared once, checked once, planned outside the CLI."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, recorded_host, run_cli
from tfbuild.cli import request_of
from tfbuild.core.errors import UsageError
from tfbuild.core.options import parameters
from tfbuild.core.variants import MklThreading, Variant
from tfbuild.plan.options import PlanOptions
from tfbuild.plan.request import choose_recipe, plan_request
from tfbuild.recipes.images import load_base_images


def test_every_plan_option_is_a_field_of_the_request() -> None:
    """The command line declares exactly the request's fields (--mkl and --cuda: variant's)."""
    options = {p.name for p in parameters(PlanOptions)}
    fields = {f.name for f in dataclasses.fields(PlanOptions)}
    assert options == fields - {"variant"} | {"mkl", "cuda"}


def _plan_options(*argv: str) -> PlanOptions:
    """The PlanOptions ``tfbuild plan ARGV`` hands to the planner."""
    options = request_of(["plan", *argv]).plan
    assert isinstance(options, PlanOptions)
    return options


def test_the_command_line_defaults_are_the_request_defaults() -> None:
    defaults = _plan_options()
    assert defaults == PlanOptions()
    assert defaults.variant is Variant.cpu
    assert defaults.mkl_threading is MklThreading.threadpool


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"target": "x86_64_v3", "cpuinfo": Path("node.cpuinfo")}, "--target and --cpuinfo"),
        ({"python": "abc"}, "--python 'abc' is not a Python version"),
        ({"python": "3.11\n"}, "is not a Python version"),  # full match: no trailing newline
        ({"mkl_threading": "fibers"}, "--mkl-threading 'fibers'"),
    ],
)
def test_a_bad_request_is_refused_when_made(changes: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        PlanOptions(**changes)  # type: ignore[arg-type]
    assert caught.value.exit_code == 2


def test_the_variant_comes_from_the_flags() -> None:
    assert _plan_options("--mkl").variant is Variant.mkl
    assert _plan_options("--cuda").variant is Variant.cuda
    with pytest.raises(UsageError, match="--mkl and --cuda together") as caught:
        _plan_options("--mkl", "--cuda")
    assert caught.value.exit_code == 2
    assert PlanOptions(mkl_threading="openmp").mkl_threading is MklThreading.openmp  # type: ignore[arg-type]


def test_a_request_plans_without_the_cli() -> None:
    args = PlanOptions(
        tf="2.20", variant=Variant.mkl, target="x86_64_v3", python="3.12", skip_disk_check=True
    )
    host = recorded_host("zen4", memory_gib=32, disk_gib=200)
    planned = plan_request(args, base_images=load_base_images(), host=host)
    assert planned.recipe.short == "2.20"
    assert planned.plan.tensorflow == planned.recipe.tensorflow
    assert planned.plan.variant == "mkl"
    assert planned.plan.target == "x86_64_v3"
    assert planned.plan.python == "3.12"
    assert "mkl_threadpool" in planned.plan.bazel_configs


def test_the_canary_request_swaps_in_the_stand_in_recipe() -> None:
    newest = choose_recipe(PlanOptions())
    canary = choose_recipe(PlanOptions(canary=True))
    assert canary.path.startswith("canary stand-in") and canary.compiler != newest.compiler
    assert canary.configs == newest.configs  # the newest release's flow, with the canary's compiler
    host = recorded_host("haswell", memory_gib=16, disk_gib=100)
    plan = plan_request(
        PlanOptions(canary=True, base_image="debian-12"),
        base_images=load_base_images(),
        recipe=canary,
        host=host,
    ).plan
    assert plan.canary is True


def test_plan_and_render_take_the_same_options(tmp_path: Path) -> None:
    """One declaration: the same options give the same plan through plan and render."""
    common = ["--tf", "2.21", "--mkl", "--cpuinfo", str(cpuinfo_fixture("haswell"))]
    common += ["--skip-disk-check", "--python", "3.12", "--no-label"]
    planned = run_cli("plan", *common, "--json")
    assert planned.returncode == 0, planned.stderr
    rendered = run_cli("render", *common, "-o", str(tmp_path / "ctx"))
    assert rendered.returncode == 0, rendered.stderr
    assert (tmp_path / "ctx" / "plan.json").read_text().startswith("{")
    import json

    plan_json = json.loads(planned.stdout)
    written = json.loads((tmp_path / "ctx" / "plan.json").read_text())
    assert plan_json == written
    assert plan_json["target"] == "haswell" and plan_json["label"] is None
