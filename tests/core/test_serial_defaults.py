"""A value read from data that leaves out a defaulted key is written back with it, as one made in
code is (msgspec alone leaves such a field unset on the instance, and its encoder skips it)."""

from __future__ import annotations

from dataclasses import dataclass, field

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
