"""The bazel rc files of a source tree: lines, continuations joined, and the imports they follow."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tfbuild.build.preflight.tree_files import TreeFiles

#: Where build.sh installs the rendered rc file, as TensorFlow's .bazelrc try-imports it.
RENDERED_RC = ".tf_configure.bazelrc"


@dataclass(frozen=True, kw_only=True)
class RcLine:
    """One line of an rc file (continuations joined): ``command[:config] args...``, and where."""

    file: str
    line: int
    command: str  # build, common, test, startup, import, try-import
    config: str | None
    args: tuple[str, ...]


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote: bazel's own reader is more lenient than shlex
        return text.split()


def rc_lines(text: str, name: str) -> list[RcLine]:
    """The lines of one rc file, continuations joined, comments dropped."""
    out: list[RcLine] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        joined, pending = pending + raw, ""
        tokens = _tokens(joined)
        if not tokens:
            continue
        command, _, config = tokens[0].partition(":")
        out.append(
            RcLine(
                file=name,
                line=start,
                command=command,
                config=config or None,
                args=tuple(tokens[1:]),
            )
        )
    return out


@dataclass(frozen=True, kw_only=True)
class RcFiles:
    """The tree's rc files as bazel reads them, from ``.bazelrc`` through its imports."""

    lines: tuple[RcLine, ...]  # the tree's rc files and, where imported, the rendered one
    rendered_import: RcLine | None  # the line that imports the rendered rc file
    missing_imports: tuple[RcLine, ...]  # ``import`` (not try-import) of a file the tree lacks


def read_rc(tree: TreeFiles, rendered: tuple[str, ...]) -> RcFiles | None:
    """``.bazelrc`` and what it imports inside the tree (``%workspace%/...``), the rendered rc file
    in place of ``.tf_configure.bazelrc``; None when the tree has no ``.bazelrc``."""
    top = tree.read(".bazelrc")
    if top is None:
        return None
    lines: list[RcLine] = []
    state: dict[str, Any] = {"import": None, "missing": []}
    seen: set[str] = set()

    def visit(name: str, text: str) -> None:
        seen.add(name)
        for rc in rc_lines(text, name):
            lines.append(rc)
            if rc.command not in ("import", "try-import") or not rc.args:
                continue
            target = rc.args[0]
            if not target.startswith("%workspace%/"):
                continue  # outside the tree (an absolute path): not the tree's business
            rel = target.removeprefix("%workspace%/")
            if rel == RENDERED_RC:
                if state["import"] is None:
                    state["import"] = rc
                    lines.extend(rc_lines("\n".join(rendered), f"(rendered) {RENDERED_RC}"))
                continue
            if rel in seen:
                continue
            imported = tree.read(rel)
            if imported is None:
                if rc.command == "import":
                    state["missing"].append(rc)
                continue
            visit(rel, imported)

    visit(".bazelrc", top)
    return RcFiles(
        lines=tuple(lines),
        rendered_import=state["import"],
        missing_imports=tuple(state["missing"]),
    )


def config_uses(args: Iterable[str]) -> list[str]:
    args = list(args)
    found = []
    for index, arg in enumerate(args):
        if arg.startswith("--config="):
            found.append(arg.removeprefix("--config="))
        elif arg == "--config" and index + 1 < len(args):
            found.append(args[index + 1])
    return found
