"""A release tarball over the network: :func:`tfbuild.core.http.download` with the bounds of a
source download, its progress lines, and its failures in a build's words.

The bounds: at most :data:`SOURCE_MAX_BYTES`, all of it within :data:`SOURCE_DEADLINE_S`, and no
connect or read silent for longer than ``timeout`` (60 s). Redirects are followed to http(s) only,
never from https to http, to any host: GitHub's archive URLs redirect to codeload.github.com, and
the tarball's sha256 (pinned, or recorded at the first download) decides whether its bytes are used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tfbuild.core import http
from tfbuild.core.errors import InputError, TfbuildError, Unreachable

#: A TensorFlow release tarball is tens of MB; a body over this is no source tarball.
SOURCE_MAX_BYTES = 2**30
#: One download may take this long in all (the tarball at 20 kB/s), however steadily it trickles.
SOURCE_DEADLINE_S = 3600.0
#: No connect or read of a download may be silent for longer than this.
SOURCE_TIMEOUT_S = 60.0
_MB = 1_000_000
#: Without a Content-Length, a progress line every this many bytes.
_UNSIZED_STEP = 50 * _MB
#: Honest about what a build needs: --source DIR skips this download only. The toolchain image
#: downloads packages (and bazelisk), and bazel downloads TensorFlow's dependencies in the build
#: container; tfbuild passes the proxy variables to both (and --ca-bundle to the build container).
_NETWORK_FIX = (
    "Check the URL and the network; behind a proxy set HTTPS_PROXY (and NO_PROXY), which the "
    "whole build uses. --source DIR with a TensorFlow checkout skips only this download: bazel "
    "still downloads TensorFlow's dependencies, so a build needs the network (or a proxy) anyway."
)
_CA_FIX = "Behind a proxy that inspects TLS, pass its CA certificates with --ca-bundle; "
_RECIPE_FIX = "Check the recipe's source.tarball."


def download_to(
    url: str,
    partial: Path,
    *,
    ca_bundle: Path | None,
    timeout: float = SOURCE_TIMEOUT_S,
    deadline: float = SOURCE_DEADLINE_S,
    limit: int = SOURCE_MAX_BYTES,
    on_line: Callable[[str], None],
) -> str:
    """Stream ``url`` into the file ``partial`` (created), saying its progress; the sha256 of what
    arrived. A failure of the download is a TfbuildError; one of writing ``partial``, OSError."""
    on_line(f"downloading {url}")
    next_line: int | None = None  # how much is downloaded when the next progress line is said

    def progress(done: int, length: int | None) -> None:
        """A line every 10 percent of the download, or every 50 MB when its size is unknown."""
        nonlocal next_line
        step = max(length // 10, 1) if length is not None else _UNSIZED_STEP
        if done < (next_line or step):
            return
        next_line = (done // step + 1) * step
        if length is None:
            on_line(f"downloaded {_megabytes(done)} MB")
        else:
            on_line(f"downloaded {_megabytes(done)} / {_megabytes(length)} MB")

    with partial.open("wb") as out:
        try:
            fetched = http.download(
                url,
                out.write,
                limit=limit,
                deadline=http.Deadline(deadline),
                timeout=timeout,
                ca_bundle=ca_bundle,
                on_progress=progress,
            )
        except http.HttpFailure as exc:
            raise _failure(url, exc) from None
    return fetched.sha256


def _failure(url: str, exc: http.HttpFailure) -> TfbuildError:
    """``exc`` in a build's words: what to check in the recipe, or the network and its proxy."""
    if isinstance(exc, http.InvalidUrl):
        return InputError(f"cannot download {url!r}", why="it is not a URL", fix=_RECIPE_FIX)
    if isinstance(exc, (http.TooLarge, http.RedirectRefused)):
        return InputError(f"cannot download {url}", why=exc.why, fix=_RECIPE_FIX)
    fix = _NETWORK_FIX
    if isinstance(exc, http.NetworkFailure) and exc.certificate:
        fix = _CA_FIX + fix
    return Unreachable(f"cannot download {url}", why=exc.why, fix=fix)


def _megabytes(size: int) -> str:
    return f"{size / _MB:.0f}" if size >= 10 * _MB else f"{size / _MB:.1f}"
