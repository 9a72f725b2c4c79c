"""The bazel rc files of a source tree: lines, continuations joined, and the imports they follow."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Iterator, Sequence
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
    #: Imports bazel would stop on, or that leave the tree, with why: a loop, a file outside the
    #: tree (an absolute path, or ``%workspace%/..``), an import chain deeper than MAX_IMPORT_DEPTH.
    refused_imports: tuple[tuple[RcLine, str], ...] = ()


#: How deep rc files may import one another: TensorFlow's go two levels; deeper is refused, never a
#: RecursionError.
MAX_IMPORT_DEPTH = 32


def read_rc(tree: TreeFiles, rendered: tuple[str, ...]) -> RcFiles | None:
    """``.bazelrc`` and what it imports inside the tree (``%workspace%/...``), the rendered rc file
    in place of ``.tf_configure.bazelrc``; None when the tree has no ``.bazelrc``.

    Each file is read once, by its normalised path (600 spellings of one file are one file). An
    import loop (bazel: "Import loop detected"), an import of a file outside the tree and a chain
    deeper than :data:`MAX_IMPORT_DEPTH` are not followed but kept in ``refused_imports``."""
    top = tree.read(".bazelrc")
    if top is None:
        return None
    lines: list[RcLine] = []
    state: dict[str, Any] = {"import": None, "missing": [], "refused": []}
    seen: set[str] = set()

    def visit(name: str, text: str, chain: tuple[str, ...]) -> None:
        seen.add(name)
        for rc in rc_lines(text, name):
            lines.append(rc)
            if rc.command not in ("import", "try-import") or not rc.args:
                continue
            target = rc.args[0]
            rel = posixpath.normpath(target.removeprefix("%workspace%/"))
            if not target.startswith("%workspace%/") or rel == ".." or rel.startswith(("../", "/")):
                state["refused"].append((rc, "it names a file outside the source tree"))
                continue
            if rel == RENDERED_RC:
                if state["import"] is None:
                    state["import"] = rc
                    lines.extend(rc_lines("\n".join(rendered), f"(rendered) {RENDERED_RC}"))
                continue
            if rel in (*chain, name):
                loop = " -> ".join((*chain, name, rel))
                state["refused"].append((rc, f"it closes an import loop ({loop})"))
                continue
            if rel in seen:
                continue
            if len(chain) + 1 >= MAX_IMPORT_DEPTH:
                state["refused"].append(
                    (rc, f"it imports more than {MAX_IMPORT_DEPTH} rc files deep")
                )
                continue
            imported = tree.read(rel)
            if imported is None:
                if rc.command == "import":
                    state["missing"].append(rc)
                continue
            visit(rel, imported, (*chain, name))

    visit(".bazelrc", top, ())
    return RcFiles(
        lines=tuple(lines),
        rendered_import=state["import"],
        missing_imports=tuple(state["missing"]),
        refused_imports=tuple(state["refused"]),
    )


def _values(args: Sequence[str], flag: str) -> Iterator[tuple[int, str]]:
    """Each value ``args`` give ``flag`` (``--flag=V`` or ``--flag V``), with the flag's index."""
    for index, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            yield index, arg.removeprefix(f"{flag}=")
        elif arg == flag and index + 1 < len(args):
            yield index, args[index + 1]


def config_uses(args: Iterable[str]) -> list[str]:
    return [config for _, config in _values(list(args), "--config")]


#: The configs bazel applies on its own on a Linux host with ``--enable_platform_specific_config``
#: (bazel's ConfigExpander: ``common:linux`` and ``build:linux``, "equivalent to --config=linux").
PLATFORM_CONFIG = "linux"
_PLATFORM_FLAG = "enable_platform_specific_config"
_TRUE = ("", "=true", "=1", "=yes")
_FALSE = ("=false", "=0", "=no")


def platform_config_switch(args: Iterable[str]) -> bool | None:
    """What ``args`` last say of ``--enable_platform_specific_config`` (None: nothing)."""
    said: bool | None = None
    for arg in args:
        if arg.startswith(f"--{_PLATFORM_FLAG}"):
            rest = arg.removeprefix(f"--{_PLATFORM_FLAG}")
            said = True if rest in _TRUE else False if rest in _FALSE else said
        elif arg == f"--no{_PLATFORM_FLAG}":
            said = False
    return said


def config_definitions(lines: Iterable[RcLine]) -> dict[str, list[RcLine]]:
    """``config -> its common:NAME lines, then its build:NAME lines`` (bazel's order)."""
    found: dict[str, list[RcLine]] = {}
    for command in ("common", "build"):
        for rc in lines:
            if rc.command == command and rc.config:
                found.setdefault(rc.config, []).append(rc)
    return found


def expand(lines: Iterable[RcLine], configs: Iterable[str]) -> list[tuple[str, RcLine | None]]:
    """The options ``bazel build --config=C...`` reads, each with the rc line it comes from (None
    for the command line), in the order bazel applies them, so that the last value of an option
    is the one that holds.

    Bazel reads every ``common`` line, then every ``build`` line, in the order the rc files are
    read (imports in place); a ``--config=X`` is followed in place by X's ``common:X`` and then
    ``build:X`` lines; the command line's configs come after every rc line; with
    ``--enable_platform_specific_config`` (its last value true) and a ``linux`` config, that
    config's lines stand at the place of the flag's last mention (bazel's ConfigExpander). An
    undefined config, or one that names itself again, adds nothing here: the configs check
    reports the first, and bazel stops on both."""
    lines = list(lines)
    definitions = config_definitions(lines)

    def follow(name: str, chain: tuple[str, ...]) -> list[tuple[str, RcLine | None]]:
        out: list[tuple[str, RcLine | None]] = []
        for definition in definitions.get(name, ()):
            out += config_args(definition.args, definition, (*chain, name))
        return out

    def config_args(
        args: Iterable[str], origin: RcLine | None, chain: tuple[str, ...]
    ) -> list[tuple[str, RcLine | None]]:
        out: list[tuple[str, RcLine | None]] = []
        args = list(args)
        for index, arg in enumerate(args):
            out.append((arg, origin))
            named = config_uses(args[index : index + 2])[:1] if arg.startswith("--config") else []
            for config in named:
                if config not in chain:
                    out += follow(config, chain)
        return out

    applied: list[tuple[str, RcLine | None]] = []
    for command in ("common", "build"):
        for rc in lines:
            if rc.command == command and rc.config is None:
                applied += config_args(rc.args, rc, ())
    for config in configs:
        applied.append((f"--config={config}", None))
        applied += follow(config, ())
    if platform_config_switch(arg for arg, _ in applied) and PLATFORM_CONFIG in definitions:
        last = max(i for i, (arg, _) in enumerate(applied) if arg.startswith(f"--{_PLATFORM_FLAG}"))
        applied[last + 1 : last + 1] = follow(PLATFORM_CONFIG, ())
    return applied


def repo_env(applied: Iterable[tuple[str, RcLine | None]], name: str) -> tuple[str, RcLine | None]:
    """The value ``--repo_env`` last gives ``name`` in ``applied`` (:func:`expand`), and the rc line
    that gives it; ``("", None)`` when no option sets it."""
    found: tuple[str, RcLine | None] = ("", None)
    applied = list(applied)
    for index, setting in _values([arg for arg, _ in applied], "--repo_env"):
        key, _, value = setting.partition("=")
        if key == name:
            found = (value, applied[index][1])
    return found
