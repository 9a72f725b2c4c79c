"""The command line itself, through the real CLI: ``tfbuild --help`` on an 80-column screen, the
mistakes typer catches said in tfbuild's words (one line, exit 2), and error lines wrapped to a
terminal (never inside a hash, a path or a command) but left whole when piped."""

from __future__ import annotations

from typing import Any

import pytest
from typer.main import get_group

from tests.conftest import one_error_line, run_cli
from tests.terminal import run_cli_on_terminal
from tfbuild.cli import app
from tfbuild.detect.cpu import LIST_TARGETS

#: Every command --help lists, in its order.
COMMANDS = list(get_group(app).commands)


def test_help_at_80_columns_cuts_no_summary() -> None:
    result = run_cli("--help", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    listed = lines[lines.index("Commands:") + 1 :]
    assert not [line for line in listed if "..." in line], listed  # click's cut
    # One line each, the name then its summary: none wrapped onto a second line.
    names = [line.split()[0] for line in listed if line.strip()]
    assert names == COMMANDS, listed
    for line in listed:
        _, summary = line.split(maxsplit=1)
        assert len(summary.split()) >= 5, line  # a summary, not a stub
        assert not summary.endswith("."), line  # summaries are phrases, alike


def _every_command() -> list[tuple[str, ...]]:
    """Every command's words, subcommands of a group included: ("recipes", "show")."""
    found: list[tuple[str, ...]] = []

    def walk(command: Any, words: tuple[str, ...]) -> None:
        found.append(words)
        for name, sub in getattr(command, "commands", {}).items():  # a group's (typer's click)
            walk(sub, (*words, name))

    walk(get_group(app), ())
    return found


@pytest.mark.parametrize("words", _every_command(), ids=lambda w: " ".join(w) or "tfbuild")
def test_every_help_fits_80_columns_uncut(words: tuple[str, ...]) -> None:
    result = run_cli(*words, "--help", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    if "Commands:" in lines:
        listed = lines[lines.index("Commands:") + 1 :]
        assert not [line for line in listed if line.rstrip().endswith("...")], listed


def test_bare_tfbuild_still_shows_the_help() -> None:
    result = run_cli()
    assert result.returncode == 2
    assert "Commands:" in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("render",), "tfbuild: error: tfbuild render needs -o DIR: where to write the context."),
        (
            ("tune", "--budget", "-5", "--installed"),
            "tfbuild: error: --budget -5 is below its minimum: it must be at least 1.",
        ),
        (
            ("forecast", "--budget", "0.5"),
            "tfbuild: error: --budget 0.5 is below its minimum: it must be at least 1.",
        ),
        (
            ("plan", "--jobs", "abc"),
            "tfbuild: error: --jobs 'abc' is not a whole number.",
        ),
        (
            ("smoke", "--min-margin", "2", "x.whl"),
            "tfbuild: error: --min-margin 2 is above its maximum: it must be at most 1.",
        ),
        (
            ("pick", ".", "--variant", "avx"),
            "tfbuild: error: invalid --variant: 'avx' is not one of 'cpu', 'mkl', 'cuda'.",
        ),
        (("plan", "--bogus"), "tfbuild: error: tfbuild plan has no option --bogus."),
        (("recipes", "show"), "tfbuild: error: tfbuild recipes show needs VERSION: TensorFlow"),
        (("detect", "--cpuinfo"), "tfbuild: error: --cpuinfo needs a value."),
        (("smoke", "a.whl", "b.whl"), "tfbuild: error: tfbuild smoke: got unexpected extra"),
        (("bogus",), "tfbuild: error: tfbuild has no command 'bogus'."),
    ],
)
def test_command_line_mistakes_are_one_line_in_tfbuilds_words(
    args: tuple[str, ...], expected: str
) -> None:
    result = run_cli(*args)
    line = one_error_line(result, 2)
    assert line.startswith(expected), line
    command = "tfbuild recipes show" if args[:2] == ("recipes", "show") else f"tfbuild {args[0]}"
    if args[0] == "bogus":
        command = "tfbuild"
    assert line.endswith(f"See {command} --help."), line  # where to read its usage
    for theirs in ("Input should be", "Value error", "Usage:", "Try '", "Invalid value"):
        assert theirs not in result.stderr, result.stderr


def test_an_error_line_is_wrapped_on_a_terminal_and_whole_in_a_pipe() -> None:
    """The refusal of an unknown --why-not is long (the close names, the portable levels, the
    command that lists every name). Piped: the one line scripts read. On an 80-column terminal:
    the same words in lines of at most 80 columns, further lines two columns in, and the command
    it quotes on one line, whole, to be copied."""
    args = ("detect", "--why-not", "zen9", "--no-gpu")
    piped = one_error_line(run_cli(*args), 2)
    assert len(piped) > 80
    shown = run_cli_on_terminal(*args, columns=80)
    assert shown.returncode == 2 and shown.stdout == ""
    lines = shown.stderr.splitlines()
    assert len(lines) > 1 and lines[0].startswith("tfbuild: error: unknown --why-not 'zen9'")
    assert all(len(line) <= 80 for line in lines), lines
    assert all(line.startswith("  ") and line[2] != " " for line in lines[1:]), lines
    assert " ".join(line.strip() for line in lines) == piped
    assert any(LIST_TARGETS in line for line in lines), lines


def test_a_word_longer_than_the_terminal_is_never_broken() -> None:
    """A path longer than the terminal is in the error whole, on a line of its own (the terminal
    folds it softly, so it copies as one)."""
    path = "/" + "/".join(["a-rather-long-directory-name"] * 5) + "/cpuinfo"
    piped = one_error_line(run_cli("detect", "--cpuinfo", path), 3)
    assert path in piped
    shown = run_cli_on_terminal("detect", "--cpuinfo", path, columns=60)
    lines = shown.stderr.splitlines()
    assert any(line.strip() == path or line.strip().startswith(path) for line in lines), lines
    assert " ".join(line.strip() for line in lines) == piped
    assert all(len(line) <= 60 for line in lines if path not in line), lines
