"""Property tests over every validator of a value: text with a control character or a line break in
it is refused (issue 15: re.match let '$' match before a final newline, so "2.21.0\\n" passed).

Each validator is fed its own valid examples with a control character inserted anywhere, and any
text at all; what passes must be free of control characters.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tfbuild.core import commands
from tfbuild.core.errors import InputError, UsageError
from tfbuild.detect.compilers import parse_compiler
from tfbuild.measure.envs import WheelSpec
from tfbuild.plan.make import _check_options
from tfbuild.plan.options import PlanOptions
from tfbuild.recipes.recipe import load_recipes
from tfbuild.recipes.strict_yaml import VALUE_CHECKS as _CHECKS
from tfbuild.wheel.labels import parse_label

SETTINGS = settings(max_examples=100, deadline=None)
RECIPES = load_recipes()

#: Every control character (Unicode category Cc: C0, DEL, C1) and the other line breaks YAML and
#: str.splitlines() know (U+2028, U+2029).
CONTROLS = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cc"] + [
    "\u2028",
    "\u2029",
]
control = st.sampled_from(CONTROLS)


def _has_control(text: str) -> bool:
    return any(c in CONTROLS for c in text)


@st.composite
def _with_control(draw: st.DrawFn, valid: str) -> str:
    """``valid`` with a control character inserted anywhere (the start, inside, the end)."""
    at = draw(st.integers(0, len(valid)))
    return valid[:at] + draw(control) + valid[at:]


#: A valid value of every pattern kind of the recipe schema (free text kinds excluded).
VALID = {
    "version3": "2.21.0",
    "version2": "3.11",
    "version": "12.5.1",
    "release": "9",
    "token": "ubuntu-24.04",
    "url": "https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.21.0.tar.gz",
    "hex40": "0" * 40,
    "hex64": "a" * 64,
    "snapshot": "20261115T000000Z",
    "compiler": "clang-18.1.8",
    "flag": "-Wno-sign-compare",
    "define": "tf_api_version=2",
    "capability": "sm_89",
    "sysroot": "/dt9",
    "date": "2026-11-22",
    "image": "docker.io/library/debian",
    "tag": "22.04",
    "digest": "sha256:" + "a" * 64,
}
FREE_TEXT = {"text", "verified", "bool"}


def test_every_pattern_kind_has_a_valid_example() -> None:
    assert set(VALID) == set(_CHECKS) - FREE_TEXT
    for kind, value in VALID.items():
        assert _CHECKS[kind](value) is None, kind


@pytest.mark.parametrize("kind", sorted(VALID))
def test_a_trailing_newline_passes_no_recipe_check(kind: str) -> None:
    """The finding itself: with re.match, '$' matched before a final newline."""
    for end in ("\n", "\r\n", "\n\n", "\x00"):
        assert _CHECKS[kind](VALID[kind] + end) is not None, (kind, end)


@pytest.mark.parametrize("kind", sorted(VALID))
@SETTINGS
@given(data=st.data())
def test_a_recipe_value_with_a_control_character_is_refused(kind: str, data: st.DataObject) -> None:
    assert _CHECKS[kind](data.draw(_with_control(VALID[kind]))) is not None


@pytest.mark.parametrize("kind", sorted(VALID))
@SETTINGS
@given(text=st.text())
def test_what_a_recipe_check_passes_has_no_control_character(kind: str, text: str) -> None:
    if _CHECKS[kind](text) is None:
        assert not _has_control(text)


@SETTINGS
@given(data=st.data())
def test_remote_urls_and_volumes_with_a_control_character_are_refused(data: st.DataObject) -> None:
    url = data.draw(_with_control("grpcs://cache.example.org:443/x"))
    with pytest.raises(UsageError, match="is not a plain URL"):
        _check_options(PlanOptions(remote_cache=url))
    with pytest.raises(UsageError, match="is not a plain URL"):
        _check_options(PlanOptions(remote_executor=url))
    volume = data.draw(_with_control("tfbuild-cache"))
    with pytest.raises(UsageError, match="is not a Docker volume name"):
        _check_options(PlanOptions(cache_volume=volume))


@SETTINGS
@given(text=st.text())
def test_any_remote_url_or_volume_that_passes_is_clean(text: str) -> None:
    for options in (PlanOptions(remote_cache=text), PlanOptions(cache_volume=text or "x")):
        try:
            _check_options(options)
        except UsageError:
            continue
        assert not _has_control(text)


def _no_compiler(call: commands.Command) -> commands.Finished:
    """No compiler on PATH: a bare name's version cannot be asked."""
    return commands.Finished(returncode=None, problem="it cannot run: No such file")


@SETTINGS
@given(data=st.data())
def test_a_compiler_spec_with_a_control_character_inside_is_refused(data: st.DataObject) -> None:
    valid = "clang-18.1.8"
    at = data.draw(st.integers(1, len(valid) - 1))  # inside: the ends are stripped like spaces
    spec = valid[:at] + data.draw(control) + valid[at:]
    assume(spec.strip() == spec)
    with commands.replaying(_no_compiler), pytest.raises(UsageError):
        parse_compiler(spec)


@SETTINGS
@given(text=st.text())
def test_a_parsed_compiler_never_carries_a_control_character(text: str) -> None:
    try:
        with commands.replaying(_no_compiler):
            compiler = parse_compiler(text)
    except UsageError:
        return
    assert not _has_control(str(compiler))
    assert re.fullmatch(r"[a-z-]+-\d+(\.\d+)*", str(compiler))


@SETTINGS
@given(data=st.data())
def test_a_requirement_with_a_control_character_is_refused(data: st.DataObject) -> None:
    text = data.draw(_with_control("tensorflow-cpu==2.21.0"))
    with pytest.raises(UsageError, match="neither a wheel file nor a requirement"):
        WheelSpec.parse(text)


@SETTINGS
@given(text=st.text())
def test_a_wheel_spec_is_a_file_a_clean_requirement_or_refused(text: str) -> None:
    try:
        spec = WheelSpec.parse(text)
    except (UsageError, InputError):
        return
    assert spec.kind == "file" or not _has_control(spec.value)


@SETTINGS
@given(data=st.data())
def test_a_python_version_with_a_control_character_is_refused(data: st.DataObject) -> None:
    with pytest.raises(UsageError, match="is not a Python version"):
        PlanOptions(python=data.draw(_with_control("3.12")))


@SETTINGS
@given(data=st.data())
def test_a_tf_version_with_a_control_character_inside_is_refused(data: st.DataObject) -> None:
    valid = "2.21.0"
    at = data.draw(st.integers(1, len(valid) - 1))  # inside: the ends are stripped like spaces
    with pytest.raises(UsageError, match="is not a TensorFlow version"):
        RECIPES.get(valid[:at] + data.draw(control) + valid[at:])


@SETTINGS
@given(text=st.text())
def test_a_label_read_back_names_only_clean_targets_and_cuda(text: str) -> None:
    label = parse_label(text)
    assert label.cuda is None or re.fullmatch(r"\d+\.\d", label.cuda)
    assert label.target is None or not _has_control(label.target)
