"""One build request planned: :class:`~tfbuild.plan.options.PlanOptions` to a :class:`Planned`.

Base images are given already resolved; the ones that live on a Docker engine (made by
``tfbuild base``) are looked up by :func:`tfbuild.plan.here.plan_here`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfbuild.core.variants import Variant
from tfbuild.plan.options import PlanOptions

if TYPE_CHECKING:  # imported where used: the command line imports this module on every run
    from tfbuild.detect.host import HostFacts
    from tfbuild.plan import BuildPlan
    from tfbuild.recipes.images import BaseImage
    from tfbuild.recipes.recipe import Recipe


@dataclass(frozen=True, kw_only=True)
class Planned:
    """A finished plan and the recipe it was made from (the renderer checks configs against it);
    a rebuild from a receipt has the receipt's plan and no recipe.

    ``lead`` and ``here`` are what this build host means for the plan, for ``tfbuild plan`` to say
    with it, kept out of the plan (plan.json and a receipt hold no fact of the moment): ``lead``
    before its decisions (a CUDA build for the release's default GPUs, no GPU being seen here),
    ``here`` among its warnings (less free disk than the build needs, which ``tfbuild wheel``
    refuses)."""

    plan: BuildPlan
    recipe: Recipe | None
    lead: tuple[str, ...] = ()
    here: tuple[str, ...] = ()


def choose_recipe(args: PlanOptions) -> Recipe:
    """The recipe of ``--tf`` (default: the newest), or the canary's stand-in built on it."""
    from tfbuild.recipes.recipe import load_recipes

    recipes = load_recipes(args.recipes_dir)
    recipe = recipes.get(args.tf) if args.tf else recipes.recipes[-1]
    if args.canary:
        from tfbuild.recipes import canary

        recipe = canary.recipe(recipe)
    return recipe


def plan_request(
    args: PlanOptions,
    *,
    base_images: Mapping[str, BaseImage],
    recipe: Recipe | None = None,
    host: HostFacts | None = None,
) -> Planned:
    """The plan of ``args`` on this host (or ``host``), with every base image already resolved."""
    from tfbuild.detect.host import host_facts
    from tfbuild.plan import make_plan
    from tfbuild.plan.cuda import gpu_lead
    from tfbuild.plan.resources import disk_warning

    recipe = recipe or choose_recipe(args)
    if args.canary and args.sysroot_from:
        from tfbuild.recipes import canary

        build_image = base_images.get(args.base_image or recipe.base_image)
        if build_image is not None:
            recipe = canary.for_sysroot(recipe, build_image)
    host = host or host_facts(cpuinfo=args.cpuinfo, with_gpu=args.variant == Variant.cuda)
    plan = make_plan(args, recipe, host, base_images=dict(base_images))
    lead = gpu_lead(args, recipe, host, plan.cuda.capabilities) if plan.cuda else None
    disk = disk_warning(args, host)
    return Planned(
        plan=plan,
        recipe=recipe,
        lead=() if lead is None else (lead,),
        here=() if disk is None else (disk,),
    )
