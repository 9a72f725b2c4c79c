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
    found = recipe_findings(recipe, root)
    assert found and not [f for f in found if f.status == "fail"]
    if version == "2.21":  # its CUDA tables come from @rules_ml_toolchain: said, not skipped
        (note,) = [f for f in found if f.check == "recipe_cuda"]
        assert note.status == "note" and note.what.startswith(
            "not checked: recipes/tf-2.21.yaml"
        ), note.what
        assert "@rules_ml_toolchain//gpu/cuda:" in note.what
    else:
        assert all(f.status == "ok" for f in found)


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
    script, crosstool, switch = by_check(report, "toolchain")
    assert script.file and script.file.endswith("builder.devtoolset/build_devtoolset.sh")
    assert script.line == line_of(root / script.file, "\ndevtoolset-9)") + 1
    # The code that reads it, not the docstring's line 16 that names it.
    assert crosstool.file and crosstool.line == line_of(
        root / crosstool.file, '_TF_SYSROOT = "TF_SYSROOT"'
    )
    assert "`TF_SYSROOT`: The sysroot" in (root / crosstool.file).read_text().splitlines()[15]
    # TensorFlow's .bazelrc @0071ad1 leaves the hermetic C++ switch alone: the crosstool is made.
    assert switch.status == "ok" and switch.what.startswith("USE_HERMETIC_CC_TOOLCHAIN=(unset)")
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


RULES_ML_NAME = 'name = "rules_ml_toolchain"'
RULES_ML_BLOCK = re.compile(r'(?ms)^tf_http_archive\(\n    name = "rules_ml_toolchain",.*?^\)\n')
#: TensorFlow master's pin (WORKSPACE @004d817e, before the fixture's edit: its README says so).
MASTER_PIN = (
    "e68a38d10a83121be07f840281414e027cd2ef8114ee6e0ad780402983498c34",
    "ff328c56f01845808f28ee4e62b93c9c270fc324",
    "https://github.com/yuriivcs/rules_ml_toolchain/archive/",
)


def test_a_tree_that_does_not_pin_rules_ml_toolchain(tmp_path: Path) -> None:
    """The issue's false pass: a WORKSPACE that only loads from @rules_ml_toolchain (its first
    mention) while the repository rule is gone with tensorflow/workspace0.bzl."""
    root = tree("tf-2.21-shaped", tmp_path)
    workspace = root / "WORKSPACE"
    workspace.write_text(RULES_ML_BLOCK.sub("", workspace.read_text(), count=1))
    assert '"@rules_ml_toolchain//cc/deps:cc_toolchain_deps.bzl"' in workspace.read_text()
    report = preflight(plan_for("2.21"), RECIPES.get("2.21"), root)
    assert report.passed  # workspace0.bzl declares it
    (root / "tensorflow/workspace0.bzl").unlink()
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert (failure.check, failure.where) == ("toolchain", "WORKSPACE")
    assert failure.what == "the tree declares no rules_ml_toolchain repository"
    assert "--no-portable" in failure.fix
    # The image route of 2.21 names rules_ml_toolchain too (its opt-out flags): checked as well.
    image = plan_for("2.21", portable=False)
    assert any("@rules_ml_toolchain" in line for line in image.rc_lines)
    assert only_failure(preflight(image, RECIPES.get("2.21"), root)).check == "toolchain"


def test_the_pinned_commit_is_compared_with_the_recipes(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    report = preflight(plan_for("2.21"), RECIPES.get("2.21"), root)
    (pin,) = by_check(report, "toolchain")
    workspace0 = root / "tensorflow/workspace0.bzl"
    assert (pin.status, pin.where) == (
        "ok",
        f"WORKSPACE:{line_of(root / 'WORKSPACE', RULES_ML_NAME)}",
    )
    assert pin.what == (
        "the tree pins rules_ml_toolchain d8cb9c2, the recipe's (and so does "
        f"tensorflow/workspace0.bzl:{line_of(workspace0, RULES_ML_NAME)})"
    )
    # Master's pin (another commit, another fork) in the WORKSPACE: refused, both commits named.
    workspace = root / "WORKSPACE"
    edit(
        workspace, "54c1a357f71f611efdb4891ebd4bcbe4aeb6dfa7e473f14fd7ecad5062096616", MASTER_PIN[0]
    )
    text = workspace.read_text().replace("d8cb9c2c168cd64000eaa6eda0781a9615a26ffe", MASTER_PIN[1])
    workspace.write_text(
        text.replace(
            "https://github.com/google-ml-infra/rules_ml_toolchain/archive/", MASTER_PIN[2]
        )
    )
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert failure.what == "the tree pins rules_ml_toolchain ff328c5, the recipe d8cb9c2"
    assert failure.where == f"WORKSPACE:{line_of(workspace, RULES_ML_NAME)}"
    assert "recipes/tf-2.21.yaml" in failure.why and MASTER_PIN[1] in failure.fix
    # Only workspace0.bzl declares it, at another commit: the same refusal, in that file.
    workspace.write_text(RULES_ML_BLOCK.sub("", workspace.read_text(), count=1))
    edit(workspace0, "d8cb9c2c168cd64000eaa6eda0781a9615a26ffe", "09961bd" + "0" * 33)
    failure = only_failure(preflight(plan_for("2.21", Variant.cuda), RECIPES.get("2.21"), root))
    assert (failure.file, failure.what) == (
        "tensorflow/workspace0.bzl",
        "the tree pins rules_ml_toolchain 09961bd, the recipe d8cb9c2",
    )


def test_a_repository_rule_in_a_comment_or_a_string_does_not_count(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    workspace = root / "WORKSPACE"
    block = RULES_ML_BLOCK.search(workspace.read_text())
    assert block is not None
    commented = "".join(f"# {line}\n" for line in block.group(0).splitlines())
    workspace.write_text(workspace.read_text().replace(block.group(0), commented))
    (root / "tensorflow/workspace0.bzl").write_text(f'"""\n{block.group(0)}"""\n')
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert failure.what == "the tree declares no rules_ml_toolchain repository"
    # A file that is not Starlark at all is said so, with its line, not read by pattern.
    (root / "tensorflow/workspace0.bzl").write_text('x = """\nrules_ml_toolchain\n')
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert failure.where.startswith("tensorflow/workspace0.bzl")
    assert "cannot be read as Starlark" in failure.what


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
    assert [f.status for f in by_check(report, "toolchain")] == ["ok", "note", "ok"]


def test_tf_sysroot_in_a_docstring_or_a_comment_is_not_the_code_that_reads_it(
    tmp_path: Path,
) -> None:
    """The issue's false pass: cuda_configure.bzl cut to its first 24 lines (its docstring, whose
    line 16 names TF_SYSROOT) still 'read' TF_SYSROOT."""
    root = tree("tf-2.18-shaped", tmp_path)
    crosstool = root / "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl"
    full = crosstool.read_text()
    crosstool.write_text("".join(full.splitlines(keepends=True)[:24]))
    assert "TF_SYSROOT" in crosstool.read_text()
    failure = only_failure(preflight(plan_for("2.18"), RECIPES.get("2.18"), root))
    assert (failure.what, failure.file) == (
        "the crosstool never reads TF_SYSROOT",
        "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    )
    assert "a docstring or comment does not count" in failure.why
    # The code line commented out, or inside a string: still not read.
    for hidden in ('# _TF_SYSROOT = "TF_SYSROOT"', '_DOC = """\n_TF_SYSROOT = "TF_SYSROOT"\n"""'):
        crosstool.write_text(full.replace('_TF_SYSROOT = "TF_SYSROOT"', hidden))
        failure = only_failure(preflight(plan_for("2.18"), RECIPES.get("2.18"), root))
        assert failure.what == "the crosstool never reads TF_SYSROOT", hidden
    crosstool.write_text(full)
    assert preflight(plan_for("2.18"), RECIPES.get("2.18"), root).passed


DEVTOOLSET = "tensorflow/tools/tf_sig_build_dockerfiles/builder.devtoolset/build_devtoolset.sh"
#: The 2.21.0 tree's .bazelrc line 163 (issue 21): rules_ml_toolchain's C++ toolchain on by default.
HERMETIC_ON = "build --repo_env USE_HERMETIC_CC_TOOLCHAIN=1\n"


def _sysroot_recipe_221() -> Recipe:
    """The 2.21 recipe on the sysroot route (the route 2.18-2.20 take), as a user's --recipes-dir
    recipe would put it."""
    text = (ROOT / "recipes/tf-2.21.yaml").read_text()
    route = re.search(r"(?ms)^toolchain:\n.*?(?=^\S)", text)
    assert route is not None
    sysroot = (ROOT / "recipes/tf-2.18.yaml").read_text()
    theirs = re.search(r"(?ms)^toolchain:\n.*?(?=^\S)", sysroot)
    assert theirs is not None
    text = text.replace(route.group(0), theirs.group(0))
    text = text.replace("compiler: clang-18.1.8", "compiler: clang-17.0.6")
    return parse_recipe(text, path="tf-2.21-sysroot.yaml")


def test_the_sysroot_route_on_a_tree_whose_hermetic_toolchain_is_on_by_default(
    tmp_path: Path,
) -> None:
    root = tree("tf-2.18-shaped", tmp_path)
    rc = root / ".bazelrc"
    crosstool = "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl"
    text = rc.read_text()
    # The switch before the try-import of the rendered rc file, as in the 2.21.0 tree.
    anchor = "try-import %workspace%/.tf_configure.bazelrc"
    rc.write_text(text.replace(anchor, HERMETIC_ON + anchor))
    # 2.18's plan renders no switch (rules_ml_toolchain is not its toolchain): the tree's 1 holds.
    failure = only_failure(preflight(plan_for("2.18", Variant.cuda), RECIPES.get("2.18"), root))
    assert failure.what.startswith("the tree turns TensorFlow's hermetic C++ toolchain on")
    assert failure.where == f".bazelrc:{line_of(rc, HERMETIC_ON)}"
    assert crosstool in failure.why and "--crosstool_top" in failure.why
    # A 2.21 plan on the sysroot route sets it to 0 in the rendered rc file, read after the line:
    # a 2.21-shaped tree with the 2.18 tree's crosstool and devtoolset script.
    older = root
    root = tree("tf-2.21-shaped", tmp_path)
    for rel in (crosstool, DEVTOOLSET):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(older / rel, root / rel)
    rc = root / ".bazelrc"
    text = rc.read_text()
    rc.write_text(text.replace(anchor, HERMETIC_ON + anchor))
    recipe = _sysroot_recipe_221()
    opts = PlanOptions(variant=Variant.cuda, target="x86_64_v3", skip_disk_check=True)
    plan = make_plan(opts, recipe, RUNNER, base_images=BASE_IMAGES)
    assert plan.route == "sysroot"
    assert "build --repo_env=USE_HERMETIC_CC_TOOLCHAIN=0" in plan.rc_lines
    (switch,) = [
        f for f in by_check(preflight(plan, recipe, root), "toolchain") if "USE_HERMETIC" in f.what
    ]
    assert switch.status == "ok" and switch.what.startswith(
        "USE_HERMETIC_CC_TOOLCHAIN=0 ((rendered) .tf_configure.bazelrc:"
    )
    # The same line in a config the build uses on its command line comes after the rendered rc
    # file, so it holds again.
    rc.write_text(
        text.replace(
            "build:cuda ", "build:cuda --repo_env=USE_HERMETIC_CC_TOOLCHAIN=1\nbuild:cuda ", 1
        )
    )
    failure = only_failure(preflight(plan, recipe, root))
    assert failure.where.startswith(".bazelrc:") and "hermetic C++ toolchain on" in failure.what
    # And through a build:linux config that --enable_platform_specific_config applies.
    rc.write_text(
        text
        + "build --enable_platform_specific_config\nbuild:linux --repo_env=USE_HERMETIC_CC_TOOLCHAIN=1\n"
    )
    failure = only_failure(preflight(plan, recipe, root))
    assert failure.where == f".bazelrc:{len(text.splitlines()) + 2}"
    rc.write_text(
        text
        + "build --enable_platform_specific_config\nbuild --noenable_platform_specific_config\nbuild:linux --repo_env=USE_HERMETIC_CC_TOOLCHAIN=1\n"
    )
    assert preflight(plan, recipe, root).passed


def test_configs_named_by_the_platform_config_must_be_defined(tmp_path: Path) -> None:
    """--enable_platform_specific_config applies build:linux as --config=linux would: a config it
    names must be defined too (TensorFlow's .bazelrc turns the switch on)."""
    root = tree("tf-2.21-shaped", tmp_path)
    rc = root / ".bazelrc"
    text = rc.read_text()
    assert "--enable_platform_specific_config" in text and "build:linux " in text
    rc.write_text(text + "build:linux --config=gone_linux_config\n")
    failure = only_failure(preflight(plan_for("2.21"), RECIPES.get("2.21"), root))
    assert failure.what == "--config=gone_linux_config is not defined"
    assert failure.where == f".bazelrc:{len(text.splitlines()) + 1}"
    # Without the switch bazel never reads build:linux, and neither does the check.
    rc.write_text(
        text.replace("--enable_platform_specific_config", "--noenable_platform_specific_config")
        + "build:linux --config=gone_linux_config\n"
    )
    assert preflight(plan_for("2.21"), RECIPES.get("2.21"), root).passed


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


# --- the error: one line; with several mismatches, each once in its why and each fix by number ----


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
    # The count in the line; each mismatch once, numbered, in the why; each one's fix by number.
    assert error.what == f"the source tree {root} does not fit the plan (3 mismatches)"
    assert [m.group(1) for m in re.finditer(r"\((\d)\) ", error.why)] == ["1", "2", "3"]
    assert "(1) .bazelversion:1: the tree wants bazel 3.1.0" in error.why
    assert "(2) .bazelrc: --config=mkl_threadpool is not defined" in error.why
    fixes = [f.fix for f in report.failures]
    assert len(set(fixes)) == 3
    for n, fix in enumerate(fixes, 1):
        assert f"({n}) {fix.rstrip('.')}." in error.fix
    assert error.fix.endswith(
        "tfbuild plan --source DIR lists every check with its why. "
        "Nothing was built: no image, no container."
    )


def test_several_mismatches_with_one_fix_give_it_once(tmp_path: Path) -> None:
    root = tree("tf-2.21-shaped", tmp_path)
    rc = root / ".bazelrc"
    rc.write_text(rc.read_text() + "build --config=gone_a\nbuild --config=gone_b\n")
    error = preflight(plan_for("2.21"), RECIPES.get("2.21"), root).error()
    assert error is not None and error.what.endswith("(2 mismatches)")
    assert error.fix.startswith("(1, 2) Fix the tree's rc files")
    assert error.fix.count("Fix the tree's rc files") == 1


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
        parts = {p.part: p.level for p in record.parts}
        assert {"source", "bazel", "configs", "toolchain"} <= set(parts), recipe.path
        # Nothing was read in a release's own files when the recipes were written (the headers
        # say so): no recipe may claim it until `tfbuild recipes verify` has checked it.
        assert record.counts()["read"] == 0, recipe.path
        assert parts["configs"] == "not verified", recipe.path
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
