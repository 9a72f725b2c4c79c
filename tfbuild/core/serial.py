"""The one way typed values become JSON data and come back: msgspec over tfbuild's frozen dataclasses.

Every value tfbuild prints or writes as JSON (a plan, a receipt, a detect report, a smoke or pick
report) is a frozen dataclass; :func:`to_data` turns it into plain JSON data (field order kept,
tuples as lists, enums as their values, paths as strings) and :func:`from_data` builds it back,
strictly: every field of its type (no ``"1"`` for an int, no float for an int), no field missing
that has no default, and no key the type does not have. A value that does not fit is one
:class:`DecodeFailure` naming where (``$.resources.jobs``) and what was expected.

Why msgspec (measured on this machine by ``benchmarks/serial_startup.py``): it is the quickest to
import of the three maintained candidates (msgspec, cattrs, pydantic v2), which matters because
``tfbuild detect --json`` must stay well under 0.3 s; it converts plain dataclasses without a base
class or decorator, so the types stay what the rest of the code already uses (``dataclasses.replace``,
``fields``); it is strict by default where it counts (ints are ints, enums their values) and
generates JSON Schema from the same types (:func:`schema`).

msgspec has one gap for dataclasses: it ignores keys that a dataclass does not declare (unknown
keys are refused only for its own ``Struct`` type). :func:`from_data` closes it by walking the type
and the data together before converting, so a misspelt or injected key is refused, not dropped.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final, TypeVar

import msgspec

T = TypeVar("T")

#: The default of a field whose key older writers left out (``x: int | Unset = UNSET``): a field
#: that holds it is written as no key, and a key that is absent reads as it, so that what was read
#: is written back the same (None stays ``null``).
UNSET: Final = msgspec.UNSET
Unset = msgspec.UnsetType


class DecodeFailure(ValueError):
    """JSON data that does not fit its type: ``where`` is a JSON path (``$.resources.jobs``)."""

    def __init__(self, message: str, *, where: str = "$") -> None:
        super().__init__(message if where == "$" else f"{message} - at `{where}`")
        self.where = where


def _encode_other(value: Any) -> Any:
    if isinstance(value, PurePath):
        return str(value)
    written = getattr(type(value), "serial_data", None)  # a value type that says its own JSON form
    if written is not None:
        return written(value)
    msg = f"cannot write a {type(value).__name__} as JSON"
    raise NotImplementedError(msg)


def to_data(value: Any) -> Any:
    """``value`` (a dataclass, or containers of them) as JSON data: dicts in field order, lists."""
    # Through JSON bytes and back: exactly the data a reader of the text gets (tuples as lists).
    return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_encode_other))


def _decode_other(kind: type, value: Any) -> Any:
    if isinstance(kind, type) and issubclass(kind, PurePath) and isinstance(value, str):
        return kind(value)
    if hasattr(kind, "serial_from_data"):
        return kind.serial_from_data(value)
    msg = f"Expected `{getattr(kind, '__name__', kind)}`, got `{type(value).__name__}`"
    raise NotImplementedError(msg)


def from_data(data: Any, kind: type[T]) -> T:
    """``data`` (parsed JSON) as a ``kind``, strictly; a :class:`DecodeFailure` when it does not fit."""
    _refuse_unknown_keys(data, kind, "$")
    try:
        value = msgspec.convert(data, type=kind, strict=True, dec_hook=_decode_other)
    except msgspec.ValidationError as exc:
        text = str(exc)
        where = text.rsplit(" - at `", 1)[1].rstrip("`") if " - at `" in text else "$"
        raise DecodeFailure(text.rsplit(" - at `", 1)[0], where=where) from None
    return _complete(value)  # type: ignore[no-any-return]


def _complete(value: Any) -> Any:
    """``value`` with every dataclass in it made again through its ``__init__``.

    msgspec leaves a field that the data omits unset on the instance (reads then find the class's
    default), and its encoder writes only the fields set: a value read from data without a
    defaulted key would be written without it. Made again, it has every field, as one built in
    code has, and its ``__post_init__`` has run on the whole value.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return kind(**{name: _complete(getattr(value, name)) for name in _init_fields(kind)})
    if type(value) is tuple:
        return tuple(_complete(item) for item in value)
    if type(value) is list:
        return [_complete(item) for item in value]
    if type(value) is dict:
        return {key: _complete(item) for key, item in value.items()}
    return value


def schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``kind``'s JSON data, from the same type that decodes it."""

    def hook(other: type) -> dict[str, Any]:
        if isinstance(other, type) and issubclass(other, PurePath):
            return {"type": "string"}
        if hasattr(other, "serial_schema"):
            return dict(other.serial_schema())
        raise NotImplementedError

    found = msgspec.json.schema(kind, schema_hook=hook)
    for definition in found.get("$defs", {}).values():
        if "properties" in definition:  # a dataclass: from_data refuses a key it does not declare
            definition.setdefault("additionalProperties", False)
    return found


def _refuse_unknown_keys(data: Any, kind: Any, where: str) -> None:
    """Walk ``kind`` and ``data`` together; a key no dataclass on the way declares is refused."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(kind):
            if _fits_shape(data, option):
                _refuse_unknown_keys(data, option, where)
                return
        return
    if origin is typing.Annotated:
        _refuse_unknown_keys(data, typing.get_args(kind)[0], where)
        return
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(data, Mapping):
            return  # msgspec says what was expected
        declared = _field_types(kind)
        for key, value in data.items():
            if key not in declared:
                raise DecodeFailure(f"Object contains unknown field `{key}`", where=where)
            _refuse_unknown_keys(value, declared[key], f"{where}.{key}")
        return
    if origin in (list, tuple, set, frozenset) and isinstance(data, list):
        args = typing.get_args(kind)
        if origin is tuple and args and args[-1] is not Ellipsis:
            for index, (item, item_kind) in enumerate(zip(data, args, strict=False)):
                _refuse_unknown_keys(item, item_kind, f"{where}[{index}]")
            return
        for index, item in enumerate(data):
            _refuse_unknown_keys(item, args[0] if args else Any, f"{where}[{index}]")
        return
    if origin is dict and isinstance(data, Mapping):
        value_kind = typing.get_args(kind)[1] if typing.get_args(kind) else Any
        for key, value in data.items():
            _refuse_unknown_keys(value, value_kind, f"{where}.{key}")


@functools.cache
def _init_fields(kind: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(kind) if field.init)


@functools.cache
def _field_types(kind: type) -> dict[str, Any]:
    """Each field of the dataclass ``kind`` and its type, once per class (typing resolves the
    annotations' text anew on every call: most of a plan's decoding time before). A field computed
    in ``__post_init__`` (init=False) is read too, then computed again when the value is made
    through its ``__init__`` (:func:`_complete`): the data written holds it."""
    hints = typing.get_type_hints(kind, include_extras=True)
    return {field.name: hints[field.name] for field in dataclasses.fields(kind)}


def _fits_shape(data: Any, kind: Any) -> bool:
    """Whether ``data`` has the JSON shape of ``kind`` (an object for a dataclass or a dict, ...)."""
    if kind is type(None):
        return data is None
    origin = typing.get_origin(kind) or kind
    if dataclasses.is_dataclass(origin) or origin in (dict, Mapping):
        return isinstance(data, Mapping)
    if origin in (list, tuple, set, frozenset):
        return isinstance(data, list)
    if isinstance(origin, type) and issubclass(origin, enum.Enum):
        return isinstance(data, str | int)
    if isinstance(origin, type):
        return isinstance(data, origin)
    return True
