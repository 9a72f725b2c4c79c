"""Measured figures kept exact for the arithmetic and written rounded in smoke's JSON.

A smoke, forecast or tune figure (a ratio, a cv, a rate) is compared and combined at full precision
(a verdict's margin, a tune gain's median) but written to so many decimals. The type says how many:
a field typed :class:`Round4` holds the exact value and :mod:`tfbuild.core.serial` writes it as
``round(value, 4)``. Rounding when the value is made would change the verdicts and gains computed
from it; a float subclass keeps both.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

R = TypeVar("R", bound="Rounded")


class Rounded(float):
    """A float written to ``places`` decimals."""

    places: ClassVar[int]

    def serial_data(self) -> float:
        return round(float(self), self.places)

    @classmethod
    def serial_from_data(cls: type[R], data: object) -> R:
        if isinstance(data, bool) or not isinstance(data, int | float):
            msg = f"Expected `number`, got `{type(data).__name__}`"
            raise TypeError(msg)
        return cls(data)

    @staticmethod
    def serial_schema() -> dict[str, object]:
        return {"type": "number"}


class Round1(Rounded):
    places = 1


class Round3(Rounded):
    places = 3


class Round4(Rounded):
    places = 4
