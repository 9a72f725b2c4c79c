"""Starlark files (WORKSPACE, ``.bzl``) read as code: their tokens, never their comments or strings.

A pattern over lines cannot tell ``_TF_SYSROOT = "TF_SYSROOT"`` in code from the same words in a
docstring or a comment (issue 21: a ``cuda_configure.bzl`` cut to its docstring still "read"
TF_SYSROOT). Starlark's lexical grammar is Python's, so Python's own tokenizer reads it: a comment
is a COMMENT token and a docstring one STRING token, whatever they contain. Bazel never runs.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field, replace


class StarlarkError(ValueError):
    """The text cannot be tokenized as Starlark (an unterminated string or bracket)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        for token in tokens:
            if token.type == tokenize.ERRORTOKEN and not token.string.isspace():
                what = "an unterminated string" if token.string in "'\"" else repr(token.string)
                raise StarlarkError(f"{what} at line {token.start[0]}", token.start[0])
        return tokens
    except tokenize.TokenError as error:
        message, (line, _) = error.args
        raise StarlarkError(str(message), line) from None
    except (IndentationError, SyntaxError) as error:
        raise StarlarkError(error.msg, error.lineno or 0) from None


def _string(token: tokenize.TokenInfo) -> str | None:
    """The value of a plain string literal (None for an f-string, bytes, or no string)."""
    if token.type != tokenize.STRING or token.string[:1] not in ("'", '"'):
        return None
    try:
        value = ast.literal_eval(token.string)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


_SKIP = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


def constants(text: str) -> dict[str, tuple[str, int]]:
    """Top-level ``NAME = "string"`` statements: name -> (value, line). The first one counts.

    Raises :class:`StarlarkError` when the text does not tokenize."""
    found: dict[str, tuple[str, int]] = {}
    line: list[tokenize.TokenInfo] = []
    for token in _tokens(text):
        if token.type in _SKIP:
            continue
        if token.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            line.append(token)
            continue
        if (
            len(line) == 3
            and line[0].type == tokenize.NAME
            and line[0].start[1] == 0
            and line[1].string == "="
        ):
            value = _string(line[2])
            if value is not None:
                found.setdefault(line[0].string, (value, line[0].start[0]))
        line = []
    return found


@dataclass(frozen=True, kw_only=True)
class Call:
    """One call in a Starlark file: its function, its ``name = "..."``, its keyword strings and
    every plain string literal inside its parentheses (a ``urls = [...]`` list's included)."""

    function: str
    line: int  # where the function's name is
    keywords: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (string, line)
    strings: tuple[str, ...] = ()

    @property
    def name(self) -> str | None:
        named = self.keywords.get("name")
        return named[0] if named else None


def calls(text: str) -> list[Call]:
    """Every call of the file (nested ones too), in the order they open.

    Raises :class:`StarlarkError` when the text does not tokenize."""
    tokens = [t for t in _tokens(text) if t.type not in _SKIP and t.type != tokenize.NEWLINE]
    done: list[tuple[int, Call]] = []
    # Open brackets: (the call's index in ``tokens``, the call, its strings), None for a plain bracket.
    stack: list[tuple[int, Call, list[str]] | None] = []
    for index, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            before = tokens[index - 1] if index else None
            if token.string == "(" and before is not None and before.type == tokenize.NAME:
                stack.append((index, Call(function=before.string, line=before.start[0]), []))
            else:
                stack.append(None)
            continue
        if token.type == tokenize.OP and token.string in ")]}":
            if stack:
                top = stack.pop()
                if top is not None:
                    opened, call, strings = top
                    done.append((opened, replace(call, strings=tuple(strings))))
            continue
        value = _string(token)
        if value is None:
            continue
        for entry in stack:
            if entry is not None:
                entry[2].append(value)
        innermost = stack[-1] if stack else None
        if (
            innermost is not None
            and index >= 2
            and tokens[index - 1].string == "="
            and tokens[index - 2].type == tokenize.NAME
            and tokens[index + 1].string in (",", ")")
        ):
            innermost[1].keywords.setdefault(tokens[index - 2].string, (value, token.start[0]))
    return [call for _, call in sorted(done, key=lambda pair: pair[0])]
