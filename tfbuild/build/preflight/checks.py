"""The preflight's checks, each of one thing a build needs of the tree, and :func:`preflight`.

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
                  loads, else the first of ``workspace.CUDA_TABLES`` the tree has. A table outside
                  the tree (``@rules_ml_toolchain``, which bazel downloads) or none of the known
                  files is a "not checked" note.
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

``_TF_SYSROOT = "TF_SYSROOT"``: ``third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl``
@0866b7a7 and the ``cuda_configure.bzl`` versions docs/toolchain-facts.md E13 cites (the CUDA
tables' paths: :mod:`tfbuild.build.preflight.workspace`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path

from tfbuild.build.preflight.bazelrc import (
    PLATFORM_CONFIG,
    RENDERED_RC,
    RcFiles,
    RcLine,
    config_uses,
    expand,
    platform_config_switch,
    rc_lines,
    read_rc,
    repo_env,
)
from tfbuild.build.preflight.report import Finding, PreflightReport, TreeCheck
from tfbuild.build.preflight.starlark import Call, StarlarkError, calls, constants
from tfbuild.build.preflight.tree_files import TreeFiles, line_of
from tfbuild.build.preflight.workspace import (
    Loaded,
    build_rules,
    cuda_table,
    label_path,
    loaded_from,
    python_locks,
    table_keys,
    workspace_files,
)
from tfbuild.plan import BuildPlan
from tfbuild.plan.render import DEVTOOLSET_DIRS
from tfbuild.recipes import tfversions
from tfbuild.recipes.recipe import Recipe

PIP_PACKAGE_BUILD = (
    "tensorflow/tools/pip_package/BUILD",
    "tensorflow/tools/pip_package/BUILD.bazel",
)
#: newest layout first: each version that reads TF_SYSROOT has ``_TF_SYSROOT = "TF_SYSROOT"``.
CROSSTOOLS = (
    "third_party/xla/third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    "third_party/xla/third_party/tsl/third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    "third_party/gpus/cuda/hermetic/cuda_configure.bzl",
    "third_party/xla/third_party/gpus/cuda_configure.bzl",
    "third_party/xla/third_party/tsl/third_party/gpus/cuda_configure.bzl",
    "third_party/gpus/cuda_configure.bzl",
)
_BAZELVERSION = TreeCheck("bazelversion")
_BAZELRC = TreeCheck("bazelrc")
_CONFIGS = TreeCheck("configs")
_WHEEL_TARGET = TreeCheck("wheel_target")
_PYTHON_LOCK = TreeCheck("python_lock")
_CUDA_VERSIONS = TreeCheck("cuda_versions")
_TOOLCHAIN = TreeCheck("toolchain")


def _check_bazelrc(rc: RcFiles | None) -> list[Finding]:
    if rc is None:
        return [
            _BAZELRC.fail(
                "the tree has no .bazelrc",
                ".bazelrc",
                why=f"TensorFlow's .bazelrc is what imports the rendered {RENDERED_RC}: without it "
                "the plan's flags (target, toolchain, Python) would not apply",
                fix="Pass the top of a TensorFlow checkout (or the release tarball's tree)",
            )
        ]
    found = [
        _BAZELRC.fail(
            f"'{m.command} {m.args[0]}' names a file the tree lacks",
            m.file,
            m.line,
            why="bazel stops on a missing import (try-import would not)",
            fix="Restore the file, or build from a complete checkout",
        )
        for m in rc.missing_imports
    ]
    found += [
        _BAZELRC.fail(
            f"'{m.command} {m.args[0]}' is not followed: {why}",
            m.file,
            m.line,
            why="bazel stops on an import loop, and a tree's rc files are the tree's own",
            fix="Import only files of the tree (%workspace%/...), each once along a chain",
        )
        for m, why in rc.refused_imports
    ]
    imported = rc.rendered_import
    if imported is None:
        found.append(
            _BAZELRC.fail(
                f"no rc file of the tree imports %workspace%/{RENDERED_RC}",
                ".bazelrc",
                why="build.sh installs the rendered rc file there; unread, the plan's flags "
                "(target, toolchain, Python) would silently not apply",
                fix=f"Add 'try-import %workspace%/{RENDERED_RC}' to the tree's .bazelrc, as "
                "TensorFlow's has",
            )
        )
    else:
        found.append(
            _BAZELRC.ok(
                f"the rendered rc file is imported ({imported.command} {imported.args[0]})",
                imported.file,
                imported.line,
            )
        )
    return found


def _all_lines(plan: BuildPlan, rc: RcFiles | None) -> list[RcLine]:
    """The rc lines bazel reads: the tree's and the rendered rc file's, where the tree imports it
    (else after the tree's: that the tree does not import it is the bazelrc check's failure, and
    the other checks do not repeat it)."""
    lines = list(rc.lines) if rc is not None else []
    if rc is None or rc.rendered_import is None:
        lines += rc_lines("\n".join(plan.rc_lines), f"(rendered) {RENDERED_RC}")
    return lines


#: The options bazel applies, in its order, each with the rc line it comes from (bazelrc.expand).
Applied = list[tuple[str, RcLine | None]]


def _check_configs(
    plan: BuildPlan, recipe: Recipe | None, lines: list[RcLine], applied: Applied
) -> list[Finding]:
    definitions: dict[str, list[RcLine]] = {}
    for rc_line in lines:
        if rc_line.command in ("build", "common") and rc_line.config:
            definitions.setdefault(rc_line.config, []).append(rc_line)
    # (config, where it is used: None for the plan's own command line)
    wanted: list[tuple[str, RcLine | None]] = [(c, None) for c in plan.bazel_configs]
    for rc_line in lines:
        if rc_line.command in ("build", "common") and rc_line.config is None:
            wanted += [(c, rc_line) for c in config_uses(rc_line.args)]
    # --enable_platform_specific_config: bazel applies build:linux as if --config=linux were given
    # (and nothing when the tree defines no linux config); what that config names must be defined.
    if platform_config_switch(arg for arg, _ in applied) and PLATFORM_CONFIG in definitions:
        origin = next(o for a, o in reversed(applied) if platform_config_switch([a]) is not None)
        wanted.append((PLATFORM_CONFIG, origin))
    found: list[Finding] = []
    checked: list[str] = []  # in the order checked
    while wanted:
        name, used_at = wanted.pop(0)
        if name in checked:
            continue
        checked.append(name)
        defs = definitions.get(name, [])
        if not defs:
            found.append(_undefined(name, used_at, recipe, definitions))
        for definition in defs:
            wanted += [(c, definition) for c in config_uses(definition.args)]
    if not found:
        firsts = [(name, definitions[name][0]) for name in checked if name in plan.bazel_configs]
        where = ", ".join(f"{name} ({d.file}:{d.line})" for name, d in firsts)
        found.append(_CONFIGS.ok(f"every --config the build uses is defined: {where}", ".bazelrc"))
    return found


def _undefined(
    name: str,
    used_at: RcLine | None,
    recipe: Recipe | None,
    definitions: Mapping[str, list[RcLine]],
) -> Finding:
    close = difflib.get_close_matches(name, list(definitions), n=1)
    hint = ""
    if close:
        first = definitions[close[0]][0]
        hint = f"; did you mean {close[0]} ({first.file}:{first.line})?"
    why = f"bazel stops with \"Config value '{name}' is not defined in any .rc file\"{hint}"
    if used_at is not None:
        why = f"{used_at.file}:{used_at.line} names it; {why}"
        fix = "Fix the tree's rc files, or build from a complete checkout of the release"
    else:
        if recipe is not None and name in recipe.configs:
            why = f"{recipe.where('configs')} says this release defines it; {why}"
        fix = (
            "This tree is not the release the recipe describes: build the recipe's own source, or "
            "give a recipe for this tree with --recipes-dir whose configs list only what its "
            ".bazelrc defines (the planner then refuses that variant)"
        )
    return _CONFIGS.fail(
        f"--config={name} is not defined",
        used_at.file if used_at is not None else ".bazelrc",
        used_at.line if used_at is not None else None,
        why=why,
        fix=fix,
    )


# --- the other checks --------------------------------------------------------------------------------


def _check_bazelversion(plan: BuildPlan, tree: TreeFiles) -> Finding:
    text = tree.read(".bazelversion")
    first = (text or "").splitlines()[0].strip() if (text or "").strip() else ""
    if text is None or not first:
        runs = "its STAND-IN bazel" if plan.canary else f"the plan's bazel {plan.bazel}"
        return _BAZELVERSION.note(
            f"the tree pins no bazel version: the build runs {runs}",
            ".bazelversion",
            why="the STAND-IN canary runs Debian's bazel-bootstrap (4.2.3), whatever a tree pins"
            if plan.canary
            else "the toolchain image pins it (USE_BAZEL_VERSION) and nothing here asks for another",
        )
    if first != plan.bazel:
        return _BAZELVERSION.fail(
            f"the tree wants bazel {first}, the plan runs bazel {plan.bazel}",
            ".bazelversion",
            1,
            why="the toolchain image runs the plan's bazel (USE_BAZEL_VERSION wins over "
            ".bazelversion), and a release builds with the bazel it names: another stops on "
            "flags and rules it does not know",
            fix=f"Use a recipe whose bazel is {first} for this tree (--recipes-dir), or build the "
            "release the recipe is for",
        )
    return _BAZELVERSION.ok(f"bazel {first}, as planned", ".bazelversion", 1)


def _check_wheel_target(plan: BuildPlan, tree: TreeFiles) -> Finding:
    target = plan.build_target.rpartition(":")[2]
    build = next((p for p in PIP_PACKAGE_BUILD if tree.exists(p)), None)
    if build is None:
        return _WHEEL_TARGET.fail(
            f"the tree has no {PIP_PACKAGE_BUILD[0]}",
            PIP_PACKAGE_BUILD[0],
            why=f"bazel build {plan.build_target} needs the package that declares it",
            fix="Pass the top of a TensorFlow checkout",
        )
    rules = build_rules(tree.read(build) or "")
    if target in rules:
        kind, line = rules[target]
        return _WHEEL_TARGET.ok(
            f'{kind}(name = "{target}") builds {plan.build_target}', build, line
        )
    other = "build_pip_package" if target == "wheel" else "wheel"
    why = f'bazel build {plan.build_target} stops with "no such target"'
    if other in rules:
        why += f"; this tree has :{other} ({build}:{rules[other][1]}), the other wheel flow"
    return _WHEEL_TARGET.fail(
        f"no {target} target",
        build,
        why=why,
        fix="Use the recipe of this tree's release (the :wheel target arrived in 2.17), or build "
        "the release the recipe is for",
    )


def _check_python_lock(plan: BuildPlan, tree: TreeFiles) -> Finding:
    python = plan.python
    workspace = tree.read("WORKSPACE") or ""
    mapped = python_locks(workspace)
    if mapped:
        if python not in mapped:
            first_line = min(line for _, line in mapped.values())
            return _PYTHON_LOCK.fail(
                f"no requirements lock for Python {python}",
                "WORKSPACE",
                first_line,
                why=f"python_init_repositories maps only {', '.join(mapped)}: bazel cannot set up a "
                f"hermetic Python {python}",
                fix=f"Build for one of those (--python X.Y), or a tree that supports {python}",
            )
        label, line = mapped[python]
        rel = label_path(label)
        if rel is None or tree.exists(rel):
            in_tree = "" if rel else " (in another repository)"
            return _PYTHON_LOCK.ok(f"Python {python}: {label}{in_tree}", "WORKSPACE", line)
        return _PYTHON_LOCK.fail(
            f"WORKSPACE maps Python {python} to {label}, which the tree lacks",
            "WORKSPACE",
            line,
            why="bazel stops when rules_python reads the lock file",
            fix="Build from a complete checkout of the release",
        )
    rel = f"requirements_lock_{python.replace('.', '_')}.txt"
    if tree.exists(rel):
        return _PYTHON_LOCK.ok(f"Python {python}: {rel}", rel)
    have = sorted(
        (p.name for p in tree.root.glob("requirements_lock_*.txt")),
        key=lambda n: [int(x) for x in re.findall(r"\d+", n)],
    )
    return _PYTHON_LOCK.fail(
        f"no {rel} for Python {python}",
        rel,
        why="hermetic Python installs the build's packages from that lock"
        + (f"; the tree has {', '.join(have)}" if have else "; the tree has none"),
        fix="Build for a Python the tree has a lock for (--python X.Y)",
    )


def _check_cuda_versions(plan: BuildPlan, tree: TreeFiles) -> list[Finding]:
    assert plan.cuda is not None
    loaded, candidates, table = cuda_table(tree)
    if loaded is not None and loaded.path is None:
        return [_CUDA_VERSIONS.downloaded("the CUDA tables come from", loaded)]
    if table is None:
        return [
            _CUDA_VERSIONS.note(
                "not checked: the tree has none of the known CUDA version tables",
                candidates[0],
                why=f"looked for {', '.join(candidates)}",
            )
        ]
    keys = table_keys(tree.read(table) or "")
    if not keys:
        what = "not checked: no CUDA_REDIST_JSON_DICT in the table (another layout)"
        return [_CUDA_VERSIONS.note(what, table)]
    found = []
    for kind, version, option in (
        ("cuda", plan.cuda.cuda, "--cuda-version"),
        ("cudnn", plan.cuda.cudnn, "--cudnn-version"),
    ):
        known = keys.get(kind, {})
        name = "CUDA" if kind == "cuda" else "cuDNN"
        if version in known:
            what = f"hermetic {name} {version} is in the tree's table"
            found.append(_CUDA_VERSIONS.ok(what, table, known[version]))
        else:
            found.append(
                _CUDA_VERSIONS.fail(
                    f"hermetic {name} {version} is not a key of {kind.upper()}_REDIST_JSON_DICT",
                    table,
                    why=f"the table knows {', '.join(known) or 'nothing'}; bazel cannot fetch "
                    "another",
                    fix=f"Pass {option} with one of those, or fix the recipe's cuda row for this "
                    "tree (--recipes-dir)",
                )
            )
    return found


#: What cuda_configure.bzl reads TF_SYSROOT and the hermetic switch by (code, not its docstring).
_TF_SYSROOT = "_TF_SYSROOT"
_HERMETIC_SWITCH = "USE_HERMETIC_CC_TOOLCHAIN"
_DEVTOOLSET_CASE = re.compile(r"^\s*devtoolset-9\)")
#: Where a TensorFlow tree declares its repositories: the workspace files, and XLA's own.
_XLA_WORKSPACES = "third_party/xla"
_COMMIT = re.compile(r"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])")


def _check_toolchain(
    plan: BuildPlan, recipe: Recipe | None, tree: TreeFiles, applied: Applied
) -> list[Finding]:
    found: list[Finding] = []
    wants_rules_ml = plan.route == "hermetic" or any(
        "@rules_ml_toolchain" in line for line in plan.rc_lines
    )
    if wants_rules_ml:
        found += _rules_ml_toolchain(plan, recipe, tree)
    if plan.route == "sysroot" and plan.sysroot is not None:
        if plan.sysroot.builder == "devtoolset-9":
            found.append(_devtoolset(tree))
        loaded, present = _crosstool_files(tree)
        found.append(_crosstool(plan, tree, loaded, present))
        found.append(_hermetic_switch(applied, loaded, present))
    return found or [
        _TOOLCHAIN.ok("the image's own compiler and glibc: nothing of the tree to check")
    ]


def _unreadable(rel: str, error: StarlarkError) -> Finding:
    return _TOOLCHAIN.fail(
        f"{rel} cannot be read as Starlark ({error})",
        rel,
        error.line or None,
        why="bazel could not load it either",
        fix="Restore the file from the release's source, or build from a complete checkout",
    )


def _repository_rules(tree: TreeFiles, name: str) -> tuple[list[tuple[str, Call]], list[Finding]]:
    """Every repository rule named ``name`` in the tree's workspace files, with its file."""
    xla = sorted(p.name for p in (tree.root / _XLA_WORKSPACES).glob("workspace*.bzl"))
    files = [*workspace_files(tree), *(f"{_XLA_WORKSPACES}/{n}" for n in xla)]
    rules: list[tuple[str, Call]] = []
    broken: list[Finding] = []
    for rel in files:
        text = tree.read(rel)
        if not text or name not in text:
            continue
        try:
            rules += [(rel, call) for call in calls(text) if call.name == name]
        except StarlarkError as error:
            broken.append(_unreadable(rel, error))
    return rules, broken


def _pinned_commit(call: Call) -> str | None:
    """The commit a repository rule downloads: its ``commit``, else the one its ``strip_prefix``
    and ``urls`` name (``rules_ml_toolchain-<commit>``, ``.../archive/<commit>.tar.gz``)."""
    if "commit" in call.keywords:
        return call.keywords["commit"][0]
    named = {m.group(0) for s in call.strings for m in _COMMIT.finditer(s)}
    return named.pop() if len(named) == 1 else None


def _rules_ml_toolchain(plan: BuildPlan, recipe: Recipe | None, tree: TreeFiles) -> list[Finding]:
    rules, broken = _repository_rules(tree, "rules_ml_toolchain")
    if broken:
        return broken
    why_needed = (
        "the plan compiles with TensorFlow's hermetic toolchain (rules_ml_toolchain, 2.21+)"
        if plan.route == "hermetic"
        else "the rendered rc file sets @rules_ml_toolchain flags (its opt-out)"
    )
    if not rules:
        return [
            _TOOLCHAIN.fail(
                "the tree declares no rules_ml_toolchain repository",
                "WORKSPACE",
                why=f'{why_needed}; no repository rule (name = "rules_ml_toolchain") in the '
                "WORKSPACE or the workspace*.bzl files it loads, and bazel cannot load from a "
                "repository the tree never declares",
                fix="Build from a complete checkout of the release (its tensorflow/workspace*.bzl "
                "included), or with --no-portable",
            )
        ]
    wanted = recipe.toolchain.rules_ml_toolchain if recipe and recipe.toolchain else None
    found: list[Finding] = []
    agreeing: list[tuple[str, int]] = []  # the rules that pin the recipe's commit
    for rel, call in rules:
        line = call.keywords["name"][1]
        commit = _pinned_commit(call)
        if commit is None:
            found.append(
                _TOOLCHAIN.note(
                    f"not compared: the tree's rules_ml_toolchain ({call.function}) names no commit",
                    rel,
                    line,
                    why="a local or unpinned repository: the plan's toolchain flags are those of "
                    f"rules_ml_toolchain {(wanted or '?')[:7]}",
                )
            )
        elif wanted is None:
            what = f"the tree pins rules_ml_toolchain {commit[:7]} (no recipe to compare with)"
            found.append(_TOOLCHAIN.ok(what, rel, line))
        elif commit == wanted:
            agreeing.append((rel, line))
        else:
            assert recipe is not None
            found.append(
                _TOOLCHAIN.fail(
                    f"the tree pins rules_ml_toolchain {commit[:7]}, the recipe {wanted[:7]}",
                    rel,
                    line,
                    why=f"{recipe.where('toolchain')} plans with the flags and defaults of "
                    f"{wanted[:7]} (LLVM, SYSROOT_DIST, //common:enable_hermetic_cc); another "
                    "commit may name them otherwise or default differently",
                    fix="Build the recipe's own source, or give a recipe for this tree with "
                    f"--recipes-dir whose toolchain.rules_ml_toolchain is {commit} (after checking "
                    "that commit's defaults)",
                )
            )
    if agreeing:
        assert wanted is not None
        also = ", ".join(f"{rel}:{line}" for rel, line in agreeing[1:])
        what = f"the tree pins rules_ml_toolchain {wanted[:7]}, the recipe's"
        what += f" (and so does {also})" if also else ""
        found.insert(0, _TOOLCHAIN.ok(what, *agreeing[0]))
    return found


def _devtoolset(tree: TreeFiles) -> Finding:
    for directory in DEVTOOLSET_DIRS:
        rel = f"{directory}/build_devtoolset.sh"
        text = tree.read(rel)
        if text is None:
            continue
        line = line_of(text, _DEVTOOLSET_CASE)
        if line is not None:
            return _TOOLCHAIN.ok(
                "build_devtoolset.sh builds devtoolset-9 (the /dt9 sysroot)", rel, line
            )
        return _TOOLCHAIN.fail(
            "build_devtoolset.sh has no devtoolset-9 case",
            rel,
            why="the toolchain image's sysroot stage runs 'build_devtoolset.sh devtoolset-9 /dt9'",
            fix="Build with --no-portable (the image's glibc), or --sysroot-from IMAGE",
        )
    return _TOOLCHAIN.fail(
        "the tree has no builder.devtoolset/build_devtoolset.sh",
        f"{DEVTOOLSET_DIRS[0]}/build_devtoolset.sh",
        why=f"the toolchain image's sysroot stage looks in {' and '.join(DEVTOOLSET_DIRS)} "
        "for the script that makes /dt9, and would fail",
        fix="Build with --no-portable (the image's glibc), or --sysroot-from IMAGE",
    )


def _crosstool_files(tree: TreeFiles) -> tuple[Loaded | None, list[str]]:
    """Where the workspace loads cuda_configure.bzl from, and the tree's files it may be."""
    loaded = loaded_from(tree, ("cuda_configure.bzl",))
    if loaded is not None and loaded.path is None:
        return loaded, []
    candidates = (f"{loaded.path}/cuda_configure.bzl",) if loaded is not None else CROSSTOOLS
    return loaded, [c for c in candidates if tree.exists(c)]


def _crosstool(
    plan: BuildPlan, tree: TreeFiles, loaded: Loaded | None, present: list[str]
) -> Finding:
    assert plan.sysroot is not None
    if loaded is not None and loaded.path is None:
        return _TOOLCHAIN.downloaded("the crosstool comes from", loaded)
    if not present:
        return _TOOLCHAIN.note(
            "not checked: the tree has none of the known cuda_configure.bzl files",
            f"{loaded.path}/cuda_configure.bzl" if loaded is not None else CROSSTOOLS[0],
            why="the receipt's floor (auditwheel) shows after the build whether the sysroot was used",
        )
    for rel in present:
        try:
            code = constants(tree.read(rel) or "")
        except StarlarkError as error:
            return _unreadable(rel, error)
        if code.get(_TF_SYSROOT, ("",))[0] == "TF_SYSROOT":
            what = f"the crosstool reads TF_SYSROOT ({plan.sysroot.name})"
            return _TOOLCHAIN.ok(what, rel, code[_TF_SYSROOT][1])
    return _TOOLCHAIN.fail(
        "the crosstool never reads TF_SYSROOT",
        present[0],
        why=f"no '{_TF_SYSROOT} = \"TF_SYSROOT\"' in its code (a docstring or comment does not "
        f"count): the wheel would link against the image's glibc, not the sysroot "
        f"{plan.sysroot.name}, and miss the recipe's floor",
        fix="Build with --no-portable (a wheel for systems as new as the image), or use the "
        "recipe of this tree's release",
    )


def _hermetic_switch(applied: Applied, loaded: Loaded | None, present: list[str]) -> Finding:
    """The sysroot route needs cuda_configure.bzl to generate its crosstool, which it does only
    while ``USE_HERMETIC_CC_TOOLCHAIN`` is not ``1`` (``_cuda_configure_impl``; the 2.21.0 tree's
    .bazelrc sets it to 1). Its last value, as bazel applies the rc files, decides."""
    value, origin = repo_env(applied, _HERMETIC_SWITCH)
    crosstool = loaded.label if loaded is not None and loaded.path is None else None
    crosstool = crosstool or (present[0] if present else "cuda_configure.bzl")
    in_tree = origin is not None and not origin.file.startswith("(")
    if value == "1":
        return _TOOLCHAIN.fail(
            f"the tree turns TensorFlow's hermetic C++ toolchain on ({_HERMETIC_SWITCH}=1, "
            "the value bazel ends with)",
            origin.file if origin is not None else ".bazelrc",
            origin.line if origin is not None else None,
            why=f"with it {crosstool} generates no crosstool, so the sysroot route's "
            "--crosstool_top=@local_config_cuda//crosstool:toolchain has nothing to point at",
            fix=f"Remove that setting from the tree's rc files (or set {_HERMETIC_SWITCH}=0 after "
            "it), or build with the recipe of this tree's release",
        )
    said = f"{origin.file}:{origin.line}" if origin is not None else "no rc line sets it"
    return _TOOLCHAIN.ok(
        f"{_HERMETIC_SWITCH}={value or '(unset)'} ({said}): {crosstool} generates the crosstool",
        origin.file if in_tree and origin is not None else None,
        origin.line if in_tree and origin is not None else None,
    )


# --- the report ----------------------------------------------------------------------------------------


def preflight(plan: BuildPlan, recipe: Recipe | None, tree: Path) -> PreflightReport:
    """Check ``tree`` (the top of a source tree) against ``plan`` (and the recipe it came from;
    None for a rebuild from a receipt). Only reads files of ``tree``."""
    files = TreeFiles(tree)
    rc = read_rc(files, plan.rc_lines)
    lines = _all_lines(plan, rc)
    applied = expand(lines, plan.bazel_configs)
    findings: list[Finding] = [
        _check_bazelversion(plan, files),
        *_check_bazelrc(rc),
        *_check_configs(plan, recipe, lines, applied),
        _check_wheel_target(plan, files),
    ]
    version = tfversions.parse_version(plan.tensorflow)
    hermetic_python = recipe.hermetic_python if recipe else tfversions.hermetic_python(version)
    if plan.canary:
        why = "the STAND-IN canary's bazel resolves no Python packages"
        findings.append(_PYTHON_LOCK.skipped("hermetic Python's requirements lock", why))
    elif hermetic_python:
        findings.append(_check_python_lock(plan, files))
    if plan.cuda is not None and plan.cuda.hermetic:
        findings += _check_cuda_versions(plan, files)
    if plan.canary:
        why = (
            "the STAND-IN canary's bazel compiles with the planned compiler itself, "
            "TF_SYSROOT included"
        )
        findings.append(_TOOLCHAIN.skipped("the toolchain route", why))
    else:
        findings += _check_toolchain(plan, recipe, files, applied)
    standin = " (STAND-IN canary)" if plan.canary else ""
    cuda = f" CUDA {plan.cuda.cuda}" if plan.cuda else ""
    described = f"TensorFlow {plan.tensorflow}{standin} {plan.variant}{cuda}, Python {plan.python}"
    return PreflightReport(tree=str(tree), plan=described, findings=tuple(findings))
