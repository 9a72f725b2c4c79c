"""``--python``, in every command: a Python, named by its version (``3.12``) or by an interpreter
(``.venv/bin/python``, ``python3.12``).

One kind of value, with one grammar (:func:`parse_python`); each command takes of it what it needs:
a wheel a version (:func:`python_version`), a test environment an interpreter
(:func:`python_executable`), ``pick`` both (the version to match, the interpreter to install into).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core import commands
from tfbuild.core.errors import EnvironmentProblem, TfbuildError, UsageError
from tfbuild.core.options import Cli

#: A Python version as a wheel's tag takes it: 3.Y (cp312 is 3.12).
VERSION = re.compile(r"3\.[0-9]{1,2}")
#: What looks like a version but is not one tfbuild builds for: 2.7, 3, 3.12.1, 4.0.
_VERSION_LIKE = re.compile(r"[0-9]+(\.[0-9]+)*")
_FIX = "Pass a version such as 3.12, or an interpreter: its path (.venv/bin/python) or name (python3.12)."


@dataclass(frozen=True, kw_only=True)
class PythonChoice:
    """A parsed ``--python``: a version, or an interpreter (its path, found on PATH for a name)."""

    text: str  # as given, for messages
    version: str | None = None  # "3.12" when given as a version
    executable: str | None = None  # the interpreter's path when given as one


@dataclass(frozen=True, kw_only=True)
class Interpreter:
    """An interpreter, as it says of itself: its implementation's tag prefix and its version."""

    executable: str
    implementation: str  # "cp", "pp" (the wheel tag's prefix)
    version: str  # "3.12"


def parse_python(text: str) -> PythonChoice:
    """The Python ``--python TEXT`` names; a UsageError (exit 2) when it names none."""
    given = text.strip()
    if VERSION.fullmatch(given):
        return PythonChoice(text=text, version=given)
    if _VERSION_LIKE.fullmatch(given):
        raise UsageError(
            f"--python {text!r} is not a Python version tfbuild knows",
            why="a version is 3.Y, as a wheel's tag has it (3.12 for cp312)",
            fix=_FIX,
        )
    if os.sep in given or given.startswith("."):
        path = Path(given).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            why = "it does not exist" if not path.exists() else "it is not an executable file"
            raise UsageError(f"--python {text!r} is not an interpreter", why=why, fix=_FIX)
        return PythonChoice(text=text, executable=str(path))
    found = shutil.which(given) if given else None
    if found is None:
        raise UsageError(
            f"--python {text!r} names no Python",
            why=f"it is not a version (3.Y), and no {given!r} is on PATH",
            fix=_FIX,
        )
    return PythonChoice(text=text, executable=found)


_ASK = "import sys; print(sys.implementation.name, sys.version_info[0], sys.version_info[1])"


def query_interpreter(executable: str, *, option: str = "--python") -> Interpreter:
    """What an interpreter says it is, asked in a subprocess (argv, no shell; a minute at most);
    its answer decoded strictly. A UsageError naming ``option`` when it is not a Python."""
    call = commands.Command(
        argv=(executable, "-I", "-c", _ASK),
        what=f"{option} {executable} is not a Python interpreter",
        fix=_FIX,
        error=UsageError,
        timeout=60,
    )
    done = commands.run(call)
    parts = done.stdout.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
        raise commands.failure(call, done, "it printed no version")
    implementation = {"cpython": "cp", "pypy": "pp"}.get(parts[0], parts[0])
    return Interpreter(
        executable=executable, implementation=implementation, version=f"{parts[1]}.{parts[2]}"
    )


#: A distribution's version as tfbuild passes it on (PEP 440 and local labels; no spaces, no shell).
_DIST_VERSION = re.compile(r"[0-9A-Za-z.+!_-]{1,64}")


@dataclass(frozen=True, kw_only=True)
class Packages:
    """Where an interpreter's packages are, as it says (``tfbuild/scripts/which_tf.py``): found,
    nothing imported."""

    tensorflow: str | None  # the directory of the tensorflow package it would import
    purelib: str
    overlays: tuple[str, ...]  # the directories of its path that hold a tfbuild overlay's loader
    versions: dict[str, str | None]  # each distribution asked about: its version, None if absent

    def version(self, distribution: str) -> str | None:
        found = self.versions.get(distribution)
        return found if found is not None and _DIST_VERSION.fullmatch(found) else None


def packages_of(
    python: str,
    *distributions: str,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
    fix: str = "Name a Python interpreter with --python PATH.",
    error: type[TfbuildError] = EnvironmentProblem,
) -> Packages:
    """Ask ``python`` (in ``env``, default this process's environment: its PYTHONPATH and user site
    directory count, as when the user runs it) where its packages are, and the versions of
    ``distributions``: the one probe of "which TensorFlow is in this interpreter"."""
    call = commands.Command(
        argv=commands.in_python(
            python,
            "which_tf.py",
            *distributions,
            paths=commands.python_path(env),
            user_site=True,
        ),
        what=what or f"cannot ask {python} where its packages are",
        fix=fix,
        error=error,
        env=env,
        timeout=60,
    )
    return commands.ask(call, Packages)


def python_version(text: str) -> str:
    """``X.Y`` of ``--python TEXT``: the version given, or the interpreter's own."""
    choice = parse_python(text)
    if choice.version is not None:
        return choice.version
    assert choice.executable is not None
    return query_interpreter(choice.executable).version


def python_executable(text: str) -> str:
    """The interpreter of ``--python TEXT``: the one named, or one of the version given (tfbuild's
    own when it is that version, else ``pythonX.Y`` on PATH); a UsageError when there is none."""
    choice = parse_python(text)
    if choice.executable is not None:
        return choice.executable
    version, own = choice.version, f"{sys.version_info[0]}.{sys.version_info[1]}"
    found = sys.executable if version == own else shutil.which(f"python{version}")
    if found is None:
        raise UsageError(
            f"--python {text}: no Python {choice.version} here",
            why=f"tfbuild runs on {own} and no python{choice.version} is on PATH",
            fix=f"Install Python {choice.version}, or pass the path of an interpreter.",
        )
    return found


#: ``--python``, as every command declares it. Each command's field converts it to what that
#: command needs (:func:`python_version` or :func:`python_executable`), and says so in its help.
PYTHON = Cli(
    flags=("--python",),
    metavar="PYTHON",
    show_default=False,
    cli_type=str | None,
)
#: ``--python`` where a command runs TensorFlow (smoke, tune, overlay): the interpreter whose
#: environments it makes, or whose TensorFlow ``--installed`` takes.
PYTHON_INTERPRETER = PYTHON.but(
    help="The Python whose environments are made (--installed: whose TensorFlow is taken): an "
    "interpreter, or a version found on PATH (default: tfbuild's own).",
    convert=python_executable,
)
