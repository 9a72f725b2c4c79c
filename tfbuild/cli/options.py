"""Typer commands made from requests: each option declared once, on its request's field.

:func:`takes` turns a function of one request (a frozen dataclass whose fields carry their
declarations, :mod:`tfbuild.core.options`) into the function typer reads: one keyword parameter
per option, annotated with its typer.Option (or typer.Argument), whose call makes the request
(checked when made) and hands it on. With :func:`parsing`, :func:`tfbuild.cli.request_of` gets
the request a command line makes, and nothing runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

import typer

from tfbuild.core.options import Parameter, from_command_line, parameters

R = TypeVar("R")


def _typer_parameter(parameter: Parameter) -> Any:
    declaration = parameter.declaration
    if declaration.argument:
        return typer.Argument(
            metavar=declaration.metavar,
            help=declaration.help,
            show_default=declaration.show_default,
        )
    return typer.Option(
        *declaration.flags,
        metavar=declaration.metavar,
        min=declaration.min,
        max=declaration.max,
        show_default=declaration.show_default,
        case_sensitive=declaration.case_sensitive,
        help=parameter.choice_help or declaration.help,
    )


#: While request_of parses, a list: the command makes its request, keeps it there and does
#: nothing more.
_parsing: list[list[Any]] = []


@contextlib.contextmanager
def parsing() -> Iterator[list[Any]]:
    """While in it, a command makes its request, appends it to the list given, and runs nothing."""
    made: list[Any] = []
    _parsing.append(made)
    try:
        yield made
    finally:
        _parsing.pop()


def takes(
    request: type[R], *, context: bool = False
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The decorator of a command that takes ``request``: typer sees one option per field.

    ``context``: the command also gets typer's Context, first (a group's callback asks it
    whether a subcommand follows).
    """

    def decorate(run: Callable[..., None]) -> Callable[..., None]:
        ctx = inspect.Parameter(
            "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context
        )
        made = [ctx] if context else []
        for parameter in parameters(request):  # one keyword parameter per option, for typer
            if any(p.name == parameter.name for p in made):  # a group's field named twice
                raise TypeError(f"{request.__name__}: two options named {parameter.name}")
            default = parameter.default
            made.append(
                inspect.Parameter(
                    parameter.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=inspect.Parameter.empty if default is dataclasses.MISSING else default,
                    annotation=Annotated[parameter.type, _typer_parameter(parameter)],
                )
            )

        @functools.wraps(run)
        def command(**values: Any) -> None:
            leading = [values.pop("ctx")] if context else []
            made_request = from_command_line(request, values)
            if _parsing:
                _parsing[-1].append(made_request)
                return
            run(*leading, made_request)

        command.__signature__ = inspect.Signature(made)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in made}
        del command.__wrapped__  # typer must read the signature made here, not run's
        command.request = request  # type: ignore[attr-defined]
        return command

    return decorate
