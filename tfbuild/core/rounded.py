"""Floats whose JSON form is rounded (a duration to the millisecond), for :mod:`tfbuild.core.serial`.

A value keeps its full precision for arithmetic and messages; only :func:`serial.to_data` writes it
rounded. A frozen dataclass wraps its field in ``__post_init__`` with :func:`round_fields`, so code
that builds it passes a plain float and the field's annotation stays ``float``.
"""

from __future__ import annotations

from typing import ClassVar


class Rounded(float):
    """A float written to JSON rounded to :attr:`digits` places (3: a duration to the millisecond)."""

    __slots__ = ()
    digits: ClassVar[int] = 3

    def serial_data(self) -> float:
        return round(float(self), self.digits)

    @staticmethod
    def serial_schema() -> dict[str, object]:
        return {"type": "number"}


class Tenths(Rounded):
    """A float written to JSON rounded to one place (a duration to a tenth of a second)."""

    __slots__ = ()
    digits = 1


def round_fields(value: object, *names: str, kind: type[Rounded] = Rounded) -> None:
    """Wrap the float fields ``names`` of the (frozen) dataclass ``value`` as ``kind``."""
    for name in names:
        object.__setattr__(value, name, kind(getattr(value, name)))
