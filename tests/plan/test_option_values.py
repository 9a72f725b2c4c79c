"""Malformed or out-of-range plan option values: one line, exit 2, never an internal error."""

from __future__ import annotations

import pytest

from tests.conftest import one_error_line, run_cli
from tfbuild.core.errors import UsageError
from tfbuild.plan.options import MAX_JOBS, PlanOptions


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
    one_error_line(result, 2, f"--jobs {jobs}", f"bazel's --jobs takes 1 to {MAX_JOBS}")


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
    with pytest.raises(UsageError, match=f"^{option} {value} is not a count") as caught:
        PlanOptions(**{field: value})  # type: ignore[arg-type]
    assert caught.value.exit_code == 2
