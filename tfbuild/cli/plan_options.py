"""The plan options of ``plan``, ``render`` and ``wheel``, declared once, reaching each as one PlanArgs.

:func:`_plan_options` declares them (typer options with their help) and builds the
:class:`~tfbuild.plan.request.PlanArgs`, which checks them. A command made with ``cls=PlanCommand``
takes them on top of its own options, and reads them with :func:`plan_args`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from tfbuild.core.defaults import CACHE_VOLUME
from tfbuild.core.variants import MklThreading
from tfbuild.plan.request import PlanArgs

RecipesDir = Annotated[
    list[Path] | None,
    typer.Option(
        "--recipes-dir",
        metavar="DIR",
        help="Extra recipes that add to or override the shipped ones (also $TFBUILD_RECIPES_DIR).",
        show_default=False,
    ),
]


def _plan_options(
    tf: Annotated[
        str | None,
        typer.Option(
            "--tf",
            metavar="VERSION",
            help="TensorFlow version: 2.21 or 2.21.0 (default: the newest recipe).",
            show_default=False,
        ),
    ] = None,
    mkl: Annotated[
        bool, typer.Option("--mkl", help="The oneDNN CPU build (see the README for its threading).")
    ] = False,
    cuda: Annotated[bool, typer.Option("--cuda", help="The CUDA build.")] = False,
    mkl_threading: Annotated[
        MklThreading,
        typer.Option(
            "--mkl-threading",
            help="oneDNN threading: TensorFlow's thread pool (mkl_threadpool) or OpenMP (mkl).",
        ),
    ] = MklThreading.threadpool,
    target: Annotated[
        str | None,
        typer.Option("--target", metavar="NAME", help="A portable target, e.g. x86_64_v3."),
    ] = None,
    cpuinfo: Annotated[
        Path | None,
        typer.Option(
            "--cpuinfo", metavar="FILE", help="Build for the machine of a saved /proc/cpuinfo."
        ),
    ] = None,
    native: Annotated[
        bool,
        typer.Option("--native", help="Literal -march=native (a build on the machine itself)."),
    ] = False,
    python: Annotated[
        str | None, typer.Option("--python", metavar="X.Y", help="Python the wheel is for.")
    ] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", min=1, help="bazel --jobs.")] = None,
    local_ram_resources: Annotated[
        int | None,
        typer.Option("--local-ram-resources", metavar="MB", min=512, help="bazel's memory budget."),
    ] = None,
    jvm_heap: Annotated[
        int | None, typer.Option("--jvm-heap", metavar="MB", min=256, help="bazel server heap.")
    ] = None,
    cache_volume: Annotated[
        str, typer.Option("--cache-volume", metavar="NAME", help="Docker volume for bazel caches.")
    ] = CACHE_VOLUME,
    disk_cache: Annotated[
        bool, typer.Option("--disk-cache/--no-disk-cache", help="bazel's local disk cache.")
    ] = True,
    remote_cache: Annotated[
        str | None, typer.Option("--remote-cache", metavar="URL", help="A shared bazel cache.")
    ] = None,
    remote_executor: Annotated[
        str | None,
        typer.Option(
            "--remote-executor",
            metavar="URL",
            help="A bazel remote executor (Remote Execution API); needs --push-toolchain, so that "
            "its workers run every action in the toolchain image.",
        ),
    ] = None,
    remote_instance: Annotated[
        str | None,
        typer.Option(
            "--remote-instance",
            metavar="NAME",
            help="The remote cache's or executor's instance name (bazel --remote_instance_name).",
            show_default=False,
        ),
    ] = None,
    remote_cache_read_only: Annotated[
        bool,
        typer.Option(
            "--remote-cache-read-only",
            help="Take hits from --remote-cache, upload nothing (e.g. for pull requests).",
        ),
    ] = False,
    push_toolchain: Annotated[
        str | None,
        typer.Option(
            "--push-toolchain",
            metavar="REGISTRY",
            help="Push the toolchain image to REGISTRY (host[:port][/path]) and have the remote "
            "executor run every action in it, by digest.",
            show_default=False,
        ),
    ] = None,
    cuda_capabilities: Annotated[
        str | None,
        typer.Option(
            "--cuda-capabilities", metavar="LIST", help="e.g. 8.9,9.0 (default: this host's GPUs)."
        ),
    ] = None,
    cuda_version: Annotated[
        str | None, typer.Option("--cuda-version", metavar="X.Y.Z", help="Hermetic CUDA version.")
    ] = None,
    cudnn_version: Annotated[
        str | None, typer.Option("--cudnn-version", metavar="X.Y.Z", help="cuDNN version.")
    ] = None,
    skip_disk_check: Annotated[
        bool, typer.Option("--skip-disk-check", help="Plan even when free disk looks too small.")
    ] = False,
    label: Annotated[
        bool,
        typer.Option(
            "--label/--no-label",
            help="Put the target in the wheel's version: 2.21.0+x86_64v4 (read by tfbuild pick).",
        ),
    ] = True,
    base_image: Annotated[
        str | None,
        typer.Option(
            "--base-image",
            metavar="NAME",
            help="A base-images.yaml entry, or a local image made by tfbuild base "
            "(e.g. tfbuild/base:jammy) where no registry can be reached.",
            show_default=False,
        ),
    ] = None,
    portable: Annotated[
        bool,
        typer.Option(
            "--portable/--no-portable",
            help="Reach the recipe's glibc floor (the stock wheel's) by TensorFlow's own route: "
            "its hermetic toolchain (2.21) or its old-glibc sysroot. --no-portable: the image's "
            "compiler and glibc, for systems as new as the image.",
        ),
    ] = True,
    sysroot_from: Annotated[
        str | None,
        typer.Option(
            "--sysroot-from",
            metavar="IMAGE",
            help="Link against this image's C library and libstdc++ (a base-images.yaml entry or "
            "a tfbuild base image): the wheel loads on that system and newer.",
            show_default=False,
        ),
    ] = None,
    canary: Annotated[
        bool,
        typer.Option(
            "--canary",
            help="tfbuild's STAND-IN source (a miniature, not TensorFlow) through the same "
            "pipeline, in a minute: what tfbuild doctor builds.",
        ),
    ] = False,
    reproducible: Annotated[
        bool,
        typer.Option(
            "--reproducible/--no-reproducible",
            help="The determinism measures: SOURCE_DATE_EPOCH, TZ, locale, path maps and a "
            "normalised wheel, so that a rebuild gives the same bytes.",
        ),
    ] = True,
    recipes_dir: RecipesDir = None,
) -> PlanArgs:
    """The plan options of plan, render and wheel, as one PlanArgs (which checks them)."""
    return PlanArgs(
        tf=tf,
        mkl=mkl,
        cuda=cuda,
        mkl_threading=mkl_threading,
        target=target,
        cpuinfo=cpuinfo,
        native=native,
        python=python,
        jobs=jobs,
        local_ram_resources=local_ram_resources,
        jvm_heap=jvm_heap,
        cache_volume=cache_volume,
        disk_cache=disk_cache,
        remote_cache=remote_cache,
        remote_executor=remote_executor,
        remote_instance=remote_instance,
        remote_cache_read_only=remote_cache_read_only,
        push_toolchain=push_toolchain,
        cuda_capabilities=cuda_capabilities,
        cuda_version=cuda_version,
        cudnn_version=cudnn_version,
        skip_disk_check=skip_disk_check,
        label=label,
        base_image=base_image,
        portable=portable,
        sysroot_from=sysroot_from,
        canary=canary,
        reproducible=reproducible,
        recipes_dir=tuple(recipes_dir or ()),
    )


class PlanCommand(TyperCommand):
    """A command that also takes the plan options; its callback reads them with plan_args(ctx).

    typer turns :func:`_plan_options` into click parameters once per command (with its own type
    conversions); this class appends them to the command's own and, on invocation, hands their
    values to ``_plan_options``, whose PlanArgs waits in the context for the command.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        shared = typer.main.get_command(_PLAN_OPTIONS_APP)
        self._plan_params = [p.name for p in shared.params if p.name]
        self._make_args = shared.callback
        self.params.extend(shared.params)

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors its own click)
        values = {name: ctx.params.pop(name) for name in self._plan_params}
        assert self._make_args is not None
        ctx.meta[_PLAN_ARGS] = self._make_args(**values)
        return super().invoke(ctx)


_PLAN_ARGS = "tfbuild.plan_args"
#: typer makes the click parameters (and their type conversions) of a command it holds.
_PLAN_OPTIONS_APP = typer.Typer(add_completion=False)
_PLAN_OPTIONS_APP.command()(_plan_options)


def plan_args(ctx: typer.Context) -> PlanArgs:
    """The PlanArgs of a command made with ``cls=PlanCommand``."""
    args = ctx.meta[_PLAN_ARGS]
    assert isinstance(args, PlanArgs)
    return args
