"""The build plan: options + recipe + host facts -> one frozen, fully resolved BuildPlan.

Everything here is a pure function. Every choice is recorded with the reason for it, so
``tfbuild plan`` can print *why* as well as *what*. The renderer turns a plan into files without
making any decision of its own. ``make_plan`` asks each module (ARCHITECTURE.md) in turn.
"""

import importlib
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
        Reason,
    )
    from tfbuild.plan.options import PlanOptions


def __getattr__(name: str) -> Any:
    """Each name imported on first use (PEP 562), so that importing one module of the package (the
    CLI imports plan.options to declare its options) does not load the planner: the lightest
    module that has it first."""
    if name in __all__:
        for home in ("options", "model", "make"):
            module = importlib.import_module(f"{__name__}.{home}")
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CACHE_ROOT",
    "GIB",
    "MIB",
    "OUTPUT_BASE",
    "OUTPUT_DIR",
    "SOURCE_DIR",
    "BuildPlan",
    "PlanOptions",
    "Reason",
    "isolated",
    "make_plan",
    "with_jobs",
    "with_resources",
]
