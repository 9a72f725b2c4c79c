"""A source tree's files as preflight reads them: each once, bounded, never waiting on a FIFO."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tfbuild.core.errors import InputError
from tfbuild.core.files import read_input

#: The most of one tree file preflight reads: TensorFlow's largest (WORKSPACE, a BUILD file, a
#: CUDA version table) are tens of kB.
MAX_TREE_FILE = 4 * 2**20


class TreeFiles:
    """The tree's files, read once each (text, or None when absent).

    Read by :func:`read_input`: a file that is a FIFO, a device (or a link to one), larger than
    :data:`MAX_TREE_FILE` or unreadable is one :class:`InputError` line naming the tree's file (exit
    3), never a hang or a MemoryError; bazel could not read it either."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._texts: dict[str, str | None] = {}

    def read(self, rel: str) -> str | None:
        if rel not in self._texts:
            path = self.root / rel
            try:
                raw = read_input(
                    path,
                    limit=MAX_TREE_FILE,
                    what=f"the source tree's {rel}",
                    fix=f"Make {rel} a regular file of the tree (as in a TensorFlow checkout), "
                    "or remove it.",
                )
            except FileNotFoundError:
                raw = None
            except InputError:
                if os.path.lexists(path):
                    raise
                raw = None  # absent: a file stands where a directory of its path would be
            self._texts[rel] = None if raw is None else raw.decode("utf-8", errors="replace")
        return self._texts[rel]

    def exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()


def line_of(text: str, pattern: re.Pattern[str]) -> int | None:
    """The number of the first line of ``text`` that ``pattern`` matches (None: no line)."""
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.search(line):
            return number
    return None
