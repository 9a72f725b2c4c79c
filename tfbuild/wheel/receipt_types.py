"""What a build's receipt and an overlay's share: their bytes read bounded, the grammars of the
values both hold as types, the wheel both describe, and the one clause that says why data does not
fit its type.

A receipt is untrusted input (a file, an HTTP body). :func:`load_json` reads its bytes bounded in
size, nesting and numbers (no NaN, no key twice, no lone surrogate). Each value's grammar is a
constraint on its type (``Sha256 = Annotated[str, grammar(...)]``), so that
:func:`tfbuild.core.serial.from_data` refuses what does not fit and :func:`tfbuild.core.serial.schema`
publishes it; :func:`explain` then says for people which field and why, in one clause:
``its wheel.size holds -1, not a whole number from 0 to 1099511627776``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import msgspec

from tfbuild.core import serial
from tfbuild.core.controls import CONTROL
from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input

MAX_TEXT = 4096  # characters of one text field
MAX_SIZE = 1 << 40  # bytes of a wheel (1 TiB); counts and seconds are bounded alike
MAX_COUNT = 1 << 53
#: Bounds on what a reader parses: a receipt is a few tens of KiB, nested about ten levels deep.
MAX_RECEIPT_BYTES = 16 << 20
MAX_RECEIPT_DEPTH = 64
#: The longest number a receipt holds (a size, a count, seconds): digits and signs, exponent.
MAX_NUMBER_CHARS = 32


def grammar(
    wanted: str, pattern: str | re.Pattern[str] | None = None, **bounds: Any
) -> msgspec.Meta:
    """A type's constraints (``msgspec.Meta``: a pattern the whole value matches, ``ge``, ``le``,
    ``max_length``), with ``wanted``: what a message says the value should be."""
    if pattern is not None:
        text = pattern if isinstance(pattern, str) else pattern.pattern
        # Python's $ also matches before a last newline (JSON Schema's does not): (?!\n) refuses it.
        bounds = {"max_length": 1024, **bounds, "pattern": f"^(?:{text})$(?!\\n)"}
    return msgspec.Meta(**bounds, extra={"wanted": wanted})


# --- the grammars both receipts hold ----------------------------------------------------------------

SHA256 = re.compile(r"[0-9a-f]{64}")
IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
#: Debian policy 5.6.1: lower case letters, digits, + - . ; at least two, starting alphanumeric.
DEBIAN_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
#: deb-version(7): ``[epoch:]upstream_version[-debian_revision]``. The epoch is digits; the upstream
#: version starts with a digit and holds letters, digits and ``. + ~`` (``-`` only with a revision,
#: ``:`` only with an epoch); the revision holds letters, digits and ``. + ~``.
DEBIAN_VERSION = re.compile(
    r"[0-9]+:[0-9][A-Za-z0-9.+~:-]*-[A-Za-z0-9.+~]+"
    r"|[0-9]+:[0-9][A-Za-z0-9.+~:]*"
    r"|[0-9][A-Za-z0-9.+~-]*-[A-Za-z0-9.+~]+"
    r"|[0-9][A-Za-z0-9.+~]*"
)
#: A character one line of text may hold: none of core.controls' CONTROL.
LINE_CHAR = f"[^{CONTROL.pattern[1:-1]}]"

Sha256 = Annotated[str, grammar("a sha256 (64 lowercase hex digits)", SHA256)]
ImageId = Annotated[str, grammar("an image id (sha256: and 64 lowercase hex digits)", IMAGE_ID)]
Count = Annotated[int, grammar(f"a whole number from 0 to {MAX_SIZE}", ge=0, le=MAX_SIZE)]
#: One line of text for people: not empty, bounded, no control character (core.controls).
Text = Annotated[
    str,
    grammar(
        f"one line of text (at most {MAX_TEXT} characters, no controls)",
        f"{LINE_CHAR}+",
        max_length=MAX_TEXT,
    ),
]
DebianPackage = Annotated[str, grammar("a Debian package name", DEBIAN_PACKAGE, max_length=256)]
DebianVersion = Annotated[
    str, grammar("a Debian version ([epoch:]upstream[-revision])", DEBIAN_VERSION, max_length=256)
]


def is_debian_version(text: str) -> bool:
    """Is ``text`` a Debian version (deb-version(7)), as apt takes it in ``name=version``?"""
    return isinstance(text, str) and len(text) <= 256 and bool(DEBIAN_VERSION.fullmatch(text))


def is_debian_package(text: str) -> bool:
    """Is ``text`` a Debian package name (policy 5.6.1)?"""
    return isinstance(text, str) and len(text) <= 256 and bool(DEBIAN_PACKAGE.fullmatch(text))


#: The wheel a receipt describes (a build's or an overlay's): its file name, sha256 and size.
@dataclass(frozen=True, kw_only=True)
class WheelRecord:
    name: Annotated[str, grammar("a wheel file name", r"[A-Za-z0-9_.+!-]+\.whl")]
    sha256: Sha256
    size: Count


# --- why data does not fit its type, in one clause ------------------------------------------------


def short(value: Any) -> Any:
    """A value as a message may quote it: text cut to 60 characters."""
    return value[:60] + "..." if isinstance(value, str) and len(value) > 60 else value


def holds(name: str, value: Any, wanted: str) -> str:
    """``its NAME holds VALUE, not WANTED``: a JSON object or array by its kind, text quoted short."""
    if isinstance(value, dict | list):
        held = f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    else:
        held = repr(short(value))
    return f"its {name} holds {held}, not {wanted}"


_PLAIN = {bool: "true or false", int: "an integer", float: "a number", str: "text"}


def _wanted(kind: Any) -> str:
    for meta in typing.get_args(kind)[1:] if typing.get_origin(kind) is Annotated else ():
        if isinstance(meta, msgspec.Meta) and meta.extra and "wanted" in meta.extra:
            return str(meta.extra["wanted"])
    if typing.get_origin(kind) is typing.Literal:
        *most, last = map(str, typing.get_args(kind))
        return f"{', '.join(most)} or {last}" if most else last
    return _PLAIN.get(kind, f"a {getattr(kind, '__name__', kind)}")


def explain(
    data: Any, kind: Any, name: str = "", *, instead: Mapping[type, type] | None = None
) -> str | None:
    """Why ``data`` (parsed JSON) does not fit ``kind``, in one clause naming the field (``name``
    is the path to it, "" for the whole receipt), or None when it fits. Each value is checked by
    :func:`tfbuild.core.serial.from_data` against its own type, so that this says what msgspec
    refused. ``instead`` checks a type as another: one whose fields say their grammar."""
    instead = instead or {}
    kind = instead.get(kind, kind) if isinstance(kind, type) else kind
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a not in (type(None), serial.Unset)]
        return explain(data, options[0], name, instead=instead) if len(options) == 1 else None
    if dataclasses.is_dataclass(kind):
        return _explain_fields(data, kind, name, instead)
    if origin is dict:
        if not isinstance(data, dict):
            return f"its {name} holds {type(data).__name__}, not an object"
        for key, value in data.items():
            at = f"{name}[{short(key)!r}]"
            why = explain(key, args[0], f"{name} key", instead=instead)
            if why or (why := explain(value, args[1], at, instead=instead)):
                return why
        return None
    if origin is list or (origin is tuple and args[-1:] == (...,)):
        if not isinstance(data, list):
            return f"its {name} holds {type(data).__name__}, not a list"
        items = (explain(v, args[0], f"{name}[{i}]", instead=instead) for i, v in enumerate(data))
        return next((why for why in items if why), None)
    try:  # a value checked whole: a plain type, a Literal, an Annotated one
        serial.from_data(data, kind)
    except serial.DecodeFailure:
        return holds(name, data, _wanted(kind))
    return None


def _explain_fields(data: Any, kind: Any, name: str, instead: Mapping[type, type]) -> str | None:
    if not isinstance(data, dict):
        return f"its {name} holds {type(data).__name__}, not an object"
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(key for key in data if key not in fields)
    if unknown:
        listed = ", ".join(repr(short(key)) for key in unknown[:3])
        return f"{name or 'the receipt'} has the unknown key {listed}: tfbuild writes no such key"
    for key, field in fields.items():
        required = field.default is MISSING and field.default_factory is MISSING
        if required and key not in data:
            return f"it is malformed: {f'its {name}' if name else 'it'} has no {key!r}"
    hints = typing.get_type_hints(kind, include_extras=True)
    for key in fields:
        at = f"{name}.{key}" if name else key
        if key in data and (why := explain(data[key], hints[key], at, instead=instead)):
            return why
    return None


# --- reading the bytes: bounded -------------------------------------------------------------------

#: A JSON string (or an unterminated one, to the end): taken out before brackets are counted.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_SAME_BRACKETS = bytes.maketrans(b"{}", b"[]")


def json_depth(raw: bytes, *, limit: int) -> int:
    """How deeply the JSON text ``raw`` nests (strings skipped), counted up to ``limit + 1``
    without recursion and in a bounded number of passes over the brackets alone: each pass takes
    out the innermost pairs. Brackets that do not pair count as deeper than ``limit``."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", raw)).translate(_SAME_BRACKETS)
    depth = 0
    while brackets:
        if depth > limit:
            return depth
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):  # unpaired: the parser would recurse into it
            return limit + 1
        brackets, depth = shorter, depth + 1
    return depth


def _number(text: str, kind: Callable[[str], Any]) -> Any:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(
            f"it holds a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})"
        )
    value = kind(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"it holds the number {text}, which is out of range")
    return value


def _constant(text: str) -> Any:
    raise ValueError(f"it holds {text}, which is not JSON")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"it holds the key {short(key)!r} twice in one object")
        found[key] = value
    return found


def _unicode(value: Any) -> None:
    """Every string (keys too) is text that encodes: no lone surrogate from a ``\\ud800`` escape."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    "it holds a lone surrogate (\\ud800-\\udfff) in a string"
                ) from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def load_json(raw: bytes, *, charset: str = "utf-8") -> Any:
    """The JSON in ``raw`` (a file's bytes, an HTTP body in ``charset``), read bounded in size,
    nesting and numbers; a ValueError whose message is one clause for anything else: too large or
    deep, not text or not JSON, a key twice, NaN or infinity, a lone surrogate."""
    if len(raw) > MAX_RECEIPT_BYTES:
        raise ValueError(f"it is larger than {MAX_RECEIPT_BYTES >> 20} MiB")
    try:
        text = raw.decode(charset)
    except LookupError as exc:  # no such charset
        raise ValueError(str(exc)) from None
    deeper = f"it nests deeper than {MAX_RECEIPT_DEPTH} levels"
    if json_depth(raw, limit=MAX_RECEIPT_DEPTH) > MAX_RECEIPT_DEPTH:
        raise ValueError(deeper)
    try:
        data = json.loads(
            text,
            parse_int=lambda t: _number(t, int),
            parse_float=lambda t: _number(t, float),
            parse_constant=_constant,
            object_pairs_hook=_unique,
        )
    except RecursionError:  # not reached after json_depth; kept so that it can never escape
        raise ValueError(deeper) from None
    _unicode(data)
    return data


class _OfAWheel(Protocol):
    @property
    def wheel(self) -> WheelRecord: ...


_R = TypeVar("_R", bound=_OfAWheel)


def read_receipt_file(
    path: Path, *, wheel: Path | None, decode: Callable[[bytes, str], _R], fix: str
) -> _R:
    """The receipt at ``path``, read bounded and decoded by ``decode(raw, source)`` (a build's or an
    overlay's decoder), and of ``wheel`` when given; one InputError line for anything else."""
    try:
        # One byte over the bound is read, so that the decoder says "larger than" for every source.
        raw = read_input(path, limit=MAX_RECEIPT_BYTES + 1, what=f"the receipt {path}", fix=fix)
    except FileNotFoundError:
        what = f"{wheel.name} has no receipt" if wheel else f"no receipt at {path}"
        raise InputError(what, why=f"{path} does not exist", fix=fix) from None
    receipt = decode(raw, str(path))
    if wheel is not None and receipt.wheel.name != wheel.name:
        raise InputError(
            f"{path} is not the receipt of {wheel.name}",
            why=f"it describes {receipt.wheel.name}",
            fix=fix,
        )
    return receipt
