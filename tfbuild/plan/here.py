"""Planning on this host: a request's base images looked up where they live, then planned.

A base image is an entry of ``base-images.yaml`` or a local image made by ``tfbuild base``, read
back from the Docker engine (its suite's facts, its own id); ``plan`` and ``render`` of a registry
image never load docker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from tfbuild.core.errors import UnsupportedError
from tfbuild.plan.options import PlanOptions
from tfbuild.plan.request import Planned, choose_recipe, plan_request
from tfbuild.recipes.images import (
    BASE_LABEL,
    SUITES,
    BaseImage,
    default_tag,
    load_base_images,
    suite_facts,
)

if TYPE_CHECKING:
    from tfbuild.core.engine import DockerEngine
    from tfbuild.detect.host import HostFacts


def local_base_image(engine: DockerEngine, tag: str, known: Mapping[str, BaseImage]) -> BaseImage:
    """A base image made by ``tfbuild base``: its suite's facts from base-images.yaml, its own id."""
    labels = engine.image_labels(tag)
    if labels is None:
        raise UnsupportedError(
            f"unknown base image {tag!r}",
            why=f"it is neither an entry of base-images.yaml ({', '.join(sorted(known))}) nor an "
            "image on this engine",
            fix="Make one with tfbuild base --suite SUITE --tag TAG, or name an entry.",
        )
    suite = labels.get(BASE_LABEL)
    facts = suite_facts(suite, known) if suite else None
    if suite is None or facts is None:
        raise UnsupportedError(
            f"{tag} cannot be a base image here",
            why=f"it has no {BASE_LABEL} label naming a known suite (it has {suite!r})",
            fix=f"Use an image made by tfbuild base ({', '.join(SUITES)}).",
        )
    return replace(facts, name=tag, reference=tag, image_id=engine.image_id(tag), cudnn=None)


def plan_here(
    args: PlanOptions, engine: DockerEngine | None = None, *, host: HostFacts | None = None
) -> Planned:
    """Plan ``args`` on this host. A base image that is no base-images.yaml entry (a local image made
    by ``tfbuild base``), and the canary's default one, are looked up on ``engine``; without one,
    the engine is connected only when such a lookup is needed."""
    recipe = choose_recipe(args)
    images = load_base_images(args.recipes_dir)
    wanted = args.base_image
    local = [i for i in (args.sysroot_from,) if i is not None and i not in images]
    if (wanted in images or (wanted is None and not args.canary)) and not local:
        return plan_request(args, base_images=images, recipe=recipe, host=host)
    with contextlib.ExitStack() as stack:
        if engine is None:
            # only now: plan and render run without docker
            from tfbuild.core.engine import DockerEngine

            engine = DockerEngine.connect()
            stack.callback(engine.close)
        if wanted is None and args.canary:
            from tfbuild.recipes import canary

            # the local one made by tfbuild base, else Debian 12 from the registry
            made = default_tag(canary.SUITE)
            wanted = made if engine.image_exists(made) else "debian-12"
            args = replace(args, base_image=wanted)
        for tag in (wanted, *local):
            if tag is not None and tag not in images:
                images[tag] = local_base_image(engine, tag, images)
    return plan_request(args, base_images=images, recipe=recipe, host=host)
