"""Values whose JSON form is not their Python form: CPU flag sets, command lines, evidence pairs.

msgspec writes Python's own containers (and their subclasses) as they are, so each of these is a
plain class that behaves like the container the code needs and tells :mod:`tfbuild.core.serial`
its JSON form (``serial_data``), how to read it back (``serial_from_data``) and its JSON Schema
(``serial_schema``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Set
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class FlagSet(Set[str]):
    """A CPU's feature flags: a set to match against, written as a sorted JSON list."""

    __slots__ = ("_flags",)

    def __init__(self, flags: Iterable[str] = ()) -> None:
        self._flags = frozenset(flags)

    def __contains__(self, flag: object) -> bool:
        return flag in self._flags

    def __iter__(self) -> Iterator[str]:
        return iter(self._flags)

    def __len__(self) -> int:
        return len(self._flags)

    def __hash__(self) -> int:
        return hash(self._flags)

    def __repr__(self) -> str:
        return f"FlagSet({sorted(self._flags)!r})"

    def serial_data(self) -> list[str]:
        return sorted(self._flags)

    @classmethod
    def serial_from_data(cls, data: object) -> FlagSet:
        if not isinstance(data, list) or not all(isinstance(f, str) for f in data):
            msg = f"Expected `array` of `str`, got `{type(data).__name__}`"
            raise ValueError(msg)
        return cls(data)

    @staticmethod
    def serial_schema() -> dict[str, object]:
        return {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


class _FrozenTuple(Sequence[T], Generic[T]):
    """A tuple in all but type (it equals the tuple of its items), so msgspec asks how to write it."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items = tuple(items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _FrozenTuple):
            return self._items == other._items
        if isinstance(other, tuple):
            return self._items == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"


class CommandLine(_FrozenTuple[str]):
    """Compiler flags: a tuple of words in code, one space-separated string in JSON."""

    __slots__ = ()

    def serial_data(self) -> str:
        return " ".join(self)

    @classmethod
    def serial_from_data(cls, data: object) -> CommandLine:
        if not isinstance(data, str):
            msg = f"Expected `str`, got `{type(data).__name__}`"
            raise ValueError(msg)
        return cls(data.split())

    @staticmethod
    def serial_schema() -> dict[str, object]:
        return {"type": "string"}


class Evidence(_FrozenTuple[tuple[str, str]]):
    """What each source says of a version, as (source, version) pairs; a JSON object."""

    __slots__ = ()

    def serial_data(self) -> dict[str, str]:
        return dict(self)

    @classmethod
    def serial_from_data(cls, data: object) -> Evidence:
        if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()
        ):
            msg = f"Expected `object` of `str`, got `{type(data).__name__}`"
            raise ValueError(msg)
        return cls(data.items())

    @staticmethod
    def serial_schema() -> dict[str, object]:
        return {"type": "object", "additionalProperties": {"type": "string"}}
