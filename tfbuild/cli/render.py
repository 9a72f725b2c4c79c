"""``tfbuild render``: write a build's context (Dockerfile, rc file, build.sh, env, plan)."""

from __future__ import annotations

from dataclasses import MISSING, dataclass

import typer

from tfbuild.cli.options import takes
from tfbuild.core.options import declared, group
from tfbuild.plan.options import PlanOptions


@dataclass(frozen=True, kw_only=True)
class RenderArgs:
    """What ``tfbuild render`` was asked: where to write, and the plan options."""

    output: str = declared(
        MISSING, "-o", "--output", metavar="DIR", help="Where to write the context."
    )
    force: bool = declared(
        False,
        "--force",
        help="Write into DIR even if it holds files tfbuild did not write there (or that "
        "were changed since); they may be overwritten.",
    )
    plan: PlanOptions = group(PlanOptions)


@takes(RenderArgs)
def render_command(request: RenderArgs) -> None:
    """Write the build context: Dockerfile, bazel rc file, build.sh, runtime.env, plan.json."""
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.render import check, check_owned, output_dir, publish_context, render_files

    directory = output_dir(request.output, option="-o")
    check_owned(directory, force=request.force)  # before any work; publish_context checks again
    planned = plan_here(request.plan)
    files = render_files(planned.plan)
    check(files, planned.recipe)
    for path in publish_context(files, directory, force=request.force):
        typer.echo(str(path))
