"""The plan options of ``plan``, ``render`` and ``wheel``: typer options made from PlanOptions' fields.

Each option is declared once, on its field of :class:`~tfbuild.plan.options.PlanOptions` (see
:class:`~tfbuild.plan.options.Cli`); :func:`_plan_options` is a function made from those
declarations, which typer turns into click parameters, and which returns the PlanOptions (checked
when made). A command made with ``cls=PlanCommand`` takes them on top of its own options, and reads
them with :func:`plan_args`.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import typer
from typer.core import TyperCommand

from tfbuild.plan.options import Cli, PlanOptions, cli_declaration, command_line_name


def _typer_option(
    declaration: Cli, *, flags: tuple[str, ...] | None = None, help: str | None = None
) -> Any:
    """typer.Option of a declaration (or of one of its ``choices``: its flag and help)."""
    return typer.Option(
        *(flags or declaration.flags),
        metavar=declaration.metavar,
        min=declaration.min,
        show_default=declaration.show_default,
        help=help or declaration.help,
    )


def _parameters() -> list[inspect.Parameter]:
    """One keyword parameter per option, annotated for typer, in the fields' order."""
    types = get_type_hints(PlanOptions)
    parameters: list[inspect.Parameter] = []
    for field in dataclasses.fields(PlanOptions):
        declaration = cli_declaration(field)
        if declaration.choices:
            parameters.extend(
                inspect.Parameter(
                    command_line_name(field.name, flag),
                    inspect.Parameter.KEYWORD_ONLY,
                    default=False,
                    annotation=Annotated[
                        bool, _typer_option(declaration, flags=(flag,), help=help)
                    ],
                )
                for flag, _value, help in declaration.choices
            )
            continue
        cli_type = declaration.cli_type or types[field.name]
        default = None if declaration.convert else field.default
        parameters.append(
            inspect.Parameter(
                field.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[cli_type, _typer_option(declaration)],
            )
        )
    return parameters


def _plan_options(**values: Any) -> PlanOptions:
    """The plan options of plan, render and wheel, as one PlanOptions (which checks them)."""
    defaults = {p.name: p.default for p in _PARAMETERS}
    return PlanOptions.from_command_line({**defaults, **values})


_PARAMETERS = _parameters()
_plan_options.__signature__ = inspect.Signature(_PARAMETERS, return_annotation=PlanOptions)  # type: ignore[attr-defined]
_plan_options.__annotations__ = {p.name: p.annotation for p in _PARAMETERS}

#: ``--recipes-dir`` for the commands that take it alone (its declaration is PlanOptions').
RecipesDir = Annotated[
    list[Path] | None,
    _typer_option(
        cli_declaration(next(f for f in dataclasses.fields(PlanOptions) if f.name == "recipes_dir"))
    ),
]


class PlanCommand(TyperCommand):
    """A command that also takes the plan options; its callback reads them with plan_args(ctx).

    typer turns :func:`_plan_options` into click parameters once per command (with its own type
    conversions); this class appends them to the command's own and, on invocation, hands their
    values to ``_plan_options``, whose PlanOptions waits in the context for the command.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shared = typer.main.get_command(_PLAN_OPTIONS_APP)
        self._plan_params = [p.name for p in shared.params if p.name]
        self._make_args = shared.callback
        self.params.extend(shared.params)

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors its own click)
        values = {name: ctx.params.pop(name) for name in self._plan_params}
        assert self._make_args is not None
        ctx.meta[_PLAN_ARGS] = self._make_args(**values)
        return super().invoke(ctx)


_PLAN_ARGS = "tfbuild.plan_args"
#: typer makes the click parameters (and their type conversions) of a command it holds.
_PLAN_OPTIONS_APP = typer.Typer(add_completion=False)
_PLAN_OPTIONS_APP.command()(_plan_options)


def plan_args(ctx: typer.Context) -> PlanOptions:
    """The PlanOptions of a command made with ``cls=PlanCommand``."""
    args = ctx.meta[_PLAN_ARGS]
    assert isinstance(args, PlanOptions)
    return args
