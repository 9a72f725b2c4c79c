"""``tfbuild wheel``: build the wheel in Docker; the wheel, its receipt and env file in dist/."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_json
from tfbuild.cli.plan import SOURCE
from tfbuild.cli.recipes import CA_BUNDLE
from tfbuild.core.options import DIST, JSON, VERBOSE, declared, group, option
from tfbuild.plan.options import PlanOptions


@dataclass(frozen=True, kw_only=True)
class WheelArgs:
    """What ``tfbuild wheel`` was asked: the run's options, and the plan options."""

    source: Path | None = option(
        SOURCE.but(
            help="A local TensorFlow checkout (any fork). Default: the recipe's release tarball, "
            "downloaded once and checked against its sha256."
        ),
        default=None,
    )
    source_sha256: str | None = declared(
        None,
        "--source-sha256",
        metavar="HEX",
        help="The tarball's sha256, where the recipe pins none.",
    )
    dist: str = option(DIST, default="dist")
    ca_bundle: Path | None = option(
        CA_BUNDLE.but(
            help="CA certificates for the build's downloads, mounted read-only (default: "
            "$SSL_CERT_FILE or $REQUESTS_CA_BUNDLE when set). Proxy variables pass through."
        ),
        default=None,
    )
    memory: str | None = declared(
        None, "--memory", metavar="SIZE", help="Memory limit of the build container, e.g. 16g."
    )
    remote_header_file: Path | None = declared(
        None,
        "--remote-header-file",
        metavar="FILE",
        help="Credentials for --remote-cache/--remote-executor: 'Name: value' lines, given to "
        "bazel through a credential helper in a private directory (an rc file for a bazel "
        "without one); never in the plan, receipt, log or a command line.",
    )
    keep_container: bool = declared(
        False, "--keep-container", help="Keep the build container for a post-mortem."
    )
    quiet: bool = declared(False, "-q", "--quiet", help="Print only the result.")
    verbose: bool = option(VERBOSE, default=False)
    from_receipt: Path | None = declared(
        None,
        "--from-receipt",
        metavar="RECEIPT",
        help="Build the same wheel again, here: the receipt's plan, source hash and package "
        "versions (instead of the plan options).",
    )
    as_json: bool = option(JSON, default=False)
    plan: PlanOptions = group(PlanOptions)


@takes(WheelArgs)
def wheel_command(request: WheelArgs) -> None:
    """Build the wheel in Docker: toolchain image, build container, wheel + receipt in dist/."""
    from tfbuild.build.credentials import read_remote_headers
    from tfbuild.build.run import BuildRun
    from tfbuild.cli.display import print_wheel_result
    from tfbuild.core.engine import DockerEngine
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.render import output_dir

    run = BuildRun(
        dist=output_dir(request.dist, option="--dist"),  # checked before anything is fetched
        source=request.source,
        source_sha256=request.source_sha256,
        ca_bundle=request.ca_bundle,
        memory=request.memory,
        keep_container=request.keep_container,
        quiet=request.quiet or request.as_json,
        verbose=request.verbose,
        # Read and checked first: a bad file is one line before anything is planned or built.
        remote_headers=None
        if request.remote_header_file is None
        else read_remote_headers(request.remote_header_file),
    )
    args = request.plan
    rebuilt = None
    if request.from_receipt is not None:  # read and checked before the engine: no Docker needed
        from tfbuild.build.rebuild import from_receipt as rebuild

        rebuilt = rebuild(request.from_receipt, args, run)
    else:  # the disk the build needs, before the engine: plan only warns of it, a build refuses
        from tfbuild.plan.resources import check_disk_here

        check_disk_here(args)
    with contextlib.closing(DockerEngine.connect()) as engine:
        if rebuilt is not None:
            from tfbuild.build.rebuild import check_base_image

            planned, run = rebuilt
            check_base_image(engine, planned.plan)
        else:
            planned = plan_here(args, engine)
        result = run.execute(planned, engine=engine)
    if request.as_json:
        print_json(result.to_json() | {"receipt_data": result.data.to_json()})
    else:
        print_wheel_result(result, quiet=request.quiet)
