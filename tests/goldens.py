"""Golden files: what a test made, compared with the file that holds what it must make.

``TFBUILD_UPDATE_GOLDEN=1`` writes the files instead (then read the diff before committing);
``make golden`` does that for every golden test, reached by ``-k "golden or schema"``: a test that
compares with a golden file has one of those words in its name or its module's.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import ROOT

#: Where most golden files live: ``tests/golden/<stage>/``.
GOLDEN_DIR = ROOT / "tests" / "golden"
#: The variable that makes every golden test write its file instead of comparing with it.
UPDATE_VARIABLE = "TFBUILD_UPDATE_GOLDEN"
#: How many lines of the difference a failure shows.
SHOWN_LINES = 40


def updating() -> bool:
    """Whether this run writes the golden files (``TFBUILD_UPDATE_GOLDEN=1``)."""
    return os.environ.get(UPDATE_VARIABLE) == "1"


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _regenerate() -> str:
    """The command that writes the golden files again: this test's, or every one."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    alone = f"{UPDATE_VARIABLE}=1 pytest '{test}'" if test else f"{UPDATE_VARIABLE}=1 pytest"
    return f"`{alone}` (or `make golden`)"


def json_text(data: object) -> str:
    """``data`` as a ``--json`` option prints it (``cli.output``): indented by 2, keys in order."""
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def compare_or_write(path: Path, text: str) -> None:
    """``text`` is the golden file ``path`` byte for byte (read and written as UTF-8); with
    ``TFBUILD_UPDATE_GOLDEN=1`` it is written there first. A difference fails with the first lines
    of a unified diff and the command that regenerates the file."""
    __tracebackhide__ = True
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _compare(path, text)


def compare_or_write_files(directory: Path, files: Mapping[str, str]) -> None:
    """``files`` (name -> text) are exactly the golden files in ``directory``, each byte for byte;
    with ``TFBUILD_UPDATE_GOLDEN=1`` the directory is made again from them first (a file starting
    with ``#!`` executable)."""
    __tracebackhide__ = True
    if updating():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
            if text.startswith("#!"):
                (directory / name).chmod(0o755)
    found = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    if found != sorted(files):
        raise AssertionError(
            f"{_shown(directory)} holds {found}, the test made {sorted(files)}; if the change is "
            f"intended, write them again with {_regenerate()} and review the diff"
        )
    for name, text in files.items():
        _compare(directory / name, text)


def _compare(path: Path, text: str) -> None:
    __tracebackhide__ = True  # pytest shows the caller's line, not these
    shown = _shown(path)
    if not path.is_file():
        raise AssertionError(f"no golden file {shown}; write it with {_regenerate()}, then read it")
    expected = path.read_text(encoding="utf-8")
    if text == expected:
        return
    diff = list(
        difflib.unified_diff(
            expected.splitlines(),
            text.splitlines(),
            f"{shown} (golden)",
            f"{shown} (made now)",
            lineterm="",
        )
    )
    if not diff:  # the same lines: a line ending or the final newline differs
        diff = [f"golden: {expected[-40:]!r}", f"made now: {text[-40:]!r}"]
    more = len(diff) - SHOWN_LINES
    lines = diff[:SHOWN_LINES] + ([f"... {more} more lines"] if more > 0 else [])
    raise AssertionError(
        f"{shown} differs from the golden file; if the change is intended, write it again with "
        f"{_regenerate()} and review the diff\n" + "\n".join(lines)
    )
