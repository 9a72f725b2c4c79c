"""The preflight on trees shaped like real releases (tests/fixtures/trees, real TensorFlow text).

Each fixture tree is copied into a temporary directory; a test changes one thing the way a real
tree differs from a recipe (another .bazelversion, a config missing from .bazelrc, the other wheel
flow, a Python without a lock, a CUDA version the table lacks, the toolchain route's files) and
expects exactly that one mismatch, named by the tree's file and line, with a fix. Plans come from
the shipped recipes through the real planner, for the matrix's nominal CI runner.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tfbuild.build.preflight import Finding, PreflightReport, preflight
from tfbuild.build.preflight.workspace import CUDA_TABLES
from tfbuild.build.release_check import recipe_findings, verify_plans
from tfbuild.core.errors import InputError, UnsupportedError
from tfbuild.core.variants import Variant
from tfbuild.plan import BuildPlan, PlanOptions, make_plan
from tfbuild.plan.matrix import RUNNER
from tfbuild.plan.request import plan_request
from tfbuild.recipes import canary
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import Recipe, load_recipes, parse_recipe

TREES = ROOT / "tests" / "fixtures" / "trees"
BASE_IMAGES = load_base_images()
RECIPES = load_recipes()


def tree(name: str, tmp_path: Path) -> Path:
    """A private copy of a fixture tree (tests change copies, never the fixtures)."""
    return Path(shutil.copytree(TREES / name, tmp_path / name))


def plan_for(version: str, variant: Variant = Variant.cpu, **options: object) -> BuildPlan:
    recipe = RECIPES.get(version)
    opts = PlanOptions(variant=variant, target="x86_64_v3", skip_disk_check=True, **options)  # type: ignore[arg-type]
    return make_plan(opts, recipe, RUNNER, base_images=BASE_IMAGES)


def line_of(path: Path, fragment: str) -> int:
    text = path.read_text()
    assert fragment in text, fragment
    return text[: text.index(fragment)].count("\n") + 1


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def only_failure(report: PreflightReport) -> Finding:
    assert len(report.failures) == 1, [f.text() for f in report.failures]
    return report.failures[0]


def by_check(report: PreflightReport, check: str) -> list[Finding]:
    return [f for f in report.findings if f.check == check]


# --- trees that fit -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "name"), [("2.21", "tf-2.21-shaped"), ("2.18", "tf-2.18-shaped")]
)
def test_a_tree_shaped_like_the_release_fits_every_plan_of_its_recipe(
    version: str, name: str, tmp_path: Path
) -> None:
    root = tree(name, tmp_path)
    recipe = RECIPES.get(version)
    plans, refused = verify_plans(recipe, BASE_IMAGES)
    assert refused == ()
    assert {str(p.variant) for p in plans} == {"cpu", "mkl", "cuda"}
    assert sorted({p.python for p in plans}) == sorted(recipe.python)
    for plan in plans:
        report = preflight(plan, recipe, root)
        assert report.passed, [f.text() for f in report.failures]
        assert report.error() is None
        # Every check ran and says where it looked, in the real files.
        checks = {f.check for f in report.findings}
        assert {"bazelversion", "bazelrc", "configs", "wheel_target", "python_lock"} <= checks
        (imported,) = by_check(report, "bazelrc")
        assert (imported.file, imported.line) == (
            ".bazelrc",
            line_of(root / ".bazelrc", "try-import %workspace%/.tf_configure.bazelrc"),
        )
        (target,) = by_check(report, "wheel_target")
        build = root / "tensorflow/tools/pip_package/BUILD"
        assert target.line == line_of(build, 'tf_wheel(\n    name = "wheel"') + 1
        assert recipe_findings(recipe, root) and all(
            f.status == "ok" for f in recipe_findings(recipe, root)
        )


def test_the_hermetic_route_finds_rules_ml_toolchain_and_notes_the_cuda_table_outside_the_tree(
    tmp_path: Path,
) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    report = preflight(plan_for("2.21", Variant.cuda, python="3.13"), RECIPES.get("2.21"), root)
    assert report.passed
    (route,) = by_check(report, "toolchain")
    assert (route.status, route.file) == ("ok", "WORKSPACE")
    assert route.line == line_of(root / "WORKSPACE", 'name = "rules_ml_toolchain"')
    (cuda,) = by_check(report, "cuda_versions")
    assert cuda.status == "note" and cuda.what.startswith("not checked")
    assert "@rules_ml_toolchain//gpu/cuda:cuda_redist_init_repositories.bzl" in cuda.what
    (python,) = by_check(report, "python_lock")
    assert python.line == line_of(root / "WORKSPACE", '"3.13": "//:requirements_lock_3_13.txt"')


def test_the_sysroot_route_finds_the_devtoolset_script_and_the_crosstool(tmp_path: Path) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    report = preflight(plan_for("2.18", Variant.cuda, python="3.12"), RECIPES.get("2.18"), root)
    assert report.passed
    script, crosstool = by_check(report, "toolchain")
    assert script.file and script.file.endswith("builder.devtoolset/build_devtoolset.sh")
    assert script.line == line_of(root / script.file, "\ndevtoolset-9)") + 1
    assert crosstool.file and crosstool.line == line_of(root / crosstool.file, "_TF_SYSROOT")
    cuda, cudnn = by_check(report, "cuda_versions")
    table = root / "third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl"
    assert (cuda.line, cudnn.line) == (line_of(table, '"12.5.1"'), line_of(table, '"9.3.0"'))


# --- each kind of mismatch: one line, the tree's file and line, a fix ---------------------------------


def test_another_bazel_version(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    (root / ".bazelversion").write_text("6.5.0\n")
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert failure.where == ".bazelversion:1"
    assert failure.what == "the tree wants bazel 6.5.0, the plan runs bazel 7.4.1"
    assert "--recipes-dir" in failure.fix


def test_no_bazelversion_is_a_note_not_a_failure(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    (root / ".bazelversion").unlink()
    report = preflight(plan_for("2.21"), RECIPES.get("2.21"), root)
    assert report.passed
    (note,) = by_check(report, "bazelversion")
    assert note.status == "note" and "USE_BAZEL_VERSION" in note.why


def test_a_config_the_recipe_lists_but_the_tree_lacks(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    edit(root / ".bazelrc", "build:cuda_wheel --", "# build:cuda_wheel --")
    recipe = RECIPES.get("2.21")
    assert preflight(plan_for("2.21"), recipe, root).passed  # the CPU build does not use it
    failure = only_failure(preflight(plan_for("2.21", Variant.cuda, python="3.13"), recipe, root))
    assert failure.what == "--config=cuda_wheel is not defined"
    assert failure.where == ".bazelrc"
    assert f"{recipe.where('configs')} says this release defines it" in failure.why
    assert "--recipes-dir" in failure.fix
    drift = [f for f in recipe_findings(recipe, root) if f.status == "fail"]
    assert [f.what for f in drift] == [
        "the recipe lists configs the tree's rc files do not define: cuda_wheel"
    ]


def test_a_config_named_by_another_config_names_the_line_that_names_it(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    rc = root / ".bazelrc"
    chain = line_of(rc, "build:cuda_clang --config=cuda\n")
    edit(rc, "build:cuda_clang --config=cuda\n", "build:cuda_clang --config=cuda_base\n")
    failure = only_failure(
        preflight(plan_for("2.21", Variant.cuda, python="3.13"), RECIPES.get("2.21"), root)
    )
    assert failure.what == "--config=cuda_base is not defined"
    assert failure.where == f".bazelrc:{chain}"
    assert failure.why.startswith(f".bazelrc:{chain} names it; ")
    assert "did you mean" in failure.why


def test_the_trees_own_unconditional_configs_must_be_defined_too(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    rc = root / ".bazelrc"
    unconditional = line_of(rc, "build --config=short_logs\n")
    edit(rc, "build:short_logs --", "build:shorter_logs --")
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert (failure.what, failure.where) == (
        "--config=short_logs is not defined",
        f".bazelrc:{unconditional}",
    )


def test_a_bazelrc_that_never_imports_the_rendered_rc_file(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    edit(root / ".bazelrc", "try-import %workspace%/.tf_configure.bazelrc\n", "")
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert (failure.check, failure.where) == ("bazelrc", ".bazelrc")
    assert "try-import %workspace%/.tf_configure.bazelrc" in failure.fix


def test_an_import_of_a_missing_file_and_an_import_that_brings_the_rendered_one(
    tmp_path: Path,
) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    rc = root / ".bazelrc"
    edit(
        rc,
        "try-import %workspace%/.tf_configure.bazelrc\n",
        "import %workspace%/tools/more.bazelrc\n",
    )
    missing, unread = preflight(plan_for("2.21"), RECIPES.get("2.21"), root).failures
    assert missing.what == "'import %workspace%/tools/more.bazelrc' names a file the tree lacks"
    assert missing.where == f".bazelrc:{line_of(rc, 'import %workspace%/tools/more.bazelrc')}"
    assert unread.what == "no rc file of the tree imports %workspace%/.tf_configure.bazelrc"
    (root / "tools").mkdir()
    (root / "tools/more.bazelrc").write_text("try-import %workspace%/.tf_configure.bazelrc\n")
    report = preflight(plan_for("2.21"), RECIPES.get("2.21"), root)
    assert report.passed
    assert by_check(report, "bazelrc")[0].where == "tools/more.bazelrc:1"


def test_the_other_wheel_flow(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    old = TREES / "old-pieces/tensorflow/tools/pip_package/BUILD"
    shutil.copy(old, root / "tensorflow/tools/pip_package/BUILD")
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert failure.what == "no wheel target"
    assert failure.where == "tensorflow/tools/pip_package/BUILD"
    script = line_of(old, 'sh_binary(\n    name = "build_pip_package"') + 1
    assert f":build_pip_package (tensorflow/tools/pip_package/BUILD:{script})" in failure.why


def test_a_python_the_workspace_has_no_lock_for(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    edit(root / "WORKSPACE", '        "3.13": "//:requirements_lock_3_13.txt",\n', "")
    failure = only_failure(preflight(plan_for("2.21", python="3.13"), RECIPES.get("2.21"), root))
    assert failure.what == "no requirements lock for Python 3.13"
    first = line_of(root / "WORKSPACE", '"3.10"')
    assert failure.where == f"WORKSPACE:{first}"
    assert "3.10, 3.11, 3.12, 3.14" in failure.why


def test_a_lock_the_workspace_names_but_the_tree_lacks(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    (root / "requirements_lock_3_12.txt").unlink()
    failure = only_failure(preflight(plan_for("2.21", python="3.12"), RECIPES.get("2.21"), root))
    mapped = line_of(root / "WORKSPACE", '"3.12"')
    assert failure.where == f"WORKSPACE:{mapped}"
    assert "//:requirements_lock_3_12.txt, which the tree lacks" in failure.what


def test_without_a_workspace_the_lock_is_at_the_top_of_the_tree(tmp_path: Path) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    (root / "requirements_lock_3_11.txt").unlink()
    failure = only_failure(preflight(plan_for("2.18", python="3.11"), RECIPES.get("2.18"), root))
    assert failure.where == "requirements_lock_3_11.txt"
    assert "requirements_lock_3_9.txt, requirements_lock_3_10.txt, requirements_lock_3_12.txt" in (
        failure.why
    )


def test_a_cuda_version_the_table_does_not_know(tmp_path: Path) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    table = root / "third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl"
    edit(table, '    "12.5.1": [', '    "12.5.9": [')
    recipe = RECIPES.get("2.18")
    failure = only_failure(preflight(plan_for("2.18", Variant.cuda, python="3.12"), recipe, root))
    assert failure.where == "third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl"
    assert failure.what == "hermetic CUDA 12.5.1 is not a key of CUDA_REDIST_JSON_DICT"
    assert "12.5.0, 12.5.9, 12.6.0" in failure.why and "--cuda-version" in failure.fix
    # Another version the table knows fits again.
    other = plan_for("2.18", Variant.cuda, python="3.12", cuda_version="12.6.1")
    assert preflight(other, recipe, root).passed
    drift = [f.what for f in recipe_findings(recipe, root) if f.status == "fail"]
    assert drift == ["cuda_versions not in the tree's table: 12.5.1"]


def test_the_workspace_says_which_table_and_a_tree_without_one_is_not_checked(
    tmp_path: Path,
) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    plan = plan_for("2.18", Variant.cuda, python="3.12")
    recipe = RECIPES.get("2.18")
    # The load TensorFlow's WORKSPACE made through @local_xla (tensorflow/text's WORKSPACE for
    # 2.20.0 has the same lines): the table is then the one under third_party/xla.
    (root / "WORKSPACE").write_text(
        "load(\n"
        '    "@local_xla//third_party/gpus/cuda/hermetic:cuda_redist_init_repositories.bzl",\n'
        '    "cuda_redist_init_repositories",\n'
        ")\n"
    )
    (cuda,) = by_check(preflight(plan, recipe, root), "cuda_versions")
    assert (cuda.status, cuda.file) == ("note", CUDA_TABLES[0])
    xla = root / CUDA_TABLES[0]
    shutil.copy(root / CUDA_TABLES[2], xla)
    found = by_check(preflight(plan, recipe, root), "cuda_versions")
    assert {(f.status, f.file) for f in found} == {("ok", CUDA_TABLES[0])}
    (root / "WORKSPACE").unlink()
    xla.unlink()
    (root / CUDA_TABLES[2]).unlink()
    (note,) = by_check(preflight(plan, recipe, root), "cuda_versions")
    assert note.status == "note" and note.what.startswith("not checked")


def test_a_tree_that_does_not_pin_rules_ml_toolchain(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    (root / "WORKSPACE").unlink()
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert (failure.check, failure.where) == ("toolchain", "WORKSPACE")
    assert failure.what == "the tree does not pin rules_ml_toolchain"
    assert "--no-portable" in failure.fix
    # The image route of 2.21 names rules_ml_toolchain too (its opt-out flags): checked as well.
    image = plan_for("2.21", portable=False)
    assert any("@rules_ml_toolchain" in line for line in image.rc_lines)
    assert only_failure(preflight(image, RECIPES.get("2.21"), root)).check == "toolchain"


def test_the_devtoolset_script_missing_or_without_devtoolset_9(tmp_path: Path) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    script = (
        root / "tensorflow/tools/tf_sig_build_dockerfiles/builder.devtoolset/build_devtoolset.sh"
    )
    newer = root / "ci/official/containers/ml_build/builder.devtoolset/build_devtoolset.sh"
    newer.parent.mkdir(parents=True)
    script.rename(newer)  # the newer layout is found as well
    assert preflight(plan_for("2.18"), RECIPES.get("2.18"), root).passed
    newer.write_text(re.sub(r"(?m)^devtoolset-9\)", "devtoolset-10)", newer.read_text()))
    failure = only_failure(preflight(plan_for("2.18"), RECIPES.get("2.18"), root))
    assert failure.what == "build_devtoolset.sh has no devtoolset-9 case"
    assert failure.where == "ci/official/containers/ml_build/builder.devtoolset/build_devtoolset.sh"
    newer.unlink()
    failure = only_failure(preflight(plan_for("2.18"), RECIPES.get("2.18"), root))
    assert failure.what == "the tree has no builder.devtoolset/build_devtoolset.sh"


def test_a_crosstool_that_ignores_tf_sysroot(tmp_path: Path) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    crosstool = root / "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl"
    edit(crosstool, '_TF_SYSROOT = "TF_SYSROOT"\n', "")
    failure = only_failure(preflight(plan_for("2.18"), RECIPES.get("2.18"), root))
    assert failure.what == "the crosstool never reads TF_SYSROOT"
    assert "/dt9" in failure.why
    crosstool.unlink()
    report = preflight(plan_for("2.18"), RECIPES.get("2.18"), root)
    assert report.passed
    assert [f.status for f in by_check(report, "toolchain")] == ["ok", "note"]


def test_the_workspace_macros_say_which_crosstool(tmp_path: Path) -> None:
    """TensorFlow's tensorflow/workspace*.bzl load cuda_configure.bzl (the line below is theirs,
    e.g. tensorflow/workspace.bzl of the 1.x/2.x eras): that file decides, not any other copy."""
    root = tree("tf-2.18-shaped", tmp_path)
    (root / "tensorflow/workspace2.bzl").write_text(
        'load("//third_party/gpus:cuda_configure.bzl", "cuda_configure")\n'
    )
    stale = root / "third_party/gpus/cuda_configure.bzl"
    xla = root / "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl"
    stale.write_text(xla.read_text().replace('_TF_SYSROOT = "TF_SYSROOT"\n', ""))
    failure = only_failure(preflight(plan_for("2.18"), RECIPES.get("2.18"), root))
    assert (failure.what, failure.where) == (
        "the crosstool never reads TF_SYSROOT",
        "third_party/gpus/cuda_configure.bzl",
    )


def test_a_real_old_tree_against_a_newer_recipe(tmp_path: Path) -> None:
    """tensorflow/tensorflow files of the 1.x/2.x eras against the 2.13 recipe: real drift."""
    root = tree("old-pieces", tmp_path)
    recipe = RECIPES.get("2.13")
    report = preflight(plan_for("2.13", Variant.mkl), recipe, root)
    assert [(f.check, f.where) for f in report.failures] == [
        ("bazelversion", ".bazelversion:1"),
        ("configs", ".bazelrc"),
        ("toolchain", "ci/official/containers/ml_build/builder.devtoolset/build_devtoolset.sh"),
    ]
    assert report.failures[1].what == "--config=mkl_threadpool is not defined"
    (target,) = by_check(report, "wheel_target")
    assert target.status == "ok" and target.what.startswith('sh_binary(name = "build_pip_package")')
    drift = [f.what for f in recipe_findings(recipe, root) if f.status == "fail"]
    assert drift == [
        "the recipe lists configs the tree's rc files do not define: avx_linux, dbg, "
        "mkl_threadpool, short_logs, v2"
    ]


# --- the error: one line, the first mismatch in it, all of them in its why ---------------------------


def test_one_mismatch_is_one_error_with_its_fix(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    (root / ".bazelversion").write_text("6.5.0\n")
    error = preflight(plan_for("2.21"), RECIPES.get("2.21"), root).error()
    assert isinstance(error, UnsupportedError) and error.exit_code == 4
    line = error.line()
    assert line.startswith(f"the source tree {root} does not fit the plan: .bazelversion:1: ")
    assert line.endswith("Nothing was built: no image, no container.")
    assert "\n" not in line


def test_several_mismatches_list_all_in_the_why(tmp_path: Path) -> None:
    root = tree("old-pieces", tmp_path)
    report = preflight(plan_for("2.13", Variant.mkl), RECIPES.get("2.13"), root)
    error = report.error()
    assert error is not None
    assert "(3 mismatches): .bazelversion:1: the tree wants bazel 3.1.0" in error.what
    assert [m.group(1) for m in re.finditer(r"\((\d)\) ", error.why)] == ["1", "2", "3"]
    assert "(2) .bazelrc: --config=mkl_threadpool is not defined" in error.why
    assert "tfbuild plan --source DIR lists every check" in error.fix


# --- the canary's STAND-IN tree ------------------------------------------------------------------------


def _canary_plan(**changes: object) -> tuple[BuildPlan, Recipe | None]:
    planned = plan_request(
        PlanOptions(canary=True, base_image="debian-12", skip_disk_check=True, **changes),  # type: ignore[arg-type]
        base_images=BASE_IMAGES,
    )
    return planned.plan, planned.recipe


def test_the_canary_tree_fits_its_plan_and_says_what_it_does_not_check(tmp_path: Path) -> None:
    plan, recipe = _canary_plan()
    root = canary.copy_tree(tmp_path / "src")
    report = preflight(plan, recipe, root)
    assert report.passed, [f.text() for f in report.failures]
    statuses = {f.check: f.status for f in report.findings}
    assert statuses == {
        "bazelversion": "note",  # its bazel is a stand-in script, pinned by nothing
        "bazelrc": "ok",
        "configs": "ok",
        "wheel_target": "ok",
        "python_lock": "skipped",
        "toolchain": "skipped",
    }
    assert all("STAND-IN" in f.why for f in report.findings if f.status == "skipped")
    # Its checks are live: the stand-in tree without its .bazelrc does not fit.
    (root / ".bazelrc").unlink()
    assert only_failure(preflight(plan, recipe, root)).what == "the tree has no .bazelrc"


def test_a_rebuild_without_a_recipe_is_checked_by_the_version_gates(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    (root / "requirements_lock_3_11.txt").unlink()
    (root / "WORKSPACE").write_text('name = "rules_ml_toolchain"\n')  # no requirements map
    failure = only_failure(preflight(plan_for("2.21", python="3.11"), None, root))
    assert (failure.check, failure.where) == ("python_lock", "requirements_lock_3_11.txt")


# --- the recipes' verified record -------------------------------------------------------------------


def test_every_shipped_recipe_says_how_far_it_is_verified() -> None:
    for recipe in RECIPES.recipes:
        record = recipe.verified
        assert record is not None, recipe.path
        parts = {p.part: p.statement for p in record.parts}
        assert {"source", "bazel", "configs", "toolchain"} <= set(parts), recipe.path
        # Nothing was read in a release's own files when the recipes were written (the headers
        # say so): no recipe may claim it until `tfbuild recipes verify` has checked it.
        assert record.counts()["read"] == 0, recipe.path
        assert parts["configs"].startswith("not verified: "), recipe.path
        json = recipe.to_json()["verified"]
        assert json["date"] == record.date
        assert {p["level"] for p in json["parts"]} <= {"read", "cited", "not verified"}


@pytest.mark.parametrize(
    ("block", "fragment"),
    [
        ("verified:\n  date: 2026-11-22\n  configs: checked\n", "'verified.configs' is 'checked'"),
        ("verified:\n  date: last week\n", "a date YYYY-MM-DD"),
        ("verified:\n  date: 2026-11-22\n  colour: 'read: no'\n", "unknown key 'verified.colour'"),
        ("verified:\n  configs: 'read: .bazelrc @v2.21.0'\n", "missing key 'verified.date'"),
    ],
)
def test_a_bad_verified_record_is_refused_with_its_line(block: str, fragment: str) -> None:
    model = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
    text = model[: model.index("\nverified:") + 1] + block
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="r.yaml")
    assert fragment in caught.value.line()
    assert "r.yaml:" in caught.value.line()


def test_a_verified_record_reads_back() -> None:
    model = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
    text = model[: model.index("\nverified:") + 1] + (
        "verified:\n  date: 2027-01-05\n"
        "  configs: 'read: .bazelrc of the v2.21.0 tarball (tfbuild recipes verify)'\n"
        "  cuda: 'not verified: inferred'\n"
    )
    record = parse_recipe(text, path="r.yaml").verified
    assert record is not None
    assert record.counts() == {"read": 1, "cited": 0, "not verified": 1}
    assert record.summary == "2027-01-05: read 1, cited 0, not verified 1"
