"""``tfbuild matrix``: the CI build matrix, TensorFlow x Python x CPU target x variant."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfbuild.cli.options import takes
from tfbuild.core.options import JSON, RECIPES_DIR, TF, Cli, option
from tfbuild.core.pythons import PYTHON, python_version

if TYPE_CHECKING:
    from tfbuild.plan.matrix import Matrix, Skipped

_SEVERAL = "repeat, or separate with commas"


def _pythons(values: list[str]) -> tuple[str, ...]:
    """Each ``--python`` of the matrix (comma-separated or repeated) as X.Y: a version as given,
    an interpreter's own."""
    return tuple(
        python_version(item.strip())
        for value in values
        for item in value.split(",")
        if item.strip()
    )


@dataclass(frozen=True, kw_only=True)
class MatrixArgs:
    """What ``tfbuild matrix`` was asked: each axis's values, empty for its default."""

    tf: tuple[str, ...] = option(
        TF.but(help=f"TensorFlow releases ({_SEVERAL}), or all (default: the newest recipe)."),
        default=(),
    )
    python: tuple[str, ...] = option(
        PYTHON.but(
            help=f"The Pythons the wheels are for, each a version or an interpreter ({_SEVERAL}; "
            "default: all a release supports).",
            cli_type=list[str] | None,
            convert=_pythons,
        ),
        default=(),
    )
    targets: tuple[str, ...] = option(
        Cli(
            flags=("--targets",),
            metavar="NAME",
            help=f"Portable CPU targets ({_SEVERAL}; default: x86_64_v2,x86_64_v3,x86_64_v4).",
            show_default=False,
        ),
        default=(),
    )
    variants: tuple[str, ...] = option(
        Cli(
            flags=("--variants",),
            metavar="NAME",
            help=f"cpu, mkl, cuda ({_SEVERAL}; default: cpu).",
            show_default=False,
        ),
        default=(),
    )
    overlays: bool = option(
        Cli(
            flags=("--overlays",),
            help="The overlay jobs instead (tfbuild overlay): TensorFlow release x target "
            "(default targets: x86_64_v3, x86_64_v4, icelake, sapphirerapids, graniterapids, "
            "zen4, zen5).",
        ),
        default=False,
    )
    explain: bool = option(
        Cli(flags=("--explain",), help="Say why each left-out combination is impossible."),
        default=False,
    )
    as_json: bool = option(
        JSON.but(help="One line of JSON for GitHub Actions' fromJSON: {include}."), default=False
    )
    recipes_dir: tuple[Path, ...] = option(RECIPES_DIR, default=())


@takes(MatrixArgs)
def matrix_command(request: MatrixArgs) -> None:
    """The CI build matrix: TensorFlow x Python x CPU target x variant, impossible ones left out."""
    from tfbuild.plan.matrix import build_matrix
    from tfbuild.recipes.images import load_base_images
    from tfbuild.recipes.recipe import load_recipes

    if request.overlays:
        _overlays(request)
        return
    matrix = build_matrix(
        load_recipes(request.recipes_dir),
        load_base_images(request.recipes_dir),
        tf=request.tf,
        python=request.python,
        targets=request.targets,
        variants=request.variants,
    )
    _print(request, matrix.skipped, matrix.to_json(), lambda: _table(matrix, request.explain))


def _table(matrix: Matrix, explain: bool) -> None:
    from tfbuild.cli.display import print_matrix

    print_matrix(matrix, explain=explain)


def _print(
    request: MatrixArgs,
    skipped: Sequence[Skipped],
    data: dict[str, Any],
    table: Callable[[], None],
) -> None:
    """Why each combination was left out (--explain, on stderr), then the matrix: one line of
    JSON (the workflow writes it to $GITHUB_OUTPUT as name=<json>), or the table."""
    if request.explain:
        from tfbuild.cli.display import print_skipped

        print_skipped(skipped)
    if request.as_json:
        sys.stdout.write(json.dumps(data, separators=(",", ":")) + "\n")
        return
    table()


def _overlays(request: MatrixArgs) -> None:
    """``tfbuild matrix --overlays``: the overlay jobs."""
    from tfbuild.core.errors import UsageError
    from tfbuild.plan.matrix import overlay_matrix
    from tfbuild.recipes.images import load_base_images
    from tfbuild.recipes.recipe import load_recipes

    given = [f for f, v in (("--python", request.python), ("--variants", request.variants)) if v]
    if given:
        raise UsageError(
            f"--overlays with {' and '.join(given)}",
            why="an overlay is one py3-none wheel per release and target, of the cpu variant",
            fix=f"Drop {' and '.join(given)}.",
        )
    matrix = overlay_matrix(
        load_recipes(request.recipes_dir),
        load_base_images(request.recipes_dir),
        tf=request.tf,
        targets=request.targets,
    )
    from tfbuild.cli.display import print_overlay_matrix

    _print(
        request,
        matrix.skipped,
        matrix.to_json(),
        lambda: print_overlay_matrix(matrix, explain=request.explain),
    )
