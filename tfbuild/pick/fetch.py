"""Reading an index page and its receipts over http(s), bounded: one deadline, sizes, links, workers.

A page is input from someone else's server, so every fetch of one ``tfbuild pick`` is bounded:

- **time**: one :class:`Deadline` for the whole pick (``--timeout``, :data:`PICK_TIMEOUT_S`).
  Every fetch connects within the time left, and a watchdog shuts its socket down when the deadline
  comes, so a server that trickles one byte a second (in its headers or its body) or never answers
  is cut then, not after each read's own timeout;
- **size**: a page may be :attr:`FetchLimits.max_page_bytes`, a receipt
  :attr:`FetchLimits.max_receipt_bytes` (a larger ``Content-Length`` is refused before reading);
- **count**: a page may hold :attr:`FetchLimits.max_links` links, and at most
  :attr:`FetchLimits.max_receipts` receipts are read;
- **concurrency**: receipts are read :attr:`FetchLimits.workers` at a time, all under the deadline;
- **redirects**: to http(s) only (urllib would also follow one to ``ftp:``), and where the caller's
  ``redirect`` rule allows (a receipt: to the origins its page may link to), checked before the
  redirect is followed, so another origin is never asked.

Which links are followed at all (scheme, origin, a local page's directory) is
:mod:`tfbuild.pick.listing`'s rule.
"""

from __future__ import annotations

import codecs
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from tfbuild.core.defaults import PICK_TIMEOUT_S
from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError

if TYPE_CHECKING:
    import http.client

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


class Deadline:
    """The one deadline of a pick: when it comes, every fetch still under way is cut."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._end = clock() + seconds

    def remaining(self) -> float:
        return max(self._end - self._clock(), 0.0)

    def expired(self) -> bool:
        return self.remaining() <= 0.0

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


def _mib(limit: int) -> str:
    return f"{limit / 2**20:g} MiB"


_FIX = (
    "Check the address, the network and the proxy settings (HTTPS_PROXY); for a private CA, "
    "set SSL_CERT_FILE."
)


class _Watch:
    """The sockets of one fetch, shut down by a timer when the deadline comes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fired = False
        self.sockets: list[socket.socket] = []
        self.received = 0

    def connected(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
            if self.fired:
                _shut(sock)

    def cut(self) -> None:
        with self.lock:
            self.fired = True
            for sock in self.sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # a recv blocked in another thread returns at once


class _Refused(Exception):
    """A redirect the caller's rule refuses: where to, and why not."""

    def __init__(self, target: str, why: str) -> None:
        super().__init__(why)
        self.target = target
        self.why = why


#: Why a URL is not followed, or None when it is (``LinkPolicy.refusal``).
RedirectRule = Callable[[str], str | None]


def _opener(watch: _Watch, rule: RedirectRule | None = None) -> Any:
    """A urllib opener whose connections report their sockets to ``watch``; http(s) redirects only,
    and only those ``rule`` allows."""
    import http.client
    import ssl
    import urllib.error
    import urllib.request

    class _HTTP(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            watch.connected(self.sock)

    class _HTTPS(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            watch.connected(self.sock)

    class _HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(_HTTP, req)

    class _HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(_HTTPS, req, context=ssl.create_default_context())

    class _Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(
            self,
            req: urllib.request.Request,
            fp: Any,
            code: int,
            msg: str,
            headers: Any,
            newurl: str,
        ) -> urllib.request.Request | None:
            if not newurl.lower().startswith(("http://", "https://")):
                raise urllib.error.HTTPError(
                    req.full_url, code, f"it redirects to {newurl}, not an http(s) URL", headers, fp
                )
            if rule is not None and (why := rule(newurl)) is not None:
                with contextlib.suppress(Exception):
                    fp.close()
                raise _Refused(newurl, why)
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler(), _Redirects())


def _read(response: http.client.HTTPResponse, url: str, limit: int, watch: _Watch) -> bytes:
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > limit:
        raise InputError(f"cannot read {url}", why=f"it is {int(length)} bytes, over {_mib(limit)}")
    chunks: list[bytes] = []
    while watch.received <= limit and not watch.fired:
        chunk = response.read1(min(64 * 1024, limit + 1 - watch.received))
        if not chunk:
            break
        chunks.append(chunk)
        watch.received += len(chunk)
    if watch.received > limit:
        raise InputError(f"cannot read {url}", why=f"it is larger than {_mib(limit)}")
    return b"".join(chunks)


def fetch(
    url: str, *, limit: int, deadline: Deadline, redirect: RedirectRule | None = None
) -> tuple[bytes, str, str]:
    """GET ``url`` within the deadline and ``limit`` bytes: (body, final URL, charset).

    A redirect is followed only to http(s), and only where ``redirect`` (given the new URL) says
    nothing against it; else :class:`InputError` naming where it led and why not. Proxies
    (``HTTPS_PROXY``) and ``SSL_CERT_FILE`` are honoured."""
    import http.client
    import urllib.error
    import urllib.request

    deadline.check(f"{url} was not yet asked for")
    watch = _Watch()
    timer = threading.Timer(deadline.remaining(), watch.cut)
    timer.daemon = True
    timer.start()
    request = urllib.request.Request(url, headers={"User-Agent": "tfbuild-pick"})
    try:
        opener = _opener(watch, redirect)
        with opener.open(request, timeout=max(deadline.remaining(), 0.01)) as response:
            body = _read(response, url, limit, watch)
            final = str(response.geturl())
            charset = response.headers.get_content_charset() or "utf-8"
        if watch.fired:
            raise _cut(deadline, url, watch)
    except _Refused as exc:
        raise InputError(
            f"cannot read {url}",
            why=f"the server redirects it: {exc.why}",
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        if watch.fired or deadline.expired():
            raise _cut(deadline, url, watch) from None
        raise _failure(url, exc, deadline) from None
    finally:
        timer.cancel()
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"  # a charset Python does not know: read it as UTF-8
    return body, final, charset


def _cut(deadline: Deadline, url: str, watch: _Watch) -> EnvironmentProblem:
    if watch.received:
        return deadline.error(f"{url} had sent {watch.received} bytes and was still sending")
    return deadline.error(f"{url} had not answered")


def _failure(url: str, exc: Exception, deadline: Deadline) -> Exception:
    import urllib.error

    if isinstance(exc, urllib.error.HTTPError):
        exc.close()
        if 300 <= exc.code < 400:  # a redirect refused (to another scheme), or without a Location
            return InputError(
                f"cannot read {url}",
                why=f"the server answered {exc.code}: {exc.reason}",
                fix="Give the page's own http(s) address.",
            )
        return InputError(
            f"cannot read {url}",
            why=f"the server answered {exc.code} {exc.reason}",
            fix="Check the URL: it should be an index page that links to .whl files.",
        )
    if isinstance(exc, urllib.error.URLError):
        return EnvironmentProblem(f"cannot reach {url}", why=str(exc.reason), fix=_FIX)
    if isinstance(exc, (OSError, _http_exception())):
        return EnvironmentProblem(
            f"cannot reach {url}", why=str(exc) or type(exc).__name__, fix=_FIX
        )
    # a malformed URL ("http://")
    return UsageError(f"cannot use {url!r}", why=str(exc), fix="Give an http(s) URL.")


def _http_exception() -> type[Exception]:
    import http.client

    return http.client.HTTPException


def fetch_all(
    items: Sequence[T], work: Callable[[T], R], *, workers: int, deadline: Deadline
) -> list[R]:
    """``work`` on every item, ``workers`` at a time, in order; the first error is raised.

    Each piece of work is a :func:`fetch` under the same deadline, so none outlives it."""
    if not items:
        return []
    deadline.check("the receipts were not yet asked for")
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))))
    try:
        futures = [pool.submit(work, item) for item in items]
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # after an error, start no more
