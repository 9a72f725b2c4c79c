"""``tfbuild verify``: rebuild a wheel (or an overlay) from its receipt; check it byte for byte."""

from __future__ import annotations

import contextlib
from dataclasses import MISSING, dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data
from tfbuild.cli.plan import SOURCE
from tfbuild.core.options import JSON, VERBOSE, declared, option


@dataclass(frozen=True, kw_only=True)
class VerifyArgs:
    wheel: Path = declared(
        MISSING, argument=True, metavar="WHEEL", help="A wheel built by tfbuild wheel or overlay."
    )
    receipt: Path | None = declared(
        None, "--receipt", metavar="FILE", help="Its receipt (default: <wheel>.json beside it)."
    )
    source: Path | None = option(
        SOURCE.but(help="The checkout it was built from, when it was built with --source."),
        default=None,
    )
    verbose: bool = option(VERBOSE, default=False)
    as_json: bool = option(JSON, default=False)


@takes(VerifyArgs)
def verify_command(request: VerifyArgs) -> None:
    """Rebuild a wheel from its receipt in isolation and check the rebuild is the same, byte for byte."""
    from tfbuild.build.rebuild import prepare_verify, verify
    from tfbuild.core.engine import DockerEngine
    from tfbuild.wheel.overlay_receipt import is_overlay_wheel

    if is_overlay_wheel(request.wheel):
        from tfbuild.cli.overlay import verify_overlay_command

        verify_overlay_command(request.wheel, as_json=request.as_json)
        return
    # The receipt (and the wheel against it) read and checked first: a bad one needs no engine.
    prepared = prepare_verify(request.wheel, receipt=request.receipt)
    with contextlib.closing(DockerEngine.connect()) as engine:
        result = verify(
            prepared,
            engine=engine,
            source=request.source,
            quiet=request.as_json,  # else what the rebuild does, as a build shows it
            verbose=request.verbose,
        )
    if request.as_json:
        print_data(result)
    else:
        from tfbuild.cli.wheel_display import print_verify

        print_verify(result)
    if (failure := result.error()) is not None:
        raise failure
