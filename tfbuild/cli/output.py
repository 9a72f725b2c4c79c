"""What the commands print in plain lines: JSON documents, progress lines, index's and base's results.

Light on purpose (no rich): ``--json`` runs import this, never :mod:`tfbuild.cli.display`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import typer

from tfbuild.core.controls import printable

if TYPE_CHECKING:
    from tfbuild.build.base_images import MadeImage
    from tfbuild.wheel.index import IndexResult


def print_json(data: dict[str, Any]) -> None:
    """One JSON document on standard output."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def print_data(value: Any) -> None:
    """A result (a dataclass, or containers of them) as one JSON document on standard output."""
    from tfbuild.core import serial

    print_json(serial.to_data(value))


def progress(tag: str, *, quiet: bool) -> Callable[[str], None]:
    """A printer of progress lines on standard error (``[tag] line``), silent when ``quiet``
    (with --json). On a terminal each line is wrapped to its width, further lines four columns in
    (paths, hashes and quoted commands kept whole); piped, one record a line."""
    from tfbuild.core.text import terminal_width, wrap

    prefix = f"[{tag}] "

    def say(line: str) -> None:
        if quiet:
            return
        text = printable(line)
        width = terminal_width(sys.stderr)
        if width is None:
            sys.stderr.write(f"{prefix}{text}\n")
            return
        lines = wrap(text, width, first=len(prefix), rest=4) or [""]
        sys.stderr.write(prefix + "\n    ".join(lines) + "\n")

    return say


@contextlib.contextmanager
def progressing(tag: str, *, quiet: bool) -> Iterator[Callable[[str], None]]:
    """:func:`progress` that never leaves the user 10 s in silence: inside the block, a step that
    lasts repeats itself with the seconds it has taken (:class:`~tfbuild.core.heartbeat.Heartbeat`);
    silent with ``quiet``."""
    from tfbuild.core.heartbeat import Heartbeat

    say = progress(tag, quiet=quiet)
    if quiet:
        yield say
        return
    with Heartbeat(say) as beat:
        yield beat


def indented(text: str, width: int, *, first: int = 0, rest: int = 0) -> list[str]:
    """``text`` wrapped to ``width`` columns, its first line ``first`` columns in and the others
    ``rest``; no line for a blank text."""
    from tfbuild.core.text import wrap

    lines = wrap(text, width, first=first, rest=rest)
    return [" " * (rest if i else first) + line for i, line in enumerate(lines)]


def echo_hanging(lines: Sequence[tuple[str, int]]) -> None:
    """Each (text, indent) on standard output, wrapped to its terminal with the further lines
    ``indent`` columns in; every line whole when it is piped."""
    from tfbuild.core.text import hanging, terminal_width

    width = terminal_width(sys.stdout)
    typer.echo(
        printable("\n".join(r for t, indent in lines for r in hanging(t, width, indent=indent)))
    )


def print_index(result: IndexResult) -> None:
    """``tfbuild index``: each wheel's sha256 and name (STAND-IN marked, an overlay marked with the
    TensorFlow it goes on), then what was written."""
    for entry in result.entries:
        standin = "  STAND-IN" if entry.standin else ""
        if entry.overlay is not None:
            standin += f"  OVERLAY on {entry.overlay.requirement}"
        typer.echo(printable(f"{entry.sha256}  {entry.name}{standin}"))
    count = len(result.entries)
    wheels = f"{count} wheel" if count == 1 else f"{count} wheels"
    typer.echo(printable(f"wrote {result.index} and {result.sums}: {wheels}"))


def print_base_image(result: MadeImage) -> None:
    """``tfbuild base``: the image, and whether it was made now or reused."""
    state = f"created in {result.seconds:.0f} s" if result.created else "already there, reused"
    typer.echo(printable(f"{result.tag} ({result.image_id[:19]}): {state}"))
