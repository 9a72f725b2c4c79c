"""Preflight: does a TensorFlow source tree fit the plan? Seconds of file reads, before hours of build.

A plan comes from a recipe, and a recipe from what was read *about* a release (its ``verified:``
record says how far). The tree a build really gets, the release tarball or any checkout given with
``--source``, may disagree, and bazel would say so only after the toolchain image is built and the
build has run for a while. :func:`preflight` reads the few files of the tree that decide it and
returns a frozen :class:`PreflightReport`: one or more :class:`Finding` per check, each naming the
tree's file and line, why it matters and what to do.

``bazelversion``  the first line of the tree's ``.bazelversion`` (what bazelisk reads) is the plan's
                  bazel, exactly. A tree without one is a *note*, not a failure: the toolchain image
                  pins the plan's bazel (``USE_BAZEL_VERSION``) and nothing in the tree asks for
                  another.
``bazelrc``       the tree's ``.bazelrc`` imports ``%workspace%/.tf_configure.bazelrc`` (directly, or
                  through the files it imports inside the tree), where build.sh installs the rendered
                  rc file; without it the plan's flags would silently not apply.
``configs``       every ``--config`` the build uses is defined by a ``build:NAME`` or ``common:NAME``
                  line of the tree's rc files (``.bazelrc`` and what it imports inside the tree) or of
                  the rendered rc file. "Used" is the plan's configs, the ``--config=`` of the
                  rendered rc lines, the tree's own unconditional ``build --config=`` lines, and every
                  config a used one names in turn; bazel stops on the first that is undefined.
``wheel_target``  ``tensorflow/tools/pip_package/BUILD`` declares the target the plan builds
                  (``wheel`` for the :wheel flow, ``build_pip_package`` before 2.17).
``python_lock``   hermetic Python (2.14+): the requirements lock that the tree's WORKSPACE maps the
                  plan's Python to exists; without such a map, ``requirements_lock_3_X.txt`` at the
                  top of the tree (where TensorFlow keeps them).
``cuda_versions`` hermetic CUDA (2.18+): the plan's CUDA and cuDNN versions are keys of the tree's
                  ``CUDA_REDIST_JSON_DICT`` and ``CUDNN_REDIST_JSON_DICT``: the table the WORKSPACE
                  loads, else the first of :data:`CUDA_TABLES` the tree has. A table outside the tree
                  (``@rules_ml_toolchain``, which bazel downloads) or none of the known files is a
                  "not checked" note.
``toolchain``     the route. Hermetic (or any rc line naming ``@rules_ml_toolchain``): the tree pins
                  rules_ml_toolchain. The devtoolset-9 sysroot: TF's ``build_devtoolset.sh`` with a
                  ``devtoolset-9)`` case in one of ``render.DEVTOOLSET_DIRS``. The sysroot route: a
                  crosstool that reads ``TF_SYSROOT`` (:data:`CROSSTOOLS`; "not checked" when the
                  tree has none of them).

The canary's STAND-IN tree is a real bazel workspace (Debian's bazel-bootstrap 4.2.3 builds it: a
``.bazelrc`` that imports the rendered rc file, the ``wheel`` target, no ``.bazelversion``: a note),
and is checked like any tree. The checks of what a TensorFlow tree has and the canary's does not
(hermetic Python, CUDA, the toolchain route, which its own rules apply) are ``skipped`` for a
stand-in plan, each finding saying so.

Where the paths come from (tensorflow/tensorflow, stored copies; tests/fixtures/trees/README.md):
``third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl`` @13ea77ab,
``third_party/xla/third_party/tsl/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl`` @521421ea,
``third_party/xla/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl`` @014edaa4; WORKSPACE
@004d817e loads them from ``@rules_ml_toolchain//gpu/cuda`` instead (master, 2026), and
tensorflow/text's WORKSPACE for 2.20.0 from ``@local_xla//third_party/gpus/cuda/hermetic``.
``_TF_SYSROOT = "TF_SYSROOT"``: ``third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl``
@0866b7a7 and the ``cuda_configure.bzl`` versions docs/toolchain-facts.md E13 cites.

:func:`preflight` only reads ``tree``. :func:`check_release` (``tfbuild recipes verify``) is the
one impure function: it fetches the release tarball (or takes ``--source DIR``), plans the recipe's
variants for a nominal runner, and runs the checks on each plan plus the recipe's own lists.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tfbuild.core.errors import InputError, TfbuildError, UnsupportedError
from tfbuild.core.files import read_input
from tfbuild.core.variants import Variant
from tfbuild.plan import BuildPlan
from tfbuild.plan.render import DEVTOOLSET_DIRS
from tfbuild.recipes import tfversions
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe

PREFLIGHT_SCHEMA = "tfbuild.preflight/1"
Status = Literal["ok", "fail", "note", "skipped"]

#: Where build.sh installs the rendered rc file, as TensorFlow's .bazelrc try-imports it.
RENDERED_RC = ".tf_configure.bazelrc"
PIP_PACKAGE_BUILD = (
    "tensorflow/tools/pip_package/BUILD",
    "tensorflow/tools/pip_package/BUILD.bazel",
)
#: TensorFlow's hermetic CUDA version tables, newest layout first (see the module docstring).
CUDA_TABLES = (
    "third_party/xla/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl",
    "third_party/xla/third_party/tsl/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl",
    "third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl",
)
#: The crosstool of ``@local_config_cuda`` (what ``--crosstool_top`` of the sysroot route names),
#: newest layout first: each version that reads TF_SYSROOT has ``_TF_SYSROOT = "TF_SYSROOT"``.
CROSSTOOLS = (
    "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    "third_party/xla/third_party/tsl/third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    "third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    "third_party/xla/third_party/gpus/cuda_configure.bzl",
    "third_party/xla/third_party/tsl/third_party/gpus/cuda_configure.bzl",
    "third_party/gpus/cuda_configure.bzl",
)
#: Where a WORKSPACE's ``@repo//`` labels live inside TensorFlow's tree.
_LOCAL_REPOSITORIES = {
    "": "",
    "@": "",
    "@org_tensorflow": "",
    "@local_xla": "third_party/xla",
    "@xla": "third_party/xla",
    "@local_tsl": "third_party/xla/third_party/tsl",
    "@tsl": "third_party/xla/third_party/tsl",
}


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One check of the tree: what was found, where (the tree's file and line), why, what to do."""

    check: str
    status: Status
    what: str
    file: str | None = None  # relative to the tree
    line: int | None = None
    why: str = ""
    fix: str = ""

    @property
    def where(self) -> str:
        """``file:line``, ``file`` when no line is meant, empty when no file is."""
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def located(self) -> str:
        """``where: what``."""
        return f"{self.where}: {self.what}" if self.where else self.what

    def text(self) -> str:
        """One line: ``where: what (why). fix``."""
        out = self.located
        if self.why:
            out += f" ({self.why})"
        if self.fix:
            out += f". {self.fix}"
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "what": self.what,
            "file": self.file,
            "line": self.line,
            "why": self.why,
            "fix": self.fix,
        }


@dataclass(frozen=True, kw_only=True)
class PreflightReport:
    """Every finding for one plan and one tree."""

    tree: str
    plan: str  # what was checked, in words: "TensorFlow 2.21.0 cpu, Python 3.11"
    findings: tuple[Finding, ...]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == "fail")

    def error(self, *, shown: bool = False) -> UnsupportedError | None:
        """The failures as one error (exit 4): the first in its line, all of them in its why.
        ``shown``: every finding was printed above (``plan --source``)."""
        return _error(
            f"the source tree {self.tree} does not fit the plan",
            self.failures,
            more="Each one's fix is above"
            if shown
            else "tfbuild plan --source DIR lists every check with its fix",
            done="Nothing was built: no image, no container.",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": PREFLIGHT_SCHEMA,
            "tree": self.tree,
            "plan": self.plan,
            "passed": self.passed,
            "findings": [f.to_json() for f in self.findings],
        }


def _error(
    what: str, failures: tuple[Finding, ...], *, more: str, done: str = ""
) -> UnsupportedError | None:
    """One error for ``failures``: the first mismatch in its line; with several, all of them
    (numbered) in its why, and where to read each one's fix."""
    if not failures:
        return None
    first = failures[0]
    fixes = [first.fix] if first.fix else []
    if len(failures) == 1:
        return UnsupportedError(
            f"{what}: {first.located}",
            why=first.why,
            fix=" ".join(f"{s.rstrip('.')}." for s in [*fixes, done] if s),
        )
    listed = "; ".join(f"({n}) {f.located}" for n, f in enumerate(failures, 1))
    return UnsupportedError(
        f"{what} ({len(failures)} mismatches): {first.located}",
        why=listed,
        fix=" ".join(f"{s.rstrip('.')}." for s in [*fixes, more, done] if s),
    )


# --- reading the tree ----------------------------------------------------------------------------------


#: The most of one tree file preflight reads: TensorFlow's largest (WORKSPACE, a BUILD file, a
#: CUDA version table) are tens of kB.
MAX_TREE_FILE = 4 * 2**20


class _Tree:
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


def _line_of(text: str, pattern: re.Pattern[str]) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.search(line):
            return number
    return None


# --- bazel rc files ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _RcLine:
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


def _rc_lines(text: str, name: str) -> list[_RcLine]:
    """The lines of one rc file, continuations joined, comments dropped."""
    out: list[_RcLine] = []
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
            _RcLine(
                file=name,
                line=start,
                command=command,
                config=config or None,
                args=tuple(tokens[1:]),
            )
        )
    return out


@dataclass(frozen=True, kw_only=True)
class _Rc:
    lines: tuple[_RcLine, ...]  # the tree's rc files and, where imported, the rendered one
    rendered_import: _RcLine | None  # the line that imports the rendered rc file
    missing_imports: tuple[_RcLine, ...]  # ``import`` (not try-import) of a file the tree lacks


def _read_rc(tree: _Tree, rendered: tuple[str, ...]) -> _Rc | None:
    """``.bazelrc`` and what it imports inside the tree (``%workspace%/...``), the rendered rc file
    in place of ``.tf_configure.bazelrc``; None when the tree has no ``.bazelrc``."""
    top = tree.read(".bazelrc")
    if top is None:
        return None
    lines: list[_RcLine] = []
    state: dict[str, Any] = {"import": None, "missing": []}
    seen: set[str] = set()

    def visit(name: str, text: str) -> None:
        seen.add(name)
        for rc in _rc_lines(text, name):
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
                    lines.extend(_rc_lines("\n".join(rendered), f"(rendered) {RENDERED_RC}"))
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
    return _Rc(
        lines=tuple(lines),
        rendered_import=state["import"],
        missing_imports=tuple(state["missing"]),
    )


def _config_uses(args: Iterable[str]) -> list[str]:
    args = list(args)
    found = []
    for index, arg in enumerate(args):
        if arg.startswith("--config="):
            found.append(arg.removeprefix("--config="))
        elif arg == "--config" and index + 1 < len(args):
            found.append(args[index + 1])
    return found


def _check_bazelrc(rc: _Rc | None) -> list[Finding]:
    if rc is None:
        return [
            Finding(
                check="bazelrc",
                status="fail",
                what="the tree has no .bazelrc",
                file=".bazelrc",
                why=f"TensorFlow's .bazelrc is what imports the rendered {RENDERED_RC}: without it "
                "the plan's flags (target, toolchain, Python) would not apply",
                fix="Pass the top of a TensorFlow checkout (or the release tarball's tree)",
            )
        ]
    found = [
        Finding(
            check="bazelrc",
            status="fail",
            what=f"'{m.command} {m.args[0]}' names a file the tree lacks",
            file=m.file,
            line=m.line,
            why="bazel stops on a missing import (try-import would not)",
            fix="Restore the file, or build from a complete checkout",
        )
        for m in rc.missing_imports
    ]
    if rc.rendered_import is None:
        found.append(
            Finding(
                check="bazelrc",
                status="fail",
                what=f"no rc file of the tree imports %workspace%/{RENDERED_RC}",
                file=".bazelrc",
                why="build.sh installs the rendered rc file there; unread, the plan's flags "
                "(target, toolchain, Python) would silently not apply",
                fix=f"Add 'try-import %workspace%/{RENDERED_RC}' to the tree's .bazelrc, as "
                "TensorFlow's has",
            )
        )
    else:
        found.append(
            Finding(
                check="bazelrc",
                status="ok",
                what=f"the rendered rc file is imported ({rc.rendered_import.command} "
                f"{rc.rendered_import.args[0]})",
                file=rc.rendered_import.file,
                line=rc.rendered_import.line,
            )
        )
    return found


def _check_configs(plan: BuildPlan, recipe: Recipe | None, rc: _Rc | None) -> list[Finding]:
    rendered_name = f"(rendered) {RENDERED_RC}"
    lines = list(rc.lines) if rc is not None else []
    if rc is None or rc.rendered_import is None:  # reported by the bazelrc check: no cascade here
        lines += _rc_lines("\n".join(plan.rc_lines), rendered_name)
    definitions: dict[str, list[_RcLine]] = {}
    for rc_line in lines:
        if rc_line.command in ("build", "common") and rc_line.config:
            definitions.setdefault(rc_line.config, []).append(rc_line)
    # (config, where it is used: None for the plan's own command line)
    wanted: list[tuple[str, _RcLine | None]] = [(c, None) for c in plan.bazel_configs]
    for rc_line in lines:
        if rc_line.command in ("build", "common") and rc_line.config is None:
            wanted += [(c, rc_line) for c in _config_uses(rc_line.args)]
    found: list[Finding] = []
    checked: dict[str, _RcLine] = {}
    while wanted:
        name, used_at = wanted.pop(0)
        if name in checked:
            continue
        defs = definitions.get(name)
        if not defs:
            found.append(_undefined(name, used_at, recipe, definitions))
            checked[name] = _RcLine(file="", line=0, command="", config=None, args=())
            continue
        checked[name] = defs[0]
        for definition in defs:
            wanted += [(c, definition) for c in _config_uses(definition.args)]
    if not found:
        where = ", ".join(
            f"{name} ({d.file}:{d.line})"
            for name, d in checked.items()
            if name in plan.bazel_configs
        )
        found.append(
            Finding(
                check="configs",
                status="ok",
                what=f"every --config the build uses is defined: {where}",
                file=".bazelrc",
            )
        )
    return found


def _undefined(
    name: str,
    used_at: _RcLine | None,
    recipe: Recipe | None,
    definitions: Mapping[str, list[_RcLine]],
) -> Finding:
    close = difflib.get_close_matches(name, list(definitions), n=1)
    hint = ""
    if close:
        first = definitions[close[0]][0]
        hint = f"; did you mean {close[0]} ({first.file}:{first.line})?"
    listed = recipe is not None and name in recipe.configs
    why = f"bazel stops with \"Config value '{name}' is not defined in any .rc file\"{hint}"
    if used_at is not None:
        why = f"{used_at.file}:{used_at.line} names it; {why}"
    elif listed:
        assert recipe is not None
        why = f"{recipe.where('configs')} says this release defines it; {why}"
    if used_at is None:
        fix = (
            "This tree is not the release the recipe describes: build the recipe's own source, or "
            "give a recipe for this tree with --recipes-dir whose configs list only what its "
            ".bazelrc defines (the planner then refuses that variant)"
        )
    else:
        fix = "Fix the tree's rc files, or build from a complete checkout of the release"
    return Finding(
        check="configs",
        status="fail",
        what=f"--config={name} is not defined",
        file=used_at.file if used_at is not None else ".bazelrc",
        line=used_at.line if used_at is not None else None,
        why=why,
        fix=fix,
    )


# --- the other checks --------------------------------------------------------------------------------


def _check_bazelversion(plan: BuildPlan, tree: _Tree) -> Finding:
    text = tree.read(".bazelversion")
    first = (text or "").splitlines()[0].strip() if (text or "").strip() else ""
    if text is None or not first:
        runs = "its STAND-IN bazel" if plan.standin else f"the plan's bazel {plan.bazel}"
        return Finding(
            check="bazelversion",
            status="note",
            what=f"the tree pins no bazel version: the build runs {runs}",
            file=".bazelversion",
            why="the STAND-IN canary runs Debian's bazel-bootstrap (4.2.3), whatever a tree pins"
            if plan.standin
            else "the toolchain image pins it (USE_BAZEL_VERSION) and nothing here asks for another",
        )
    if first != plan.bazel:
        return Finding(
            check="bazelversion",
            status="fail",
            what=f"the tree wants bazel {first}, the plan runs bazel {plan.bazel}",
            file=".bazelversion",
            line=1,
            why="the toolchain image runs the plan's bazel (USE_BAZEL_VERSION wins over "
            ".bazelversion), and a release builds with the bazel it names: another stops on "
            "flags and rules it does not know",
            fix=f"Use a recipe whose bazel is {first} for this tree (--recipes-dir), or build the "
            "release the recipe is for",
        )
    return Finding(
        check="bazelversion",
        status="ok",
        what=f"bazel {first}, as planned",
        file=".bazelversion",
        line=1,
    )


_RULE = re.compile(r"^([A-Za-z_][\w.]*)\s*\(")
_NAME = re.compile(r'^\s+name\s*=\s*"([^"]+)"')


def _rules(text: str) -> dict[str, tuple[str, int]]:
    """Top-level rules of a BUILD file: name -> (rule kind, line of its name)."""
    rules: dict[str, tuple[str, int]] = {}
    kind: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        started = _RULE.match(line)
        if started:
            kind = started.group(1)
            continue
        named = _NAME.match(line)
        if named and kind is not None and named.group(1) not in rules:
            rules[named.group(1)] = (kind, number)
            kind = None
    return rules


def _check_wheel_target(plan: BuildPlan, tree: _Tree) -> Finding:
    target = plan.build_target.rpartition(":")[2]
    build = next((p for p in PIP_PACKAGE_BUILD if tree.exists(p)), None)
    if build is None:
        return Finding(
            check="wheel_target",
            status="fail",
            what=f"the tree has no {PIP_PACKAGE_BUILD[0]}",
            file=PIP_PACKAGE_BUILD[0],
            why=f"bazel build {plan.build_target} needs the package that declares it",
            fix="Pass the top of a TensorFlow checkout",
        )
    rules = _rules(tree.read(build) or "")
    if target in rules:
        kind, line = rules[target]
        return Finding(
            check="wheel_target",
            status="ok",
            what=f'{kind}(name = "{target}") builds {plan.build_target}',
            file=build,
            line=line,
        )
    other = "build_pip_package" if target == "wheel" else "wheel"
    why = f'bazel build {plan.build_target} stops with "no such target"'
    if other in rules:
        why += f"; this tree has :{other} ({build}:{rules[other][1]}), the other wheel flow"
    return Finding(
        check="wheel_target",
        status="fail",
        what=f"no {target} target",
        file=build,
        why=why,
        fix="Use the recipe of this tree's release (the :wheel target arrived in 2.17), or build "
        "the release the recipe is for",
    )


_REQUIREMENT = re.compile(r'"(\d+\.\d+)"\s*:\s*"(@?[\w.-]*//[\w/.-]*:[\w.-]+)"')


def _label_path(label: str) -> str | None:
    """``//:requirements_lock_3_12.txt`` -> ``requirements_lock_3_12.txt`` (None: another repository)."""
    repository, _, rest = label.partition("//")
    if repository not in _LOCAL_REPOSITORIES:
        return None
    package, _, name = rest.partition(":")
    return "/".join(p for p in (_LOCAL_REPOSITORIES[repository], package, name) if p)


def _check_python_lock(plan: BuildPlan, tree: _Tree) -> Finding:
    python = plan.python
    workspace = tree.read("WORKSPACE") or ""
    mapped = {
        m.group(1): (m.group(2), workspace[: m.start()].count("\n") + 1)
        for m in _REQUIREMENT.finditer(workspace)
    }
    if mapped:
        if python not in mapped:
            first_line = min(line for _, line in mapped.values())
            return Finding(
                check="python_lock",
                status="fail",
                what=f"no requirements lock for Python {python}",
                file="WORKSPACE",
                line=first_line,
                why=f"python_init_repositories maps only {', '.join(mapped)}: bazel cannot set up a "
                f"hermetic Python {python}",
                fix=f"Build for one of those (--python X.Y), or a tree that supports {python}",
            )
        label, line = mapped[python]
        rel = _label_path(label)
        if rel is None or tree.exists(rel):
            return Finding(
                check="python_lock",
                status="ok",
                what=f"Python {python}: {label}" + ("" if rel else " (in another repository)"),
                file="WORKSPACE",
                line=line,
            )
        return Finding(
            check="python_lock",
            status="fail",
            what=f"WORKSPACE maps Python {python} to {label}, which the tree lacks",
            file="WORKSPACE",
            line=line,
            why="bazel stops when rules_python reads the lock file",
            fix="Build from a complete checkout of the release",
        )
    rel = f"requirements_lock_{python.replace('.', '_')}.txt"
    if tree.exists(rel):
        return Finding(check="python_lock", status="ok", what=f"Python {python}: {rel}", file=rel)
    have = sorted(
        (p.name for p in tree.root.glob("requirements_lock_*.txt")),
        key=lambda n: [int(x) for x in re.findall(r"\d+", n)],
    )
    return Finding(
        check="python_lock",
        status="fail",
        what=f"no {rel} for Python {python}",
        file=rel,
        why="hermetic Python installs the build's packages from that lock"
        + (f"; the tree has {', '.join(have)}" if have else "; the tree has none"),
        fix="Build for a Python the tree has a lock for (--python X.Y)",
    )


_LOAD = re.compile(
    r'"(@?[\w.-]*)//([\w/.-]*):(cuda_redist_(?:init_repositories|versions)\.bzl|cuda_configure\.bzl)"'
)


def _workspace_files(tree: _Tree) -> list[str]:
    """WORKSPACE, then the ``tensorflow/workspace*.bzl`` files it loads its macros from."""
    macros = sorted(p.name for p in (tree.root / "tensorflow").glob("workspace*.bzl"))
    return ["WORKSPACE", *(f"tensorflow/{name}" for name in macros)]


@dataclass(frozen=True, kw_only=True)
class _Loaded:
    """Where the workspace loads a file from: ``path`` in the tree (None: another repository)."""

    path: str | None
    label: str
    file: str  # the workspace file that loads it
    line: int


def _loaded_from(tree: _Tree, files: tuple[str, ...]) -> _Loaded | None:
    """The first load of one of ``files`` in the workspace files; None when none loads one."""
    for rel in _workspace_files(tree):
        text = tree.read(rel) or ""
        for match in _LOAD.finditer(text):
            if match.group(3) not in files:
                continue
            repository, package = match.group(1), match.group(2)
            path = None
            if repository in _LOCAL_REPOSITORIES:
                path = "/".join(p for p in (_LOCAL_REPOSITORIES[repository], package) if p)
            return _Loaded(
                path=path,
                label=f"{repository}//{package}:{match.group(3)}",
                file=rel,
                line=text[: match.start()].count("\n") + 1,
            )
    return None


_CUDA_LOADS = ("cuda_redist_init_repositories.bzl", "cuda_redist_versions.bzl")


def _cuda_tables(loaded: _Loaded | None) -> tuple[str, ...]:
    """The table the workspace loads (beside its cuda_redist_init_repositories.bzl), else every
    known one; empty when it is in another repository."""
    if loaded is None:
        return CUDA_TABLES
    return () if loaded.path is None else (f"{loaded.path}/cuda_redist_versions.bzl",)


_TABLE = re.compile(r"^(CUDA|CUDNN)_REDIST_JSON_DICT\s*=\s*\{\s*$")
_KEY = re.compile(r'^\s{4}"([0-9][0-9.]*)"\s*:')


def _table_keys(text: str) -> dict[str, dict[str, int]]:
    """``CUDA_REDIST_JSON_DICT`` and ``CUDNN_REDIST_JSON_DICT`` keys with their lines."""
    tables: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        started = _TABLE.match(line)
        if started:
            current = tables.setdefault(started.group(1).lower(), {})
            continue
        if current is not None:
            if line.startswith("}"):
                current = None
                continue
            key = _KEY.match(line)
            if key:
                current.setdefault(key.group(1), number)
    return tables


def _check_cuda_versions(plan: BuildPlan, tree: _Tree) -> list[Finding]:
    assert plan.cuda is not None
    loaded = _loaded_from(tree, _CUDA_LOADS)
    if loaded is not None and loaded.path is None:
        return [
            Finding(
                check="cuda_versions",
                status="note",
                what=f"not checked: the CUDA tables come from {loaded.label}",
                file=loaded.file,
                line=loaded.line,
                why="a repository bazel downloads, not a file of this tree",
            )
        ]
    candidates = _cuda_tables(loaded)
    table = next((c for c in candidates if tree.exists(c)), None)
    if table is None:
        return [
            Finding(
                check="cuda_versions",
                status="note",
                what="not checked: the tree has none of the known CUDA version tables",
                file=candidates[0],
                why=f"looked for {', '.join(candidates)}",
            )
        ]
    keys = _table_keys(tree.read(table) or "")
    if not keys:
        return [
            Finding(
                check="cuda_versions",
                status="note",
                what="not checked: no CUDA_REDIST_JSON_DICT in the table (another layout)",
                file=table,
            )
        ]
    found = []
    for kind, version, option in (
        ("cuda", plan.cuda.cuda, "--cuda-version"),
        ("cudnn", plan.cuda.cudnn, "--cudnn-version"),
    ):
        known = keys.get(kind, {})
        name = "CUDA" if kind == "cuda" else "cuDNN"
        if version in known:
            found.append(
                Finding(
                    check="cuda_versions",
                    status="ok",
                    what=f"hermetic {name} {version} is in the tree's table",
                    file=table,
                    line=known[version],
                )
            )
        else:
            found.append(
                Finding(
                    check="cuda_versions",
                    status="fail",
                    what=f"hermetic {name} {version} is not a key of {kind.upper()}_REDIST_JSON_DICT",
                    file=table,
                    why=f"the table knows {', '.join(known) or 'nothing'}; bazel cannot fetch "
                    "another",
                    fix=f"Pass {option} with one of those, or fix the recipe's cuda row for this "
                    "tree (--recipes-dir)",
                )
            )
    return found


_TF_SYSROOT = re.compile(r"\bTF_SYSROOT\b")
_DEVTOOLSET_CASE = re.compile(r"^\s*devtoolset-9\)")


def _check_toolchain(plan: BuildPlan, tree: _Tree) -> list[Finding]:
    found: list[Finding] = []
    wants_rules_ml = plan.route == "hermetic" or any(
        "@rules_ml_toolchain" in line for line in plan.rc_lines
    )
    if wants_rules_ml:
        found.append(_rules_ml_toolchain(plan, tree))
    if plan.route == "sysroot" and plan.sysroot is not None:
        if plan.sysroot.builder == "devtoolset-9":
            found.append(_devtoolset(tree))
        found.append(_crosstool(plan, tree))
    if not found:
        found.append(
            Finding(
                check="toolchain",
                status="ok",
                what="the image's own compiler and glibc: nothing of the tree to check",
            )
        )
    return found


def _rules_ml_toolchain(plan: BuildPlan, tree: _Tree) -> Finding:
    pattern = re.compile(r"rules_ml_toolchain")
    for rel in _workspace_files(tree):
        text = tree.read(rel)
        line = _line_of(text, pattern) if text else None
        if line is not None:
            return Finding(
                check="toolchain",
                status="ok",
                what="the tree pins rules_ml_toolchain",
                file=rel,
                line=line,
            )
    why = (
        "the plan compiles with TensorFlow's hermetic toolchain (rules_ml_toolchain, 2.21+)"
        if plan.route == "hermetic"
        else "the rendered rc file sets @rules_ml_toolchain flags (its opt-out)"
    )
    return Finding(
        check="toolchain",
        status="fail",
        what="the tree does not pin rules_ml_toolchain",
        file="WORKSPACE",
        why=f"{why}, and bazel cannot find a repository the tree never declares",
        fix="Use the recipe of this tree's release, or build with --no-portable",
    )


def _devtoolset(tree: _Tree) -> Finding:
    for directory in DEVTOOLSET_DIRS:
        rel = f"{directory}/build_devtoolset.sh"
        text = tree.read(rel)
        if text is None:
            continue
        line = _line_of(text, _DEVTOOLSET_CASE)
        if line is not None:
            return Finding(
                check="toolchain",
                status="ok",
                what="build_devtoolset.sh builds devtoolset-9 (the /dt9 sysroot)",
                file=rel,
                line=line,
            )
        return Finding(
            check="toolchain",
            status="fail",
            what="build_devtoolset.sh has no devtoolset-9 case",
            file=rel,
            why="the toolchain image's sysroot stage runs 'build_devtoolset.sh devtoolset-9 /dt9'",
            fix="Build with --no-portable (the image's glibc), or --sysroot-from IMAGE",
        )
    return Finding(
        check="toolchain",
        status="fail",
        what="the tree has no builder.devtoolset/build_devtoolset.sh",
        file=f"{DEVTOOLSET_DIRS[0]}/build_devtoolset.sh",
        why=f"the toolchain image's sysroot stage looks in {' and '.join(DEVTOOLSET_DIRS)} "
        "for the script that makes /dt9, and would fail",
        fix="Build with --no-portable (the image's glibc), or --sysroot-from IMAGE",
    )


def _crosstool(plan: BuildPlan, tree: _Tree) -> Finding:
    assert plan.sysroot is not None
    loaded = _loaded_from(tree, ("cuda_configure.bzl",))
    if loaded is not None and loaded.path is None:
        return Finding(
            check="toolchain",
            status="note",
            what=f"not checked: the crosstool comes from {loaded.label}",
            file=loaded.file,
            line=loaded.line,
            why="a repository bazel downloads, not a file of this tree",
        )
    candidates = (f"{loaded.path}/cuda_configure.bzl",) if loaded is not None else CROSSTOOLS
    present = [c for c in candidates if tree.exists(c)]
    for rel in present:
        line = _line_of(tree.read(rel) or "", _TF_SYSROOT)
        if line is not None:
            return Finding(
                check="toolchain",
                status="ok",
                what=f"the crosstool reads TF_SYSROOT ({plan.sysroot.name})",
                file=rel,
                line=line,
            )
    if not present:
        return Finding(
            check="toolchain",
            status="note",
            what="not checked: the tree has none of the known cuda_configure.bzl files",
            file=candidates[0],
            why="the receipt's floor (auditwheel) shows after the build whether the sysroot was used",
        )
    return Finding(
        check="toolchain",
        status="fail",
        what="the crosstool never reads TF_SYSROOT",
        file=present[0],
        why=f"the wheel would link against the image's glibc, not the sysroot {plan.sysroot.name}, "
        "and miss the recipe's floor",
        fix="Build with --no-portable (a wheel for systems as new as the image), or use the "
        "recipe of this tree's release",
    )


def _skipped(check: str, what: str, why: str) -> Finding:
    return Finding(check=check, status="skipped", what=f"not checked: {what}", why=why)


# --- the report ----------------------------------------------------------------------------------------


def describe(plan: BuildPlan) -> str:
    """The plan in a few words, for the report."""
    standin = " (STAND-IN canary)" if plan.standin else ""
    cuda = f" CUDA {plan.cuda.cuda}" if plan.cuda else ""
    return f"TensorFlow {plan.tensorflow}{standin} {plan.variant}{cuda}, Python {plan.python}"


def preflight(plan: BuildPlan, recipe: Recipe | None, tree: Path) -> PreflightReport:
    """Check ``tree`` (the top of a source tree) against ``plan`` (and the recipe it came from;
    None for a rebuild from a receipt). Only reads files of ``tree``."""
    files = _Tree(tree)
    rc = _read_rc(files, plan.rc_lines)
    findings: list[Finding] = [
        _check_bazelversion(plan, files),
        *_check_bazelrc(rc),
        *_check_configs(plan, recipe, rc),
        _check_wheel_target(plan, files),
    ]
    version = tfversions.parse_version(plan.tensorflow)
    hermetic_python = recipe.hermetic_python if recipe else tfversions.hermetic_python(version)
    if plan.standin:
        findings.append(
            _skipped(
                "python_lock",
                "hermetic Python's requirements lock",
                "the STAND-IN canary's bazel resolves no Python packages",
            )
        )
    elif hermetic_python:
        findings.append(_check_python_lock(plan, files))
    if plan.cuda is not None and plan.cuda.hermetic:
        findings += _check_cuda_versions(plan, files)
    if plan.standin:
        findings.append(
            _skipped(
                "toolchain",
                "the toolchain route",
                "the STAND-IN canary's bazel compiles with the planned compiler itself, "
                "TF_SYSROOT included",
            )
        )
    else:
        findings += _check_toolchain(plan, files)
    return PreflightReport(tree=str(tree), plan=describe(plan), findings=tuple(findings))


# --- tfbuild recipes verify ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReleaseCheck:
    """A recipe checked against its release's files: every plan's report and the recipe's lists."""

    recipe: str  # the recipe's path
    tensorflow: str
    tree: str
    source: dict[str, Any]  # the source record (tarball URL and sha256, or the directory)
    reports: tuple[PreflightReport, ...]
    recipe_findings: tuple[Finding, ...]  # the recipe's own lists against the tree
    refused: tuple[Finding, ...] = field(default=())  # plans the planner refused

    @property
    def failures(self) -> tuple[Finding, ...]:
        """Every failure once, in order (the same mismatch in several plans counts once)."""
        seen: dict[str, Finding] = {}
        for finding in (
            *self.refused,
            *self.recipe_findings,
            *(f for r in self.reports for f in r.findings),
        ):
            if finding.status == "fail":
                seen.setdefault(finding.text(), finding)
        return tuple(seen.values())

    @property
    def passed(self) -> bool:
        return not self.failures

    def error(self) -> UnsupportedError | None:
        return _error(
            f"recipe {self.recipe} does not match the release's files",
            self.failures,
            more="tfbuild recipes verify --json has every check",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "tfbuild.release-check/1",
            "recipe": self.recipe,
            "tensorflow": self.tensorflow,
            "tree": self.tree,
            "source": self.source,
            "passed": self.passed,
            "recipe_findings": [f.to_json() for f in self.recipe_findings],
            "refused": [f.to_json() for f in self.refused],
            "plans": [r.to_json() for r in self.reports],
        }


def recipe_findings(recipe: Recipe, tree: Path) -> tuple[Finding, ...]:
    """The recipe's own lists against the tree: every config it says the release defines, every
    hermetic CUDA and cuDNN version it says the release knows."""
    files = _Tree(tree)
    rc = _read_rc(files, ())
    found: list[Finding] = []
    if rc is not None:
        defined = {
            line.config for line in rc.lines if line.command in ("build", "common") and line.config
        }
        missing = [c for c in recipe.configs if c not in defined]
        found.append(
            Finding(
                check="recipe_configs",
                status="fail" if missing else "ok",
                what=f"the recipe lists configs the tree's rc files do not define: {', '.join(missing)}"
                if missing
                else f"all {len(recipe.configs)} configs the recipe lists are defined",
                file=".bazelrc",
                why=f"{recipe.where('configs')} says the release defines them" if missing else "",
                fix="Drop them from the recipe's configs list" if missing else "",
            )
        )
    cuda = recipe.cuda
    if cuda is not None and cuda.hermetic:
        candidates = _cuda_tables(_loaded_from(files, _CUDA_LOADS))
        table = next((c for c in candidates if files.exists(c)), None)
        keys = _table_keys(files.read(table) or "") if table else {}
        if keys and table:
            for kind, versions in (("cuda", cuda.cuda_versions), ("cudnn", cuda.cudnn_versions)):
                unknown = [v for v in versions if v not in keys.get(kind, {})]
                found.append(
                    Finding(
                        check="recipe_cuda",
                        status="fail" if unknown else "ok",
                        what=f"{kind}_versions not in the tree's table: {', '.join(unknown)}"
                        if unknown
                        else f"all {len(versions)} {kind}_versions are keys of the table",
                        file=table,
                        why=f"{recipe.where('cuda')} lists them" if unknown else "",
                        fix="Drop them from the recipe's cuda row" if unknown else "",
                    )
                )
    return tuple(found)


#: What ``recipes verify`` plans: each Python's CPU build, and the newest Python's mkl and cuda.
VERIFY_TARGET = "x86_64_v3"


def verify_plans(
    recipe: Recipe, base_images: Mapping[str, BaseImage]
) -> tuple[tuple[BuildPlan, ...], tuple[Finding, ...]]:
    """The plans ``recipes verify`` checks, for the matrix's nominal runner; refused ones as
    failures (a recipe whose variant cannot even be planned)."""
    from tfbuild.plan import PlanOptions, make_plan
    from tfbuild.plan.matrix import RUNNER

    # Before hermetic Python (2.14) a build is for the toolchain image's own Python only.
    pythons: list[str | None] = list(recipe.python) if recipe.hermetic_python else [None]
    wanted = [(Variant.cpu, py) for py in pythons] + [(Variant.mkl, pythons[-1])]
    if recipe.cuda is not None:
        wanted.append((Variant.cuda, pythons[-1]))
    plans: list[BuildPlan] = []
    refused: list[Finding] = []
    for variant, python in wanted:
        options = PlanOptions(
            variant=variant, target=VERIFY_TARGET, python=python, skip_disk_check=True
        )
        try:
            plans.append(make_plan(options, recipe, RUNNER, base_images=dict(base_images)))
        except TfbuildError as error:
            refused.append(
                Finding(
                    check="plan",
                    status="fail",
                    what=f"the planner refuses {variant}"
                    + (f" for Python {python}" if python else "")
                    + f": {error.what}",
                    file=None,
                    why=error.why,
                    fix=error.fix.rstrip("."),
                )
            )
    return tuple(plans), tuple(refused)


def check_release(
    recipe: Recipe,
    *,
    base_images: Mapping[str, BaseImage],
    source: Path | None = None,
    cache_dir: Path | None = None,
    ca_bundle: Path | None = None,
    on_line: Callable[[str], None] = lambda _line: None,
) -> ReleaseCheck:
    """``tfbuild recipes verify``: the recipe's release tarball (downloaded once, checked against
    its sha256, extracted) or ``source``, checked for every plan of :func:`verify_plans`."""
    from tfbuild.build.source_tree import default_cache_dir, fetch_source, local_source

    if source is not None:
        tree = local_source(source)
    else:
        tree = fetch_source(
            recipe.tarball,
            version=recipe.tensorflow,
            sha256=recipe.sha256,
            cache_dir=cache_dir or default_cache_dir(),
            ca_bundle=ca_bundle,
            on_line=on_line,
        )
    plans, refused = verify_plans(recipe, base_images)
    return ReleaseCheck(
        recipe=recipe.path,
        tensorflow=recipe.tensorflow,
        tree=str(tree.path),
        source=tree.to_json(),
        reports=tuple(preflight(plan, recipe, tree.path) for plan in plans),
        recipe_findings=recipe_findings(recipe, tree.path),
        refused=refused,
    )
