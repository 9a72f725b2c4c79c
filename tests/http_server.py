"""The one loopback HTTP server of the tests: real HTTP on 127.0.0.1 (an ephemeral port), threads.

It answers a path from, in this order: ``routes`` (a function that writes the answer itself:
redirects, trickles, hangs, oversized bodies), ``files`` (bytes held in memory, with an optional
false ``Content-Length`` from ``lengths``), then the files below ``root``. It records every path
asked for, the absolute URLs asked of it as a proxy, and how many requests it held at once.

It speaks https too, given a certificate. Used by the core client's tests, the source download's,
pick's and index's. The fixtures
``http_server`` and ``other_http_server`` (another port: another origin) are in tests/conftest.py.
"""

from __future__ import annotations

import functools
import http.server
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: Writes the whole answer to a request (status, headers, body) through the handler.
Route = Callable[[http.server.BaseHTTPRequestHandler], None]


@dataclass
class Server:
    """A running loopback server: what it serves, and what it was asked."""

    root: Path
    url: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    #: A Content-Length to announce instead of the body's (to cut a download short).
    lengths: dict[str, int] = field(default_factory=dict)
    #: Every path asked for, in order (of a proxied request, the path of its URL).
    asked: list[str] = field(default_factory=list)
    #: The absolute URLs asked of it as a forward proxy (``GET http://host/path``).
    proxied: list[str] = field(default_factory=list)
    #: The User-Agent of every request, in order.
    agents: list[str] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Set when the server stops: releases the routes that hang or trickle.
    stopping: threading.Event = field(default_factory=threading.Event)
    _close: Callable[[], None] = lambda: None

    def at(self, path: str) -> str:
        """The URL of ``path`` on this server."""
        return self.url + path

    @property
    def hits(self) -> Counter[str]:
        """How many times each path was asked for."""
        with self.lock:
            return Counter(self.asked)

    def stop(self) -> None:
        """Stop now: from then on, a connection to its port is refused."""
        self._close()


class _Handler(http.server.SimpleHTTPRequestHandler):
    state: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        state = self.state
        if self.path.startswith(("http://", "https://")):  # asked as a proxy
            with state.lock:
                state.proxied.append(self.path)
            parts = urlsplit(self.path)
            self.path = parts.path + (f"?{parts.query}" if parts.query else "")
        with state.lock:
            state.asked.append(self.path)
            state.agents.append(self.headers.get("User-Agent", ""))
            state.in_flight += 1
            state.most_in_flight = max(state.most_in_flight, state.in_flight)
        try:
            self._answer(self.path.split("?")[0])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: what a deadline or a size cap does
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(self, path: str) -> None:
        state = self.state
        route = state.routes.get(path)
        if route is not None:
            route(self)
            return
        body = state.files.get(path)
        if body is None:
            if not Path(self.translate_path(path)).exists():
                self.send_error(404)  # "Not Found", as a server says it (not "File not found")
                return
            super().do_GET()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(state.lengths.get(path, len(body))))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve(root: Path, *, certificate: Path | None = None) -> Iterator[Server]:
    """A server of ``root`` (created) and of what the test adds, for the block; over https with
    ``certificate`` (a PEM file holding its key and certificate)."""
    root.mkdir(parents=True, exist_ok=True)
    state = Server(root=root)
    handler = type("Handler", (_Handler,), {"state": state})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
    )
    scheme = "http"
    if certificate is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        scheme = "https"
    state.url = f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    closed: list[bool] = []

    def close() -> None:
        if not closed:
            closed.append(True)
            state.stopping.set()  # releases the routes that hang
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=10)

    state._close = close
    try:
        yield state
    finally:
        close()


@contextmanager
def served(directory: Path) -> Iterator[str]:
    """``directory`` over real HTTP, for the block: its URL."""
    with serve(directory) as state:
        yield state.url


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then closed): a connection to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# --- routes -------------------------------------------------------------------------------------


def redirect_to(location: str, status: int = 302) -> Route:
    """Answers ``status`` with ``location``."""

    def route(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return route


def trickle(state: Server, *, headers_too: bool = False, every: float = 0.2) -> Route:
    """One byte every ``every`` seconds (of the headers too) until the client hangs up or the
    server stops."""

    def route(handler: http.server.BaseHTTPRequestHandler) -> None:
        if headers_too:
            handler.wfile.write(b"HTTP/1.0 200 OK\r\n")
            data = b"X-Slow: " + b"a" * 10_000
        else:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html")
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            data = b"<html>" + b" " * 100_000
        for byte in data:
            if state.stopping.wait(every):
                return
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()

    return route


def hang(state: Server) -> Route:
    """Accepts and never answers (until the server stops)."""

    def route(handler: http.server.BaseHTTPRequestHandler) -> None:
        state.stopping.wait(60)

    return route


def oversized(state: Server, size: int, chunk: bytes = b"x" * 65536) -> Route:
    """Announces ``size`` bytes and sends ``chunk`` after ``chunk`` until they are sent, the client
    hangs up or the server stops."""

    def route(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(size))
        handler.end_headers()
        sent = 0
        while sent < size and not state.stopping.is_set():
            handler.wfile.write(chunk)
            sent += len(chunk)

    return route


def endless(state: Server, chunk: bytes = b"x" * 65536) -> Route:
    """An HTTP/1.0 answer without a length whose body never ends (until the client hangs up)."""

    def route(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n")
        while not state.stopping.is_set():
            handler.wfile.write(chunk)

    return route
