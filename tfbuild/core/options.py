"""Every command's options, declared once, as fields of frozen dataclasses.

A command's request is a dataclass; each field that is an option carries its command-line
declaration (:class:`Cli`) in its metadata. The command line (:mod:`tfbuild.cli.options`) turns
those fields into typer options, and the values a user gave back into the dataclass
(:func:`from_command_line`), which checks them when it is made. So adding an option takes the
field, with its declaration, and its use.

An option several commands take means one thing, and is declared once: a module-level
:class:`Cli` (:data:`JSON`, :data:`CPUINFO`, the ``--python`` of :mod:`tfbuild.core.pythons`) that
each command's field names; a :func:`group` field brings a whole request's (``plan``, ``render``,
``wheel`` and ``forecast`` each take :class:`~tfbuild.plan.options.PlanOptions`).

typer is not imported here: the stages that declare their requests (plan, smoke, pick) stay free of
the command line's libraries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from tfbuild.core.errors import UsageError

_OPTION = "tfbuild.option"
_GROUP = "tfbuild.group"
T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Cli:
    """One option's command-line declaration (typer.Option's arguments, without importing typer).

    ``flags``: the option names (``--x/--no-x`` for a switch); none for an ``argument``.
    ``choices``: instead of one option, one flag per value of the field (``--mkl`` ->
    Variant.mkl), at most one of them given. ``cli_type``/``convert``: where the command line
    reads another type than the field holds (``--cuda-capabilities 8.9,9.0`` -> ``("8.9",
    "9.0")``; ``--python`` -> what the command needs of that Python).
    """

    flags: tuple[str, ...] = ()
    help: str = ""
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    show_default: bool = True
    choices: tuple[tuple[str, Any, str], ...] = ()  # (flag, field value, help)
    cli_type: Any = None
    convert: Callable[[Any], Any] | None = None
    argument: bool = False  # a positional argument (its metavar names it)
    case_sensitive: bool = True

    def but(self, **changes: Any) -> Cli:
        """This declaration with one thing said for one command (its help, its metavar): the
        flags and the kind of value stay those of the option everywhere."""
        return dataclasses.replace(self, **changes)


def option(declaration: Cli, *, default: Any = dataclasses.MISSING, **field_args: Any) -> Any:
    """A dataclass field that is the option ``declaration`` (one declared once, shared)."""
    return dataclasses.field(default=default, metadata={_OPTION: declaration}, **field_args)


def declared(default: Any, *flags: str, **declaration: Any) -> Any:
    """A dataclass field that is an option declared in place: its default, its flags, then the
    rest of its :class:`Cli` (metavar, help, ...)."""
    return option(Cli(flags=flags, **declaration), default=default)


def group(factory: Callable[[], Any]) -> Any:
    """A dataclass field that brings every option of another request (its type's fields)."""
    return dataclasses.field(default_factory=factory, metadata={_GROUP: True})


def declaration(field: dataclasses.Field[Any]) -> Cli | None:
    """The command-line declaration of a field, None when it is not an option."""
    found = field.metadata.get(_OPTION)
    assert found is None or isinstance(found, Cli)
    return found


def _flag_name(flag: str) -> str:
    """The parameter of one flag of a ``choices`` field (``--mkl`` -> ``mkl``)."""
    return flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True, kw_only=True)
class Parameter:
    """One command-line parameter of a request: its name, its declaration, the type it is read as,
    its default (what an absent option gives), and for one flag of a ``choices`` field its own help."""

    name: str
    declaration: Cli
    type: Any
    default: Any
    choice_help: str | None = None


def parameters(request: type[Any]) -> Iterator[Parameter]:
    """The command-line parameters of a request type, in its fields' order (a group's in place)."""
    types = get_type_hints(request)
    for field in dataclasses.fields(request):
        if field.metadata.get(_GROUP):
            yield from parameters(types[field.name])
            continue
        found = declaration(field)
        if found is None:
            continue
        if found.choices:
            for flag, _value, help in found.choices:
                yield Parameter(
                    name=_flag_name(flag),
                    declaration=found.but(flags=(flag,), choices=()),
                    type=bool,
                    default=False,
                    choice_help=help,
                )
            continue
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            default: Any = dataclasses.MISSING  # required: an argument the user must give
        elif found.convert is not None:
            default = None  # not given: the field's own default, unconverted
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = field.default
        yield Parameter(
            name=field.name,
            declaration=found,
            type=found.cli_type or _command_line_type(types[field.name]),
            default=default,
        )


def _command_line_type(field_type: Any) -> Any:
    """What typer reads for a field: a repeated option (a list) for a tuple field."""
    if get_origin(field_type) is tuple:
        return list[get_args(field_type)[0]] | None  # type: ignore[misc]
    return field_type


def from_command_line(request: type[T], values: Mapping[str, Any]) -> T:
    """The request made from the command line's values, one per parameter (by the names of
    :func:`parameters`; a ``choices`` field's flags each give a bool): converted where a field
    says how, left to the field's default where the user gave nothing, checked when made."""
    types = get_type_hints(request)
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(request):  # type: ignore[arg-type]  # T: a dataclass
        if field.metadata.get(_GROUP):
            fields[field.name] = from_command_line(types[field.name], values)
            continue
        found = declaration(field)
        if found is None:
            continue
        if found.choices:
            given = [
                (flag, value) for flag, value, _ in found.choices if values.get(_flag_name(flag))
            ]
            if len(given) > 1:
                raise UsageError(
                    " and ".join(flag for flag, _ in given) + " together", fix="Choose one of them."
                )
            if given:
                fields[field.name] = given[0][1]
            continue
        value = values.get(field.name)
        if value is None or value == []:
            continue  # not given (typer's None): the field's own default
        if found.convert is not None:
            value = found.convert(value)
        elif isinstance(value, list):
            value = tuple(value)
        fields[field.name] = value
    return request(**fields)


# --- the options several commands take: one declaration each --------------------------------------

#: ``--json``: the command's result as JSON on standard output, nothing else there (progress and
#: errors stay on standard error); docs/schemas.md says each command's.
JSON = Cli(
    flags=("--json",),
    help="Print the result as JSON (schemas: docs/schemas.md).",
    show_default=False,
)


CPUINFO = Cli(
    flags=("--cpuinfo",),
    metavar="FILE",
    help="Another machine, from its saved /proc/cpuinfo, instead of this one.",
    show_default=False,
)
CPUINFOS = CPUINFO.but(
    help="Another machine, from its saved /proc/cpuinfo, instead of this one. Repeat for "
    "several: their common target."
)
TF = Cli(
    flags=("--tf",),
    metavar="VERSION",
    help="TensorFlow release: 2.21 or 2.21.0 (default: the newest recipe).",
    show_default=False,
)
TARGET = Cli(
    flags=("--target",),
    metavar="NAME",
    help="A portable target, e.g. x86_64_v3 (default: this machine, or --cpuinfo's).",
    show_default=False,
)
#: ``--budget SECONDS``: the time a measurement may take (undecided comparisons get more rounds
#: while it lasts); each command has its default.
BUDGET = Cli(
    flags=("--budget",),
    metavar="SECONDS",
    min=1.0,
    help="Time for the measuring: what is still undecided is timed again while it lasts.",
)
STOCK = Cli(
    flags=("--stock",),
    metavar="SPEC",
    help="The stock wheel: a .whl or a requirement (default: the package index's tensorflow-cpu "
    "of the release).",
    show_default=False,
)
HOST_COMPILER = Cli(
    flags=("--compiler",),
    metavar="COMPILER",
    help="Compile on this host with this C++ compiler (clang++-16, g++). Default: the recipe's "
    "clang in tfbuild's overlay toolchain image (Docker, and the base images tfbuild base makes), "
    "against Debian 11's C library: the wheel loads on glibc 2.31+.",
    show_default=False,
)
VERBOSE = Cli(flags=("-v", "--verbose"), help="Show every line of what runs, not only progress.")
DIST = Cli(flags=("--dist",), metavar="DIR", help="Where the wheel, its receipt and logs go.")
RECIPES_DIR = Cli(
    flags=("--recipes-dir",),
    metavar="DIR",
    help="Extra recipes that add to or override the shipped ones (also $TFBUILD_RECIPES_DIR).",
    show_default=False,
)
#: The wheel a command measures (smoke, tune): a file or a requirement.
WHEEL = Cli(
    argument=True,
    metavar="WHEEL",
    help="A .whl file, or a requirement such as tensorflow-cpu==2.21.0.",
    show_default=False,
)
INSTALLED = Cli(
    flags=("--installed",),
    help="The TensorFlow installed in the --python interpreter, instead of a wheel.",
)
