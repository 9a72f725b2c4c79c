"""Property tests over the data-file loaders (recipes, base-images.yaml, tools.yaml): whatever the
text, they parse it or raise an InputError (one line, exit 3), never another exception; and a valid
file with a control character slipped into one of its checked values is refused.
"""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.property.test_validators import CONTROLS
from tfbuild.core.errors import InputError
from tfbuild.recipes.images import BASE_IMAGE_SCHEMA, load_base_images, parse_base_images
from tfbuild.recipes.recipe import SCHEMA, parse_recipe, read_recipe
from tfbuild.recipes.tools import parse_tools

SETTINGS = settings(max_examples=100, deadline=None)

MODEL = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
MODEL_DATA = yaml.safe_load(MODEL)
BASE_IMAGES_DATA = yaml.safe_load((ROOT / "recipes" / "base-images.yaml").read_text())
TOOLS_DATA = yaml.safe_load((ROOT / "recipes" / "tools.yaml").read_text())

#: Free text fields: they may hold any text (they are never rendered into a build file).
FREE_TEXT = {("toolchain", "why"), ("notes",), ("source",)}

Parser = Callable[..., object]
PARSERS: list[Parser] = [parse_recipe, parse_base_images, parse_tools]


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [leaf for key, value in data.items() for leaf in _leaves(value, (*path, key))]
    if isinstance(data, list):
        return [leaf for i, value in enumerate(data) for leaf in _leaves(value, (*path, i))]
    return [path]


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def _replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of ``data`` with the leaf at ``path`` replaced by ``value``."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {k: _replaced(v, rest, value) if k == head else v for k, v in data.items()}
    return [_replaced(v, rest, value) if i == head else v for i, v in enumerate(data)]


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def _checked_text_leaves(data: Any, is_free: Callable[[tuple[Any, ...]], bool]) -> list[Any]:
    return [
        p
        for p in _leaves(data)
        if isinstance(_get(data, p), (str, datetime.date)) and not is_free(p)
    ]


RECIPE_LEAVES = _checked_text_leaves(
    MODEL_DATA,
    # verified.* statements are free text after their level word; verified.date is checked.
    lambda p: p[:2] in FREE_TEXT or p[:1] in FREE_TEXT or (p[0] == "verified" and p[1] != "date"),
)
BASE_IMAGE_LEAVES = _checked_text_leaves(BASE_IMAGES_DATA, lambda p: p[1:2] == ("source",))
TOOLS_LEAVES = _checked_text_leaves(TOOLS_DATA, lambda p: False)


def test_the_dumped_shipped_files_parse_as_they_are() -> None:
    """The mutations below start from files that parse: a refusal is the mutation's doing."""
    assert parse_recipe(_dump(MODEL_DATA), path="x.yaml").tensorflow == "2.21.0"
    assert parse_base_images(_dump(BASE_IMAGES_DATA), path="b.yaml").keys() == (
        BASE_IMAGES_DATA.keys()
    )
    assert parse_tools(_dump(TOOLS_DATA), path="t.yaml")["bazelisk"].version == "v1.25.0"
    assert len(RECIPE_LEAVES) > 50
    assert {p[1] for p in BASE_IMAGE_LEAVES} == set(BASE_IMAGE_SCHEMA) - {"source"}


@st.composite
def _control_in_leaf(draw: st.DrawFn, data: Any, leaves: list[Any]) -> str:
    path = draw(st.sampled_from(leaves))
    value = str(_get(data, path))
    at = draw(st.integers(0, len(value)))
    mutated = value[:at] + draw(st.sampled_from(CONTROLS)) + value[at:]
    return _dump(_replaced(data, path, mutated))


@SETTINGS
@given(text=_control_in_leaf(MODEL_DATA, RECIPE_LEAVES))
def test_a_control_character_in_a_recipe_value_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"^invalid recipe x.yaml:\d+: "):
        parse_recipe(text, path="x.yaml")


@SETTINGS
@given(text=_control_in_leaf(BASE_IMAGES_DATA, BASE_IMAGE_LEAVES))
def test_a_control_character_in_a_base_image_value_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"^invalid base image file b.yaml:\d+: "):
        parse_base_images(text, path="b.yaml")


@SETTINGS
@given(text=_control_in_leaf(TOOLS_DATA, TOOLS_LEAVES))
def test_a_control_character_in_a_tool_pin_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"^invalid tools file t.yaml:\d+: "):
        parse_tools(text, path="t.yaml")


# --- anything at all: parsed, or one InputError -------------------------------------------------------

_KEYS = st.sampled_from(sorted({*SCHEMA, *BASE_IMAGE_SCHEMA, "version", "sha256", "amd64"}))
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.dates()
    | st.text(max_size=20)
    | st.sampled_from(["2.21.0", "3.11", "clang-18", "sha256:" + "a" * 64, "yes", "on", "~"])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(_KEYS | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _only_input_errors(parse: Parser, text: str) -> None:
    try:
        parse(text, path="x.yaml")
    except InputError as exc:
        assert exc.exit_code == 3
        assert "\n" not in exc.line()


@pytest.mark.parametrize("parse", PARSERS, ids=lambda p: p.__name__)
@SETTINGS
@given(data=_VALUES)
def test_any_yaml_document_parses_or_is_an_input_error(parse: Parser, data: Any) -> None:
    _only_input_errors(parse, _dump(data))


@pytest.mark.parametrize("parse", PARSERS, ids=lambda p: p.__name__)
@SETTINGS
@given(text=st.text())
def test_any_text_parses_or_is_an_input_error(parse: Parser, text: str) -> None:
    _only_input_errors(parse, text)


@st.composite
def _leaf_replaced(draw: st.DrawFn, data: Any) -> str:
    path = draw(st.sampled_from(_leaves(data)))
    return _dump(_replaced(data, path, draw(_VALUES)))


@SETTINGS
@given(text=_leaf_replaced(MODEL_DATA))
def test_a_recipe_with_any_value_anywhere_parses_or_is_an_input_error(text: str) -> None:
    _only_input_errors(parse_recipe, text)


@SETTINGS
@given(text=_leaf_replaced(BASE_IMAGES_DATA))
def test_base_images_with_any_value_anywhere_parse_or_are_an_input_error(text: str) -> None:
    _only_input_errors(parse_base_images, text)


@SETTINGS
@given(raw=st.binary(max_size=200))
def test_any_bytes_in_a_file_are_read_or_an_input_error(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        for name in ("tf-2.99.yaml", "base-images.yaml"):
            (Path(directory) / name).write_bytes(raw)
        for read in (
            lambda: read_recipe(Path(directory) / "tf-2.99.yaml"),
            lambda: load_base_images([Path(directory)]),
        ):
            try:
                read()
            except InputError as exc:
                assert "\n" not in exc.line()
