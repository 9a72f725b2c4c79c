"""make_plan: options + recipe + host facts -> one BuildPlan, each choice with its reason."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from tfbuild.core.defaults import multiarch
from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.core.variants import Variant
from tfbuild.detect.host import HostFacts
from tfbuild.plan.bazel import (
    REMOTE_EXECUTION,
    WHEEL_TARGETS,
    bazel_options,
    choose_variant,
    configure_rc,
    exec_repository,
    wheel_name,
)
from tfbuild.plan.model import BuildPlan, CudaPlan, PlanSource, Reason, Resources
from tfbuild.plan.options import PlanOptions
from tfbuild.plan.reproducible import ACTION_ENV, BUILD_ENV, choose_measures, choose_snapshot
from tfbuild.plan.resources import choose_resources, slow_build_warning
from tfbuild.plan.target import check_architecture, choose_target
from tfbuild.plan.toolchain import choose_python, choose_toolchain, recipe_image
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe
from tfbuild.wheel.labels import local_label

#: A remote cache or executor: a plain URL, nothing a shell or bazel could read as more. Both
#: patterns are matched whole (re.fullmatch: with re.match, '$' also matches before a final newline).
_REMOTE_URL = re.compile(r"(grpcs?|https?)://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~%/+=-]*)?")
_VOLUME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
#: --push-toolchain: a registry host, its port, and path components as Docker spells a repository
#: (lowercase letters, digits, '.', '_', '-'); "127.0.0.1:5000" or "registry.example.org/ml".
_REGISTRY = re.compile(r"[A-Za-z0-9.-]+(:\d{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*")
#: --remote-instance: the names REAPI servers use ("", "main", "projects/p/instances/default").
_INSTANCE = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")


def _check_options(options: PlanOptions) -> None:
    """The remote options are well formed and make sense together: an executor runs actions in the
    pushed toolchain image (nowhere else), and read-only or an instance name needs something
    remote to apply to. The cache volume is a Docker volume's name."""
    for flag, value in (
        ("--remote-cache", options.remote_cache),
        ("--remote-executor", options.remote_executor),
    ):
        if value is not None and not _REMOTE_URL.fullmatch(value):
            raise UsageError(
                f"{flag} {value!r} is not a plain URL",
                why="it must be grpc://, grpcs://, http:// or https:// with no spaces, quotes or "
                "shell characters",
                fix="Pass e.g. grpcs://cache.example.org:443.",
            )
    if options.push_toolchain is not None and not _REGISTRY.fullmatch(options.push_toolchain):
        raise UsageError(
            f"--push-toolchain {options.push_toolchain!r} is not a registry",
            why="it is a host, an optional :port and optional lowercase path components",
            fix="Pass e.g. --push-toolchain registry.example.org:5000 or 127.0.0.1:5000/ml.",
        )
    instance = options.remote_instance
    if instance is not None and (len(instance) > 256 or not _INSTANCE.fullmatch(instance)):
        raise UsageError(
            f"--remote-instance {instance!r} is not an instance name",
            why="it is letters, digits, '_', '.', '-' and '/' between them, at most 256",
            fix="Pass the name your cache or executor serves, e.g. main or "
            "projects/NAME/instances/default_instance.",
        )
    if options.remote_executor and not options.push_toolchain:
        raise UsageError(
            "--remote-executor without --push-toolchain",
            why="the workers would run TensorFlow's actions in their own default image, not in "
            "the toolchain image with the compiler and sysroot this plan chose",
            fix="Add --push-toolchain REGISTRY, a registry the executor's workers pull from.",
        )
    if options.push_toolchain and not options.remote_executor:
        raise UsageError(
            "--push-toolchain without --remote-executor",
            why="the image is pushed for remote workers to run actions in; a local build uses it "
            "where it is",
            fix="Add --remote-executor URL, or drop --push-toolchain.",
        )
    if options.remote_cache_read_only and not options.remote_cache:
        raise UsageError(
            "--remote-cache-read-only without --remote-cache",
            fix="Add --remote-cache URL, or drop --remote-cache-read-only.",
        )
    if options.remote_timeout is not None and (not options.remote_cache or options.remote_executor):
        raise UsageError(
            "--remote-timeout without --remote-cache alone",
            why="it is the remote cache's wait; remote execution keeps TensorFlow's own (3600 s)",
            fix="Add --remote-cache URL, or drop --remote-timeout.",
        )
    if instance is not None and not (options.remote_cache or options.remote_executor):
        raise UsageError(
            "--remote-instance without --remote-cache or --remote-executor",
            fix="Add the remote it names, or drop --remote-instance.",
        )
    if not _VOLUME.fullmatch(options.cache_volume):
        raise UsageError(
            f"--cache-volume {options.cache_volume!r} is not a Docker volume name",
            fix="Use letters, digits, '_', '.' or '-'.",
        )


def _choose_base_image(
    options: PlanOptions, recipe: Recipe, base_images: dict[str, BaseImage]
) -> tuple[BaseImage, Reason]:
    """The recipe's base image (its CUDA row's for an older CUDA build), or --base-image."""
    base = recipe_image(base_images, recipe.base_image, recipe.where("base_image"))
    if options.base_image:
        if options.base_image not in base_images:
            raise UnsupportedError(
                f"unknown base image {options.base_image!r}",
                why=f"known: {', '.join(sorted(base_images))}",
                fix="Name an entry of base-images.yaml, or a local image made by tfbuild base.",
            )
        base = base_images[options.base_image]
    cuda = recipe.cuda if options.variant == Variant.cuda else None
    if options.base_image is None and cuda and cuda.base_image and not cuda.hermetic:
        fix = "Add the image to base-images.yaml."
        base = recipe_image(base_images, cuda.base_image, recipe.where("cuda"), fix)
    why = (
        "asked for with --base-image"
        + (f" (local image {base.image_id}, made by tfbuild base)" if base.image_id else "")
        if options.base_image
        else "pinned by digest in base-images.yaml: the toolchain image is built on it"
    )
    return base, Reason(what="base image", value=base.reference, why=why)


def _image_python(
    options: PlanOptions, recipe: Recipe, base: BaseImage, python: str
) -> Reason | None:
    """Before 2.14 bazel builds with the image's own Python: the wheel is for that version."""
    if recipe.hermetic_python or python == base.python:
        return None
    if options.python is not None:
        raise UnsupportedError(
            f"TensorFlow {recipe.short} cannot be built for Python {python} here",
            why=f"it builds with the toolchain image's Python ({base.python} on {base.name}); "
            "hermetic Python arrived in 2.14",
            fix=f"Use --python {base.python}, or TensorFlow 2.14 or newer.",
        )
    return Reason(
        what="python",
        value=base.python,
        why=f"TensorFlow {recipe.short} builds with the image's Python (no hermetic "
        "Python before 2.14)",
    )


def _tcmalloc(host: HostFacts, base: BaseImage) -> tuple[tuple[str, str], Reason]:
    tcmalloc = f"/usr/lib/{multiarch(host.machine.architecture)}/libtcmalloc.so.4"
    reason = Reason(
        what="TCMalloc",
        value=f"{base.tcmalloc_package}, LD_PRELOAD={tcmalloc}",
        why="TensorFlow has no TCMalloc build option; preloading gperftools' TCMalloc at run "
        "time is the established practice, can be switched off per process, and keeps "
        "TensorFlow's shared objects as upstream links them",
    )
    return ("LD_PRELOAD", tcmalloc), reason


def unchecked_recipe(recipe: Recipe) -> str | None:
    """The plan's warning when its recipe was not checked against the release's own files (every
    part its verified record names read there), with how to check it; None once it was."""
    record = recipe.verified
    if record is not None and record.parts and not record.unread:
        return None
    release = f"TensorFlow {recipe.tensorflow}'s own files"
    if record is None or not record.parts:
        state = f"{recipe.path} was not yet checked against {release} (it has no verified record)"
    elif len(record.unread) == len(record.parts):
        counts = record.counts()
        state = (
            f"{recipe.path} was not yet checked against {release} (none of its "
            f"{len(record.parts)} parts read there: {counts['cited']} cited elsewhere, "
            f"{counts['not verified']} not verified)"
        )
    else:
        state = (
            f"{recipe.path} was checked against {release} only in part (not its "
            f"{', '.join(record.unread)})"
        )
    shipped = recipe.path.startswith("recipes/")
    where = "" if shipped else f" --recipes-dir {Path(recipe.path).parent}"
    return (
        f"{state}. To check it: tfbuild recipes verify {recipe.short}{where} (it downloads the "
        "release)."
    )


def _label(
    options: PlanOptions, target: str, cuda_plan: CudaPlan | None
) -> tuple[str | None, Reason]:
    if not options.label:
        return None, Reason(what="label", value="none", why="asked for with --no-label")
    label = local_label(target, options.variant, cuda_plan.cuda if cuda_plan else None)
    why = (
        "the wheel's PEP 440 local version label: what it was built for, so that wheels for "
        "several targets can sit side by side and tfbuild pick can choose"
    )
    return label, Reason(what="label", value=f"+{label}", why=why)


def with_jobs(plan: BuildPlan, jobs: int, *, why: str) -> BuildPlan:
    """The same plan with bazel's ``--jobs`` changed (a retry after the compiler was OOM-killed)."""
    return with_resources(plan, replace(plan.resources, jobs=jobs), why=why)


def with_resources(plan: BuildPlan, resources: Resources, *, why: str) -> BuildPlan:
    """The same plan with other resources (jobs, bazel's memory budget and heap): they decide how
    fast a build runs on a machine, never what it builds (plan.bazel.bazel_command makes the
    options)."""
    reasons = [Reason(what="jobs", value=str(resources.jobs), why=why)]
    if resources.local_ram_mb != plan.resources.local_ram_mb:
        reasons.append(
            Reason(what="local_ram_resources", value=f"{resources.local_ram_mb} MiB", why=why)
        )
    if resources.jvm_heap_mb != plan.resources.jvm_heap_mb:
        reasons.append(
            Reason(what="bazel server heap", value=f"{resources.jvm_heap_mb} MiB", why=why)
        )
    return replace(plan, resources=resources, reasons=(*plan.reasons, *reasons))


#: The options that reach a remote cache or executor (and their settings).
_REMOTE_OPTIONS = (
    "--remote_cache=",
    "--remote_executor=",
    "--remote_instance_name=",
    "--noremote_upload_local_results",
    "--remote_timeout=",
    "--remote_retries=",
    *REMOTE_EXECUTION,
)


def without_remote(plan: BuildPlan, *, why: str) -> BuildPlan:
    """The same build with no remote cache or executor, and no toolchain image to push: a rebuild
    from a receipt never sends to, nor takes from, a cache or executor its receipt names."""
    kept = tuple(o for o in plan.build_options if not o.startswith(_REMOTE_OPTIONS))
    if kept == plan.build_options and plan.exec_image is None:
        return plan
    return replace(
        plan,
        exec_image=None,
        build_options=kept,
        reasons=(*plan.reasons, Reason(what="remote", value="none", why=why)),
    )


def isolated(plan: BuildPlan, *, cache_volume: str) -> BuildPlan:
    """The same build with nothing carried over: a fresh cache volume (so a fresh output base and
    repository cache), no disk cache and no remote cache or executor (``tfbuild verify``)."""
    plan = without_remote(plan, why="a rebuild to verify shares no cache with any build")
    return replace(
        plan,
        cache_volume=cache_volume,
        build_options=tuple(o for o in plan.build_options if not o.startswith("--disk_cache=")),
        reasons=(
            *plan.reasons,
            Reason(
                what="isolation",
                value=cache_volume,
                why="a rebuild to verify shares no cache with any build: a fresh volume, no disk "
                "or remote cache",
            ),
        ),
    )


def make_plan(
    options: PlanOptions,
    recipe: Recipe,
    host: HostFacts,
    *,
    base_images: dict[str, BaseImage],
) -> BuildPlan:
    """Resolve every choice of a build, with its reason."""
    _check_options(options)
    check_architecture(options, host)
    reasons: list[Reason] = [
        Reason(what="recipe", value=recipe.path, why=f"TensorFlow {recipe.tensorflow}")
    ]
    warnings: list[str] = list(host.machine.warnings)  # what reading its --cpuinfo left out

    python_reason = choose_python(options, recipe, host)
    reasons.append(python_reason)
    base, base_reason = _choose_base_image(options, recipe, base_images)
    reasons.append(base_reason)
    toolchain = choose_toolchain(options, recipe, base, base_images)
    reasons.extend(toolchain.reasons)

    target = choose_target(options, recipe, host)
    reasons.extend(target.reasons)
    if target.flags is not None:
        warnings.extend(target.flags.warnings)
        if target.flags.uncovered:
            warnings.append(
                f"{recipe.compiler} cannot enable {', '.join(target.flags.uncovered)}: the wheel "
                "will still name them at import"
            )

    python = python_reason.value
    image_python = _image_python(options, recipe, base, python)
    if image_python is not None:
        python = image_python.value
        reasons.append(image_python)

    resources, resource_reasons = choose_resources(options, host)
    reasons.extend(resource_reasons)
    slow = slow_build_warning(options, host)
    if slow is not None:
        warnings.append(slow)

    variant = choose_variant(options, recipe, host, toolchain.family)
    reasons.extend(variant.reasons)

    preload, tcmalloc_reason = _tcmalloc(host, base)
    reasons.append(tcmalloc_reason)

    rc_lines = configure_rc(
        options, recipe, toolchain, cflags=target.cflags, python=python, cuda_plan=variant.cuda
    )

    bazel, bazel_reasons = bazel_options(options)
    reasons.extend(bazel_reasons)

    reasons.extend(choose_measures(options))
    snapshot, snapshot_reason = choose_snapshot(recipe, base)
    if snapshot_reason is not None:
        reasons.append(snapshot_reason)

    wheel_label, label_reason = _label(options, target.name, variant.cuda)
    reasons.append(label_reason)

    unchecked = None if options.canary else unchecked_recipe(recipe)
    if unchecked is not None:  # said once, last: the recipe, not this machine
        warnings.append(unchecked)

    return BuildPlan(
        tensorflow=recipe.tensorflow,
        recipe=recipe.path,
        source=PlanSource(
            git=recipe.git,
            tag=recipe.tag,
            commit=recipe.commit,
            tarball=recipe.tarball,
            sha256=recipe.sha256,
        ),
        architecture=host.machine.architecture,
        variant=options.variant,
        python=python,
        compiler=recipe.compiler,
        compiler_path=toolchain.compiler_path,
        compiler_packages=toolchain.compiler_packages,
        llvm_apt_suite=toolchain.llvm_apt_suite,
        extra_packages=toolchain.extra_packages,
        target=target.name,
        target_kind=target.kind,
        cflags=target.cflags,
        coverage=target.coverage,
        base_image=base,
        bazel=recipe.bazel,
        bazel_configs=variant.configs,
        rc_lines=rc_lines,
        build_options=(
            *bazel.build,
            *(f"--action_env={name}" for name in ACTION_ENV if options.reproducible),
        ),
        startup_options=bazel.startup,
        build_target=WHEEL_TARGETS[recipe.wheel_flow],
        wheel_flow=recipe.wheel_flow,
        wheel_name=wheel_name(options),
        cache_volume=options.cache_volume,
        runtime_env=dict((preload, *variant.runtime_env)),
        resources=resources,
        cuda=variant.cuda,
        reasons=tuple(reasons),
        warnings=tuple(dict.fromkeys(warnings)),
        canary=options.canary,
        label=wheel_label,
        floor_goal=toolchain.floor_goal,
        route=toolchain.route,
        sysroot=toolchain.sysroot,
        reproducible=options.reproducible,
        build_env=dict(BUILD_ENV if options.reproducible else ()),
        snapshot=snapshot,
        exec_image=exec_repository(options),
    )
