"""Reading an index page and its receipts over http(s), bounded: one deadline, sizes, links, workers.

A page is input from someone else's server, so every fetch of one ``tfbuild pick`` is bounded. The
request itself is :func:`tfbuild.core.http.get`'s (tfbuild's one HTTP client), which keeps every
bound below; this module gives it pick's limits and says its failures in pick's words:

- **time**: one :class:`PickDeadline` for the whole pick (``--timeout``, :data:`PICK_TIMEOUT_S`).
  Every fetch connects within the time left, and a watchdog shuts its socket down when the deadline
  comes, so a server that trickles one byte a second (in its headers or its body) or never answers
  is cut then, not after each read's own timeout;
- **size**: a page may be :attr:`FetchLimits.max_page_bytes`, a receipt
  :attr:`FetchLimits.max_receipt_bytes` (a larger ``Content-Length`` is refused before reading);
- **count**: a page may hold :attr:`FetchLimits.max_links` links, and at most
  :attr:`FetchLimits.max_receipts` receipts are read;
- **concurrency**: receipts are read :attr:`FetchLimits.workers` at a time, all under the deadline;
- **redirects**: to http(s) only, never from https to http, and where the caller's ``redirect``
  rule allows (a receipt: to the origins its page may link to), checked before the redirect is
  followed, so another origin is never asked.

Which links are followed at all (scheme, origin, a local page's directory) is
:mod:`tfbuild.pick.listing`'s rule.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from tfbuild.core import http
from tfbuild.core.defaults import PICK_TIMEOUT_S
from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError

MAX_TIMEOUT = 24 * 3600.0

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class FetchLimits:
    """What one pick may read: its deadline, sizes, counts and workers."""

    timeout: float = PICK_TIMEOUT_S
    # A tfbuild index page is about 0.5 kB a wheel; a PEP 503 page of one project's files, below
    # 1 kB a file.
    max_page_bytes: int = 4 * 2**20
    # A receipt is tens of kB (its plan, packages and tools).
    max_receipt_bytes: int = 2 * 2**20
    max_links: int = 10_000
    max_receipts: int = 200
    workers: int = 4

    def __post_init__(self) -> None:
        if not 0 < self.timeout <= MAX_TIMEOUT:
            raise UsageError(
                f"--timeout {self.timeout:g}",
                why=f"the deadline must be more than 0 and at most {MAX_TIMEOUT:g} seconds",
                fix=f"Give e.g. --timeout {PICK_TIMEOUT_S:g}.",
            )


class PickDeadline(http.Deadline):
    """The one deadline of a pick: when it comes, every fetch still under way is cut."""

    def error(self, doing: str) -> EnvironmentProblem:
        """The one line for a pick cut at its deadline, ``doing`` what."""
        return EnvironmentProblem(
            f"tfbuild pick stopped at its {self.seconds:g} s deadline (--timeout)",
            why=doing,
            fix="Check that the server answers promptly, or allow more time with --timeout SECONDS.",
        )

    def check(self, doing: str) -> None:
        if self.expired():
            raise self.error(doing)


_FIX = (
    "Check the address, the network and the proxy settings (HTTPS_PROXY); for a private CA, "
    "set SSL_CERT_FILE."
)
_OWN_ADDRESS = "Give the page's own http(s) address."


def fetch(
    url: str, *, limit: int, deadline: PickDeadline, redirect: http.RedirectRule | None = None
) -> tuple[bytes, str, str]:
    """GET ``url`` within the deadline and ``limit`` bytes: (body, final URL, charset).

    A redirect is followed only to http(s), and only where ``redirect`` (given the new URL) says
    nothing against it; else :class:`InputError` naming where it led and why not. Proxies
    (``HTTPS_PROXY``) and ``SSL_CERT_FILE`` are honoured."""
    deadline.check(f"{url} was not yet asked for")
    try:
        page = http.get(url, limit=limit, deadline=deadline, redirect=redirect)
    except http.HttpFailure as exc:
        raise _failure(url, exc, deadline) from None
    charset = page.fetched.charset or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"  # a charset Python does not know: read it as UTF-8
    return page.body, page.fetched.url, charset


def _failure(url: str, exc: http.HttpFailure, deadline: PickDeadline) -> Exception:
    """``exc`` in pick's words: a page or receipt is read, and a pick has one deadline."""
    if isinstance(exc, http.DeadlinePassed):
        if exc.received:
            return deadline.error(f"{url} had sent {exc.received} bytes and was still sending")
        return deadline.error(f"{url} had not answered")
    what = f"cannot read {url}"
    if isinstance(exc, http.TooLarge):
        return InputError(what, why=exc.why)
    if isinstance(exc, http.RedirectRefused):
        return InputError(what, why=exc.why, fix="" if exc.by_rule else _OWN_ADDRESS)
    if isinstance(exc, http.StatusFailure):
        if 300 <= exc.status < 400:  # a redirect without a Location, or one too many
            why = f"the server answered {exc.status}: {exc.reason}"
            return InputError(what, why=why, fix=_OWN_ADDRESS)
        return InputError(
            what,
            why=f"the server answered {exc.status} {exc.reason}",
            fix="Check the URL: it should be an index page that links to .whl files.",
        )
    if isinstance(exc, http.InvalidUrl):  # a malformed URL ("http://")
        return UsageError(f"cannot use {url!r}", why=exc.why, fix="Give an http(s) URL.")
    return EnvironmentProblem(f"cannot reach {url}", why=exc.why, fix=_FIX)


def fetch_all(
    items: Sequence[T], work: Callable[[T], R], *, workers: int, deadline: PickDeadline
) -> list[R]:
    """``work`` on every item, ``workers`` at a time, in order; the first error is raised.

    Each piece of work is a :func:`fetch` under the same deadline, so none outlives it."""
    if not items:
        return []
    deadline.check("the receipts were not yet asked for")
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))))
    try:
        return list(pool.map(work, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # after an error, start no more
