"""Malformed or out-of-range plan option values: one line, exit 2, never an internal error."""

from __future__ import annotations

import pytest

from tests.conftest import one_error_line, run_cli
from tfbuild.cli import request_of
from tfbuild.core.errors import UsageError
from tfbuild.plan.options import (
    MAX_JOBS,
    MIN_JOBS,
    MIN_JVM_HEAP_MB,
    MIN_LOCAL_RAM_MB,
    PlanOptions,
)


@pytest.mark.parametrize("value", ["5", "sm_8", "1.", "0.0", "sm_00", "8.10", "compute_", "x"])
def test_a_malformed_cuda_capability_is_a_usage_error(value: str) -> None:
    result = run_cli("plan", "--skip-disk-check", "--cuda", "--cuda-capabilities", value)
    one_error_line(
        result, 2, f"--cuda-capabilities value {value!r} is not a compute capability", "8.9"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [("8.9", "sm_89,compute_89"), ("sm_75,compute_90", "sm_75,sm_90,compute_90"), ("89", "sm_89")],
)
def test_well_formed_cuda_capabilities_are_planned(value: str, shown: str) -> None:
    result = run_cli("plan", "--skip-disk-check", "--cuda", "--cuda-capabilities", value, "--json")
    assert result.returncode == 0, result.stderr
    reasons = {r["what"]: r["value"] for r in result.json()["reasons"]}
    assert shown in reasons["compute capabilities"]


def test_a_three_digit_capability_is_read_and_judged_by_the_toolkit() -> None:
    # sm_120 (Blackwell) is well formed: the default CUDA of the newest recipe is too old for it,
    # which is the planner's exit 4, not a malformed value.
    result = run_cli("plan", "--skip-disk-check", "--cuda", "--cuda-capabilities", "sm_120")
    assert result.returncode == 4, result.stderr
    assert "cannot compile for compute capability 12.0" in result.stderr


@pytest.mark.parametrize("jobs", [MAX_JOBS + 1, 10**20])
def test_jobs_beyond_what_bazel_takes_are_a_usage_error(jobs: int) -> None:
    result = run_cli("plan", "--skip-disk-check", "--canary", "--jobs", str(jobs))
    one_error_line(result, 2, f"--jobs {jobs} is above its maximum", f"at most {MAX_JOBS}")


def test_jobs_up_to_bazels_limit_are_planned() -> None:
    result = run_cli("plan", "--skip-disk-check", "--canary", "--jobs", str(MAX_JOBS), "--json")
    assert result.returncode == 0, result.stderr
    reasons = {r["what"]: r for r in result.json()["reasons"]}
    assert reasons["jobs"]["value"] == str(MAX_JOBS)


@pytest.mark.parametrize("option", ["--jobs", "--jvm-heap", "--local-ram-resources"])
@pytest.mark.parametrize("value", ["0", "-5"])
def test_zero_and_negative_values_are_usage_errors_on_the_command_line(
    option: str, value: str
) -> None:
    result = run_cli("plan", "--skip-disk-check", "--canary", option, value)
    assert result.returncode == 2, result.stderr
    assert option in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("field", ["jobs", "jvm_heap", "local_ram_resources"])
@pytest.mark.parametrize("value", [0, -5])
def test_zero_and_negative_values_are_refused_when_the_request_is_made(
    field: str, value: int
) -> None:
    option = "--" + field.replace("_", "-")
    with pytest.raises(UsageError, match=f"^{option} {value} is below its minimum") as caught:
        PlanOptions(**{field: value})  # type: ignore[arg-type]
    assert caught.value.exit_code == 2


#: Each resource option, its field and its bounds: one constant each (tfbuild.plan.options).
BOUNDS = [
    ("--jobs", "jobs", MIN_JOBS, MAX_JOBS),
    ("--local-ram-resources", "local_ram_resources", MIN_LOCAL_RAM_MB, None),
    ("--jvm-heap", "jvm_heap", MIN_JVM_HEAP_MB, None),
]


@pytest.mark.parametrize("command", [["plan"], ["render", "-o", "ctx"], ["wheel"], ["forecast"]])
@pytest.mark.parametrize(("option", "field", "least", "most"), BOUNDS)
def test_each_resource_has_one_bound_on_the_command_line_and_in_the_request(
    command: list[str], option: str, field: str, least: int, most: int | None
) -> None:
    """The bound the command line checks is the one the request checks, in the same words: below
    it (or above) is one UsageError naming the option and the bound; at it, the request is made
    (nothing is run: request_of only parses)."""
    outside = [(least - 1, f"is below its minimum: it must be at least {least}")]
    if most is not None:
        outside.append((most + 1, f"is above its maximum: it must be at most {most}"))
    for value, words in outside:
        with pytest.raises(UsageError) as parsed:
            request_of([*command, option, str(value)])
        with pytest.raises(UsageError) as made:
            PlanOptions(**{field: value})  # type: ignore[arg-type]
        for caught in (parsed, made):
            assert caught.value.exit_code == 2
            assert caught.value.line().startswith(f"{option} {value} {words}. "), caught.value
    for value in (least, *([most] if most is not None else [])):
        assert getattr(request_of([*command, option, str(value)]).plan, field) == value
        assert getattr(PlanOptions(**{field: value}), field) == value  # type: ignore[arg-type]


def test_a_memory_budget_below_its_bound_is_one_line_from_the_real_command_line() -> None:
    result = run_cli("plan", "--canary", "--local-ram-resources", str(MIN_LOCAL_RAM_MB - 1))
    one_error_line(
        result,
        2,
        f"--local-ram-resources {MIN_LOCAL_RAM_MB - 1} is below its minimum: it must be at "
        f"least {MIN_LOCAL_RAM_MB}",
    )


def test_the_help_shows_each_bound() -> None:
    shown = " ".join(run_cli("plan", "--help").stdout.split())
    assert f"[{MIN_JOBS}<=x<={MAX_JOBS}]" in shown
    assert f"[x>={MIN_LOCAL_RAM_MB}]" in shown and f"[x>={MIN_JVM_HEAP_MB}]" in shown
