"""What a source tree's WORKSPACE, BUILD and .bzl files declare, read by pattern (bazel never runs).

Where the paths come from (tensorflow/tensorflow, stored copies; tests/fixtures/trees/README.md):
``third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl`` @13ea77ab,
``third_party/xla/third_party/tsl/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl`` @521421ea,
``third_party/xla/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl`` @014edaa4; WORKSPACE
@004d817e loads them from ``@rules_ml_toolchain//gpu/cuda`` instead (master, 2026), and
tensorflow/text's WORKSPACE for 2.20.0 from ``@local_xla//third_party/gpus/cuda/hermetic``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tfbuild.build.preflight.tree_files import TreeFiles

#: TensorFlow's hermetic CUDA version tables, newest layout first (see the module docstring).
CUDA_TABLES = (
    "third_party/xla/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl",
    "third_party/xla/third_party/tsl/third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl",
    "third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl",
)
#: Where a WORKSPACE's ``@repo//`` labels live inside TensorFlow's tree.
LOCAL_REPOSITORIES = {
    "": "",
    "@": "",
    "@org_tensorflow": "",
    "@local_xla": "third_party/xla",
    "@xla": "third_party/xla",
    "@local_tsl": "third_party/xla/third_party/tsl",
    "@tsl": "third_party/xla/third_party/tsl",
}

_RULE = re.compile(r"^([A-Za-z_][\w.]*)\s*\(")
_NAME = re.compile(r'^\s+name\s*=\s*"([^"]+)"')


def build_rules(text: str) -> dict[str, tuple[str, int]]:
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


REQUIREMENT = re.compile(r'"(\d+\.\d+)"\s*:\s*"(@?[\w.-]*//[\w/.-]*:[\w.-]+)"')


def label_path(label: str) -> str | None:
    """``//:requirements_lock_3_12.txt`` -> ``requirements_lock_3_12.txt`` (None: another repository)."""
    repository, _, rest = label.partition("//")
    if repository not in LOCAL_REPOSITORIES:
        return None
    package, _, name = rest.partition(":")
    return "/".join(p for p in (LOCAL_REPOSITORIES[repository], package, name) if p)


def python_locks(workspace: str) -> dict[str, tuple[str, int]]:
    """The requirements locks a WORKSPACE maps each Python to: ``X.Y`` -> (label, line)."""
    return {
        m.group(1): (m.group(2), workspace[: m.start()].count("\n") + 1)
        for m in REQUIREMENT.finditer(workspace)
    }


_LOAD = re.compile(
    r'"(@?[\w.-]*)//([\w/.-]*):(cuda_redist_(?:init_repositories|versions)\.bzl|cuda_configure\.bzl)"'
)


def workspace_files(tree: TreeFiles) -> list[str]:
    """WORKSPACE, then the ``tensorflow/workspace*.bzl`` files it loads its macros from."""
    macros = sorted(p.name for p in (tree.root / "tensorflow").glob("workspace*.bzl"))
    return ["WORKSPACE", *(f"tensorflow/{name}" for name in macros)]


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """Where the workspace loads a file from: ``path`` in the tree (None: another repository)."""

    path: str | None
    label: str
    file: str  # the workspace file that loads it
    line: int


def loaded_from(tree: TreeFiles, files: tuple[str, ...]) -> Loaded | None:
    """The first load of one of ``files`` in the workspace files; None when none loads one."""
    for rel in workspace_files(tree):
        text = tree.read(rel) or ""
        for match in _LOAD.finditer(text):
            if match.group(3) not in files:
                continue
            repository, package = match.group(1), match.group(2)
            path = None
            if repository in LOCAL_REPOSITORIES:
                path = "/".join(p for p in (LOCAL_REPOSITORIES[repository], package) if p)
            return Loaded(
                path=path,
                label=f"{repository}//{package}:{match.group(3)}",
                file=rel,
                line=text[: match.start()].count("\n") + 1,
            )
    return None


CUDA_LOADS = ("cuda_redist_init_repositories.bzl", "cuda_redist_versions.bzl")


def cuda_table(tree: TreeFiles) -> tuple[Loaded | None, tuple[str, ...], str | None]:
    """The workspace's load of the CUDA tables; the files the table may be: the one loaded
    (beside its cuda_redist_init_repositories.bzl), else every known one, none when it is in
    another repository; the first of them the tree has (None: none)."""
    loaded = loaded_from(tree, CUDA_LOADS)
    candidates: tuple[str, ...] = CUDA_TABLES
    if loaded is not None:
        candidates = () if loaded.path is None else (f"{loaded.path}/cuda_redist_versions.bzl",)
    return loaded, candidates, next((c for c in candidates if tree.exists(c)), None)


_TABLE = re.compile(r"^(CUDA|CUDNN)_REDIST_JSON_DICT\s*=\s*\{\s*$")
_KEY = re.compile(r'^\s{4}"([0-9][0-9.]*)"\s*:')


def table_keys(text: str) -> dict[str, dict[str, int]]:
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
