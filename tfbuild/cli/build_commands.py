"""The commands that build in Docker: wheel, doctor, verify (a rebuild) and base."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from tfbuild.cli.output import print_base_image, print_json, progress
from tfbuild.cli.plan_options import plan_args
from tfbuild.core.defaults import DOCTOR_TIMES


def wheel_command(
    ctx: typer.Context,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            metavar="DIR",
            help="A local TensorFlow checkout (any fork). Default: the recipe's release tarball, "
            "downloaded once and checked against its sha256.",
            show_default=False,
        ),
    ] = None,
    source_sha256: Annotated[
        str | None,
        typer.Option(
            "--source-sha256",
            metavar="HEX",
            help="The tarball's sha256, where the recipe pins none.",
            show_default=False,
        ),
    ] = None,
    dist: Annotated[
        str, typer.Option("--dist", metavar="DIR", help="Where the wheel, receipt and logs go.")
    ] = "dist",
    ca_bundle: Annotated[
        Path | None,
        typer.Option(
            "--ca-bundle",
            metavar="FILE",
            help="CA certificates for the build's downloads, mounted read-only (default: "
            "$SSL_CERT_FILE or $REQUESTS_CA_BUNDLE when set). Proxy variables pass through.",
            show_default=False,
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory", metavar="SIZE", help="Memory limit of the build container, e.g. 16g."
        ),
    ] = None,
    remote_header_file: Annotated[
        Path | None,
        typer.Option(
            "--remote-header-file",
            metavar="FILE",
            help="Credentials for --remote-cache/--remote-executor: 'Name: value' lines, given to "
            "bazel through a credential helper in a private directory (an rc file for a bazel "
            "without one); never in the plan, receipt, log or a command line.",
            show_default=False,
        ),
    ] = None,
    keep_container: Annotated[
        bool, typer.Option("--keep-container", help="Keep the build container for a post-mortem.")
    ] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Print only the result.")] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show every line of the build.")
    ] = False,
    from_receipt: Annotated[
        Path | None,
        typer.Option(
            "--from-receipt",
            metavar="RECEIPT",
            help="Build the same wheel again, here: the receipt's plan, source hash and package "
            "versions (instead of the plan options).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Build the wheel in Docker: toolchain image, build container, wheel + receipt in dist/."""
    from tfbuild.build.credentials import read_remote_headers
    from tfbuild.build.run import BuildRun
    from tfbuild.cli.display import print_wheel_result
    from tfbuild.core.engine import DockerEngine
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.render import output_dir

    run = BuildRun(
        dist=output_dir(dist, option="--dist"),  # checked before anything is fetched or built
        source=source,
        source_sha256=source_sha256,
        ca_bundle=ca_bundle,
        memory=memory,
        keep_container=keep_container,
        quiet=quiet or as_json,
        verbose=verbose,
        # Read and checked first: a bad file is one line before anything is planned or built.
        remote_headers=None
        if remote_header_file is None
        else read_remote_headers(remote_header_file),
    )
    args = plan_args(ctx)
    rebuilt = None
    if from_receipt is not None:  # read and checked before the engine: a bad one needs no Docker
        from tfbuild.build.rebuild import from_receipt as rebuild

        rebuilt = rebuild(from_receipt, args, run)
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
    if as_json:
        print_json(result.to_json() | {"receipt_data": result.data.to_json()})
    else:
        print_wheel_result(result, quiet=quiet)


# --- doctor --------------------------------------------------------------------------------------------


def doctor_command(
    canary: Annotated[
        bool,
        typer.Option(
            "--canary/--no-canary",
            help=f"Build the stand-in canary through the whole pipeline ({DOCTOR_TIMES}).",
        ),
    ] = True,
    dist: Annotated[
        Path | None,
        typer.Option(
            "--dist",
            metavar="DIR",
            help="Keep the canary wheels, receipts and logs here (default: a temporary directory).",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "-v", "--verbose", help="Show every line of the canary builds and of debootstrap."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check this machine for a TensorFlow build, then prove the pipeline with the canary."""
    from tfbuild.build.doctor import run_doctor
    from tfbuild.cli.display import print_doctor_check

    report = run_doctor(
        with_canary=canary,
        dist=dist,
        say=progress("doctor", quiet=as_json),
        show=(lambda _check: None) if as_json else print_doctor_check,
        verbose=verbose and not as_json,
        quiet=as_json,
    )
    if as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(report))
    failure = report.failure()
    if failure is not None:
        raise failure


# --- verify -------------------------------------------------------------------------------------------


def verify_command(
    wheel: Annotated[Path, typer.Argument(metavar="WHEEL", help="A wheel built by tfbuild wheel.")],
    receipt: Annotated[
        Path | None,
        typer.Option(
            "--receipt",
            metavar="FILE",
            help="Its receipt (default: <wheel>.json beside it).",
            show_default=False,
        ),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            metavar="DIR",
            help="The checkout it was built from, when it was built with --source.",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show every line of the rebuild.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Rebuild a wheel from its receipt in isolation and check the rebuild is the same, byte for byte."""
    from tfbuild.build.rebuild import prepare_verify, verify
    from tfbuild.core.engine import DockerEngine
    from tfbuild.wheel.overlay_receipt import is_overlay_wheel

    if is_overlay_wheel(wheel):
        from tfbuild.cli.overlay_command import verify_overlay_command

        verify_overlay_command(wheel, as_json=as_json)
        return
    # The receipt (and the wheel against it) read and checked first: a bad one needs no engine.
    request = prepare_verify(wheel, receipt=receipt)
    with contextlib.closing(DockerEngine.connect()) as engine:
        result = verify(
            request,
            engine=engine,
            source=source,
            quiet=as_json,  # else what the rebuild does, as a build shows it (-v: every line)
            verbose=verbose,
        )
    if as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(result))
    else:
        from tfbuild.cli.wheel_display import print_verify

        print_verify(result)
    failure = result.error()
    if failure is not None:
        raise failure


# --- base ----------------------------------------------------------------------------------------------


def base_command(
    suite: Annotated[
        str,
        typer.Option(
            "--suite",
            help="Debian or Ubuntu suite: bullseye, bookworm, trixie, jammy, noble (on any host "
            "with debootstrap: tfbuild brings the script and keyring a suite needs).",
        ),
    ] = "bookworm",
    mirror: Annotated[
        str | None,
        typer.Option(
            "--mirror", metavar="URL", help="Package mirror (default: the distribution's)."
        ),
    ] = None,
    tag: Annotated[
        str | None, typer.Option("--tag", help="Image tag (default: tfbuild/base:SUITE).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if the tag exists.")] = False,
    verbose: Annotated[
        bool,
        typer.Option("-v", "--verbose", help="Show every line of debootstrap (else in its log)."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Make a base image with debootstrap + docker import (for sites without registry access)."""
    from tfbuild.build.base_images import make_base_image
    from tfbuild.core.engine import DockerEngine

    engine = DockerEngine.connect()
    try:
        result = make_base_image(
            engine,
            suite=suite,
            mirror=mirror,
            tag=tag,
            force=force,
            on_line=progress("base", quiet=as_json),
            verbose=verbose,
        )
    finally:
        engine.close()
    if as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(result))
    else:
        print_base_image(result)
