"""The weekly recipes-verify workflow: it parses (actionlint runs over every workflow in
test_workflows.py), runs on a schedule and by hand, verifies every recipe in a matrix that comes
from `tfbuild recipes --json` (its list step run here for real), and passes each version to
`tfbuild recipes verify` as data, never as shell."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.workflows.test_workflows import WORKFLOWS, _stub, actionlint, load, run_step, step
from tfbuild.recipes.recipe import load_recipes

WORKFLOW = WORKFLOWS / "recipes-verify.yml"


def _versions(tmp_path: Path) -> list[str]:
    """The list step, run for real with the project's `tfbuild recipes --json`."""
    result, output = run_step(
        step(load(WORKFLOW), "list", containing="tfbuild recipes --json"), cwd=tmp_path, values={}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = output.read_text().splitlines()
    assert line.startswith("versions=")
    versions = json.loads(line.removeprefix("versions="))
    assert result.stderr.split() == versions  # the step logs every version it will verify
    return list(versions)


def test_it_runs_weekly_and_by_hand_and_actionlint_passes_it() -> None:
    workflow = load(WORKFLOW)
    triggers = workflow[True]  # PyYAML reads the key `on` as True
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    (cron,) = triggers["schedule"]
    fields = cron["cron"].split()
    assert len(fields) == 5 and fields[2:4] == ["*", "*"] and fields[4].isdigit()  # one day a week
    result = actionlint(WORKFLOW, cwd=ROOT)
    assert (result.returncode, result.stdout) == (0, "")


def test_the_matrix_covers_every_recipe(tmp_path: Path) -> None:
    assert _versions(tmp_path) == list(load_recipes(()).versions())
    jobs = load(WORKFLOW)["jobs"]
    verify = jobs["verify"]
    assert verify["needs"] == "list"
    assert verify["strategy"] == {
        "fail-fast": False,  # one drifted recipe must not hide another
        "matrix": {"tf": "${{ fromJSON(needs.list.outputs.versions) }}"},
    }
    assert jobs["list"]["outputs"]["versions"] == "${{ steps.recipes.outputs.versions }}"


def test_a_new_recipe_is_verified_without_editing_the_workflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
    extra = tmp_path / "recipes"
    extra.mkdir()
    (extra / "tf-2.99.yaml").write_text(model.replace("tensorflow: 2.21.0", "tensorflow: 2.99.0"))
    shipped = list(load_recipes(()).versions())
    monkeypatch.setenv("TFBUILD_RECIPES_DIR", str(extra))  # run_step passes the environment on
    assert _versions(tmp_path) == [*shipped, "2.99.0"]


def test_the_verify_step_passes_the_version_as_one_word(tmp_path: Path) -> None:
    s = step(load(WORKFLOW), "verify", containing="tfbuild recipes verify")
    assert s["env"] == {"TF": "${{ matrix.tf }}"}
    stubs = tmp_path / "stubs"
    argv = tmp_path / "argv"
    _stub(stubs, "tfbuild", f'printf "%s\\n" "$@" > "{argv}"; exit 4')
    hostile = "2.21.0 $(touch pwned) ;touch pwned2"
    result, _ = run_step(
        s,
        cwd=tmp_path,
        values={"matrix.tf": hostile},
        path=f"{stubs}{os.pathsep}{os.environ['PATH']}",
    )
    assert result.returncode == 4  # a drifted recipe fails its job
    assert argv.read_text().splitlines() == ["recipes", "verify", hostile]
    assert not list(tmp_path.glob("pwned*")), "a matrix value ran as shell"
