"""``tfbuild recipes``: the TensorFlow releases tfbuild can build (list, show, verify)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import typer

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data, print_json, progress
from tfbuild.cli.plan import SOURCE
from tfbuild.core.options import JSON, RECIPES_DIR, Cli, option

recipes_app = typer.Typer(
    help="The TensorFlow releases tfbuild can build, one recipe each.",
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: The release a subcommand is about.
VERSION = Cli(argument=True, metavar="VERSION", help="TensorFlow version, e.g. 2.21 or 2.21.0.")
#: ``--ca-bundle FILE``: the CA certificates for downloads.
CA_BUNDLE = Cli(
    flags=("--ca-bundle",),
    metavar="FILE",
    help="CA certificates for the downloads (default: $SSL_CERT_FILE or $REQUESTS_CA_BUNDLE when "
    "set).",
)


@dataclass(frozen=True, kw_only=True)
class RecipesArgs:
    """What ``tfbuild recipes`` (the list) was asked."""

    as_json: bool = option(JSON, default=False)
    recipes_dir: tuple[Path, ...] = option(RECIPES_DIR, default=())


@recipes_app.callback()
@takes(RecipesArgs, context=True)
def recipes_list(ctx: typer.Context, request: RecipesArgs) -> None:
    """List the recipes (one per TensorFlow release)."""
    if ctx.invoked_subcommand is not None:
        return
    from tfbuild.recipes.recipe import load_recipes

    recipes = load_recipes(request.recipes_dir)
    if request.as_json:
        print_json({"recipes": [r.to_json() for r in recipes.recipes], "dirs": list(recipes.dirs)})
        return
    from tfbuild.cli.display import print_recipes

    print_recipes(recipes)


@dataclass(frozen=True, kw_only=True)
class RecipeShowArgs:
    version: str = option(VERSION)
    recipes_dir: tuple[Path, ...] = option(RECIPES_DIR, default=())


@recipes_app.command("show", short_help="Print one recipe, resolved, as JSON")
@takes(RecipeShowArgs)
def recipes_show(request: RecipeShowArgs) -> None:
    """Print one recipe, resolved, as JSON (its verified record says how far it was checked)."""
    from tfbuild.recipes.recipe import load_recipes

    print_json(load_recipes(request.recipes_dir).get(request.version).to_json())


@dataclass(frozen=True, kw_only=True)
class RecipeVerifyArgs:
    version: str = option(VERSION)
    source: Path | None = option(
        SOURCE.but(
            help="Check this local tree instead of downloading the recipe's release tarball."
        ),
        default=None,
    )
    ca_bundle: Path | None = option(CA_BUNDLE, default=None)
    as_json: bool = option(JSON, default=False)
    recipes_dir: tuple[Path, ...] = option(RECIPES_DIR, default=())


@recipes_app.command(
    "verify", short_help="Check a recipe against its release's own files (exit 4: drift)"
)
@takes(RecipeVerifyArgs)
def recipes_verify(request: RecipeVerifyArgs) -> None:
    """Check a recipe against its release's own files: the tarball (sha256 checked) or --source
    DIR, for every plan of the recipe (each Python's cpu build, mkl, cuda). Exit 4 on drift."""
    from tfbuild.build.release_check import check_release
    from tfbuild.build.run import ca_bundle_from
    from tfbuild.recipes.images import load_base_images
    from tfbuild.recipes.recipe import load_recipes

    recipe = load_recipes(request.recipes_dir).get(request.version)
    source = request.source
    result = check_release(
        recipe,
        base_images=load_base_images(request.recipes_dir),
        source=source,
        ca_bundle=None if source is not None else ca_bundle_from(request.ca_bundle, os.environ),
        on_line=progress("verify", quiet=request.as_json),
    )
    if request.as_json:
        print_data(result)
    else:
        from tfbuild.cli.display import print_release_check

        print_release_check(result)
    if (failure := result.error()) is not None:
        raise failure
