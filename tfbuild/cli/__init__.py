"""The command line: parse options, call one function per command, print, map errors to exit codes.

No logic lives here. Every command hands its options, as one typed value, to a function of the
layers below (a planner, a build run, a detector) and prints the result; every failure arrives as a
:class:`tfbuild.core.errors.TfbuildError` and leaves through :func:`main` as one line and the error's
exit code. The plan options that ``plan``, ``render`` and ``wheel`` share are declared once
(:func:`_plan_options`) and reach each command as one :class:`tfbuild.plan.options.PlanOptions`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tfbuild import __version__
from tfbuild.cli.plan_options import PlanCommand, RecipesDir, plan_args
from tfbuild.core.errors import TfbuildError, printable
from tfbuild.core.variants import Variant

app = typer.Typer(
    name="tfbuild",
    help="Build TensorFlow wheels optimized for the machines they run on.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state: dict[str, bool] = {"debug": False}


def _debug_from_env() -> bool:
    return os.environ.get("TFBUILD_DEBUG", "") not in ("", "0", "false", "no")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tfbuild {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks (also TFBUILD_DEBUG=1).")
    ] = False,
) -> None:
    """Build TensorFlow wheels optimized for the machines they run on."""
    _state["debug"] = debug or _debug_from_env()


def _print_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


@app.command()
def detect(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON (schema in the README).")
    ] = False,
    cpuinfo: Annotated[
        list[Path] | None,
        typer.Option(
            "--cpuinfo",
            metavar="FILE",
            help="Describe another machine from a saved /proc/cpuinfo. Repeat to get the common "
            "target of several machines.",
            show_default=False,
        ),
    ] = None,
    compiler: Annotated[
        str | None,
        typer.Option(
            "--compiler",
            metavar="SPEC",
            help="Compiler the flags are for, e.g. clang-18 or gcc-12 (a bare name asks PATH). "
            "Default: the newest recipe's compiler (what a build uses).",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            metavar="NAME",
            help="Also show flags for a portable target (x86_64_v3, haswell, ...) and whether it "
            "runs on the machine(s).",
            show_default=False,
        ),
    ] = None,
    why_not: Annotated[
        list[str] | None,
        typer.Option(
            "--why-not",
            metavar="NAME",
            help="Explain whether code built for this target runs on the machine, and why not.",
            show_default=False,
        ),
    ] = None,
    gpu: Annotated[
        bool,
        typer.Option("--gpu/--no-gpu", help="Look for CUDA, cuDNN, NCCL, TensorRT and GPUs."),
    ] = True,
) -> None:
    """Describe a machine: CPU and microarchitecture, TensorFlow's CPU features, compiler flags,
    CUDA and GPUs, resources."""
    from tfbuild.detect.gather import gather

    report = gather(
        cpuinfo_files=tuple(cpuinfo or ()),
        compiler_spec=compiler,
        target=target,
        why_not=tuple(why_not or ()),
        with_gpu=gpu,
    )
    if as_json:
        _print_json(report.to_json())
        return
    from tfbuild.cli.display import print_detect

    print_detect(report)


# --- recipes ---------------------------------------------------------------------------------------

recipes_app = typer.Typer(
    help="The TensorFlow releases tfbuild can build, one recipe each.",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(recipes_app, name="recipes")


@recipes_app.callback()
def recipes_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
    recipes_dir: RecipesDir = None,
) -> None:
    """List the recipes (one per TensorFlow release)."""
    if ctx.invoked_subcommand is not None:
        return
    from tfbuild.recipes.recipe import load_recipes

    recipes = load_recipes(tuple(recipes_dir or ()))
    if as_json:
        _print_json({"recipes": [r.to_json() for r in recipes.recipes], "dirs": list(recipes.dirs)})
        return
    from tfbuild.cli.display import print_recipes

    print_recipes(recipes)


@recipes_app.command("show")
def recipes_show(
    version: Annotated[str, typer.Argument(help="TensorFlow version, e.g. 2.21 or 2.21.0.")],
    recipes_dir: RecipesDir = None,
) -> None:
    """Print one recipe, resolved, as JSON (its verified record says how far it was checked)."""
    from tfbuild.recipes.recipe import load_recipes

    _print_json(load_recipes(tuple(recipes_dir or ())).get(version).to_json())


@recipes_app.command("verify")
def recipes_verify(
    version: Annotated[str, typer.Argument(help="TensorFlow version, e.g. 2.21 or 2.21.0.")],
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            metavar="DIR",
            help="Check this local tree instead of downloading the recipe's release tarball.",
            show_default=False,
        ),
    ] = None,
    ca_bundle: Annotated[
        Path | None,
        typer.Option(
            "--ca-bundle",
            metavar="FILE",
            help="CA certificates for the download (default: $SSL_CERT_FILE or "
            "$REQUESTS_CA_BUNDLE when set).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    recipes_dir: RecipesDir = None,
) -> None:
    """Check a recipe against its release's own files: the tarball (sha256 checked) or --source
    DIR, for every plan of the recipe (each Python's cpu build, mkl, cuda). Exit 4 on drift."""
    from tfbuild.build.preflight import check_release
    from tfbuild.build.run import ca_bundle_from
    from tfbuild.recipes.recipe import load_base_images, load_recipes

    extra = tuple(recipes_dir or ())
    recipe = load_recipes(extra).get(version)

    def say(line: str) -> None:
        if not as_json:
            sys.stderr.write(f"[verify] {printable(line)}\n")

    result = check_release(
        recipe,
        base_images=load_base_images(extra),
        source=source,
        ca_bundle=None if source is not None else ca_bundle_from(ca_bundle, os.environ),
        on_line=say,
    )
    if as_json:
        _print_json(result.to_json())
    else:
        from tfbuild.cli.display import print_release_check

        print_release_check(result)
    failure = result.error()
    if failure is not None:
        raise failure


@app.command("matrix")
def matrix_command(
    tf: Annotated[
        list[str] | None,
        typer.Option(
            "--tf",
            metavar="LIST",
            help="TensorFlow versions, e.g. 2.20,2.21, or all (default: the newest recipe).",
            show_default=False,
        ),
    ] = None,
    python: Annotated[
        list[str] | None,
        typer.Option(
            "--python",
            metavar="LIST",
            help="Pythons, e.g. 3.11,3.12 (default: all a release supports).",
            show_default=False,
        ),
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--targets",
            metavar="LIST",
            help="Portable CPU targets (default: x86_64_v2,x86_64_v3,x86_64_v4).",
            show_default=False,
        ),
    ] = None,
    variants: Annotated[
        list[str] | None,
        typer.Option(
            "--variants", metavar="LIST", help="cpu, mkl, cuda (default: cpu).", show_default=False
        ),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Say why each left-out combination is impossible.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="One line of JSON for GitHub Actions' fromJSON: {include}."),
    ] = False,
    recipes_dir: RecipesDir = None,
) -> None:
    """The CI build matrix: TensorFlow x Python x CPU target x variant, impossible ones left out."""
    from tfbuild.plan.matrix import build_matrix
    from tfbuild.recipes.recipe import load_base_images, load_recipes

    extra = tuple(recipes_dir or ())
    matrix = build_matrix(
        load_recipes(extra),
        load_base_images(extra),
        tf=tf,
        python=python,
        targets=targets,
        variants=variants,
    )
    if explain:
        from tfbuild.cli.display import print_skipped

        print_skipped(matrix.skipped)
    if as_json:
        # One line: the workflow writes it to $GITHUB_OUTPUT as matrix=<json>.
        sys.stdout.write(json.dumps(matrix.to_json(), separators=(",", ":")) + "\n")
        return
    from tfbuild.cli.display import print_matrix

    print_matrix(matrix, explain=explain)


# --- plan, render and wheel: the plan options, declared once ------------------------------------------


@app.command("plan", cls=PlanCommand)
def plan_command(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    why: Annotated[
        bool,
        typer.Option(
            "--why",
            help="Every choice with its reason in full, and the whole bazel command (the default "
            "shows the decisions, one line each).",
        ),
    ] = False,
    source: Annotated[
        Path | None,
        typer.Option(
            "--source",
            metavar="DIR",
            help="Also check this TensorFlow tree against the plan (the preflight tfbuild wheel "
            "runs before any image is built): .bazelversion, configs, wheel target, Python lock, "
            "CUDA versions, toolchain route. Exit 4 when it does not fit.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Resolve a build: every choice tfbuild would make (--why: with the reason for each)."""
    from tfbuild.build.base_images import plan_here

    planned = plan_here(plan_args(ctx))
    plan, report = planned.plan, None
    if source is not None:
        from tfbuild.build.preflight import preflight
        from tfbuild.build.source_tree import local_source

        report = preflight(plan, planned.recipe, local_source(source).path)
    if as_json:
        _print_json(plan.to_json() | ({"preflight": report.to_json()} if report else {}))
    else:
        from tfbuild.cli.display import print_plan, print_preflight

        print_plan(plan, why=why)
        if report is not None:
            print_preflight(report)
    failure = report.error(shown=not as_json) if report is not None else None
    if failure is not None:
        raise failure


@app.command("render", cls=PlanCommand)
def render_command(
    ctx: typer.Context,
    out: Annotated[
        str, typer.Option("-o", "--output", metavar="DIR", help="Where to write the context.")
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into DIR even if it holds files tfbuild did not write there (or that "
            "were changed since); they may be overwritten.",
        ),
    ] = False,
) -> None:
    """Write the build context: Dockerfile, bazel rc file, build.sh, runtime.env, plan.json."""
    from tfbuild.build.base_images import plan_here
    from tfbuild.plan.render import check, check_owned, output_dir, publish_context, render_files

    directory = output_dir(out, option="-o")
    check_owned(directory, force=force)  # before any work; publish_context checks again
    planned = plan_here(plan_args(ctx))
    files = render_files(planned.plan)
    check(files, planned.recipe)
    for path in publish_context(files, directory, force=force):
        typer.echo(str(path))


@app.command("wheel", cls=PlanCommand)
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
    from tfbuild.build.base_images import plan_here
    from tfbuild.build.run import BuildRun, read_remote_headers
    from tfbuild.cli.display import print_wheel_result
    from tfbuild.core.engine import DockerEngine
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
    with contextlib.closing(DockerEngine.connect()) as engine:
        if rebuilt is not None:
            from tfbuild.build.rebuild import check_base_image

            planned, run = rebuilt
            check_base_image(engine, planned.plan)
        else:
            planned = plan_here(args, engine)
        result = run.execute(planned, engine=engine)
    if as_json:
        _print_json(result.to_json() | {"receipt_data": result.data.to_json()})
    else:
        print_wheel_result(result, quiet=quiet)


# --- doctor --------------------------------------------------------------------------------------------


@app.command("doctor")
def doctor_command(
    canary: Annotated[
        bool,
        typer.Option(
            "--canary/--no-canary",
            help="Build the stand-in canary through the whole pipeline (a few minutes).",
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
        bool, typer.Option("-v", "--verbose", help="Show every line of the canary builds.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check this machine for a TensorFlow build, then prove the pipeline with the canary."""
    from tfbuild.build.doctor import run_doctor
    from tfbuild.cli.display import print_doctor_check

    def say(text: str) -> None:
        if not as_json:
            sys.stderr.write(f"[doctor] {printable(text)}\n")

    report = run_doctor(
        with_canary=canary,
        dist=dist,
        say=say,
        show=(lambda _check: None) if as_json else print_doctor_check,
        verbose=verbose and not as_json,
    )
    if as_json:
        _print_json(report.to_json())
    failure = report.failure()
    if failure is not None:
        raise failure


# --- verify -------------------------------------------------------------------------------------------


@app.command("verify")
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

    # The receipt (and the wheel against it) read and checked first: a bad one needs no engine.
    request = prepare_verify(wheel, receipt=receipt)
    with contextlib.closing(DockerEngine.connect()) as engine:
        result = verify(
            request,
            engine=engine,
            source=source,
            quiet=as_json or not verbose,
            verbose=verbose,
        )
    if as_json:
        _print_json(result.to_json())
    else:
        from tfbuild.cli.wheel_display import print_verify

        print_verify(result)
    failure = result.error()
    if failure is not None:
        raise failure


# --- smoke -------------------------------------------------------------------------------------------


@app.command("smoke")
def smoke_command(
    wheel: Annotated[
        str | None,
        typer.Argument(
            help="A .whl file, or a requirement such as tensorflow-cpu==2.21.0.", show_default=False
        ),
    ] = None,
    installed: Annotated[
        bool, typer.Option("--installed", help="Test the TensorFlow of the --python interpreter.")
    ] = False,
    python: Annotated[
        str | None,
        typer.Option("--python", metavar="PATH", help="Interpreter for the test environments."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="SPEC",
            help="What to compare with: a .whl, a requirement, or 'none'. Default: the stock "
            "tensorflow-cpu of the same version.",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shorter measurements for CI (under 2 minutes).")
    ] = False,
    bench: Annotated[
        bool, typer.Option("--bench/--no-bench", help="Benchmark, or only probe the import.")
    ] = True,
    settings: Annotated[
        bool,
        typer.Option("--settings/--no-settings", help="Try TCMalloc, thread and OpenMP settings."),
    ] = True,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file", metavar="FILE", help="The wheel's runtime env file: read, then updated."
        ),
    ] = None,
    allow_unused: Annotated[
        bool,
        typer.Option("--allow-unused", help="Pass even if TensorFlow names unused instructions."),
    ] = False,
    allow_slower: Annotated[
        str | None,
        typer.Option(
            "--allow-slower", metavar="OPS", help="Comma-separated ops allowed to be slower."
        ),
    ] = None,
    min_margin: Annotated[
        float,
        typer.Option(
            "--min-margin", min=0.0, max=1.0, help="Smallest difference called a verdict."
        ),
    ] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    plot_file: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE.png", help="Draw candidate vs baseline per op."),
    ] = None,
    in_image: Annotated[
        list[str] | None,
        typer.Option(
            "--in-image",
            metavar="IMAGE",
            help="Instead: does the wheel's native code load on another system? Its loader is "
            "asked in a container of IMAGE (e.g. tfbuild/base:bullseye, made by tfbuild base). "
            "Repeat for several.",
            show_default=False,
        ),
    ] = None,
    wheelhouse: Annotated[
        Path | None,
        typer.Option(
            "--wheelhouse",
            metavar="DIR",
            help="With --in-image: the dependencies' wheels (pip download -d DIR ...), installed "
            "offline with the image's pip before the import.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Prove a wheel: no unused-instruction complaint at import, and faster than the stock wheel."""
    from tfbuild.core.errors import SmokeFailed
    from tfbuild.smoke.loads import check_in_image_request

    check_in_image_request(wheel, in_image or [], wheelhouse)
    if in_image and wheel is not None:  # checked: --in-image has a .whl file
        _smoke_in_images(wheel, in_image, wheelhouse=wheelhouse, as_json=as_json)
        return
    from tfbuild.smoke.report import Rules, check_plot
    from tfbuild.smoke.session import SmokeOptions, run_smoke, with_wheel_files

    options = SmokeOptions(
        wheel=wheel,
        installed=installed,
        python=python or sys.executable,
        baseline=baseline,
        quick=quick,
        bench=bench,
        settings=settings,
        rules=Rules(
            allow_unused=allow_unused,
            allow_slower=tuple(o.strip() for o in (allow_slower or "").split(",") if o.strip()),
            min_margin=min_margin,
        ),
        env_file=env_file,
    )
    if plot_file is not None:
        check_plot()
    options = with_wheel_files(options)

    def progress(message: str) -> None:
        if not as_json:
            sys.stderr.write(f"[smoke] {printable(message)}\n")

    report = run_smoke(options, progress=progress)
    if plot_file is not None and report.results:
        from tfbuild.smoke.report import plot

        plot(report, plot_file)
    if as_json:
        _print_json(report.to_json())
    else:
        from tfbuild.cli.wheel_display import print_smoke

        print_smoke(report)
    if not report.passed:
        raise SmokeFailed(f"{report.candidate_label} did not pass", why="; ".join(report.failures))


def _smoke_in_images(
    wheel: str, images: list[str], *, wheelhouse: Path | None, as_json: bool
) -> None:
    """``smoke --in-image``: load the wheel's libraries with each image's own loader, check its
    tags and requirements against the image's Python and import it there."""
    from tfbuild.smoke.loads import loads_failure, loads_in_images

    reports = loads_in_images(Path(wheel), images, wheelhouse=wheelhouse)
    if as_json:
        _print_json(
            {"schema": "tfbuild.loads/1", "wheel": wheel, "images": [r.to_json() for r in reports]}
        )
    else:
        from tfbuild.cli.wheel_display import print_loads

        print_loads(Path(wheel), reports)
    failure = loads_failure(Path(wheel), reports)
    if failure is not None:
        raise failure


# --- base ----------------------------------------------------------------------------------------------


@app.command("base")
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Make a base image with debootstrap + docker import (for sites without registry access)."""
    from tfbuild.build.base_images import make_base_image
    from tfbuild.core.engine import DockerEngine

    engine = DockerEngine.connect()
    try:

        def show(line: str) -> None:
            if not as_json:
                sys.stderr.write(f"[base] {printable(line)}\n")

        result = make_base_image(
            engine, suite=suite, mirror=mirror, tag=tag, force=force, on_line=show
        )
    finally:
        engine.close()
    if as_json:
        _print_json(result.to_json())
    else:
        state = f"created in {result.seconds:.0f} s" if result.created else "already there, reused"
        typer.echo(printable(f"{result.tag} ({result.image_id[:19]}): {state}"))


# --- index -------------------------------------------------------------------------------------------


@app.command("index")
def index_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The directory of wheels, e.g. dist.")
    ],
    title: Annotated[
        str | None,
        typer.Option(
            "--title", help="The page's title (default: a fixed one).", show_default=False
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="Link the wheels at URL/NAME (e.g. a release's download URL), not beside the page.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the wheels as JSON.")] = False,
) -> None:
    """Write DIR/index.html (a pip --find-links page, sha256 in every link) and DIR/SHA256SUMS."""
    from tfbuild.wheel.index import write_index

    result = write_index(directory, title=title, base_url=base_url)
    if as_json:
        _print_json(result.to_json())
        return
    for entry in result.entries:
        standin = "  STAND-IN" if entry.standin else ""
        typer.echo(printable(f"{entry.sha256}  {entry.name}{standin}"))
    count = len(result.entries)
    wheels = f"{count} wheel" if count == 1 else f"{count} wheels"
    typer.echo(printable(f"wrote {result.index} and {result.sums}: {wheels}"))


# --- pick ----------------------------------------------------------------------------------------------


@app.command("pick")
def pick_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="DIR_OR_INDEX_URL",
            help="A directory of wheels (e.g. dist), one .whl, or an index page that links to "
            "them: a file (e.g. dist/index.html, written by tfbuild index) or an http(s) URL.",
        ),
    ],
    cpuinfo: Annotated[
        Path | None,
        typer.Option(
            "--cpuinfo", metavar="FILE", help="Pick for the machine of a saved /proc/cpuinfo."
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="X.Y",
            help="The Python to match (default: --pip-python's, else tfbuild's own).",
            show_default=False,
        ),
    ] = None,
    driver_cuda: Annotated[
        str | None,
        typer.Option(
            "--driver-cuda",
            metavar="X.Y|none",
            help="The newest CUDA the GPU driver supports (default: from nvidia-smi; none with "
            "--cpuinfo).",
            show_default=False,
        ),
    ] = None,
    glibc: Annotated[
        str | None,
        typer.Option(
            "--glibc",
            metavar="X.Y",
            help="The machine's glibc (default: this machine's; not checked with --cpuinfo).",
            show_default=False,
        ),
    ] = None,
    libstdcxx: Annotated[
        str | None,
        typer.Option(
            "--libstdcxx",
            metavar="X.Y.Z",
            help="The newest GLIBCXX_ version of the machine's libstdc++, e.g. 3.4.25 (default: "
            "this machine's; not checked with --cpuinfo).",
            show_default=False,
        ),
    ] = None,
    tf: Annotated[
        str | None,
        typer.Option("--tf", metavar="VERSION", help="Only this TensorFlow release, e.g. 2.20."),
    ] = None,
    variant: Annotated[
        Variant | None,
        typer.Option("--variant", case_sensitive=False, help="Only this kind of build."),
    ] = None,
    install: Annotated[
        bool, typer.Option("--install", help="pip install the chosen wheel.")
    ] = False,
    pip_python: Annotated[
        str | None,
        typer.Option(
            "--pip-python",
            metavar="PATH",
            help="Install into this interpreter (its version is the Python to match).",
            show_default=False,
        ),
    ] = None,
    pip_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--pip-arg",
            metavar="ARG",
            help="Pass ARG to pip install (repeat), e.g. --pip-arg=--no-deps.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="One deadline for reading the index page and its receipts.",
        ),
    ] = 120.0,  # tfbuild.pick.fetch.DEFAULT_TIMEOUT (not imported here: --json stays fast)
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="HOST",
            help="Also follow an index page's links to HOST (HOST:PORT, https://HOST) (repeat); "
            "by default only links to the page's own origin.",
            show_default=False,
        ),
    ] = None,
    allow_unhashed: Annotated[
        bool,
        typer.Option(
            "--allow-unhashed",
            help="--install a wheel whose index link carries no #sha256= (pip cannot check it).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the choice as JSON.")] = False,
) -> None:
    """Choose the wheel that runs best here (or on a --cpuinfo machine), and say why."""
    from tfbuild.pick.session import PickRequest, choose, install_choice

    request = PickRequest(
        source=source,
        cpuinfo=cpuinfo,
        python=python,
        driver_cuda=driver_cuda,
        glibc=glibc,
        libstdcxx=libstdcxx,
        tf=tf,
        variant=variant,
        install=install,
        pip_python=pip_python,
        pip_args=tuple(pip_arg or ()),
        timeout=timeout,
        allow_origins=tuple(allow_origin or ()),
        allow_unhashed=allow_unhashed,
    )
    picked = choose(request)
    if not as_json:
        from tfbuild.cli.wheel_display import print_pick

        print_pick(picked.result)
    if picked.unhashed:
        sys.stderr.write(f"tfbuild: warning: {picked.unhashed}\n")
    installed = install_choice(request, picked, capture=as_json)
    if as_json:
        install_data = installed.to_json() if installed else None
        _print_json(picked.result.to_json() | {"install": install_data})
    failure = picked.failure(installed)
    if failure is not None:
        raise failure
    if installed is not None and not as_json:
        typer.echo(printable(f"installed {installed.wheel} into {installed.python}"))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tfbuild`` console script: the only place that catches errors."""
    _state["debug"] = _debug_from_env() or "--debug" in (argv or sys.argv[1:])
    try:
        app(args=argv, prog_name="tfbuild")
    except TfbuildError as exc:
        if _state["debug"]:
            raise
        for detail in exc.details:
            sys.stderr.write(f"  | {printable(detail)}\n")
        sys.stderr.write(f"tfbuild: error: {exc.line()}\n")  # line(): printable already
        if exc.hint:
            sys.stderr.write(f"tfbuild: hint: {exc.hint}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        if _state["debug"]:
            raise
        sys.stderr.write("tfbuild: interrupted: everything tfbuild started was stopped.\n")
        sys.exit(130)
    except Exception as exc:
        if _state["debug"]:
            raise
        sys.stderr.write(
            f"tfbuild: internal error: {type(exc).__name__}: {printable(str(exc))}. "
            "Run again with --debug for the traceback, and please report it.\n"
        )
        sys.exit(1)
