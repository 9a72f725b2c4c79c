"""Where tfbuild's data directories (``templates/``, ``recipes/``) are.

In a source checkout (and an editable install) they are the top-level folders of the repository; in
an installed wheel they are copied to ``tfbuild/_data/`` (see ``force-include`` in pyproject.toml).
"""

from __future__ import annotations

import os
from pathlib import Path

from tfbuild.core.errors import EnvironmentProblem

_PACKAGE = Path(__file__).resolve().parent.parent  # tfbuild/, above core/
DATA_NAMES = ("templates", "recipes")


def data_dir(name: str) -> Path:
    """The directory of shipped data called ``name`` (``templates`` or ``recipes``)."""
    if name not in DATA_NAMES:
        msg = f"unknown data directory {name!r}"
        raise ValueError(msg)
    refused: list[Path] = []
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        try:
            found = candidate.is_dir()
        except PermissionError:  # a directory on the way this user may not enter
            refused.append(candidate)
            continue
        if found:
            if not os.access(candidate, os.R_OK | os.X_OK):
                raise _unreadable(name, candidate.parent, candidate)
            return candidate
    if refused:
        # Both refused: what stops them is above tfbuild itself (a checkout in a private home).
        where = refused[0].parent if len(refused) == 1 else _PACKAGE.parent
        raise _unreadable(name, where, _first_closed(refused[0]) or refused[0])
    raise EnvironmentProblem(
        f"tfbuild's {name}/ directory is missing",
        why=f"neither {_PACKAGE / '_data' / name} nor {_PACKAGE.parent / name} exists",
        fix="Reinstall tfbuild (pip install --force-reinstall tfbuild).",
    )


def _first_closed(path: Path) -> Path | None:
    """The first directory on the way to ``path`` (from ``/`` down) this process may not enter."""
    return next((p for p in reversed(path.parents) if not os.access(p, os.X_OK)), None)


def _unreadable(name: str, where: Path, closed: Path) -> EnvironmentProblem:
    """tfbuild's own data cannot be read by this user: a checkout or virtualenv in another user's
    private directory (a 0700 home), run by a user who may not enter it."""
    return EnvironmentProblem(
        f"tfbuild cannot read its own data directory {name}/ in {where}",
        why=f"{closed} is closed to this user (uid {os.getuid()}): permission denied",
        fix=(
            f"Run tfbuild as a user who may read {where}, or install tfbuild where this user can "
            "(python3 -m venv DIR && DIR/bin/pip install tfbuild)."
        ),
    )
