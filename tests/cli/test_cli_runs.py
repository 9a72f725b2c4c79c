"""How the tests run the CLI: in this process (``run_cli``) unless a test needs a real one.

``tests/conftest.py::run_cli`` calls ``tfbuild.cli.main`` here, as a subprocess would run it (its
streams, environment, signal handlers, logging and warnings; see its docstring); a test that needs a
real process (a signal, a terminal, the console script, ``sys.modules`` after one command, another
user or interpreter) says so with ``run_cli_process``. A command run as a process took 125-320 ms
here, the same in-process 23-90 ms (a 2-core machine, load 3-4), so the tests that start the CLI as
a process are counted here, from the source (the AST), and held to :data:`MOST_PROCESS_TESTS`; and
the in-process runner is checked to leave no state behind and to give what the process gives.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, one_error_line, run_cli, run_cli_process

#: At most this many tests (each parametrized case one test) start the CLI as a subprocess.
MOST_PROCESS_TESTS = 60

TESTS = ROOT / "tests"

#: The runners that start the CLI as a process, found by name: the two of tests/ (found by their
#: code too), and tests/workflows' run_step, whose shell runs the console script ``tfbuild`` on PATH
#: (counted whether or not the step runs it: a test may count too much, never too little).
PROCESS_RUNNERS = frozenset({"run_cli_process", "run_cli_on_terminal", "run_step"})
#: run_cli runs in-process; it hands over to run_cli_process only when TFBUILD_TESTS_CLI=process
#: asks it to (to compare the two runners, or to time them), never in a run of the suite.
IN_PROCESS_RUNNERS = frozenset({"run_cli"})
#: What a shell line that runs the CLI holds, and a ``python -c`` script that runs it.
SHELL_LINE = "-m tfbuild"
SCRIPT_LINE = "tfbuild.cli import main"


def _starts_tfbuild(node: ast.AST) -> bool:
    """A list or tuple display holding ``"-m", "tfbuild"`` (an argv that runs the CLI), or a string
    holding ``-m tfbuild`` (a shell line) or importing ``tfbuild.cli.main`` (a ``-c`` script)."""
    if isinstance(node, ast.List | ast.Tuple):
        values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
        return any(a == "-m" and b == "tfbuild" for a, b in itertools.pairwise(values))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return SHELL_LINE in node.value or SCRIPT_LINE in node.value
    return False


def _runs_tfbuild(node: ast.AST) -> bool:
    """Whether the code of ``node`` (docstrings left out) starts the CLI as a process itself."""
    docstrings = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            docstrings.add(id(body[0].value))
    return any(_starts_tfbuild(n) for n in ast.walk(node) if id(n) not in docstrings)


@dataclass(frozen=True)
class Function:
    module: str  # tests.detect.test_detect
    qualname: str  # test_x, TestY.test_x
    node: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def key(self) -> tuple[str, str]:
        return (self.module, self.name)

    @property
    def fixture(self) -> bool:
        return any("fixture" in ast.unparse(d) for d in self.node.decorator_list)


@dataclass
class Module:
    name: str  # tests.detect.test_detect
    functions: list[Function]
    #: What a name used here means: a function of tests/ (its module and name).
    names: dict[str, tuple[str, str]]
    #: Its module-level assignments: NAME = value.
    constants: dict[str, ast.expr]
    #: Whether its text holds what starts the CLI at all (else no function of it is looked into).
    may_start: bool = True

    @property
    def package(self) -> str:
        return self.name.rpartition(".")[0]


def _modules() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted(TESTS.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        marks = ('"-m"', SHELL_LINE, SCRIPT_LINE)
        module = Module(name, [], {}, {}, may_start=any(mark in text for mark in marks))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions.append(Function(name, node.name, node))
                module.names[node.name] = (name, node.name)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        module.functions.append(Function(name, f"{node.name}.{item.name}", item))
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        module.constants[target.id] = node.value
                        module.names[target.id] = (name, target.id)
        for found in ast.walk(tree):
            if isinstance(found, ast.ImportFrom) and (found.module or "").startswith("tests"):
                for alias in found.names:
                    module.names[alias.asname or alias.name] = (found.module or "", alias.name)
        modules[name] = module
    return modules


def _visible_fixtures(module: Module, modules: dict[str, Module]) -> dict[str, tuple[str, str]]:
    """The fixtures a test of ``module`` may take: its own, then its conftest.py files' up to tests/."""
    visible: dict[str, tuple[str, str]] = {}
    package = module.package
    while package.startswith("tests"):
        conftest = modules.get(f"{package}.conftest")
        for function in conftest.functions if conftest else ():
            if function.fixture:
                visible.setdefault(function.name, function.key)
        package = package.rpartition(".")[0]
    for function in module.functions:
        if function.fixture:
            visible[function.name] = function.key
    return visible


def _uses(
    function: Function, module: Module, fixtures: dict[str, tuple[str, str]]
) -> set[tuple[str, str]]:
    """The functions of tests/ that ``function`` calls (or names) and the fixtures it takes."""
    names = {n.id for n in ast.walk(function.node) if isinstance(n, ast.Name)}
    used = {module.names[name] for name in names if name in module.names}
    arguments = function.node.args.args + function.node.args.kwonlyargs
    used |= {fixtures[a.arg] for a in arguments if a.arg in fixtures}
    return used - {function.key}


def process_tests() -> dict[str, int]:
    """Every test that starts the CLI as a process (itself, through a helper or a fixture, in any
    module of tests/): ``module::qualname`` and its number of cases."""
    modules = _modules()
    functions = [f for module in modules.values() for f in module.functions]
    # Functions, and module constants (a functools.partial of a runner, an argv), by (module, name).
    starters: set[tuple[str, str]] = set()
    uses: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for module in modules.values():
        fixtures = _visible_fixtures(module, modules)
        for function in module.functions:
            if function.name in PROCESS_RUNNERS or (
                module.may_start and _runs_tfbuild(function.node)
            ):
                starters.add(function.key)
            if function.name not in IN_PROCESS_RUNNERS:
                uses.setdefault(function.key, set()).update(_uses(function, module, fixtures))
        for name, value in module.constants.items():
            # This module's SHELL_LINE and SCRIPT_LINE are what is looked for, not a run.
            if module.may_start and module.name != __name__ and _runs_tfbuild(value):
                starters.add((module.name, name))
            names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            uses[(module.name, name)] = {module.names[n] for n in names if n in module.names}
    while more := {key for key, used in uses.items() if used & starters} - starters:
        starters |= more
    return {
        f"{f.module}::{f.qualname}": cases(f, modules)
        for f in functions
        if f.name.startswith("test_") and f.key in starters
    }


def _size(values: ast.expr, module: Module, modules: dict[str, Module]) -> int | None:
    """The number of values a parametrize mark lists, from the source: a list or tuple display, or
    a module constant that is one (here or imported from another module of tests/); None else."""
    if isinstance(values, ast.List | ast.Tuple):
        return len(values.elts)
    if isinstance(values, ast.Name):
        where, name = module.names.get(values.id, (module.name, values.id))
        constant = modules[where].constants.get(name) if where in modules else None
        if constant is not None:
            return _size(constant, modules[where], modules)
    return None


def cases(function: Function, modules: dict[str, Module]) -> int:
    """How many tests pytest makes of ``function``: the product of its parametrize marks' sizes,
    read from the source, or from the marks themselves when the source does not say."""
    module = modules[function.module]
    sizes = []
    for decorator in function.node.decorator_list:
        if not (
            isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("parametrize")
        ):
            continue
        given = [k.value for k in decorator.keywords if k.arg == "argvalues"] or decorator.args[1:2]
        size = _size(given[0], module, modules) if given else None
        if size is None:
            return _cases_imported(function)
        sizes.append(size)
    return math.prod(sizes)


def _cases_imported(function: Function) -> int:
    owner: object = importlib.import_module(function.module)
    for part in function.qualname.split("."):
        owner = getattr(owner, part)
    marks = [m for m in getattr(owner, "pytestmark", []) if m.name == "parametrize"]
    sizes = [len(list(m.kwargs.get("argvalues", m.args[1]))) for m in marks]
    return math.prod(sizes)


def test_at_most_60_tests_start_the_cli_as_a_process() -> None:
    found = process_tests()
    listed = "\n".join(f"{count:3} {name}" for name, count in sorted(found.items()))
    assert sum(found.values()) <= MOST_PROCESS_TESTS, listed
    # Each way of starting it is seen: run_cli_process, a terminal, an argv through a helper of
    # another module (parametrized twice), a shell line, a -c script, a workflow step's shell.
    assert {
        "tests.detect.test_cpuinfo::test_debug_shows_the_traceback": 1,
        "tests.cli.test_command_line::test_a_word_longer_than_the_terminal_is_never_broken": 1,
        "tests.docker.test_wheel::test_a_signal_stops_and_removes_the_build": 2,
        "tests.wheel.test_index_hostile::test_a_read_only_directory_is_one_line_and_keeps_the_pair": 1,
        "tests.detect.test_detect::test_json_mode_does_not_import_docker_jinja2_or_rich": 1,
        "tests.workflows.test_workflows::test_a_bad_dispatch_input_fails_the_plan_job": 1,
    }.items() <= found.items(), listed


#: What tfbuild may keep between calls in one process: caches of what is the same in every process
#: (templates parsed from the package, archspec's tables, pure arithmetic). A cache of anything read
#: from the environment or the machine would make one in-process run see another's: the runner
#: (tests/cli_process.py) would have to clear it, and it is added here only then.
SAME_IN_EVERY_PROCESS = {
    ("tfbuild/core/serial.py", "_field_types"),  # the dataclasses' own annotations
    ("tfbuild/core/serial.py", "_init_fields"),  # the dataclasses' own fields
    ("tfbuild/core/stats.py", "_signed_rank_counts"),  # arithmetic
    ("tfbuild/core/targets.py", "targets"),  # archspec's table, with tfbuild's additions
    ("tfbuild/detect/cpuinfo.py", "flags_read"),  # archspec's, and the guard features' table
    ("tfbuild/plan/render.py", "template_environment"),  # jinja2 over the package's templates
    ("tfbuild/wheel/labels.py", "_targets_by_label"),  # archspec's names
}
#: tfbuild's module state, which the runner sets as a new process has it and puts back after.
RESET_BY_THE_RUNNER = {
    ("tfbuild/cli/__init__.py", "_state"),
    ("tfbuild/cli/options.py", "_parsing"),
    ("tfbuild/core/cache.py", "_held"),
    ("tfbuild/core/stopping.py", "_state"),
}


def _kept_between_calls() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """tfbuild's cached functions (functools' caches, on functions and methods) and its mutable
    module state (a list, dict or set, or an instance of a class of the module)."""
    cached: set[tuple[str, str]] = set()
    state: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "tfbuild").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"), where)
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                "cache" in ast.unparse(d) and "cached_property" not in ast.unparse(d)
                for d in node.decorator_list
            ):
                cached.add((where, node.name))
        for node in tree.body:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            value = node.value
            mutable = isinstance(
                value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp
            ) or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and (
                    value.func.id in ("dict", "list", "set", "defaultdict")
                    or value.func.id in classes
                )
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:  # upper-case names are tables, dunder names the module's own
                name = target.id if isinstance(target, ast.Name) else "__"
                if mutable and not name.isupper() and not name.startswith("__"):
                    state.add((where, name))
    return cached, state


def test_tfbuild_keeps_between_calls_only_what_the_runner_knows() -> None:
    cached, state = _kept_between_calls()
    assert cached == SAME_IN_EVERY_PROCESS
    assert state == RESET_BY_THE_RUNNER


@pytest.fixture
def dist_of_one(tmp_path: Path) -> Path:
    """A dist/ with one wheel: ``tfbuild index`` publishes into it (held signals, a lock)."""
    from tests.wheels import make_wheel

    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, "demo-1.0-py3-none-any.whl")
    return dist


def _this_process() -> dict[str, object]:
    """What a run of the CLI here could change and must leave as it was."""
    from tfbuild import cli
    from tfbuild.cli import options
    from tfbuild.core import stopping

    def fd(number: int) -> tuple[int, int]:
        found = os.fstat(number)
        return (found.st_dev, found.st_ino)

    root = logging.getLogger()
    return {
        "environ": dict(os.environ),
        "cwd": Path.cwd(),
        "argv": list(sys.argv),
        "streams": (sys.stdin, sys.stdout, sys.stderr),
        "fds": (fd(0), fd(1), fd(2)),
        "handlers": {
            s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)
        },
        "mask": signal.pthread_sigmask(signal.SIG_BLOCK, ()),
        "timer": signal.getitimer(signal.ITIMER_REAL),
        "logging": (list(root.handlers), root.level, logging.root.manager.disable),
        "warnings": (list(warnings.filters), warnings.showwarning),
        "tempdir": tempfile.tempdir,
        "tfbuild": (dict(cli._state), list(options._parsing), stopping._state),
    }


def test_a_run_leaves_this_process_as_it_found_it(
    tmp_path: Path, dist_of_one: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs that succeed, refuse, publish under held signals and raise through --debug, with an
    environment of their own and another working directory: afterwards, this process is as it was."""
    monkeypatch.setenv("TFBUILD_DEBUG", "1")  # a developer's: never the command's
    before = _this_process()
    assert run_cli("index", str(dist_of_one), env={"TMPDIR": str(tmp_path)}).returncode == 0
    assert (dist_of_one / "index.html").is_file()
    assert _this_process() == before
    one_error_line(run_cli("plan", "--jobs", "abc", cwd=tmp_path), 2, "--jobs 'abc'")
    assert _this_process() == before
    raised = run_cli("--debug", "detect", "--cpuinfo", str(tmp_path / "nope"))
    assert raised.returncode == 1 and "InputError" in raised.stderr
    assert _this_process() == before


def test_the_command_sees_the_environment_it_is_given_and_no_other(tmp_path: Path) -> None:
    """$TFBUILD_RECIPES_DIR, set for one run only: that run also reads its recipes there, the next
    does not; nor does the next keep the first one's temporary directory ($TMPDIR)."""
    more = tmp_path / "recipes"
    more.mkdir()
    given = run_cli(
        "recipes", "--json", env={"TFBUILD_RECIPES_DIR": str(more), "TMPDIR": str(more)}
    )
    assert given.returncode == 0, given.stderr
    assert given.json()["dirs"][-1] == str(more)
    shipped = run_cli("recipes", "--json")
    assert shipped.returncode == 0, shipped.stderr
    assert shipped.json()["dirs"] == given.json()["dirs"][:-1]
    assert tempfile.gettempdir() != str(more)


def test_a_run_that_hangs_is_stopped_by_its_timeout_and_leaves_nothing(tmp_path: Path) -> None:
    """A page server that takes the connection and never answers: ``pick`` would wait for its own
    deadline (an hour here); the runner's hang guard stops it after two seconds, as the process
    runner's would, and this process is left as it was."""
    one_error_line(run_cli("pick", str(tmp_path)), 3)  # pick's modules imported before the guard
    with socket.create_server(("127.0.0.1", 0)) as server:  # connections wait in its backlog
        port = server.getsockname()[1]
        before = _this_process()
        with pytest.raises(subprocess.TimeoutExpired):
            run_cli("pick", f"http://127.0.0.1:{port}/simple/", "--timeout", "3600", timeout=2)
        assert _this_process() == before


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        (),  # the help on stderr, exit 2
        ("plan", "--jobs", "abc"),
        (
            "detect",
            "--cpuinfo",
            str(ROOT / "tests/fixtures/cpuinfo/linux-debian12-epyc-zen5-vm"),
            "--json",
        ),
    ],
    ids=["help", "bare", "refused", "detect-json"],
)
def test_in_process_a_run_gives_what_a_process_gives(args: tuple[str, ...]) -> None:
    """The same command line in a process of its own and here: the same exit code and the same
    bytes on stdout and stderr."""
    here, there = run_cli(*args), run_cli_process(*args)
    assert (here.returncode, here.stdout, here.stderr) == (
        there.returncode,
        there.stdout,
        there.stderr,
    )
    assert here.stdout or here.stderr
