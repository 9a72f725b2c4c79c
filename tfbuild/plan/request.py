"""One build request, typed: what ``tfbuild plan``, ``render`` and ``wheel`` were asked to build.

:class:`PlanArgs` is the command line's plan options as one frozen value, checked once when it is
made. :func:`plan_request` turns it into a :class:`Planned` (the plan and the recipe it came from):
it loads the recipes, chooses the release (or the canary's stand-in), describes this host, and asks
the planner. Base images are given to it already resolved; the ones that live on a Docker engine
(made by ``tfbuild base``) are looked up by :func:`tfbuild.plan.here.plan_here`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfbuild.core.defaults import CACHE_VOLUME
from tfbuild.core.errors import UsageError
from tfbuild.core.variants import MklThreading, Variant

if TYPE_CHECKING:  # imported where used: the command line imports this module on every run
    from tfbuild.detect.host import HostFacts
    from tfbuild.plan import BuildPlan, PlanOptions
    from tfbuild.recipes.images import BaseImage
    from tfbuild.recipes.recipe import Recipe, RecipeSet

_PYTHON = re.compile(r"[23]\.[0-9]{1,2}")


@dataclass(frozen=True, kw_only=True)
class PlanArgs:
    """The plan options of the command line (one field per option), checked when made."""

    tf: str | None = None  # "2.21" or "2.21.0"; None: the newest recipe
    mkl: bool = False
    cuda: bool = False
    mkl_threading: MklThreading = MklThreading.threadpool
    target: str | None = None
    cpuinfo: Path | None = None
    native: bool = False
    python: str | None = None
    jobs: int | None = None
    local_ram_resources: int | None = None  # MB
    jvm_heap: int | None = None  # MB
    cache_volume: str = CACHE_VOLUME
    disk_cache: bool = True
    remote_cache: str | None = None
    remote_executor: str | None = None
    remote_instance: str | None = None  # --remote_instance_name
    remote_cache_read_only: bool = False  # read hits, never upload (pull requests)
    push_toolchain: str | None = None  # a registry the remote executor's workers pull from
    cuda_capabilities: str | None = None  # "8.9,9.0"
    cuda_version: str | None = None
    cudnn_version: str | None = None
    skip_disk_check: bool = False
    label: bool = True
    base_image: str | None = None  # a base-images.yaml entry, or a local image (tfbuild base)
    portable: bool = True  # reach the recipe's floor by its route (--no-portable: the image's)
    sysroot_from: str | None = None  # link against this image's C library (--sysroot-from)
    canary: bool = False  # the STAND-IN canary source and recipe instead of TensorFlow
    reproducible: bool = True  # the determinism measures (see tfbuild.plan.reproducible)
    recipes_dir: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mkl_threading", MklThreading(self.mkl_threading))
        except ValueError:
            raise UsageError(
                f"--mkl-threading {self.mkl_threading!r}", fix="Use threadpool or openmp."
            ) from None
        object.__setattr__(self, "recipes_dir", tuple(self.recipes_dir))
        if self.mkl and self.cuda:
            raise UsageError("--mkl and --cuda together", fix="Choose one variant.")
        if self.python is not None and not _PYTHON.fullmatch(self.python):
            raise UsageError(
                f"--python {self.python!r} is not a Python version",
                fix="Write it as X.Y, e.g. --python 3.12.",
            )
        for option, value in (
            ("--jobs", self.jobs),
            ("--local-ram-resources", self.local_ram_resources),
            ("--jvm-heap", self.jvm_heap),
        ):
            if value is not None and value < 1:
                raise UsageError(
                    f"{option} {value} is not a count",
                    why="it must be a positive whole number",
                    fix=f"Pass a positive {option}, or leave it out for the default.",
                )
        if self.target and self.cpuinfo:
            raise UsageError(
                "--target and --cpuinfo together",
                why="a build is for a named portable target or for one machine, not both",
                fix="Drop one of them.",
            )

    @property
    def variant(self) -> Variant:
        return Variant.cuda if self.cuda else Variant.mkl if self.mkl else Variant.cpu

    def options(self, recipe: Recipe) -> PlanOptions:
        """What the planner is asked, for ``recipe``."""
        from tfbuild.plan import PlanOptions

        caps = tuple(c.strip() for c in (self.cuda_capabilities or "").split(",") if c.strip())
        return PlanOptions(
            variant=self.variant,
            mkl_threading=self.mkl_threading,
            target=self.target,
            native=self.native,
            python=self.python,
            jobs=self.jobs,
            local_ram_mb=self.local_ram_resources,
            jvm_heap_mb=self.jvm_heap,
            cache_volume=self.cache_volume,
            disk_cache=self.disk_cache,
            remote_cache=self.remote_cache,
            remote_executor=self.remote_executor,
            remote_instance=self.remote_instance,
            remote_read_only=self.remote_cache_read_only,
            push_toolchain=self.push_toolchain,
            cuda_capabilities=caps,
            cuda_version=self.cuda_version,
            cudnn_version=self.cudnn_version,
            skip_disk_check=self.skip_disk_check,
            base_image=self.base_image,
            standin=self.canary,
            label=self.label,
            reproducible=self.reproducible,
            portable=self.portable,
            sysroot_from=self.sysroot_from,
        )


@dataclass(frozen=True, kw_only=True)
class Planned:
    """A finished plan and the recipe it was made from (the renderer checks configs against it);
    a rebuild from a receipt has the receipt's plan and no recipe."""

    plan: BuildPlan
    recipe: Recipe | None


def choose_recipe(args: PlanArgs, recipes: RecipeSet | None = None) -> Recipe:
    """The recipe of ``--tf`` (default: the newest), or the canary's stand-in built on it."""
    from tfbuild.recipes.recipe import load_recipes

    recipes = recipes or load_recipes(args.recipes_dir)
    recipe = recipes.get(args.tf) if args.tf else recipes.recipes[-1]
    if args.canary:
        from tfbuild.recipes import canary

        recipe = canary.recipe(recipe)
    return recipe


def plan_request(
    args: PlanArgs,
    *,
    base_images: Mapping[str, BaseImage],
    recipe: Recipe | None = None,
    host: HostFacts | None = None,
) -> Planned:
    """The plan of ``args`` on this host (or ``host``), with every base image already resolved."""
    from tfbuild.detect.host import host_facts
    from tfbuild.plan import make_plan

    recipe = recipe or choose_recipe(args)
    if args.canary and args.sysroot_from:
        from tfbuild.recipes import canary

        build_image = base_images.get(args.base_image or recipe.base_image)
        if build_image is not None:
            recipe = canary.for_sysroot(recipe, build_image)
    host = host or host_facts(cpuinfo=args.cpuinfo, with_gpu=args.variant == Variant.cuda)
    plan = make_plan(args.options(recipe), recipe, host, base_images=dict(base_images))
    return Planned(plan=plan, recipe=recipe)
