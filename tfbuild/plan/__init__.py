"""The build plan: options + recipe + host facts -> one frozen, fully resolved BuildPlan.

Everything here is a pure function. Every choice is recorded with the reason for it, so
``tfbuild plan`` can print *why* as well as *what*. The renderer turns a plan into files without
making any decision of its own.

The rooms: ``model`` (the data), ``toolchain`` (Python and compiler), ``target`` (CPU flags),
``resources`` (jobs, memory, disk), ``cuda`` (toolkit, cuDNN, GPUs), ``bazel`` (configs, rc lines,
options) and ``make`` (``make_plan``, which asks each of them in turn).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfbuild.plan.make import isolated, make_plan, with_jobs, with_resources
    from tfbuild.plan.model import (
        CACHE_ROOT,
        GIB,
        MIB,
        OUTPUT_BASE,
        OUTPUT_DIR,
        SOURCE_DIR,
        BuildPlan,
        CudaPlan,
        Reason,
        Resources,
    )
    from tfbuild.plan.options import PlanOptions

#: Where each name lives: imported on first use (PEP 562), so that importing one module of the
#: package (the CLI imports plan.options to declare its options) does not load the planner.
_HOMES = {
    **dict.fromkeys(("isolated", "make_plan", "with_jobs", "with_resources"), "make"),
    **dict.fromkeys(
        (
            "CACHE_ROOT",
            "GIB",
            "MIB",
            "OUTPUT_BASE",
            "OUTPUT_DIR",
            "SOURCE_DIR",
            "BuildPlan",
            "CudaPlan",
            "Reason",
            "Resources",
        ),
        "model",
    ),
    "PlanOptions": "options",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "CACHE_ROOT",
    "GIB",
    "MIB",
    "OUTPUT_BASE",
    "OUTPUT_DIR",
    "SOURCE_DIR",
    "BuildPlan",
    "CudaPlan",
    "PlanOptions",
    "Reason",
    "Resources",
    "isolated",
    "make_plan",
    "with_jobs",
    "with_resources",
]
