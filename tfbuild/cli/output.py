"""What the commands print in plain lines: JSON documents, progress lines, index's and base's results.

Light on purpose (no rich): ``--json`` runs import this, never :mod:`tfbuild.cli.display`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from tfbuild.core.controls import printable

if TYPE_CHECKING:
    from tfbuild.build.base_images import MadeImage
    from tfbuild.wheel.index import IndexResult


def print_json(data: dict[str, Any]) -> None:
    """One JSON document on standard output."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def progress(tag: str, *, quiet: bool) -> Callable[[str], None]:
    """A printer of progress lines on standard error (``[tag] line``), silent when ``quiet``
    (with --json)."""

    def say(line: str) -> None:
        if not quiet:
            sys.stderr.write(f"[{tag}] {printable(line)}\n")

    return say


def print_index(result: IndexResult) -> None:
    """``tfbuild index``: each wheel's sha256 and name (STAND-IN marked, an overlay marked with the
    TensorFlow it goes on), then what was written."""
    for entry in result.entries:
        standin = "  STAND-IN" if entry.standin else ""
        if entry.overlay is not None:
            standin += f"  OVERLAY on {entry.overlay.requirement}"
        _line(f"{entry.sha256}  {entry.name}{standin}")
    count = len(result.entries)
    wheels = f"{count} wheel" if count == 1 else f"{count} wheels"
    _line(f"wrote {result.index} and {result.sums}: {wheels}")


def print_base_image(result: MadeImage) -> None:
    """``tfbuild base``: the image, and whether it was made now or reused."""
    state = f"created in {result.seconds:.0f} s" if result.created else "already there, reused"
    _line(f"{result.tag} ({result.image_id[:19]}): {state}")


def _line(text: str) -> None:
    typer.echo(printable(text))
