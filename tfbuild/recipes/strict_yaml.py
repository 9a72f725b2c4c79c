"""A strict YAML loader for tfbuild's data files: one document, no anchors, typed by a schema.

Each data file (a recipe, ``base-images.yaml``, ``tools.yaml``) is composed into PyYAML's node tree
(never constructed: versions stay text, and YAML 1.1's ``yes``/``on`` are not booleans), then checked
against a schema of :class:`Field` values whose kinds are :data:`VALUE_CHECKS`. Every refusal is one
:class:`InputError` naming the file, the line and what is allowed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input

# --- value checks: each returns None when fine, or a description of what is allowed ----------------

# Every pattern is matched whole (re.fullmatch): with re.match, '$' also matches before a final
# newline, so "2.21.0\n" passed as a version and "clang-18\n" reached the Dockerfile.
SAFE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_HTTPS_URL = re.compile(r"https://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~%/+=-]*)?")
_FLAG = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+:-]*")
_DEFINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]+")
_CAPABILITY = re.compile(r"(sm|compute)_\d{2,3}[a-z]?")
#: A registry/repository reference (docker.io/nvidia/cuda): the one kind of field with a '/'.
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(:\d+)?(/[A-Za-z0-9][A-Za-z0-9._-]*)*")
#: A Docker tag (the grammar of docker/distribution's reference package).
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _pattern(regex: re.Pattern[str], allowed: str) -> Callable[[Any], str | None]:
    return lambda value: None if isinstance(value, str) and regex.fullmatch(value) else allowed


VALUE_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "version3": _pattern(re.compile(r"\d+\.\d+\.\d+"), "a version X.Y.Z, e.g. 2.21.0"),
    "version2": _pattern(re.compile(r"\d+\.\d+"), "a version X.Y, e.g. 3.11"),
    "version": _pattern(re.compile(r"\d+(\.\d+){1,3}"), "a dotted version, e.g. 12.5.1"),
    "token": _pattern(SAFE_TOKEN, "letters, digits and . _ + - only"),
    "url": _pattern(_HTTPS_URL, "an https:// URL without spaces, quotes or shell characters"),
    "hex40": _pattern(re.compile(r"[0-9a-f]{40}"), "a full 40-digit git commit hash"),
    "hex64": _pattern(re.compile(r"[0-9a-f]{64}"), "a 64-digit sha256 in lower-case hex"),
    "snapshot": _pattern(
        re.compile(r"[0-9]{8}T[0-9]{6}Z"), "a UTC snapshot time like 20261115T000000Z"
    ),
    "compiler": _pattern(
        re.compile(r"(gcc|clang)-\d+(\.\d+){0,2}"), "gcc-N[.N[.N]] or clang-N[.N[.N]]"
    ),
    "flag": _pattern(_FLAG, "a compiler flag like -Wno-sign-compare (no spaces or quotes)"),
    "define": _pattern(_DEFINE, "a bazel define NAME=value"),
    "capability": _pattern(_CAPABILITY, "sm_XY or compute_XY, e.g. sm_89"),
    "sysroot": _pattern(
        re.compile(r"(/[A-Za-z0-9._-]+)+|[A-Za-z0-9][A-Za-z0-9._-]*"),
        "a SYSROOT_DIST name (linux_glibc_2_27) or an absolute path (/dt9)",
    ),
    "text": lambda v: None if isinstance(v, str) else "text",
    "release": _pattern(re.compile(r"\d+(\.\d+){0,3}"), "a version, e.g. 12.5.1 or 9"),
    "image": _pattern(_IMAGE, "a registry/repository like docker.io/library/debian"),
    "tag": _pattern(_TAG, "a Docker tag: letters, digits and _ . - (up to 128)"),
    "digest": _pattern(_DIGEST, "sha256: and 64 lower-case hex digits"),
    "bool": lambda v: (
        None
        if isinstance(v, bool)
        else "true or false (write true or false: yes, no, on and off are not booleans here)"
    ),
    "date": _pattern(re.compile(r"\d{4}-\d{2}-\d{2}"), "a date YYYY-MM-DD"),
    "verified": _pattern(
        re.compile(r"(read|cited|not verified): \S.*", re.DOTALL),
        "a statement starting 'read: ', 'cited: ' or 'not verified: ' (see recipes/README.md)",
    ),
}


@dataclass(frozen=True)
class Field:
    kind: str  # a key of VALUE_CHECKS, "list:<kind>", or "map"
    required: bool = True
    nullable: bool = False
    children: dict[str, Field] | None = None
    choices: tuple[str, ...] = ()


# --- validation over the YAML node tree (it keeps line numbers) -----------------------------------


@dataclass(frozen=True, kw_only=True)
class DataFile:
    """The data file being validated, as its messages name it."""

    path: str
    noun: str = "recipe"  # "invalid recipe PATH:LINE", "invalid base image file PATH:LINE"
    fix: str = "Fix the recipe (see recipes/README.md for the schema)."


def refusal(doc: DataFile, node: yaml.Node | yaml.Mark | None, message: str) -> InputError:
    """The error for ``message`` about ``node`` (or a mark): the file and line, what is wrong."""
    mark = node.start_mark if isinstance(node, yaml.Node) else node
    line = mark.line + 1 if mark is not None else 1
    return InputError(f"invalid {doc.noun} {doc.path}:{line}", why=message, fix=doc.fix)


#: How deep a data file may nest (the recipe schema needs 3 levels). PyYAML composes recursively,
#: so a few kilobytes of '[' would otherwise end in a RecursionError.
MAX_DEPTH = 32


class _DataLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses anchors (``&a``), aliases (``*a``) and deep nesting while
    composing.

    The data files have no use for anchors, and a few hundred bytes of nested aliases (a "billion
    laughs") expand to gigabytes when a tree is walked or constructed. The node tree is composed,
    never constructed: values are typed by :func:`_scalar`."""

    def __init__(self, stream: str, doc: DataFile) -> None:
        super().__init__(stream)
        self.doc = doc
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise refusal(
                self.doc,
                event.start_mark,
                "it uses a YAML anchor or alias (& or *), which tfbuild's data files refuse "
                "(a few of them can expand to gigabytes); write each value out",
            )
        if self.depth >= MAX_DEPTH:
            why = f"it nests lists or mappings over {MAX_DEPTH} deep"
            raise refusal(self.doc, event.start_mark, why)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def compose(text: str, doc: DataFile) -> yaml.Node:
    """The YAML node tree of a data file (one document, no anchors or aliases), or an InputError."""
    try:  # as yaml.compose; the loader's own refusals are InputErrors already
        loader = _DataLoader(text, doc)
        node = loader.get_single_node()
        loader.dispose()
    except yaml.YAMLError as exc:
        why = f"it is not valid YAML ({getattr(exc, 'problem', None) or exc})"
        syntax = replace(doc, fix="Fix the YAML syntax.")
        raise refusal(syntax, getattr(exc, "problem_mark", None), why) from None
    if node is None:
        raise refusal(doc, None, "the file is empty")
    return node


#: YAML 1.2's booleans; PyYAML (YAML 1.1) also reads yes/no/on/off/y/n as booleans.
_BOOLEANS = {"true": True, "false": False}


def _scalar(node: yaml.Node) -> Any:
    """A scalar node's value with YAML 1.2-like typing: true/false, null, everything else text.

    Versions stay text (``3.10`` must not become the float 3.1), and YAML 1.1's ``yes``/``on``
    stay text too, so a boolean field refuses them with "write true or false"."""
    value = node.value
    if node.tag.endswith(":bool") and value.lower() in _BOOLEANS:
        return _BOOLEANS[value.lower()]
    if node.tag.endswith(":null"):
        return None
    return value


def _key(doc: DataFile, key_node: yaml.Node, prefix: str) -> str:
    if not isinstance(key_node, yaml.ScalarNode) or not isinstance(_scalar(key_node), str):
        raise refusal(
            doc,
            key_node,
            f"a key under {prefix.rstrip('.') or 'the top level'} is a list or mapping (? [a, b]), "
            "not a plain name",
        )
    return str(key_node.value)


def validate(
    doc: DataFile,
    node: yaml.Node,
    schema: dict[str, Field],
    prefix: str,
    lines: dict[str, int],
) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise refusal(
            doc,
            node,
            f"{prefix.rstrip('.') or 'the ' + doc.noun} must be a mapping of keys to values",
        )
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _key(doc, key_node, prefix)
        dotted = f"{prefix}{key}"
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f", did you mean '{prefix}{close[0]}'?" if close else ""
            line = key_node.start_mark.line + 1
            raise InputError(
                f"unknown key {dotted!r} at {doc.path}:{line}{hint}",
                fix=f"Allowed keys here: {', '.join(prefix + k for k in sorted(schema))}.",
            )
        if key in result:
            raise refusal(doc, key_node, f"key '{dotted}' appears twice")
        lines[dotted] = key_node.start_mark.line + 1
        result[key] = _value(doc, value_node, schema[key], dotted, lines)
    for key, field in schema.items():
        if field.required and key not in result:
            raise refusal(doc, node, f"missing key '{prefix}{key}'")
    return result


def _value(doc: DataFile, node: yaml.Node, field: Field, dotted: str, lines: dict[str, int]) -> Any:
    if isinstance(node, yaml.ScalarNode) and _scalar(node) is None:
        if field.nullable:
            return None
        raise refusal(doc, node, f"'{dotted}' must not be empty")
    if field.kind == "map":
        assert field.children is not None
        return validate(doc, node, field.children, f"{dotted}.", lines)
    if field.kind.startswith("list:"):
        if not isinstance(node, yaml.SequenceNode):
            raise refusal(doc, node, f"'{dotted}' must be a list")
        item = Field(field.kind.removeprefix("list:"))
        return [
            _value(doc, child, item, f"{dotted}[{i}]", lines) for i, child in enumerate(node.value)
        ]
    if not isinstance(node, yaml.ScalarNode):
        raise refusal(doc, node, f"'{dotted}' must be a single value, not a list or mapping")
    value = _scalar(node)
    problem = VALUE_CHECKS[field.kind](value)
    if problem is None and field.choices and value not in field.choices:
        problem = " or ".join(field.choices)
    if problem is not None:
        shown = value if isinstance(value, bool) else repr(value)
        raise refusal(doc, node, f"'{dotted}' is {shown}; expected {problem}")
    return value


def entries_of(doc: DataFile, text: str, what: str) -> Iterable[tuple[str, yaml.Node]]:
    """The (name, value node) pairs of a data file that maps free names (each a token, once)."""
    node = compose(text, doc)
    if not isinstance(node, yaml.MappingNode):
        raise refusal(doc, node, f"it must map {what}")
    seen: set[str] = set()
    for key_node, value_node in node.value:
        name = _key(doc, key_node, "")
        if SAFE_TOKEN.fullmatch(name) is None:
            raise refusal(doc, key_node, f"the name {name!r} is not letters, digits and . _ + -")
        if name in seen:
            raise refusal(doc, key_node, f"'{name}' appears twice")
        seen.add(name)
        yield name, value_node


#: The most of one recipe, base image or tools file read: each is a few kB.
MAX_DATA_FILE_BYTES = 1 << 20


def read_text(path: Path, noun: str) -> str:
    """A data file's text, or an InputError (a dangling link, a directory, a FIFO or a device, too
    large, not UTF-8, ...); read by :func:`read_input`, so a FIFO is refused, never waited on."""
    try:
        return read_input(path, limit=MAX_DATA_FILE_BYTES, what=f"{noun} {path}").decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"
    except InputError as exc:
        why = "it is a directory" if path.is_dir() else exc.why
    except FileNotFoundError:
        why = "it does not exist" + (" (a dangling symbolic link?)" if path.is_symlink() else "")
    except OSError as exc:
        why = exc.strerror or str(exc)
    raise InputError(
        f"cannot read {noun} {path}", why=why, fix="Make it a readable file, or remove it."
    )
