"""The CI build matrix: TensorFlow × Python × CPU target × variant, from the recipes.

Every combination is planned with the same :func:`tfbuild.plan.make_plan` that ``tfbuild wheel``
runs, for a nominal CI build runner (x86_64, no GPU, no knowledge of the CPUs the wheels will run
on). A combination the planner refuses is left out with the planner's own reason, so the matrix
never holds a job that would fail at its first step, and never disagrees with ``tfbuild wheel``
about what is possible. CI wheels are for named portable targets, never for the runner's own CPU.
Pure: recipes in, a frozen :class:`Matrix` out.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tfbuild.core import serial
from tfbuild.core.errors import TfbuildError, UsageError
from tfbuild.core.variants import VARIANTS, Variant
from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.detect.host import HostFacts
from tfbuild.plan import GIB, BuildPlan, PlanOptions, make_plan
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe, RecipeSet
from tfbuild.recipes.tfversions import parse_version

DEFAULT_TARGETS = ("x86_64_v2", "x86_64_v3", "x86_64_v4")
#: The overlays' default targets: the portable levels with more than stock's AVX, and the server
#: microarchitectures clouds rent (AMD's Zen 4 and Zen 5, Intel's Ice Lake to Granite Rapids).
DEFAULT_OVERLAY_TARGETS = (
    "x86_64_v3",
    "x86_64_v4",
    "icelake",
    "sapphirerapids",
    "graniterapids",
    "zen4",
    "zen5",
)
DEFAULT_VARIANTS: tuple[Variant, ...] = (Variant.cpu,)
#: GitHub Actions runs at most this many jobs from one matrix.
GITHUB_MATRIX_LIMIT = 256
J = TypeVar("J")

#: The build runner as the planner sees it: the wheels are never for this machine.
RUNNER = HostFacts(
    machine=CpuInfo(
        source="a CI build runner", architecture="x86_64", vendor="generic", brand=None
    ),
    machine_is_build_host=False,
    build_cpus=16,
    build_memory_bytes=64 * GIB,
    build_disk_path=None,
    build_disk_free_bytes=None,
    python="3.11",
)


@dataclass(frozen=True, kw_only=True)
class Job:
    """One build job: what `tfbuild wheel` is asked for, and what the wheel will be labelled."""

    name: str  # stable: tf2.21-py3.11-x86_64_v4-cpu
    tf: str
    python: str
    target: str
    variant: Variant
    label: str
    cuda: str  # "" for CPU variants
    args: str  # tfbuild wheel's arguments, one line (the workflow passes them to the shell)


@dataclass(frozen=True, kw_only=True)
class OverlayJob:
    """One overlay job: what `tfbuild overlay` is asked for. Its wheel is ``py3-none``; ``python``
    is the interpreter of the stock TensorFlow it is compiled against and checked in."""

    name: str  # stable: overlay-tf2.21-zen4
    tf: str
    python: str
    target: str
    label: str
    args: str  # tfbuild overlay's arguments, one line


@dataclass(frozen=True, kw_only=True)
class Skipped:
    """A combination left out, with the planner's reason."""

    name: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class _Matrix(Generic[J]):
    jobs: tuple[J, ...]
    skipped: tuple[Skipped, ...]

    # hand-written: GitHub Actions' matrix shape (only include), not the type's
    def to_json(self) -> dict[str, Any]:
        """What GitHub Actions' ``fromJSON`` takes: only ``include`` (any other key is an axis)."""
        return {"include": serial.to_data(self.jobs)}


Matrix = _Matrix[Job]
OverlayMatrix = _Matrix[OverlayJob]


def _split(values: Sequence[str] | None) -> list[str]:
    """``["2.20,2.21", "2.19"]`` -> ``["2.20", "2.21", "2.19"]``, order kept, duplicates dropped."""
    items = (item.strip() for value in values or () for item in value.split(","))
    return list(dict.fromkeys(item for item in items if item))


def _recipes(recipes: RecipeSet, tf: list[str]) -> list[Recipe]:
    if not tf:
        return [recipes.recipes[-1]]
    if tf == ["all"]:
        return list(recipes.recipes)
    chosen = [recipes.get(version) for version in tf]
    return sorted({r.tensorflow: r for r in chosen}.values(), key=lambda r: r.version)


def _targets(targets: list[str], default: Sequence[str] = DEFAULT_TARGETS) -> list[str]:
    for name in targets:
        if name == "native":
            raise UsageError(
                "--targets native",
                why="CI wheels are for named portable targets, never for the CI runner's own CPU",
                fix="Name levels or microarchitectures: x86_64_v2,x86_64_v3,x86_64_v4 or zen4.",
            )
        cpu.lookup_target(name, option="--targets")  # unknown: a usage error with suggestions
    return targets or list(default)


def _variants(variants: list[str]) -> list[Variant]:
    for name in variants:
        if name not in VARIANTS:
            raise UsageError(
                f"unknown variant {name!r}",
                why=f"the variants are {', '.join(VARIANTS)}",
                fix="Pass e.g. --variants cpu,cuda.",
            )
    return [Variant(v) for v in variants] or list(DEFAULT_VARIANTS)


def build_matrix(
    recipes: RecipeSet,
    base_images: dict[str, BaseImage],
    *,
    tf: Sequence[str] | None = None,
    python: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
    variants: Sequence[str] | None = None,
    limit: int = GITHUB_MATRIX_LIMIT,
) -> Matrix:
    """Plan every combination of the axes; keep the possible ones, explain the others."""
    chosen_recipes = _recipes(recipes, _split(tf))
    wanted_python = _split(python)
    chosen_targets = _targets(_split(targets))
    chosen_variants = _variants(_split(variants))
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    for recipe in chosen_recipes:
        axes = (wanted_python or recipe.python, chosen_targets, chosen_variants)
        for py, target, variant in itertools.product(*axes):
            name = f"tf{recipe.short}-py{py}-{target}-{variant}"
            # Another architecture than the runner's is refused by make_plan itself.
            options = PlanOptions(variant=variant, target=target, python=py, skip_disk_check=True)
            plan = _plan(name, options, recipe, base_images, skipped)
            if plan is None:
                continue
            jobs.append(
                Job(
                    name=name,
                    tf=recipe.short,
                    python=plan.python,
                    target=plan.target,
                    variant=variant,
                    label=plan.label or "",
                    cuda=plan.cuda.cuda if plan.cuda else "",
                    args=f"--tf {recipe.short} --python {py} --target {target}"
                    + ("" if variant == Variant.cpu else f" --{variant}"),
                )
            )
    _check_size(
        len(jobs),
        skipped,
        kind="job",
        limit=limit,
        filters=("--tf", "--python", "--targets", "--variants"),
    )
    return Matrix(jobs=tuple(jobs), skipped=tuple(skipped))


def _plan(
    name: str,
    options: PlanOptions,
    recipe: Recipe,
    base_images: dict[str, BaseImage],
    skipped: list[Skipped],
) -> BuildPlan | None:
    """The plan of one combination on the runner, or None: left out, with the planner's reason in
    its own words."""
    try:
        return make_plan(options, recipe, RUNNER, base_images=base_images)
    except TfbuildError as error:
        reason = f"{error.what}: {error.why}" if error.why else error.what
        skipped.append(Skipped(name=name, reason=reason))
        return None


def _check_size(
    jobs: int, skipped: Sequence[Skipped], *, kind: str, limit: int, filters: tuple[str, ...]
) -> None:
    """A matrix with no job left, or more than GitHub Actions runs, is a usage error (``kind``: of
    its jobs; ``filters``: its options)."""
    matrix = kind.removesuffix("job") + "matrix"
    if not jobs:
        raise UsageError(
            f"no {kind} is left in the {matrix}",
            why=f"all {len(skipped)} combinations were left out (see above)"
            if skipped
            else "no combination was asked for",
            fix=f"Widen the filters ({', '.join(filters)}).",
            details=tuple(f"{s.name}: {s.reason}" for s in skipped),
        )
    if jobs > limit:
        raise UsageError(
            f"the {matrix} has {jobs} jobs",
            why=f"GitHub Actions runs at most {limit} jobs from one matrix",
            fix=f"Narrow it with {', '.join(filters[:-1])} or {filters[-1]}.",
        )


#: Why an overlay for a target without AVX is left out.
_BELOW_STOCK = (
    "stock TensorFlow's kernels are compiled for AVX, which {target} lacks: its overlay would "
    "replace them with slower ones"
)


def overlay_matrix(
    recipes: RecipeSet,
    base_images: dict[str, BaseImage],
    *,
    tf: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
    limit: int = GITHUB_MATRIX_LIMIT,
) -> OverlayMatrix:
    """The overlay jobs, release x target: each planned as ``tfbuild overlay`` plans it (the
    recipe's compiler for the target), for the newest Python the release supports; a target
    without AVX, or one the recipe's compiler cannot build, is left out with its reason."""
    jobs: list[OverlayJob] = []
    skipped: list[Skipped] = []
    for recipe in _recipes(recipes, _split(tf)):
        python = max(recipe.python, key=parse_version)
        for target in _targets(_split(targets), DEFAULT_OVERLAY_TARGETS):
            name = f"overlay-tf{recipe.short}-{target}"
            if "avx" not in cpu.lookup_target(target).features:
                skipped.append(Skipped(name=name, reason=_BELOW_STOCK.format(target=target)))
                continue
            options = PlanOptions(target=target, python=python, skip_disk_check=True)
            plan = _plan(name, options, recipe, base_images, skipped)
            if plan is None:
                continue
            jobs.append(
                OverlayJob(
                    name=name,
                    tf=recipe.short,
                    python=python,
                    target=plan.target,
                    label=plan.label or "",
                    args=f"--tf {recipe.short} --target {target}",
                )
            )
    _check_size(len(jobs), skipped, kind="overlay job", limit=limit, filters=("--tf", "--targets"))
    return OverlayMatrix(jobs=tuple(jobs), skipped=tuple(skipped))
