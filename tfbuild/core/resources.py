"""Where tfbuild's data directories (``templates/``, ``recipes/``) are.

In a source checkout (and an editable install) they are the top-level folders of the repository; in
an installed wheel they are copied to ``tfbuild/_data/`` (see ``force-include`` in pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path

from tfbuild.core.errors import EnvironmentProblem

_PACKAGE = Path(__file__).resolve().parent.parent  # tfbuild/, above core/
DATA_NAMES = ("templates", "recipes")


def data_dir(name: str) -> Path:
    """The directory of shipped data called ``name`` (``templates`` or ``recipes``)."""
    if name not in DATA_NAMES:
        msg = f"unknown data directory {name!r}"
        raise ValueError(msg)
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise EnvironmentProblem(
        f"tfbuild's {name}/ directory is missing",
        why=f"neither {_PACKAGE / '_data' / name} nor {_PACKAGE.parent / name} exists",
        fix="Reinstall tfbuild (pip install --force-reinstall tfbuild).",
    )
