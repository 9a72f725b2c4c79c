"""``--python`` means one thing in every command: a Python, named by a version or an interpreter.

The commands that take it are found in the app itself, not listed here: a new command with a
``--python`` of another kind fails these tests. Each is parsed into the request it hands on
(:func:`tfbuild.cli.options.request_of`), with tfbuild's own interpreter named both ways: by its
version and by its path. Both must name the same Python, as the command uses it: a version where a
wheel is for one, an interpreter where environments are made, both where pick matches and installs.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from tests.conftest import one_error_line, run_cli
from tests.pick.conftest import DIST, make_wheel
from tfbuild.cli import app, request_of
from tfbuild.core.errors import UsageError
from tfbuild.core.pythons import PythonChoice, query_interpreter

OWN_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
#: What a command needs beside --python to make its request (its required arguments).
REQUIRED: dict[str, tuple[str, ...]] = {"pick": ("dist",), "render": ("-o", "out")}


def commands_with_python() -> list[str]:
    """Every command (subcommands as 'recipes verify') that declares a --python option."""
    found: list[str] = []

    def walk(group: Any, prefix: tuple[str, ...]) -> None:  # typer's click: its own Group
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, (*prefix, name))
            elif any("--python" in p.opts for p in command.params):
                found.append(" ".join((*prefix, name)))

    walk(typer.main.get_command(app), ())
    return sorted(found)


def test_the_commands_that_take_python_are_those_expected() -> None:
    """Guards the list the other tests run over: it is the app's, and it holds every kind."""
    assert commands_with_python() == sorted(
        ["forecast", "matrix", "overlay", "pick", "plan", "render", "smoke", "tune", "wheel"]
    )


def python_of(request: Any) -> Any:
    """The request's field made from --python (the plan options' for plan, render, ...; the smoke
    options' for smoke; pick's request's for pick)."""
    if hasattr(request, "python"):
        return request.python
    group = next(g for g in ("smoke", "pick", "plan") if hasattr(request, g))
    return getattr(request, group).python


def as_version(value: Any) -> str:
    """The Python a request's --python value denotes, as X.Y, whatever the command keeps of it."""
    if isinstance(value, tuple):  # matrix: one per --python
        (value,) = value
    if isinstance(value, PythonChoice):
        if value.version is not None:
            return value.version
        assert value.executable is not None
        return query_interpreter(value.executable).version
    assert isinstance(value, str)
    return value if "/" not in value else query_interpreter(value).version


@pytest.mark.parametrize("command", commands_with_python())
def test_a_version_and_an_interpreter_name_the_same_python(command: str) -> None:
    argv = [*command.split(), *REQUIRED.get(command, ())]
    by_version = python_of(request_of([*argv, "--python", OWN_VERSION]))
    by_path = python_of(request_of([*argv, "--python", sys.executable]))
    assert as_version(by_version) == as_version(by_path) == OWN_VERSION
    # Where the command runs the Python, the version finds tfbuild's own interpreter.
    if isinstance(by_path, str) and "/" in by_path:
        assert by_version == by_path == sys.executable


@pytest.mark.parametrize("command", commands_with_python())
@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("abc", "names no Python"),
        ("2.7", "is not a Python version tfbuild knows"),
        ("/nonexistent/python", "is not an interpreter: it does not exist"),
        (__file__, "is not an interpreter: it is not an executable file"),
    ],
)
def test_a_bad_python_is_the_same_usage_error_in_every_command(
    command: str, value: str, words: str
) -> None:
    argv = [*command.split(), *REQUIRED.get(command, ()), "--python", value]
    with pytest.raises(UsageError) as caught:
        request_of(argv)
    assert caught.value.exit_code == 2
    assert f"--python {value!r} {words}" in caught.value.line()


def test_every_python_option_says_both_kinds_in_its_help() -> None:
    root: Any = typer.main.get_command(app)
    for name in commands_with_python():
        command = root.commands[name]
        (option,) = [p for p in command.params if "--python" in p.opts]
        assert option.metavar == "PYTHON", name
        text = (getattr(option, "help", None) or "").lower()
        assert "version" in text and "interpreter" in text, (name, text)


def test_pick_matches_and_installs_for_the_interpreter_named(tmp_path: Path) -> None:
    """The newcomer's ``pick dist --python .venv/bin/python``, through the real CLI: the
    interpreter's version is matched and named as the source."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    make_wheel(tmp_path, f"{DIST}-2.21.0+x86_64-{tag}-{tag}-linux_x86_64.whl")
    result = run_cli("pick", str(tmp_path), "--python", sys.executable, "--json")
    assert result.returncode == 0, result.stderr
    host = result.json()["host"]
    assert host["python"] == OWN_VERSION
    assert host["python_source"] == f"--python {sys.executable}"


def test_plan_takes_an_interpreter_for_the_wheels_python() -> None:
    """Through the real CLI: the plan is for the interpreter's version."""
    result = run_cli("plan", "--python", sys.executable, "--json", "--skip-disk-check")
    assert result.returncode == 0, result.stderr
    assert result.json()["python"] == OWN_VERSION


def test_a_bad_python_is_one_line_through_the_real_cli() -> None:
    one_error_line(
        run_cli("smoke", "x.whl", "--python", "abc"), 2, "--python 'abc' names no Python"
    )


def test_the_requests_declare_python_once() -> None:
    """Each command's --python field is made from the one declaration (core.pythons.PYTHON):
    the same flag, metavar and grammar; only its conversion to what the command needs differs."""
    from tfbuild.cli import _COMMANDS
    from tfbuild.core.options import declaration
    from tfbuild.core.pythons import PYTHON
    from tfbuild.plan.options import PlanOptions

    requests = {name: command.request for name, command, _ in _COMMANDS}
    for name in commands_with_python():
        fields = {f.name: f for f in dataclasses.fields(requests[name])}
        if "python" not in fields:  # plan, render, wheel, forecast: the plan options'
            fields = {f.name: f for f in dataclasses.fields(PlanOptions)}
        found = declaration(fields["python"])
        assert found is not None, name
        assert (found.flags, found.metavar) == (PYTHON.flags, PYTHON.metavar), name
        assert found.convert is not None, name  # every one goes through parse_python


def test_every_option_name_takes_one_kind_of_value_in_every_command() -> None:
    """One name, one meaning: an option that several commands take (--json, --cpuinfo, --tf,
    --budget, --dist, ...) has the same metavar, and is a switch or not, in every one of them."""
    kinds: dict[str, set[tuple[str | None, bool]]] = {}
    where: dict[str, list[str]] = {}

    def walk(group: Any, prefix: tuple[str, ...]) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, (*prefix, name))
            for param in command.params:
                for flag in (o for o in param.opts if o.startswith("-")):
                    kinds.setdefault(flag, set()).add((param.metavar, bool(param.is_flag)))
                    where.setdefault(flag, []).append(" ".join((*prefix, name)))

    walk(typer.main.get_command(app), ())
    shared = {flag for flag, commands in where.items() if len(commands) > 1}
    assert {"--json", "--cpuinfo", "--python", "--tf", "--budget", "--dist"} <= shared
    assert {flag: kinds[flag] for flag in shared if len(kinds[flag]) > 1} == {}
