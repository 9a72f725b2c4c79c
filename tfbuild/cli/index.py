"""``tfbuild index``: write index.html (a pip --find-links page) and SHA256SUMS for a directory."""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_index, print_json
from tfbuild.core.options import JSON, declared, option


@dataclass(frozen=True, kw_only=True)
class IndexArgs:
    directory: Path = declared(
        MISSING, argument=True, metavar="DIR", help="The directory of wheels, e.g. dist."
    )
    title: str | None = declared(None, "--title", help="The page's title (default: a fixed one).")
    base_url: str | None = declared(
        None,
        "--base-url",
        metavar="URL",
        help="Link the wheels at URL/NAME (e.g. a release's download URL), not beside the page.",
    )
    as_json: bool = option(JSON, default=False)


@takes(IndexArgs)
def index_command(request: IndexArgs) -> None:
    """Write DIR/index.html (a pip --find-links page, sha256 in every link) and DIR/SHA256SUMS."""
    from tfbuild.wheel.index import write_index

    result = write_index(request.directory, title=request.title, base_url=request.base_url)
    if request.as_json:
        print_json(result.to_json())
        return
    print_index(result)
