"""``tfbuild matrix``: the CI build matrix, TensorFlow x Python x CPU target x variant."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfbuild.cli.options import takes
from tfbuild.core.options import JSON, RECIPES_DIR, TF, declared, option
from tfbuild.core.pythons import PYTHON, python_version

if TYPE_CHECKING:
    from tfbuild.plan.matrix import Matrix, OverlayMatrix

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
    targets: tuple[str, ...] = declared(
        (),
        "--targets",
        metavar="NAME",
        help=f"Portable CPU targets ({_SEVERAL}; default: x86_64_v2,x86_64_v3,x86_64_v4).",
    )
    variants: tuple[str, ...] = declared(
        (), "--variants", metavar="NAME", help=f"cpu, mkl, cuda ({_SEVERAL}; default: cpu)."
    )
    overlays: bool = declared(
        False,
        "--overlays",
        help="The overlay jobs instead (tfbuild overlay): TensorFlow release x target "
        "(default targets: x86_64_v3, x86_64_v4, icelake, sapphirerapids, graniterapids, "
        "zen4, zen5).",
    )
    explain: bool = declared(
        False, "--explain", help="Say why each left-out combination is impossible."
    )
    as_json: bool = option(
        JSON.but(help="One line of JSON for GitHub Actions' fromJSON: {include}."), default=False
    )
    recipes_dir: tuple[Path, ...] = option(RECIPES_DIR, default=())


@takes(MatrixArgs)
def matrix_command(request: MatrixArgs) -> None:
    """The CI build matrix: TensorFlow x Python x CPU target x variant, impossible ones left out."""
    from tfbuild.core.errors import UsageError
    from tfbuild.plan.matrix import build_matrix, overlay_matrix
    from tfbuild.recipes.images import load_base_images
    from tfbuild.recipes.recipe import load_recipes

    matrix: Matrix | OverlayMatrix
    given = [f for f, v in (("--python", request.python), ("--variants", request.variants)) if v]
    if request.overlays and given:
        raise UsageError(
            f"--overlays with {' and '.join(given)}",
            why="an overlay is one py3-none wheel per release and target, of the cpu variant",
            fix=f"Drop {' and '.join(given)}.",
        )
    recipes, images = load_recipes(request.recipes_dir), load_base_images(request.recipes_dir)
    if request.overlays:  # the overlay jobs
        matrix = overlay_matrix(recipes, images, tf=request.tf, targets=request.targets)
        title = "CI overlay matrix"
        columns = ("job (overlay-tf-target)", "wheel label", "stock Python")
        rows = [(job.name, f"+{job.label}", job.python) for job in matrix.jobs]
    else:
        matrix = build_matrix(
            recipes,
            images,
            tf=request.tf,
            python=request.python,
            targets=request.targets,
            variants=request.variants,
        )
        title = "CI build matrix"
        columns = ("job (tf-python-target-variant)", "wheel label", "CUDA")
        rows = [(job.name, f"+{job.label}", job.cuda or "-") for job in matrix.jobs]
    # Why each combination was left out (--explain, on stderr), then the matrix: one line of JSON
    # (the workflow writes it to $GITHUB_OUTPUT as name=<json>), or the table.
    if request.explain:
        from tfbuild.cli.display import print_skipped

        print_skipped(matrix.skipped)
    if request.as_json:
        sys.stdout.write(json.dumps(matrix.to_json(), separators=(",", ":")) + "\n")
        return
    from tfbuild.cli.display import print_matrix

    left_out = 0 if request.explain else len(matrix.skipped)
    print_matrix(title, columns, rows, left_out=left_out)
