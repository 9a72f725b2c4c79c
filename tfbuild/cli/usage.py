"""Command-line mistakes that typer (click) catches, said in tfbuild's words: one line, exit 2.

typer checks the shape of the command line itself (a missing option, an unknown one, a value of
the wrong type or out of range) and would answer with click's usage block and pydantic's
sentences ("Input should be greater than or equal to 1"). :func:`as_usage_error` turns each into
a :class:`~tfbuild.core.errors.UsageError`, which :func:`tfbuild.cli.main` prints as every other
refusal: ``tfbuild: error: --budget -5 is below its minimum: it must be at least 1. See ...``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tfbuild.core.errors import UsageError

try:  # typer 0.2x carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover (older typer: click itself)
    from click import exceptions as click_errors  # type: ignore[no-redef]

#: What the command line's own checks raise (click's UsageError and its kinds).
CommandLineError = click_errors.UsageError
#: Bare ``tfbuild``: its help, on stderr (click's own).
NoArgsIsHelp = click_errors.NoArgsIsHelpError

#: click's words for a command it does not have.
_NO_SUCH_COMMAND = re.compile(r"No such command (.+?)\.?")
#: pydantic's bounds, in words.
_BOUNDS = {
    "greater_than_equal": ("ge", "below its minimum", "at least"),
    "greater_than": ("gt", "below its minimum", "more than"),
    "less_than_equal": ("le", "above its maximum", "at most"),
    "less_than": ("lt", "above its maximum", "less than"),
}
_NOT_A = {
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "bool_parsing": "yes or no (true, false, 1, 0)",
}


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _sentence(text: str) -> str:
    """click's and pydantic's sentences start with a capital; tfbuild's continue a line."""
    text = text.strip().rstrip(".")
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first[1:].isalpha() and first[1:].islower() else text


def _name(param: Any) -> str:
    """An option by its first flag (``-o``), an argument by its metavar (``VERSION``)."""
    if param is None:
        return "a value"
    if getattr(param, "param_type_name", "") == "option" and param.opts:
        return str(param.opts[0])
    return str(param.metavar or param.name).upper()


def _bad_value(exc: Any, name: str) -> tuple[str, str]:
    """What and why of a value typer refused: pydantic's error, in words, with the value given."""
    cause = exc.__cause__
    errors = cause.errors() if hasattr(cause, "errors") else []
    if not errors:  # one of click's own checks
        return f"invalid {name}", _sentence(exc.message)
    error = errors[0]
    kind, given, context = error["type"], error.get("input"), error.get("ctx") or {}
    if kind in _BOUNDS:
        key, beyond, bound = _BOUNDS[kind]
        return f"{name} {given} is {beyond}", f"it must be {bound} {_number(context[key])}"
    if kind in _NOT_A:
        return f"{name} {given!r} is not {_NOT_A[kind]}", ""
    if kind == "value_error" and "error" in context:  # tfbuild's own check names the value
        return f"invalid {name}", _sentence(str(context["error"]))
    if kind == "enum" and "expected" in context:
        return f"invalid {name} {given!r}", f"expected {context['expected']}"
    message = str(error.get("msg", "")).replace("Input should be", "it should be")
    return f"invalid {name} {given!r}", _sentence(message)


def _command(args: Sequence[str]) -> str:
    """The command a command line names (``tfbuild recipes show``): its first words, up to the
    first option."""
    words = ["tfbuild"]
    for word in args[:2]:
        if word.startswith("-") or not word.isalpha():
            break
        words.append(word)
        if word != "recipes":
            break
    return " ".join(words)


def as_usage_error(exc: Any, args: Sequence[str]) -> UsageError:
    """``exc`` (a click usage error raised while the command line ``args`` was read) in tfbuild's
    words."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else _command(args)
    fix = f"See {command} --help."
    param = getattr(exc, "param", None)
    if isinstance(exc, click_errors.MissingParameter):
        name = _name(param)
        metavar = getattr(param, "metavar", None) if name.startswith("-") else None
        needs = f"{name} {metavar}" if metavar else name
        why = _sentence(getattr(param, "help", "") or "")
        return UsageError(f"{command} needs {needs}", why=why, fix=fix)
    if isinstance(exc, click_errors.BadParameter):
        what, why = _bad_value(exc, _name(param))
        return UsageError(what, why=why, fix=fix)
    if isinstance(exc, click_errors.NoSuchOption):
        close = sorted(exc.possibilities or ())
        guess = f"Did you mean {' or '.join(close)}? " if close else ""
        return UsageError(f"{command} has no option {exc.option_name}", fix=guess + fix)
    if isinstance(exc, click_errors.BadOptionUsage) and exc.message.endswith(
        "requires an argument."
    ):
        return UsageError(f"{exc.option_name} needs a value", fix=fix)
    unknown = _NO_SUCH_COMMAND.fullmatch(exc.format_message())
    if unknown is not None:
        return UsageError(f"{command} has no command {unknown.group(1)}", fix=fix)
    return UsageError(f"{command}: {_sentence(exc.format_message())}", fix=fix)
