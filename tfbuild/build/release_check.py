"""``tfbuild recipes verify``: a recipe checked against its release's own files (the one impure check).

:func:`check_release` fetches the release tarball (or takes ``--source DIR``), plans the recipe's
variants for a nominal runner (:func:`verify_plans`), and runs the preflight on each plan, plus the
recipe's own lists against the tree (:func:`recipe_findings`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tfbuild.build.preflight import preflight
from tfbuild.build.preflight.bazelrc import config_definitions, read_rc
from tfbuild.build.preflight.report import Finding, PreflightReport, TreeCheck, failures_error
from tfbuild.build.preflight.tree_files import TreeFiles
from tfbuild.build.preflight.workspace import cuda_table, table_keys
from tfbuild.core.errors import TfbuildError, UnsupportedError
from tfbuild.core.variants import Variant
from tfbuild.plan import BuildPlan
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe
from tfbuild.wheel.receipt import SourceRecord

_RECIPE_CONFIGS = TreeCheck("recipe_configs")
_RECIPE_CUDA = TreeCheck("recipe_cuda")


@dataclass(frozen=True, kw_only=True)
class ReleaseCheck:
    """A recipe checked against its release's files: every plan's report and the recipe's lists."""

    schema: Literal["tfbuild.release-check/1"] = "tfbuild.release-check/1"
    recipe: str  # the recipe's path
    tensorflow: str
    tree: str
    source: SourceRecord  # the tarball's URL and sha256, or the directory
    passed: bool = field(init=False)  # no check failed
    recipe_findings: tuple[Finding, ...]  # the recipe's own lists against the tree
    refused: tuple[Finding, ...] = ()  # plans the planner refused
    plans: tuple[PreflightReport, ...]  # every plan's report

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", not self.failures)

    @property
    def failures(self) -> tuple[Finding, ...]:
        """Every failure once, in order (the same mismatch in several plans counts once)."""
        seen: dict[str, Finding] = {}
        for finding in (
            *self.refused,
            *self.recipe_findings,
            *(f for r in self.plans for f in r.findings),
        ):
            if finding.status == "fail":
                seen.setdefault(finding.text(), finding)
        return tuple(seen.values())

    def error(self) -> UnsupportedError | None:
        return failures_error(
            f"recipe {self.recipe} does not match the release's files",
            self.failures,
            more="tfbuild recipes verify --json has every check",
        )


def recipe_findings(recipe: Recipe, tree: Path) -> tuple[Finding, ...]:
    """The recipe's own lists against the tree: every config it says the release defines, every
    hermetic CUDA and cuDNN version it says the release knows."""
    files = TreeFiles(tree)
    rc = read_rc(files, ())
    found: list[Finding] = []
    if rc is not None:
        defined = config_definitions(rc.lines)
        missing = [c for c in recipe.configs if c not in defined]
        found.append(
            _RECIPE_CONFIGS.fail(
                f"the recipe lists configs the tree's rc files do not define: {', '.join(missing)}",
                ".bazelrc",
                why=f"{recipe.where('configs')} says the release defines them",
                fix="Drop them from the recipe's configs list",
            )
            if missing
            else _RECIPE_CONFIGS.ok(
                f"all {len(recipe.configs)} configs the recipe lists are defined", ".bazelrc"
            )
        )
    cuda = recipe.cuda
    if cuda is not None and cuda.hermetic:
        loaded, candidates, table = cuda_table(files)
        keys = table_keys(files.read(table) or "") if table else {}
        lists = f"{recipe.where('cuda')} cuda_versions and cudnn_versions"
        if loaded is not None and loaded.path is None:
            found.append(
                _RECIPE_CUDA.downloaded(f"{lists}, since the CUDA tables come from", loaded)
            )
        elif table is None or not keys:
            found.append(
                _RECIPE_CUDA.note(
                    f"not checked: {lists}, since "
                    + (
                        "the tree has none of the known CUDA version tables"
                        if table is None
                        else "its table has no CUDA_REDIST_JSON_DICT (another layout)"
                    ),
                    file=table or (candidates[0] if candidates else None),
                    why=f"looked for {', '.join(candidates)}" if table is None else "",
                )
            )
        else:
            for kind, versions in (("cuda", cuda.cuda_versions), ("cudnn", cuda.cudnn_versions)):
                unknown = [v for v in versions if v not in keys.get(kind, {})]
                found.append(
                    _RECIPE_CUDA.fail(
                        f"{kind}_versions not in the tree's table: {', '.join(unknown)}",
                        table,
                        why=f"{recipe.where('cuda')} lists them",
                        fix="Drop them from the recipe's cuda row",
                    )
                    if unknown
                    else _RECIPE_CUDA.ok(
                        f"all {len(versions)} {kind}_versions are keys of the table", table
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
                TreeCheck("plan").fail(
                    f"the planner refuses {variant}"
                    + (f" for Python {python}" if python else "")
                    + f": {error.what}",
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
    ca_bundle: Path | None = None,
    on_line: Callable[[str], None] = lambda _line: None,
) -> ReleaseCheck:
    """``tfbuild recipes verify``: the recipe's release tarball (downloaded once, checked against
    its sha256, extracted) or ``source``, checked for every plan of :func:`verify_plans`."""
    from tfbuild.build.source_tree import fetch_source, local_source

    if source is not None:
        tree = local_source(source)
    else:
        tree = fetch_source(
            recipe.tarball,
            version=recipe.tensorflow,
            sha256=recipe.sha256,
            ca_bundle=ca_bundle,
            on_line=on_line,
        )
    plans, refused = verify_plans(recipe, base_images)
    return ReleaseCheck(
        recipe=recipe.path,
        tensorflow=recipe.tensorflow,
        tree=str(tree.path),
        source=tree.record(),
        plans=tuple(preflight(plan, recipe, tree.path) for plan in plans),
        recipe_findings=recipe_findings(recipe, tree.path),
        refused=refused,
    )
