"""Starlark read as tokens: code counts, comments and strings never do, and no input crashes it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tfbuild.build.preflight.starlark import StarlarkError, calls, constants

TREES = ROOT / "tests" / "fixtures" / "trees"
CUDA_CONFIGURE = (
    TREES / "tf-2.18-shaped/third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl"
)


def test_constants_are_top_level_code_lines_of_the_real_file() -> None:
    text = CUDA_CONFIGURE.read_text()
    found = constants(text)
    assert found["_TF_SYSROOT"] == (
        "TF_SYSROOT",
        text[: text.index("_TF_SYSROOT =")].count("\n") + 1,
    )
    assert found["USE_HERMETIC_CC_TOOLCHAIN"][0] == "USE_HERMETIC_CC_TOOLCHAIN"
    # The docstring names TF_SYSROOT on its line 16; no constant comes from it.
    assert all(line > 25 for _, line in found.values())


@pytest.mark.parametrize(
    "text",
    [
        '"""\n_TF_SYSROOT = "TF_SYSROOT"\n"""\n',
        '# _TF_SYSROOT = "TF_SYSROOT"\n',
        'def f():\n    _TF_SYSROOT = "TF_SYSROOT"\n',  # a local, not the module's
        '_TF_SYSROOT = "TF_" + "SYSROOT"\n',  # not a plain string
        'x = ["_TF_SYSROOT = \\"TF_SYSROOT\\""]\n',
    ],
)
def test_what_is_not_a_top_level_constant(text: str) -> None:
    assert "_TF_SYSROOT" not in constants(text)


def test_calls_see_keywords_and_every_string_inside() -> None:
    text = (TREES / "tf-2.21-shaped/tensorflow/workspace0.bzl").read_text()
    (rule,) = [c for c in calls(text) if c.name == "rules_ml_toolchain"]
    assert rule.function == "tf_http_archive"
    assert rule.keywords["strip_prefix"][0].endswith("d8cb9c2c168cd64000eaa6eda0781a9615a26ffe")
    assert any(
        s.endswith("/archive/d8cb9c2c168cd64000eaa6eda0781a9615a26ffe.tar.gz") for s in rule.strings
    )
    assert rule.line == text[: text.index('name = "rules_ml_toolchain"')].count("\n")
    # A load() names no repository rule; a string that mentions the name is not a keyword.
    assert not [c for c in calls('load("@rules_ml_toolchain//x:y.bzl", "z")\n') if c.name]
    assert [c.name for c in calls('f(doc = "name = \\"rules_ml_toolchain\\"")\n')] == [None]


@pytest.mark.parametrize(
    ("text", "line"),
    [('x = """never closed\n\n', 1), ("f(\n  a = 1,\n", 2), ('a = 1\nb = "open\n', 2)],
)
def test_text_that_is_not_starlark_is_one_error_with_its_line(text: str, line: int) -> None:
    with pytest.raises(StarlarkError) as raised:
        calls(text)
    assert raised.value.line >= 1 and raised.value.line <= line + 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('abc_=()[]{}",\'#\n \\"x1')), max_size=80))
def test_any_text_reads_or_is_a_starlark_error(text: str) -> None:
    for read in (calls, constants):
        try:
            read(text)
        except StarlarkError as error:
            assert error.line >= 0
