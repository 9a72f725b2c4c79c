"""The commands that describe and plan, building nothing: detect, recipes, matrix, plan, render."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from tfbuild.cli.output import print_json, progress
from tfbuild.cli.plan_options import RecipesDir, plan_args


def detect(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON (schema: docs/schemas.md).")
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
            help="Only the flags for a portable target (x86_64_v3, haswell, ...) and whether it "
            "runs on the machine(s): the answer alone (--json: the whole report with it).",
            show_default=False,
        ),
    ] = None,
    why_not: Annotated[
        list[str] | None,
        typer.Option(
            "--why-not",
            metavar="NAME",
            help="Only whether code built for this target runs on the machine, and why not: the "
            "answer alone (--json: the whole report with it).",
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

    # A question (--target, --why-not) gets its answer alone; --json is always the whole report.
    question = bool(target or why_not) and not as_json
    report = gather(
        cpuinfo_files=tuple(cpuinfo or ()),
        compiler_spec=compiler,
        target=target,
        why_not=tuple(why_not or ()),
        with_gpu=gpu and not question,
    )
    if as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(report))
        return
    from tfbuild.cli.display import print_detect, print_detect_answers

    if question:
        print_detect_answers(report)
    else:
        print_detect(report)


# --- recipes ---------------------------------------------------------------------------------------

recipes_app = typer.Typer(
    help="The TensorFlow releases tfbuild can build, one recipe each.",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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
        print_json({"recipes": [r.to_json() for r in recipes.recipes], "dirs": list(recipes.dirs)})
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

    print_json(load_recipes(tuple(recipes_dir or ())).get(version).to_json())


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
    from tfbuild.build.release_check import check_release
    from tfbuild.build.run import ca_bundle_from
    from tfbuild.recipes.images import load_base_images
    from tfbuild.recipes.recipe import load_recipes

    extra = tuple(recipes_dir or ())
    recipe = load_recipes(extra).get(version)

    result = check_release(
        recipe,
        base_images=load_base_images(extra),
        source=source,
        ca_bundle=None if source is not None else ca_bundle_from(ca_bundle, os.environ),
        on_line=progress("verify", quiet=as_json),
    )
    if as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(result))
    else:
        from tfbuild.cli.display import print_release_check

        print_release_check(result)
    failure = result.error()
    if failure is not None:
        raise failure


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
    from tfbuild.recipes.images import load_base_images
    from tfbuild.recipes.recipe import load_recipes

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
    from tfbuild.plan.here import plan_here

    planned = plan_here(plan_args(ctx))
    plan, report = planned.plan, None
    if source is not None:
        from tfbuild.build.preflight import preflight
        from tfbuild.build.source_tree import local_source

        report = preflight(plan, planned.recipe, local_source(source).path)
    if as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(plan) | ({"preflight": serial.to_data(report)} if report else {}))
    else:
        from tfbuild.cli.display import print_plan, print_preflight

        print_plan(plan, why=why, lead=planned.lead, here=planned.here)
        if report is not None:
            print_preflight(report)
    failure = report.error(shown=not as_json) if report is not None else None
    if failure is not None:
        raise failure


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
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.render import check, check_owned, output_dir, publish_context, render_files

    directory = output_dir(out, option="-o")
    check_owned(directory, force=force)  # before any work; publish_context checks again
    planned = plan_here(plan_args(ctx))
    files = render_files(planned.plan)
    check(files, planned.recipe)
    for path in publish_context(files, directory, force=force):
        typer.echo(str(path))
