"""The one HTTP client of tfbuild: a GET bounded in time and size, its redirects checked before they
are followed, proxies and CA certificates as the environment says, one User-Agent.

Two callers, nothing else in tfbuild opens a URL: a build's release tarball
(:mod:`tfbuild.build.source_download`: streamed to a file, hashed and reported as it arrives) and
pick's index pages and receipts (:mod:`tfbuild.pick.fetch`: held in memory). Both get every bound:

- **time**: a :class:`Deadline` for the whole request (one pick shares one across all its fetches).
  A watchdog shuts the socket down when it comes, so a server that trickles its headers or body a
  byte at a time is cut then, not after each read's own timeout. ``timeout`` bounds each connect
  and read besides (a server silent that long fails before the deadline); the TLS handshake is
  bounded by that per-operation time, or by the time left when it is shorter;
- **size**: ``limit`` bytes. A larger ``Content-Length`` is refused before the body is read; a body
  without one is cut one byte past the limit. A body shorter than its ``Content-Length`` is an
  error, never a result;
- **redirects**: at most urllib's 10, to http(s) only, never from https to plain http, and only
  where the caller's ``redirect`` rule allows (pick: the origins its page may link to), checked
  before the new URL is asked for. The source download has no rule: GitHub's archive URLs redirect
  to codeload.github.com, and the tarball's sha256 (pinned, or recorded at the first download)
  decides whether its bytes are used;
- **schemes**: the opener has handlers for http and https only (no ``file:``, ``ftp:`` or
  ``data:``, which urllib's default opener would read).

**Proxies**: urllib's ``ProxyHandler`` reads ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``NO_PROXY`` (either
case) from the environment when the request is made; https goes through the proxy by ``CONNECT``.
**CA certificates**: ``ca_bundle`` (a PEM file: the build's ``--ca-bundle``, else its
``SSL_CERT_FILE`` or ``REQUESTS_CA_BUNDLE``) when given, else OpenSSL's defaults, which honour
``SSL_CERT_FILE`` and ``SSL_CERT_DIR``. **User-Agent**: ``tfbuild/<version>``.

Failures are :class:`HttpFailure` subclasses, one per way a request fails, each a
:class:`~tfbuild.core.errors.TfbuildError` with its exit code and a one-line message; a caller
catches them to say them in its own words (pick "cannot read", a build "cannot download" and what
to check in the recipe).

Why urllib: it is what both callers used, it needs no dependency, and ``urllib.request`` imports
in 63 ms here against 76 ms for urllib3 and 128 ms for requests (``tfbuild pick`` imports it only
when it reads a URL). Neither urllib3 nor requests has an overall deadline that cuts a trickling
server, nor a size cap: both would need the same watchdog, reaching into private attributes for
the socket.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from tfbuild import __version__
from tfbuild.core.errors import (
    EnvironmentProblem,
    InputError,
    TfbuildError,
    Unreachable,
    UsageError,
)

if TYPE_CHECKING:
    import http.client
    import ssl
    import urllib.request

#: Every request of tfbuild says who asks.
USER_AGENT = f"tfbuild/{__version__}"
#: What one read asks for at most: a progress callback and the deadline see the body in pieces.
_CHUNK = 256 * 1024
_FIX = (
    "Check the URL, the network and the proxy settings (HTTPS_PROXY, NO_PROXY); for a private CA, "
    "set SSL_CERT_FILE."
)

#: Why a redirect's target is not followed, or None when it is.
RedirectRule = Callable[[str], str | None]
#: Told the bytes received so far and the announced length (None without a Content-Length).
Progress = Callable[[int, int | None], None]


class Deadline:
    """The moment a request is cut (or several: a pick's fetches share one)."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._end = clock() + seconds

    def remaining(self) -> float:
        return max(self._end - self._clock(), 0.0)

    def expired(self) -> bool:
        return self.remaining() <= 0.0


@dataclass(frozen=True, kw_only=True)
class Fetched:
    """What a request received: from where (after redirects), how much, its sha256 and charset."""

    url: str
    size: int
    sha256: str
    #: The Content-Type's charset, as the server named it (None when it named none).
    charset: str | None


@dataclass(frozen=True, kw_only=True)
class Page:
    """A body read into memory (:func:`get`), and what :class:`Fetched` says of it."""

    body: bytes
    fetched: Fetched


# --- failures ---------------------------------------------------------------------------------


class HttpFailure(TfbuildError):
    """A request of ``url`` that failed; the subclass says how, and carries the exit code."""

    def __init__(self, url: str, why: str, *, fix: str = _FIX) -> None:
        super().__init__(f"cannot download {url}", why=why, fix=fix)


class InvalidUrl(HttpFailure, UsageError):
    """Not an http(s) URL with a host: nothing was asked for."""

    def __init__(self, url: str, why: str) -> None:
        super().__init__(url, why, fix="Give an http(s) URL.")


class StatusFailure(HttpFailure, EnvironmentProblem):
    """The server answered with an error status (or a redirect without a usable Location)."""

    def __init__(self, url: str, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(url, f"the server answered HTTP {status} {reason}")


class NetworkFailure(HttpFailure, Unreachable):
    """No answer: a name that does not resolve, a refused or reset connection, a TLS certificate
    that does not verify, a server silent for longer than ``timeout``."""

    def __init__(self, url: str, why: str, *, certificate: bool = False) -> None:
        #: The server's certificate did not verify (a proxy that inspects TLS needs its CA).
        self.certificate = certificate
        super().__init__(url, why)


class DeadlinePassed(HttpFailure, EnvironmentProblem):
    """The deadline came before the body was whole: ``received`` bytes of it had arrived."""

    def __init__(self, url: str, *, seconds: float, received: int) -> None:
        self.received = received
        if received:
            why = f"it was still sending at its {seconds:g} s deadline, after {received} bytes"
        else:
            why = f"it had not answered at its {seconds:g} s deadline"
        super().__init__(url, why, fix="Check that the server answers promptly, and the network.")


class TooLarge(HttpFailure, InputError):
    """The body is over ``limit``: announced as ``declared`` bytes, or found so while reading."""

    def __init__(self, url: str, *, limit: int, declared: int | None) -> None:
        most = f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit} bytes"  # as people say it
        if declared is not None:
            why = f"it is {declared} bytes, over {most}"
        else:
            why = f"it is larger than {most}"
        super().__init__(url, why, fix="Check the URL.")


class RedirectRefused(HttpFailure, InputError):
    """A redirect that is not followed (its target was never asked for): to another scheme, from
    https to http, or one the caller's rule refuses (``by_rule``)."""

    def __init__(self, url: str, *, status: int, refusal: str, by_rule: bool) -> None:
        self.by_rule = by_rule
        said = "redirects it" if by_rule else f"answered {status}"
        super().__init__(
            url, f"the server {said}: {refusal}", fix="Give the resource's own http(s) address."
        )


class Truncated(HttpFailure, Unreachable):
    """The connection ended before the ``Content-Length`` the server announced."""

    def __init__(self, url: str, *, received: int, expected: int) -> None:
        super().__init__(url, f"the download ended after {received} of {expected} bytes")


def redirect_refusal(current: str, target: str) -> str | None:
    """Why tfbuild never follows a redirect from ``current`` to ``target``, whatever the caller's
    rule: another scheme than http(s), or from https to plain http. None when it may."""
    scheme = urlsplit(target).scheme.lower()
    if scheme not in ("http", "https"):
        return f"it redirects to {target}, not an http(s) URL"
    if scheme == "http" and urlsplit(current).scheme.lower() == "https":
        return f"it redirects to {target}, from https to plain http"
    return None


# --- requests ---------------------------------------------------------------------------------


def get(
    url: str,
    *,
    limit: int,
    deadline: Deadline,
    timeout: float | None = None,
    redirect: RedirectRule | None = None,
    ca_bundle: Path | None = None,
) -> Page:
    """GET ``url`` into memory within ``deadline`` and ``limit`` bytes (see :func:`download`)."""
    chunks: list[bytes] = []
    fetched = download(
        url,
        chunks.append,
        limit=limit,
        deadline=deadline,
        timeout=timeout,
        redirect=redirect,
        ca_bundle=ca_bundle,
    )
    return Page(body=b"".join(chunks), fetched=fetched)


def download(
    url: str,
    sink: Callable[[bytes], object],
    *,
    limit: int,
    deadline: Deadline,
    timeout: float | None = None,
    redirect: RedirectRule | None = None,
    ca_bundle: Path | None = None,
    on_progress: Progress | None = None,
) -> Fetched:
    """GET ``url`` within the module's bounds, each piece of the body given to ``sink`` as it
    arrives (and hashed), and ``on_progress`` told the bytes received after it. Raises InputError
    for a ``ca_bundle`` that is no CA bundle; what ``sink`` or ``on_progress`` raise (a full disk,
    Ctrl-C) passes through unchanged."""
    _check_url(url)
    if deadline.expired():
        raise DeadlinePassed(url, seconds=deadline.seconds, received=0)
    import http.client
    import urllib.error
    import urllib.request

    watch = _Watch(url, deadline, timeout)
    timer = threading.Timer(deadline.remaining(), watch.cut)
    timer.daemon = True
    timer.start()
    try:
        opener = _opener(url, watch, ca_bundle, redirect)
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        left = deadline.remaining()
        # The socket's own timeout: the caller's per-operation time, or the deadline when sooner.
        by_deadline = timeout is None or left <= timeout
        per_operation = left if by_deadline or timeout is None else timeout
        try:
            response = opener.open(request, timeout=max(per_operation, 0.01))
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            raise watch.failure(exc, by_deadline) from None
        digest = hashlib.sha256()
        with response:
            announced = (response.headers.get("Content-Length") or "").strip()
            length = int(announced) if announced.isascii() and announced.isdigit() else None
            if length is not None and length > limit:
                raise TooLarge(url, limit=limit, declared=length)
            while not watch.fired:
                try:
                    chunk = response.read1(min(_CHUNK, limit + 1 - watch.received))
                except (http.client.HTTPException, OSError, ValueError) as exc:
                    raise watch.failure(exc, by_deadline) from None  # reset, timeout, cut
                if not chunk:
                    break
                watch.received += len(chunk)
                if watch.received > limit:
                    raise TooLarge(url, limit=limit, declared=None)
                digest.update(chunk)
                sink(chunk)
                if on_progress is not None:
                    on_progress(watch.received, length)
            final = str(response.geturl())
            charset = response.headers.get_content_charset()
        if watch.fired and watch.received != length:
            raise DeadlinePassed(url, seconds=deadline.seconds, received=watch.received)
        if length is not None and watch.received < length:
            raise Truncated(url, received=watch.received, expected=length)
        return Fetched(url=final, size=watch.received, sha256=digest.hexdigest(), charset=charset)
    finally:
        timer.cancel()


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise InvalidUrl(url, str(exc)) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidUrl(url, "it is not an http(s) URL")
    if not host:
        raise InvalidUrl(url, "it names no host")


def _tls_context(ca_bundle: Path | None) -> ssl.SSLContext:
    import ssl

    if ca_bundle is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=str(ca_bundle))
    except OSError as exc:  # ssl.SSLError included
        raise InputError(
            f"cannot use the CA bundle {ca_bundle}",
            why=exc.strerror or str(exc),
            fix="Pass a PEM file of CA certificates with --ca-bundle.",
        ) from None


class _Watch:
    """One request's sockets, shut down by a timer when its deadline comes; the body's bytes
    received so far; and the failure each error of the request means."""

    def __init__(self, url: str, deadline: Deadline, timeout: float | None) -> None:
        self.url = url
        self.deadline = deadline
        self.timeout = timeout
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

    def failure(self, exc: Exception, by_deadline: bool) -> HttpFailure:
        """The failure ``exc`` (raised by urllib, http.client or a socket) means."""
        import ssl
        import urllib.error

        if isinstance(exc, urllib.error.HTTPError):
            exc.close()  # it holds the error page's open connection
            return StatusFailure(self.url, exc.code, str(exc.reason))
        reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        timed_out = isinstance(reason, TimeoutError)
        if self.fired or self.deadline.expired() or (timed_out and by_deadline):
            return DeadlinePassed(self.url, seconds=self.deadline.seconds, received=self.received)
        if timed_out:
            return NetworkFailure(self.url, f"no answer within {self.timeout:g} s")
        if isinstance(reason, OSError) and reason.strerror:
            why = reason.strerror
        else:
            why = str(reason) or type(reason).__name__
        certificate = isinstance(reason, ssl.SSLCertVerificationError)
        return NetworkFailure(self.url, why, certificate=certificate)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)  # a recv blocked in another thread returns at once


def _opener(
    url: str, watch: _Watch, ca_bundle: Path | None, rule: RedirectRule | None
) -> urllib.request.OpenerDirector:
    """An opener of http(s) only, with the environment's proxies, whose connections report their
    sockets to ``watch``, and whose redirects are checked before they are followed (a refused one
    of the request of ``url`` raises RedirectRefused through urllib). Its TLS context is made at
    the first https connection (an http request reads no certificates)."""
    import functools
    import http.client
    import urllib.request

    tls_context = functools.cache(lambda: _tls_context(ca_bundle))

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
            return self.do_open(_HTTPS, req, context=tls_context())

    def refuse(
        req: urllib.request.Request, fp: Any, code: int, target: str, *, ask_rule: bool
    ) -> None:
        refusal, by_rule = redirect_refusal(req.full_url, target), False
        if refusal is None and ask_rule and rule is not None:
            refusal, by_rule = rule(target), True
        if refusal is not None:
            fp.close()
            raise RedirectRefused(url, status=code, refusal=refusal, by_rule=by_rule)

    class _Redirects(urllib.request.HTTPRedirectHandler):
        def http_error_302(
            self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any
        ) -> Any:
            # urllib refuses a Location of a scheme but http, https and ftp in words of its own,
            # before redirect_request: every refusal is said alike.
            location = headers.get("location") or headers.get("uri")
            if location:
                refuse(req, fp, code, urljoin(req.full_url, location), ask_rule=False)
            return super().http_error_302(req, fp, code, msg, headers)

        http_error_301 = http_error_303 = http_error_307 = http_error_302
        if hasattr(urllib.request.HTTPRedirectHandler, "http_error_308"):  # Python 3.11
            http_error_308 = http_error_302

        def redirect_request(
            self,
            req: urllib.request.Request,
            fp: Any,
            code: int,
            msg: str,
            headers: Any,
            newurl: str,
        ) -> urllib.request.Request | None:
            refuse(req, fp, code, newurl, ask_rule=True)
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None:
                fp.close()  # urllib would read the redirect's body whole, unbounded: it is not read
            return new

    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),  # HTTP_PROXY, HTTPS_PROXY, NO_PROXY
        urllib.request.UnknownHandler(),
        _HTTPHandler(),
        _HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _Redirects(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener
