"""tfbuild.core.serial: typed values to JSON data and back, strictly (msgspec over dataclasses)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

import pytest

from tfbuild.core import serial


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True, kw_only=True)
class Inner:
    name: str
    size: int = 0


@dataclass(frozen=True, kw_only=True)
class Outer:
    inner: Inner
    items: tuple[Inner, ...]
    colour: Colour
    where: Path
    maybe: Inner | None = None


VALUE = Outer(
    inner=Inner(name="a", size=1),
    items=(Inner(name="b"),),
    colour=Colour.RED,
    where=Path("/x/y"),
)
DATA = {
    "inner": {"name": "a", "size": 1},
    "items": [{"name": "b", "size": 0}],
    "colour": "red",
    "where": "/x/y",
    "maybe": None,
}


def test_a_value_becomes_json_data_in_field_order_and_comes_back_equal() -> None:
    data = serial.to_data(VALUE)
    assert data == DATA and list(data) == list(DATA)
    assert serial.from_data(data, Outer) == VALUE


@pytest.mark.parametrize(
    ("data", "where", "what"),
    [
        (
            {**DATA, "inner": {"name": "a", "size": "1"}},
            "$.inner.size",
            "Expected `int`, got `str`",
        ),
        (
            {**DATA, "inner": {"name": "a", "size": 1.0}},
            "$.inner.size",
            "Expected `int`, got `float`",
        ),
        ({**DATA, "items": [{"name": "b", "extra": 1}]}, "$.items[0]", "unknown field `extra`"),
        ({**DATA, "maybe": {"name": "c", "run": "sh"}}, "$.maybe", "unknown field `run`"),
        ({**DATA, "colour": "blue"}, "$.colour", "Invalid enum value 'blue'"),
        ({k: v for k, v in DATA.items() if k != "inner"}, "$", "missing required field `inner`"),
        ({**DATA, "x": 1}, "$", "unknown field `x`"),
    ],
)
def test_data_that_does_not_fit_is_refused_naming_where(data: dict, where: str, what: str) -> None:
    with pytest.raises(serial.DecodeFailure) as caught:
        serial.from_data(data, Outer)
    assert caught.value.where == where
    assert what in str(caught.value)


def test_the_schema_comes_from_the_same_type() -> None:
    schema = serial.schema(Outer)
    outer = schema["$defs"]["Outer"]
    assert outer["required"] == ["inner", "items", "colour", "where"]
    assert outer["properties"]["where"] == {"type": "string"}
    assert schema["$defs"]["Colour"]["enum"] == ["red"]
