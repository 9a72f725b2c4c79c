"""``tfbuild base``: make a base image with debootstrap (no registry needed)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_base_image, print_data, progress
from tfbuild.core.options import JSON, VERBOSE, declared, option


@dataclass(frozen=True, kw_only=True)
class BaseArgs:
    suite: str = declared(
        "bookworm",
        "--suite",
        help="Debian or Ubuntu suite: bullseye, bookworm, trixie, jammy, noble (on any host "
        "with debootstrap: tfbuild brings the script and keyring a suite needs).",
    )
    mirror: str | None = declared(
        None, "--mirror", metavar="URL", help="Package mirror (default: the distribution's)."
    )
    tag: str | None = declared(None, "--tag", help="Image tag (default: tfbuild/base:SUITE).")
    force: bool = declared(False, "--force", help="Rebuild even if the tag exists.")
    verbose: bool = option(VERBOSE, default=False)
    as_json: bool = option(JSON, default=False)


@takes(BaseArgs)
def base_command(request: BaseArgs) -> None:
    """Make a base image with debootstrap + docker import (for sites without registry access)."""
    from tfbuild.build.base_images import make_base_image
    from tfbuild.core.engine import DockerEngine

    with contextlib.closing(DockerEngine.connect()) as engine:
        result = make_base_image(
            engine,
            suite=request.suite,
            mirror=request.mirror,
            tag=request.tag,
            force=request.force,
            on_line=progress("base", quiet=request.as_json),
            verbose=request.verbose,
        )
    if request.as_json:
        print_data(result)
    else:
        print_base_image(result)
