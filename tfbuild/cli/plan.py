"""``tfbuild plan``: every choice of a build, one line each (``--why``: with its reason)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_json
from tfbuild.core.options import JSON, Cli, declared, group, option
from tfbuild.plan.options import PlanOptions

#: ``--source DIR``: a TensorFlow checkout on this machine.
SOURCE = Cli(flags=("--source",), metavar="DIR")


@dataclass(frozen=True, kw_only=True)
class PlanArgs:
    """What ``tfbuild plan`` was asked: the plan options, and how to show the plan."""

    as_json: bool = option(JSON, default=False)
    why: bool = declared(
        False,
        "--why",
        help="Every choice with its reason in full, and the whole bazel command (the default "
        "shows the decisions, one line each).",
    )
    source: Path | None = option(
        SOURCE.but(
            help="Also check this TensorFlow tree against the plan (the preflight tfbuild wheel "
            "runs before any image is built): .bazelversion, configs, wheel target, Python lock, "
            "CUDA versions, toolchain route. Exit 4 when it does not fit."
        ),
        default=None,
    )
    plan: PlanOptions = group(PlanOptions)


@takes(PlanArgs)
def plan_command(request: PlanArgs) -> None:
    """Resolve a build: every choice tfbuild would make (--why: with the reason for each)."""
    from tfbuild.plan.here import plan_here

    planned = plan_here(request.plan)
    plan, report = planned.plan, None
    if request.source is not None:
        from tfbuild.build.preflight import preflight
        from tfbuild.build.source_tree import local_source

        report = preflight(plan, planned.recipe, local_source(request.source).path)
    if request.as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(plan) | ({"preflight": serial.to_data(report)} if report else {}))
    else:
        from tfbuild.cli.display import print_plan, print_preflight

        print_plan(plan, why=request.why, lead=planned.lead, here=planned.here)
        if report is not None:
            print_preflight(report)
    if report is not None and (failure := report.error(shown=not request.as_json)) is not None:
        raise failure
