"""Floats kept exact for arithmetic and written rounded in JSON, for :mod:`tfbuild.core.serial`.

A figure (a duration, a ratio, a cv, a rate) is compared and combined at full precision (a
verdict's margin, a tune gain's median) but written to so many decimals. The type says how many: a
field holding a :class:`Round3` keeps the exact value and :func:`serial.to_data` writes it as
``round(value, 3)``. Rounding when the value is made would change what is computed from it; a float
subclass keeps both. A frozen dataclass whose fields are annotated ``float`` wraps them in
``__post_init__`` with :func:`round_fields`, so the code that builds it passes plain floats.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

R = TypeVar("R", bound="Rounded")


class Rounded(float):
    """A float written to ``places`` decimals."""

    __slots__ = ()
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
    """Written to one decimal (a duration to a tenth of a second)."""

    __slots__ = ()
    places = 1


class Round3(Rounded):
    """Written to three decimals (a duration to the millisecond, a ratio)."""

    __slots__ = ()
    places = 3


class Round4(Rounded):
    """Written to four decimals (a timing statistic)."""

    __slots__ = ()
    places = 4


def round_fields(value: object, *names: str, kind: type[Rounded] = Round3) -> None:
    """Wrap the float fields ``names`` of the (frozen) dataclass ``value`` as ``kind``."""
    for name in names:
        object.__setattr__(value, name, kind(getattr(value, name)))
