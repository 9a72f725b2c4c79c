"""``tfbuild plan --source DIR``, ``tfbuild recipes verify`` and the recipes' verified record, through
the real command line (a subprocess, as a user runs it), on the fixture trees."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import NO_FILE_KINDS, ROOT, one_error_line, plant_no_file, run_cli

TREES = ROOT / "tests" / "fixtures" / "trees"
PLAN_2_21 = (
    "plan",
    "--tf",
    "2.21",
    "--target",
    "x86_64_v3",
    "--python",
    "3.12",
    "--skip-disk-check",
)


def copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(TREES / name, tmp_path / name))


def test_plan_source_prints_the_findings_and_passes_on_a_tree_that_fits(tmp_path: Path) -> None:
    root = copy("tf-2.21-shaped", tmp_path)
    result = run_cli(*PLAN_2_21, "--source", str(root))
    assert result.returncode == 0, result.stderr
    assert f"source tree {root} fits: TensorFlow 2.21.0 cpu, Python 3.12" in result.stdout
    assert "WORKSPACE:100: Python 3.12: //:requirements_lock_3_12.txt" in result.stdout
    as_json = run_cli(*PLAN_2_21, "--source", str(root), "--json")
    assert as_json.returncode == 0, as_json.stderr
    data = as_json.json()
    assert data["schema"] == "tfbuild.plan/4"  # the plan, with the preflight added beside it
    preflight = data["preflight"]
    assert preflight["schema"] == "tfbuild.preflight/1" and preflight["passed"] is True
    assert {f["check"] for f in preflight["findings"]} >= {"bazelversion", "configs", "toolchain"}
    assert "preflight" not in run_cli(*PLAN_2_21, "--json").json()  # only with --source


def test_plan_source_on_a_tree_that_does_not_fit_exits_4_with_one_line(tmp_path: Path) -> None:
    root = copy("tf-2.21-shaped", tmp_path)
    (root / ".bazelversion").write_text("6.5.0\n")
    result = run_cli(*PLAN_2_21, "--source", str(root))
    assert result.returncode == 4
    assert "fail    .bazelversion:1: the tree wants bazel 6.5.0, the plan runs bazel 7.4.1" in (
        result.stdout
    )
    assert one_error_line(result, among_others=True) == (
        f"tfbuild: error: the source tree {root} does not fit the plan: .bazelversion:1: the tree "
        "wants bazel 6.5.0, the plan runs bazel 7.4.1: the toolchain image runs the plan's bazel "
        "(USE_BAZEL_VERSION wins over .bazelversion), and a release builds with the bazel it "
        "names: another stops on flags and rules it does not know. Use a recipe whose bazel is "
        "6.5.0 for this tree (--recipes-dir), or build the release the recipe is for. Nothing was "
        "built: no image, no container."
    )
    assert "Traceback" not in result.stderr
    as_json = run_cli(*PLAN_2_21, "--source", str(root), "--json")
    assert as_json.returncode == 4
    assert as_json.json()["preflight"]["passed"] is False


def test_plan_source_that_is_no_tensorflow_tree_exits_3(tmp_path: Path) -> None:
    result = run_cli(*PLAN_2_21, "--source", str(tmp_path))
    assert result.returncode == 3
    assert "does not look like a TensorFlow source tree" in one_error_line(
        result, among_others=True
    )


def test_render_and_wheel_have_no_plan_source_of_their_own() -> None:
    """--source is the plan command's (wheel has its own, the tree it builds); render has none."""
    result = run_cli("render", "--source", "x", "-o", "y")
    one_error_line(result, 2, "tfbuild render has no option --source")


def test_recipes_verify_against_a_local_tree(tmp_path: Path) -> None:
    result = run_cli("recipes", "verify", "2.18", "--source", str(copy("tf-2.18-shaped", tmp_path)))
    assert result.returncode == 0, result.stderr
    assert "recipes/tf-2.18.yaml against" in result.stdout and ": matches" in result.stdout
    # Every Python's CPU plan, and the newest Python's mkl and cuda plans.
    plans = [line for line in result.stdout.splitlines() if line.startswith("plan ")]
    assert [line.split(": ", 1)[1] for line in plans] == [
        "TensorFlow 2.18.1 cpu, Python 3.9",
        "TensorFlow 2.18.1 cpu, Python 3.10",
        "TensorFlow 2.18.1 cpu, Python 3.11",
        "TensorFlow 2.18.1 cpu, Python 3.12",
        "TensorFlow 2.18.1 mkl, Python 3.12",
        "TensorFlow 2.18.1 cuda CUDA 12.5.1, Python 3.12",
    ]


def test_recipes_verify_reports_drift_with_exit_4(tmp_path: Path) -> None:
    result = run_cli("recipes", "verify", "2.13", "--source", str(copy("old-pieces", tmp_path)))
    assert result.returncode == 4
    line = one_error_line(result, among_others=True)
    assert line.startswith(
        "tfbuild: error: recipe recipes/tf-2.13.yaml does not match the release's files "
        "(4 mismatches): (1) .bazelrc: the recipe lists configs the tree's rc files do not define: "
        "avx_linux, dbg, mkl_threadpool, short_logs, v2"
    )
    assert "(2) .bazelversion:1: the tree wants bazel 3.1.0, the plan runs bazel 5.3.0" in line
    data = run_cli("recipes", "verify", "2.13", "--source", str(TREES / "old-pieces"), "--json")
    assert data.returncode == 4
    report = data.json()
    assert report["schema"] == "tfbuild.release-check/1" and report["passed"] is False
    assert [p["passed"] for p in report["plans"]] == [False, False, False]


def test_recipes_verify_downloads_the_tarball_and_a_dead_host_is_one_line_with_exit_5(
    tmp_path: Path,
) -> None:
    """The recipe's tarball is fetched with sources.fetch_source: here from a port nothing listens
    on (the shipped recipes' github.com is not reachable from every test machine, and is from CI)."""
    model = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
    url = "https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.21.0.tar.gz"
    assert url in model
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    dead = "https://127.0.0.1:9/v2.21.0.tar.gz"
    (recipes / "tf-2.21.yaml").write_text(model.replace(url, dead))
    result = run_cli(
        "recipes",
        "verify",
        "2.21",
        "--recipes-dir",
        str(recipes),
        env={"TFBUILD_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 5
    assert one_error_line(result, among_others=True).startswith(
        f"tfbuild: error: cannot download {dead}: "
    )
    assert result.stdout == ""


def test_recipes_show_and_list_say_how_far_each_recipe_is_verified() -> None:
    shown = run_cli("recipes", "show", "2.21")
    assert shown.returncode == 0, shown.stderr
    verified = shown.json()["verified"]
    assert verified["summary"].startswith(f"{verified['date']}: read 0, cited ")
    parts = {p["part"]: p for p in verified["parts"]}
    assert parts["configs"]["level"] == "not verified"
    assert "@0071ad1" in parts["configs"]["how"]
    listed = run_cli("recipes", "--json")
    assert all(r["verified"]["parts"] for r in listed.json()["recipes"])
    table = run_cli("recipes")
    assert table.returncode == 0
    rows = [line.split() for line in table.stdout.splitlines() if line.strip().startswith("2.")]
    expected = {}
    for r in listed.json()["recipes"]:
        read = sum(p["level"] == "read" for p in r["verified"]["parts"])
        named = len(r["verified"]["parts"])
        word = "no" if read == 0 else "yes" if read == named else "some"
        expected[r["tensorflow"]] = f"{word} ({read} of {named})"
    assert {row[0]: " ".join(row[-4:]) for row in rows} == expected
    assert "checked: whether the recipe was checked against the release's own files" in " ".join(
        table.stdout.split()
    )


@pytest.mark.parametrize("rel", [".bazelrc", ".bazelrc.user", ".bazelversion"])
@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_plan_source_with_a_tree_file_that_is_a_fifo_or_dev_zero_exits_3(
    tmp_path: Path, rel: str, kind: str
) -> None:
    """Issue 21, item 15: a .bazelrc (or a file it imports: .bazelrc.user, try-imported by
    TensorFlow's) that is a FIFO hung `plan --source`; a link to /dev/zero read without end."""
    root = copy("tf-2.21-shaped", tmp_path)
    path = root / rel
    path.unlink(missing_ok=True)
    said = plant_no_file(path, kind)
    result = run_cli(*PLAN_2_21, "--source", str(root), timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"tfbuild: error: the source tree's {rel} is not a file: {path} is {said}; tfbuild reads "
        f"regular files only. Make {rel} a regular file of the tree (as in a TensorFlow "
        "checkout), or remove it."
    ]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("import %workspace%/.bazelrc", "it closes an import loop (.bazelrc -> .bazelrc)"),
        (
            "import %workspace%/./loop.bazelrc",
            "it closes an import loop (.bazelrc -> loop.bazelrc -> .bazelrc)",
        ),
        ("import /etc/passwd", "it names a file outside the source tree"),
        ("try-import %workspace%/../../etc/passwd", "it names a file outside the source tree"),
    ],
)
def test_an_import_loop_or_an_import_from_outside_the_tree_exits_4(
    tmp_path: Path, line: str, why: str
) -> None:
    """Issue 21, item 16: bazel stops on an import loop ("Import loop detected") and a tree's rc
    files are its own; either was read as "fits" (and a file outside the tree read). Refused, in
    the preflight's one line, exit 4, without reading the outside file."""
    root = copy("tf-2.21-shaped", tmp_path)
    (root / "loop.bazelrc").write_text("import %workspace%/.bazelrc\n")
    with (root / ".bazelrc").open("a") as rc:
        rc.write(f"\n{line}\n")
    result = run_cli(*PLAN_2_21, "--source", str(root))
    assert result.returncode == 4, result.stderr
    assert f"is not followed: {why}" in " ".join(result.stdout.split())
    assert "root:" not in result.stdout  # /etc/passwd's lines were never read as rc lines
    error = one_error_line(result, among_others=True)
    assert error.startswith(f"tfbuild: error: the source tree {root} does not fit the plan: ")
    assert f"is not followed: {why}" in error


def test_a_chain_of_imports_deeper_than_the_bound_is_refused_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    """3,000 rc files importing one another in a chain were a RecursionError: the chain stops at
    MAX_IMPORT_DEPTH, in one finding, and every file is read once (600 spellings of one file)."""
    from tfbuild.build.preflight.bazelrc import MAX_IMPORT_DEPTH

    root = copy("tf-2.21-shaped", tmp_path)
    for n in range(3000):
        (root / f"rc{n}").write_text(f"import %workspace%/rc{n + 1}\n")
    (root / "rc3000").write_text("build --copt=-O2\n")
    spellings = "".join(f"try-import %workspace%/{'./' * k}rc0\n" for k in range(600))
    with (root / ".bazelrc").open("a") as rc:
        rc.write("\n" + spellings)
    result = run_cli(*PLAN_2_21, "--source", str(root), "--json")
    assert result.returncode == 4, result.stderr
    findings = [f for f in result.json()["preflight"]["findings"] if "not followed" in f["what"]]
    assert len(findings) == 1, findings
    assert f"more than {MAX_IMPORT_DEPTH} rc files deep" in findings[0]["what"]
