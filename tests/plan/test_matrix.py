"""`tfbuild matrix`: the CI build matrix from the shipped recipes, through the real CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tfbuild.core.errors import UsageError
from tfbuild.plan.matrix import build_matrix
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes


def matrix_json(*args: str) -> list[dict[str, str]]:
    result = run_cli("matrix", "--json", *args)
    assert result.returncode == 0, result.stderr
    # One line: the workflow writes it to $GITHUB_OUTPUT as matrix=<json>.
    assert result.stdout.count("\n") == 1
    data = json.loads(result.stdout)
    assert list(data) == ["include"]  # any other key would become a matrix axis in fromJSON
    return list(data["include"])


def test_the_default_is_the_newest_release_for_the_portable_levels() -> None:
    jobs = matrix_json()
    newest = load_recipes().recipes[-1]
    expected = [
        f"tf{newest.short}-py{py}-{target}-cpu"
        for py in newest.python
        for target in ("x86_64_v2", "x86_64_v3", "x86_64_v4")
    ]
    assert [job["name"] for job in jobs] == expected
    assert {job["label"] for job in jobs} == {"x86_64v2", "x86_64v3", "x86_64v4"}
    assert all(job["cuda"] == "" and job["variant"] == "cpu" for job in jobs)


def test_filters_on_every_axis_in_a_stable_order() -> None:
    args = ("--tf", "2.21,2.20", "--python", "3.12,3.11", "--targets", "x86_64_v4,x86_64_v3")
    jobs = matrix_json(*args, "--variants", "cpu,cuda")
    names = [job["name"] for job in jobs]
    # Releases oldest first; the other axes in the order asked for.
    assert names == [
        f"tf{tf}-py{py}-{target}-{variant}"
        for tf in ("2.20", "2.21")
        for py in ("3.12", "3.11")
        for target in ("x86_64_v4", "x86_64_v3")
        for variant in ("cpu", "cuda")
    ]
    cuda = next(job for job in jobs if job["name"] == "tf2.21-py3.11-x86_64_v3-cuda")
    assert cuda["cuda"] == "12.5.1"  # the recipe's default hermetic CUDA
    assert cuda["label"] == "x86_64v3.cu125"
    assert cuda["args"] == "--tf 2.21 --python 3.11 --target x86_64_v3 --cuda"
    # The same filters again: the same bytes (job names are the checks' names in GitHub).
    assert matrix_json(*args, "--variants", "cpu,cuda") == jobs
    assert len({job["name"] for job in jobs}) == len(jobs)


@pytest.mark.parametrize("name", ["tf2.21-py3.12-x86_64_v4-cpu", "tf2.20-py3.11-x86_64_v3-cuda"])
def test_each_job_is_what_tfbuild_wheel_would_plan(name: str) -> None:
    """A job's args given to `tfbuild plan` give the job's target, Python, variant and label."""
    (job,) = [
        j for j in matrix_json("--tf", "2.20,2.21", "--variants", "cpu,cuda") if j["name"] == name
    ]
    result = run_cli("plan", "--json", "--skip-disk-check", *job["args"].split())
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["target"], plan["python"], plan["variant"], plan["label"]) == (
        job["target"],
        job["python"],
        job["variant"],
        job["label"],
    )
    assert plan["tensorflow"].startswith(job["tf"] + ".")


def test_impossible_combinations_are_left_out_with_the_planners_reason() -> None:
    result = run_cli(
        "matrix", "--json", "--explain", "--tf", "2.13,2.14", "--python", "3.11,3.12",
        "--targets", "x86_64_v3,neoverse_v2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    names = [job["name"] for job in json.loads(result.stdout)["include"]]
    assert names == ["tf2.13-py3.11-x86_64_v3-cpu", "tf2.14-py3.11-x86_64_v3-cpu"]
    reasons = dict(
        re.match(r"left out (\S+): (.*)", line).groups()  # type: ignore[union-attr]
        for line in result.stderr.splitlines()
    )
    assert sorted(reasons) == [
        "tf2.13-py3.11-neoverse_v2-cpu",
        "tf2.13-py3.12-neoverse_v2-cpu",
        "tf2.13-py3.12-x86_64_v3-cpu",
        "tf2.14-py3.11-neoverse_v2-cpu",
        "tf2.14-py3.12-neoverse_v2-cpu",
        "tf2.14-py3.12-x86_64_v3-cpu",
    ]
    assert "allows 3.8, 3.9, 3.10, 3.11" in reasons["tf2.13-py3.12-x86_64_v3-cpu"]
    assert "aarch64 target" in reasons["tf2.14-py3.11-neoverse_v2-cpu"]


def test_a_release_without_a_cuda_row_has_no_cuda_jobs(tmp_path: Path) -> None:
    """A user's recipe directory overrides 2.21 with a copy that has no CUDA row."""
    text = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
    head, _, tail = text.partition("\ncuda:\n")
    rest = "\n".join(line for line in tail.splitlines() if not line.startswith("  "))
    (tmp_path / "tf-2.21.yaml").write_text(head + "\n" + rest + "\n")
    result = run_cli(
        "matrix", "--json", "--explain", "--python", "3.11", "--targets", "x86_64_v3",
        "--variants", "cpu,cuda", "--recipes-dir", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [job["name"] for job in json.loads(result.stdout)["include"]] == [
        "tf2.21-py3.11-x86_64_v3-cpu"
    ]
    assert "left out tf2.21-py3.11-x86_64_v3-cuda: TensorFlow 2.21 has no CUDA row" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--targets", "native"), "CI wheels are for named portable targets"),
        (("--targets", "x86_64_v5"), "Did you mean x86_64_v"),
        (("--variants", "rocm"), "unknown variant 'rocm'"),
        (("--tf", "1.15"), "1.15"),
        (("--tf", "2.13", "--python", "3.13"), "no job is left in the matrix"),
        (("--tf", "all", "--variants", "cpu,mkl,cuda"), "GitHub Actions runs at most 256 jobs"),
    ],
)
def test_bad_filters_are_one_clear_line(args: tuple[str, ...], message: str) -> None:
    """Each is a usage error (exit 2): a filter the user can change, one line saying how."""
    result = run_cli("matrix", "--json", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    last = result.stderr.splitlines()[-1]
    assert last.startswith("tfbuild: error: ") and message in result.stderr
    assert "Traceback" not in result.stderr


def test_the_job_limit() -> None:
    recipes, images = load_recipes(), load_base_images()
    assert len(build_matrix(recipes, images, python=["3.11"]).jobs) == 3
    with pytest.raises(UsageError, match="the matrix has 3 jobs"):
        build_matrix(recipes, images, python=["3.11"], limit=2)


def test_the_human_table() -> None:
    result = run_cli(
        "matrix", "--python", "3.11", "--targets", "x86_64_v4,zen4", "--variants", "mkl"
    )
    assert result.returncode == 0, result.stderr
    assert "tf2.21-py3.11-x86_64_v4-mkl" in result.stdout
    assert "+zen4.mkl" in result.stdout


# --- the overlay jobs ---------------------------------------------------------------------------------


def test_overlay_jobs_are_release_by_target_each_as_tfbuild_overlay_plans_it() -> None:
    from tfbuild.plan.matrix import DEFAULT_OVERLAY_TARGETS

    result = run_cli("matrix", "--overlays", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1
    data = json.loads(result.stdout)
    assert list(data) == ["include"]
    newest = load_recipes().recipes[-1]
    python = max(newest.python, key=lambda v: tuple(map(int, v.split("."))))
    assert [job["name"] for job in data["include"]] == [
        f"overlay-tf{newest.short}-{t}" for t in DEFAULT_OVERLAY_TARGETS
    ]
    for job in data["include"]:
        assert job["args"] == f"--tf {newest.short} --target {job['target']}"
        assert job["python"] == python and job["tf"] == newest.short
        # what the job runs is what tfbuild overlay plans: the same release and target
        planned = run_cli("plan", *job["args"].split(), "--json")
        assert planned.returncode == 0, planned.stderr
        assert planned.json()["target"] == job["target"]


def test_overlay_jobs_leave_out_targets_below_stock_with_the_reason() -> None:
    result = run_cli("matrix", "--overlays", "--targets", "x86_64_v2,zen4", "--tf", "2.20,2.21",
                     "--explain")  # fmt: skip
    assert result.returncode == 0, result.stderr
    left = [line for line in result.stderr.splitlines() if line.startswith("left out ")]
    assert left == [
        f"left out overlay-tf{tf}-x86_64_v2: stock TensorFlow's kernels are compiled for AVX, "
        "which x86_64_v2 lacks: its overlay would replace them with slower ones"
        for tf in ("2.20", "2.21")
    ]
    assert "overlay-tf2.20-zen4" in result.stdout and "overlay-tf2.21-zen4" in result.stdout


def test_overlay_jobs_take_neither_pythons_nor_variants() -> None:
    from tests.conftest import one_error_line

    ran = run_cli("matrix", "--overlays", "--python", "3.11")
    assert one_error_line(ran, UsageError.exit_code) == (
        "tfbuild: error: --overlays with --python: an overlay is one py3-none wheel per release "
        "and target, of the cpu variant. Drop --python."
    )
