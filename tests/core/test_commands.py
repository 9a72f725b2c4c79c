"""The one runner (tfbuild.core.commands): real processes, its one error rule, isolated scripts, the
replay seam; and the tree's rule that nothing outside core starts a process."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import msgspec
import pytest

import tfbuild
from tfbuild.core import commands
from tfbuild.core.errors import EnvironmentProblem, SmokeFailed
from tfbuild.core.pythons import packages_of
from tfbuild.overlay.compile import LOADER
from tfbuild.overlay.package import PLUGINS

TREE = Path(tfbuild.__file__).resolve().parent


def python_call(code: str, **rest: object) -> commands.Command:
    return commands.Command(argv=(sys.executable, "-c", code), what="the step failed", **rest)  # type: ignore[arg-type]


# --- one error rule -----------------------------------------------------------------------------------


def test_a_missing_program_is_the_calls_error_naming_it() -> None:
    call = commands.Command(
        argv=("tfbuild-no-such-program", "x"),
        what="cannot ask",
        fix="Install it.",
        error=SmokeFailed,
    )
    with pytest.raises(SmokeFailed) as caught:
        commands.run(call)
    assert caught.value.line() == (
        "cannot ask: tfbuild-no-such-program: it cannot run: No such file or directory. Install it."
    )
    assert commands.attempt(call).returncode is None


def test_a_non_zero_exit_names_the_program_and_its_last_line() -> None:
    code = "import sys; print('out'); sys.stderr.write('first\\nthe last words\\n\\n'); sys.exit(3)"
    with pytest.raises(EnvironmentProblem) as caught:
        commands.run(python_call(code))
    name = Path(sys.executable).name
    assert caught.value.why == f"{name}: it exited with 3: the last words"
    assert caught.value.details == ("first", "the last words")


def test_a_call_that_outlives_its_limit_says_so_with_what_it_printed() -> None:
    call = python_call("import sys, time; print('started', flush=True); time.sleep(30)", timeout=1)
    finished = commands.attempt(call)
    assert finished.returncode is None and finished.stdout.strip() == "started"
    with pytest.raises(EnvironmentProblem, match="did not finish within 1 s"):
        commands.run(call)


def test_a_killed_process_names_its_signal() -> None:
    with pytest.raises(EnvironmentProblem, match="killed by SIGKILL"):
        commands.run(python_call("import os; os.kill(os.getpid(), 9)"))


def test_a_signal_is_named_and_an_unknown_number_said_as_one() -> None:
    assert commands.signal_name(4) == "SIGILL"
    assert commands.signal_name(99) == "signal 99"


class Answer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    n: int


def test_ask_decodes_the_last_line_strictly_or_fails_by_the_same_rule() -> None:
    assert commands.ask(python_call("print('noise'); print('{\"n\": 4}')"), Answer) == Answer(n=4)
    for code, why in (
        ('print(\'{"n": "4"}\')', "Expected `int`, got `str`"),
        ('print(\'{"n": 4, "m": 1}\')', "unknown field"),
        ("print('n=4')", "Expecting value"),
        ("pass", "it printed nothing"),
    ):
        with pytest.raises(EnvironmentProblem, match="its answer is not what tfbuild asked") as e:
            commands.ask(python_call(code), Answer)
        assert why.lower() in e.value.why.lower(), (code, e.value.why)


def test_lines_reach_the_caller_as_printed_and_the_last_are_kept() -> None:
    seen: list[str] = []
    code = "import sys\nfor i in range(50):\n    print(i, file=sys.stderr if i % 2 else sys.stdout)"
    finished = commands.attempt(python_call(code, on_line=seen.append))
    assert seen == [str(i) for i in range(50)]
    assert finished.ok and finished.stdout.splitlines() == seen[-commands.KEPT_LINES :]


def test_merged_output_keeps_both_streams_in_one() -> None:
    code = "import sys; print('a', flush=True); sys.stderr.write('b\\n')"
    finished = commands.run(python_call(code, merged=True))
    assert finished.stdout.split() == ["a", "b"] and finished.stderr == ""


# --- scripts in another interpreter run isolated --------------------------------------------------


def test_a_script_sees_only_the_paths_it_is_given(tmp_path: Path) -> None:
    script = tmp_path / "where.py"
    script.write_text(
        "import json, sys\nprint(json.dumps([sys.path, sys.argv, sys.flags.isolated]))\n"
    )
    (tmp_path / "given").mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "from-env")}
    argv = commands.in_python(sys.executable, script, "a", "b", paths=(str(tmp_path / "given"),))
    path, args, isolated = commands.ask(
        commands.Command(argv=argv, what="x", env=env, cwd=tmp_path),
        tuple[list[str], list[str], int],
    )
    assert isolated == 1 and args == [str(script), "a", "b"]
    assert path[0] == str(tmp_path / "given")
    # neither its own directory, nor the working directory, nor PYTHONPATH, nor tfbuild's tree
    assert not {str(tmp_path), "", str(tmp_path / "from-env")} & set(path)
    assert not any(p.startswith(str(TREE)) for p in path)
    assert commands.python_path(env) == (str(tmp_path / "from-env"),)


def test_a_command_is_named_by_its_script_its_module_or_its_program() -> None:
    assert commands.Command(argv=("/usr/bin/clang++", "x.cc", "-c"), what="x").program == "clang++"
    assert commands.Command(argv=("python3", "-m", "pip", "install"), what="x").program == (
        "python3 -m pip"
    )


def test_every_script_name_is_a_file_of_the_scripts_directory() -> None:
    with pytest.raises(FileNotFoundError):
        commands.script("no-such-script.py")
    assert commands.in_python("python3", "worker.py")[4] == str(commands.SCRIPTS / "worker.py")
    assert commands.Command(argv=commands.in_python("python3", "worker.py"), what="x").program == (
        "worker.py"
    )


def test_the_package_probe_finds_tensorflow_and_looks_for_the_overlays_loader(
    stock_python: str,
) -> None:
    found = packages_of(stock_python, "tensorflow-cpu", "no-such-distribution")
    assert found.tensorflow is not None and Path(found.tensorflow, "__init__.py").is_file()
    assert Path(found.tensorflow).parent == Path(found.purelib)
    assert (
        found.version("tensorflow-cpu") is not None
        and found.version("no-such-distribution") is None
    )
    assert found.overlays == ()
    # the probe looks where the overlay's wheel puts its loader
    source = (commands.SCRIPTS / "which_tf.py").read_text()
    assert f'Path("{PLUGINS}", "{LOADER}")' in source


# --- the replay seam ---------------------------------------------------------------------------------


def test_every_call_goes_through_the_runner_in_force() -> None:
    asked: list[commands.Command] = []

    def recorded(call: commands.Command) -> commands.Finished:
        asked.append(call)
        return commands.Finished(returncode=0, stdout='{"n": 7}\n')

    call = commands.Command(argv=("nvidia-smi", "-q"), what="x")
    with commands.replaying(recorded):
        assert commands.ask(call, Answer) == Answer(n=7)
        assert commands.attempt(call).stdout == '{"n": 7}\n'
    assert [c.argv for c in asked] == [("nvidia-smi", "-q")] * 2
    assert commands.attempt(call).returncode is None  # the real runner again: no such program here


# --- the tree's rule ---------------------------------------------------------------------------------


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_only_core_starts_processes_and_nothing_changes_sys_path() -> None:
    starting, changing = [], []
    for path in sorted(TREE.rglob("*.py")):
        relative = path.relative_to(TREE).as_posix()
        if relative.startswith("scripts/"):  # run in another interpreter or system
            continue
        if not relative.startswith("core/") and {"subprocess", "os.system"} & _imports(path):
            starting.append(relative)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                changing.append(relative)
                break
    assert not starting, f"start processes through tfbuild.core.commands: {starting}"
    assert not changing, f"sys.path is the interpreter's: {changing}"
