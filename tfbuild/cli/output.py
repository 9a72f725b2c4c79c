"""What the commands print beside the human displays: JSON documents and progress lines.

Light on purpose (no rich): ``--json`` runs import this, never :mod:`tfbuild.cli.display`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from tfbuild.core.errors import printable


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
