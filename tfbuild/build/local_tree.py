"""A local source directory (``--source DIR``): is it a TensorFlow tree, its git commit and
cleanliness, and the times its epoch comes from.

Nothing here changes the directory: git runs without optional locks, and never looks above it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tfbuild.core import commands
from tfbuild.core.errors import InputError

CLONE_FIX = (
    "Pass the top of a TensorFlow checkout "
    "(e.g. git clone https://github.com/tensorflow/tensorflow)."
)
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_EPOCH = re.compile(r"[0-9]+")

#: What a build writes into the tree itself: build.sh copies the rendered configure file there,
#: where TensorFlow's .bazelrc imports it. Counting it would move the next build's date.
BUILD_WRITES = frozenset({".tf_configure.bazelrc"})


def check_tree(path: Path, marker: str) -> None:
    """InputError unless ``path`` is a directory with a ``marker`` subdirectory."""
    what = f"cannot use {path} as the TensorFlow source"
    try:
        if not path.is_dir():
            why = "it is not a directory" if path.exists() else "it does not exist"
            raise InputError(what, why=why, fix=CLONE_FIX)
        has_marker = (path / marker).is_dir()
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=CLONE_FIX) from None
    if not has_marker:
        raise InputError(
            f"{path} does not look like a TensorFlow source tree",
            why=f"it has no {marker}",
            fix=CLONE_FIX,
        )


def git_state(path: Path) -> tuple[str | None, bool | None]:
    """HEAD and dirtiness of the checkout at ``path``; None for what git cannot tell."""
    head = _git(path, "rev-parse", "HEAD")
    commit = head.strip() if head is not None and _COMMIT.fullmatch(head.strip()) else None
    if commit is None:
        return None, None
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status.strip())


def git_epoch(path: Path) -> int | None:
    """The HEAD commit's time (committer date, seconds since the epoch), or None."""
    out = _git(path, "log", "-1", "--format=%ct")
    text = out.strip() if out is not None else ""
    return int(text) if _EPOCH.fullmatch(text) else None


def newest_mtime(root: Path) -> float | None:
    """The newest mtime among the files below ``root`` (symlinks not followed; ``.git``, bazel's
    ``bazel-*`` output links and BUILD_WRITES left out), or None when there is no file."""
    newest: float | None = None
    for name_of_top, dirs, files in os.walk(root):  # Path.walk() needs Python 3.12
        top = Path(name_of_top)
        dirs[:] = [d for d in dirs if not _skipped(top / d)]
        for name in files:
            if _skipped(top / name):
                continue
            try:
                mtime = (top / name).lstat().st_mtime
            except OSError:
                continue
            newest = mtime if newest is None else max(newest, mtime)
    return newest


def _skipped(path: Path) -> bool:
    """``.git`` (a directory, or a worktree's file), bazel's ``bazel-*`` output links and the
    files a build writes into the tree (BUILD_WRITES, at its top)."""
    return (
        path.name == ".git"
        or (path.name.startswith("bazel-") and path.is_symlink())
        or path.name in BUILD_WRITES
    )


def _git(path: Path, *args: str) -> str | None:
    """``git -C path ARGS``'s output, or None if git is missing, fails or hangs (never an error)."""
    # No optional locks: a status must not take index.lock while the user works in the checkout.
    # No discovery above ``path``: a directory whose .git is broken is not the repository around it.
    env = {
        **os.environ,
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_CEILING_DIRECTORIES": str(path.parent),
    }
    proc = commands.attempt(
        commands.Command(argv=("git", "-C", str(path), *args), what="git", env=env, timeout=60)
    )
    return proc.stdout if proc.returncode == 0 else None
