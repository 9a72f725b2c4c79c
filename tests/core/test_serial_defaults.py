"""A value read from data that leaves out a defaulted key is written back with it, as one made in
code is (msgspec alone leaves such a field unset on the instance, and its encoder skips it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tfbuild.core import serial


@dataclass(frozen=True, kw_only=True)
class Inner:
    name: str
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class Outer:
    inner: Inner
    items: tuple[Inner, ...] = ()
    flag: bool = False
    extra: dict[str, Inner] = field(default_factory=dict)


def test_a_defaulted_field_left_out_of_the_data_is_written_back() -> None:
    data = {"inner": {"name": "a"}, "items": [{"name": "b"}], "extra": {"k": {"name": "c"}}}
    value = serial.from_data(data, Outer)
    assert value == Outer(
        inner=Inner(name="a"), items=(Inner(name="b"),), extra={"k": Inner(name="c")}
    )
    assert serial.to_data(value) == {
        "inner": {"name": "a", "note": None},
        "items": [{"name": "b", "note": None}],
        "flag": False,
        "extra": {"k": {"name": "c", "note": None}},
    }


@dataclass(frozen=True, kw_only=True)
class Kept:
    """A key older writers left out (UNSET: written as no key), and one computed from the others."""

    low: float
    high: float
    note: str | serial.Unset = serial.UNSET
    width: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", self.high - self.low)


def test_an_unset_key_stays_out_and_a_computed_one_is_computed_again() -> None:
    assert serial.to_data(Kept(low=1.0, high=3.0)) == {"low": 1.0, "high": 3.0, "width": 2.0}
    read = serial.from_data({"low": 1.0, "high": 3.0, "width": 2.0}, Kept)
    assert read == Kept(low=1.0, high=3.0) and read.note is serial.UNSET
    assert serial.to_data(read) == {"low": 1.0, "high": 3.0, "width": 2.0}  # no "note" added
    noted = serial.from_data({"low": 1.0, "high": 3.0, "note": "n", "width": 2.0}, Kept)
    assert serial.to_data(noted)["note"] == "n"
    # The computed field's key is read as its type, then computed again from the others.
    again = serial.from_data({"low": 1.0, "high": 3.0, "width": 99.0}, Kept)
    assert again.width == 2.0
    with pytest.raises(serial.DecodeFailure, match=r"Expected `float`, got `str` - at `\$\.width`"):
        serial.from_data({"low": 1.0, "high": 3.0, "width": "2"}, Kept)
    with pytest.raises(serial.DecodeFailure, match="unknown field `depth`"):
        serial.from_data({"low": 1.0, "high": 3.0, "width": 2.0, "depth": 1}, Kept)
