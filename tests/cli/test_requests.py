"""What a command line hands on: the typed request each command gets (``request_of``), asserted
field by field, for the options whose reading matters (two flags of one field, repeated options, a
comma-separated list, an interpreter or a version); and a bad value refused by ``request_of`` with
the very line the run prints (``run_cli``, in this process)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import ERROR_PREFIX, cpuinfo_fixture, one_error_line, run_cli
from tfbuild.cli import request_of
from tfbuild.cli.detect import DetectArgs
from tfbuild.cli.pick import PickArgs
from tfbuild.cli.smoke import SmokeArgs
from tfbuild.cli.wheel import WheelArgs
from tfbuild.core.errors import UsageError
from tfbuild.core.pythons import PythonChoice
from tfbuild.core.variants import Variant
from tfbuild.plan.options import PlanOptions


def test_wheel_hands_on_the_run_options_and_the_plan_options_apart() -> None:
    request = request_of(["wheel", "--mkl", "--jobs", "4", "--dist", "d"])
    assert isinstance(request, WheelArgs)
    assert request.dist == "d"
    assert isinstance(request.plan, PlanOptions)
    assert request.plan.variant is Variant.mkl
    assert request.plan.jobs == 4
    default = request_of(["wheel"])
    assert (default.dist, default.plan.variant, default.plan.jobs) == ("dist", Variant.cpu, None)
    assert request_of(["wheel", "--cuda"]).plan.variant is Variant.cuda


def test_the_plan_options_are_the_same_request_in_every_command_that_plans() -> None:
    """plan, render and wheel take PlanOptions whole: one command line, one PlanOptions."""
    given = ["--mkl", "--jobs", "4", "--target", "haswell"]
    planned = request_of(["plan", *given])
    rendered = request_of(["render", *given, "-o", "out"])
    built = request_of(["wheel", *given])
    assert planned.plan == rendered.plan == built.plan
    assert built.plan.target == "haswell"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["wheel", "--mkl", "--cuda"], "--mkl and --cuda together"),
        (["wheel", "--jobs", "0"], "--jobs 0 is below its minimum"),
        (["pick", ".", "--python", "/nonexistent/python"], "is not an interpreter"),
        (["smoke", "x.whl", "--min-margin", "2"], "--min-margin 2 is above its maximum"),
    ],
    ids=["two-variants", "jobs-0", "no-interpreter", "margin"],
)
def test_a_bad_value_is_the_usage_error_the_run_prints(argv: list[str], said: str) -> None:
    with pytest.raises(UsageError) as refused:
        request_of(argv)
    line = one_error_line(run_cli(*argv), 2, said, among_others=True)
    assert line == ERROR_PREFIX + refused.value.line()


def test_pick_takes_an_interpreter_or_a_version() -> None:
    """An interpreter: its path, no version (pick asks it); a version: no interpreter."""
    by_path = request_of(["pick", "dist", "--python", sys.executable])
    assert isinstance(by_path, PickArgs)
    assert by_path.pick.source == "dist"
    assert by_path.pick.python == PythonChoice(
        text=sys.executable, version=None, executable=sys.executable
    )
    by_version = request_of(["pick", "dist", "--python", "3.11"])
    assert by_version.pick.python == PythonChoice(text="3.11", version="3.11", executable=None)
    assert request_of(["pick", "dist"]).pick.python is None


def test_pick_keeps_repeated_options_in_their_order() -> None:
    request = request_of(
        [
            "pick",
            "https://wheels.example/simple/",
            "--pip-arg",
            "--no-deps",
            "--pip-arg=-q",
            "--allow-origin",
            "b.example:8080",
            "--allow-origin",
            "a.example",
        ]
    )
    assert request.pick.pip_arg == ("--no-deps", "-q")
    assert request.pick.allow_origin == ("b.example:8080", "a.example")


def test_smoke_splits_allow_slower_at_its_commas() -> None:
    request = request_of(["smoke", "x.whl", "--allow-slower", " Conv2D, MatMul,,Relu "])
    assert isinstance(request, SmokeArgs)
    assert request.smoke.wheel == "x.whl"
    rules = request.smoke.rules
    assert rules.allow_slower == ("Conv2D", "MatMul", "Relu")  # spaces and empty names dropped
    assert request_of(["smoke", "x.whl"]).smoke.rules.allow_slower == ()
    assert request_of(["smoke", "x.whl", "--allow-slower", ","]).smoke.rules.allow_slower == ()


def test_detect_takes_every_cpuinfo_in_its_order() -> None:
    haswell, zen4 = cpuinfo_fixture("haswell"), cpuinfo_fixture("zen4")
    request = request_of(["detect", "--cpuinfo", str(zen4), "--cpuinfo", str(haswell), "--json"])
    assert isinstance(request, DetectArgs)
    assert request.cpuinfo == (zen4, haswell)
    assert request.as_json is True
    alone = request_of(["detect"])
    assert (alone.cpuinfo, alone.as_json, alone.gpu) == ((), False, True)
    assert request_of(["detect", "--no-gpu"]).gpu is False


def test_what_the_request_says_is_what_the_run_does() -> None:
    """The two machines of one detect request are the two the run reports, in that order."""
    haswell, zen4 = cpuinfo_fixture("haswell"), cpuinfo_fixture("zen4")
    argv = ["detect", "--cpuinfo", str(zen4), "--cpuinfo", str(haswell), "--json"]
    request = request_of(argv)
    result = run_cli(*argv)
    assert result.returncode == 0, result.stderr
    sources = [Path(m["cpu"]["source"]) for m in result.json()["machines"]]
    assert sources == list(request.cpuinfo)
