"""tfbuild's one HTTP client (tfbuild.core.http) against real servers on 127.0.0.1
(tests/http_server.py): its deadline, size cap, redirect policy, streamed sha256 and progress,
proxies and CA certificates from the environment, and its one-line failures.

No test times anything: a deadline or a timeout is shown by what the request ended with (cut, with
how much received), never by how long it took.
"""

from __future__ import annotations

import errno
import hashlib
import random
import shutil
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.http_server import (
    Server,
    closed_port,
    endless,
    hang,
    oversized,
    redirect_to,
    serve,
    trickle,
)
from tfbuild import __version__
from tfbuild.core import http
from tfbuild.core.errors import InputError

#: Three MiB and a bit: several reads, several progress reports.
BODY = random.Random(31).randbytes(3 * 2**20 + 12345)
LIMIT = 2**20


def one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message
    return message


def deadline(seconds: float = 60.0) -> http.Deadline:
    return http.Deadline(seconds)


# --- what arrives: streamed, hashed, reported --------------------------------------------------


def test_a_body_is_streamed_to_the_sink_hashed_and_reported(http_server: Server) -> None:
    http_server.files["/big.bin"] = BODY
    pieces: list[bytes] = []
    progress: list[tuple[int, int | None]] = []

    fetched = http.download(
        http_server.at("/big.bin"),
        pieces.append,
        limit=len(BODY),
        deadline=deadline(),
        on_progress=lambda done, length: progress.append((done, length)),
    )

    assert b"".join(pieces) == BODY
    assert len(pieces) > 1  # streamed, not read whole
    assert fetched == http.Fetched(
        url=http_server.at("/big.bin"),
        size=len(BODY),
        sha256=hashlib.sha256(BODY).hexdigest(),
        charset=None,
    )
    assert [done for done, _ in progress] == sorted({done for done, _ in progress})
    assert progress[-1] == (len(BODY), len(BODY))
    assert {length for _, length in progress} == {len(BODY)}
    assert http_server.agents == [f"tfbuild/{__version__}"] == [http.USER_AGENT]


def test_get_reads_a_page_and_its_charset(http_server: Server) -> None:
    def page(handler: BaseHTTPRequestHandler) -> None:
        body = "<p>grüße</p>".encode("latin-1")
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=ISO-8859-1")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    http_server.routes["/page.html"] = page

    got = http.get(http_server.at("/page.html"), limit=LIMIT, deadline=deadline())

    assert got.body.decode(got.fetched.charset or "") == "<p>grüße</p>"
    assert got.fetched.charset == "iso-8859-1"


def test_what_the_sink_or_the_progress_raise_passes_through(http_server: Server) -> None:
    """A full disk is the caller's to say (the source cache's "free some space"), and Ctrl-C stays
    Ctrl-C: neither becomes a network failure."""
    http_server.files["/big.bin"] = BODY

    def full_disk(_chunk: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left on device") as info:
        http.download(http_server.at("/big.bin"), full_disk, limit=len(BODY), deadline=deadline())
    assert not isinstance(info.value, http.HttpFailure)

    def interrupt(_done: int, _length: int | None) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        http.download(
            http_server.at("/big.bin"),
            lambda _chunk: None,
            limit=len(BODY),
            deadline=deadline(),
            on_progress=interrupt,
        )


# --- time --------------------------------------------------------------------------------------


def test_the_deadline_cuts_a_trickling_body(http_server: Server) -> None:
    """One byte every 0.2 s of a 100 kB body: cut at the deadline, whatever each read's timeout."""
    http_server.routes["/slow"] = trickle(http_server)
    url = http_server.at("/slow")
    pieces: list[bytes] = []

    with pytest.raises(http.DeadlinePassed) as info:
        http.download(url, pieces.append, limit=LIMIT, deadline=deadline(1.5), timeout=30)

    error = info.value
    assert error.received == len(b"".join(pieces)) < 100_006  # cut, not finished
    assert one_line(error).startswith(f"cannot download {url}: it ")
    assert "1.5 s deadline" in str(error)
    assert error.exit_code == 5


def test_the_deadline_cuts_trickling_headers(http_server: Server) -> None:
    http_server.routes["/slow-headers"] = trickle(http_server, headers_too=True)
    url = http_server.at("/slow-headers")

    with pytest.raises(http.DeadlinePassed) as info:
        http.get(url, limit=LIMIT, deadline=deadline(1.5))

    assert info.value.received == 0
    assert one_line(info.value) == (
        f"cannot download {url}: it had not answered at its 1.5 s deadline. Check that the server "
        "answers promptly, and the network."
    )


def test_a_silent_server_fails_at_the_read_timeout_before_the_deadline(
    http_server: Server,
) -> None:
    http_server.routes["/silent"] = hang(http_server)
    url = http_server.at("/silent")

    with pytest.raises(http.NetworkFailure) as info:
        http.get(url, limit=LIMIT, deadline=deadline(60), timeout=0.3)

    assert one_line(info.value).startswith(f"cannot download {url}: no answer within 0.3 s. ")
    assert info.value.exit_code == 5


def test_a_deadline_already_passed_asks_nothing(http_server: Server) -> None:
    now = [0.0]
    passed = http.Deadline(1.0, clock=lambda: now[0])
    now[0] = 2.0

    with pytest.raises(http.DeadlinePassed) as info:
        http.get(http_server.at("/x"), limit=LIMIT, deadline=passed)

    assert info.value.received == 0
    assert http_server.asked == []


# --- size --------------------------------------------------------------------------------------


def test_a_length_over_the_cap_is_refused_before_reading(http_server: Server) -> None:
    big = 50 * 2**20
    http_server.routes["/huge"] = oversized(http_server, big)
    url = http_server.at("/huge")
    pieces: list[bytes] = []

    with pytest.raises(http.TooLarge) as info:
        http.download(url, pieces.append, limit=LIMIT, deadline=deadline())

    assert pieces == []  # not one byte of the body was taken
    assert one_line(info.value) == (
        f"cannot download {url}: it is {big} bytes, over 1 MiB. Check the URL."
    )
    assert info.value.exit_code == 3


def test_a_body_without_a_length_is_cut_one_byte_past_the_cap(http_server: Server) -> None:
    http_server.routes["/endless"] = endless(http_server)
    url = http_server.at("/endless")
    pieces: list[bytes] = []

    with pytest.raises(http.TooLarge) as info:
        http.download(url, pieces.append, limit=LIMIT, deadline=deadline())

    assert sum(map(len, pieces)) <= LIMIT  # the byte past the cap never reaches the sink
    assert one_line(info.value) == f"cannot download {url}: it is larger than 1 MiB. Check the URL."


def test_a_body_shorter_than_its_length_is_an_error(http_server: Server) -> None:
    http_server.files["/short"] = BODY[:1000]
    http_server.lengths["/short"] = 5000
    url = http_server.at("/short")

    with pytest.raises(http.Truncated) as info:
        http.get(url, limit=LIMIT, deadline=deadline())

    assert one_line(info.value).startswith(
        f"cannot download {url}: the download ended after 1000 of 5000 bytes."
    )
    assert info.value.exit_code == 5


# --- redirects ---------------------------------------------------------------------------------


def same_origin_as(server: Server) -> http.RedirectRule:
    """A caller's rule: follow redirects within ``server``'s origin only."""

    def rule(url: str) -> str | None:
        return None if url.startswith(server.url + "/") else f"{url} is another origin"

    return rule


def test_a_same_origin_redirect_is_followed(http_server: Server) -> None:
    http_server.files["/new"] = b"moved here"
    http_server.routes["/old"] = redirect_to(http_server.at("/new"), 301)

    got = http.get(
        http_server.at("/old"),
        limit=LIMIT,
        deadline=deadline(),
        redirect=same_origin_as(http_server),
    )

    assert got.body == b"moved here"
    assert got.fetched.url == http_server.at("/new")
    assert http_server.asked == ["/old", "/new"]


def test_a_redirects_own_body_is_never_read(http_server: Server) -> None:
    """urllib reads a redirect's body whole before following it; a server that never ends that
    body would hold the request until its deadline. The client follows without reading it."""
    http_server.files["/new"] = b"moved here"

    def endless_redirect(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.0 302 Found\r\nLocation: /new\r\n\r\n")
        while not http_server.stopping.wait(0.05):
            handler.wfile.write(b"x" * 65536)

    http_server.routes["/old"] = endless_redirect

    got = http.get(http_server.at("/old"), limit=LIMIT, deadline=deadline(30))

    assert got.body == b"moved here"


def test_a_redirect_the_rule_refuses_is_never_asked_for(
    http_server: Server, other_http_server: Server
) -> None:
    other_http_server.files["/x"] = b"elsewhere"
    http_server.routes["/old"] = redirect_to(other_http_server.at("/x"))
    url = http_server.at("/old")

    with pytest.raises(http.RedirectRefused) as info:
        http.get(url, limit=LIMIT, deadline=deadline(), redirect=same_origin_as(http_server))

    assert other_http_server.asked == []
    assert info.value.by_rule is True
    assert one_line(info.value) == (
        f"cannot download {url}: the server redirects it: {other_http_server.at('/x')} is another "
        "origin. Give the resource's own http(s) address."
    )
    assert info.value.exit_code == 3
    # Without a rule (the source download's case: GitHub redirects to codeload), it is followed.
    got = http.get(url, limit=LIMIT, deadline=deadline())
    assert (got.body, got.fetched.url) == (b"elsewhere", other_http_server.at("/x"))


def test_a_redirect_to_another_scheme_is_refused_without_a_rule(http_server: Server) -> None:
    http_server.routes["/moved"] = redirect_to("file:///etc/passwd")
    url = http_server.at("/moved")

    with pytest.raises(http.RedirectRefused) as info:
        http.get(url, limit=LIMIT, deadline=deadline())

    assert info.value.by_rule is False
    assert one_line(info.value) == (
        f"cannot download {url}: the server answered 302: it redirects to file:///etc/passwd, not "
        "an http(s) URL. Give the resource's own http(s) address."
    )


def test_the_redirects_never_followed() -> None:
    refusal = http.redirect_refusal
    assert refusal("https://a.org/x", "http://a.org/y") == (
        "it redirects to http://a.org/y, from https to plain http"
    )
    assert refusal("http://a.org/x", "ftp://a.org/y") == (
        "it redirects to ftp://a.org/y, not an http(s) URL"
    )
    assert refusal("http://a.org/x", "https://b.org/y") is None  # upgrades are fine
    assert refusal("https://a.org/x", "HTTPS://b.org/y") is None


# --- what is no request ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.org/x", "it is not an http(s) URL"),
        ("file:///etc/passwd", "it is not an http(s) URL"),
        ("http://", "it names no host"),
        ("http://[::1/x", "Invalid IPv6 URL"),
    ],
)
def test_what_is_no_http_url_is_a_usage_error(url: str, why: str) -> None:
    with pytest.raises(http.InvalidUrl) as info:
        http.get(url, limit=LIMIT, deadline=deadline())

    assert one_line(info.value) == f"cannot download {url}: {why}. Give an http(s) URL."
    assert info.value.exit_code == 2


def test_an_error_status_and_a_refused_connection(http_server: Server) -> None:
    url = http_server.at("/absent")
    with pytest.raises(http.StatusFailure) as status:
        http.get(url, limit=LIMIT, deadline=deadline())
    assert (status.value.status, status.value.reason) == (404, "Not Found")
    assert one_line(status.value).startswith(
        f"cannot download {url}: the server answered HTTP 404 Not Found. Check the URL"
    )
    assert status.value.exit_code == 5

    refused = f"http://127.0.0.1:{closed_port()}/x"
    with pytest.raises(http.NetworkFailure) as network:
        http.get(refused, limit=LIMIT, deadline=deadline())
    assert one_line(network.value).startswith(f"cannot download {refused}: Connection refused. ")
    assert network.value.certificate is False


# --- proxies from the environment --------------------------------------------------------------


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment without proxy settings, to set the test's own."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_http_proxy_from_the_environment_is_used(
    http_server: Server, no_proxies: pytest.MonkeyPatch
) -> None:
    """The server stands in for the proxy: asked for the absolute URL of a host that does not
    exist, it answers, so the request went through it."""
    http_server.files["/file"] = b"through the proxy"
    no_proxies.setenv("HTTP_PROXY", http_server.url)
    url = "http://tfbuild-test.invalid/file"

    got = http.get(url, limit=LIMIT, deadline=deadline())

    assert got.body == b"through the proxy"
    assert http_server.proxied == [url]


def test_no_proxy_keeps_a_host_off_the_proxy(
    http_server: Server, no_proxies: pytest.MonkeyPatch
) -> None:
    http_server.files["/file"] = b"direct"
    down = f"http://127.0.0.1:{closed_port()}"
    no_proxies.setenv("HTTP_PROXY", down)

    # Through the proxy, which is down: refused.
    with pytest.raises(http.NetworkFailure, match="Connection refused"):
        http.get(http_server.at("/file"), limit=LIMIT, deadline=deadline())

    no_proxies.setenv("NO_PROXY", "127.0.0.1")
    got = http.get(http_server.at("/file"), limit=LIMIT, deadline=deadline())

    assert got.body == b"direct"
    assert http_server.proxied == []


# --- CA certificates ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate for 127.0.0.1, with its key, in one PEM file (by openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    where = tmp_path_factory.mktemp("tls")
    key, cert = where / "key.pem", where / "cert.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    both = where / "server.pem"
    both.write_bytes(key.read_bytes() + cert.read_bytes())
    return both


@pytest.fixture
def https_server(tmp_path: Path, certificate: Path, http_server: Server) -> Iterator[Server]:
    with serve(tmp_path / "tls", certificate=certificate) as server:
        server.files["/file"] = b"over tls"
        yield server


def test_a_certificate_no_ca_vouches_for_is_refused(
    https_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    url = https_server.at("/file")

    with pytest.raises(http.NetworkFailure) as info:
        http.get(url, limit=LIMIT, deadline=deadline())

    assert info.value.certificate is True
    assert "CERTIFICATE_VERIFY_FAILED" in one_line(info.value)
    assert https_server.asked == []


def test_the_ca_bundle_or_ssl_cert_file_vouches_for_it(
    https_server: Server, certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = https_server.at("/file")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)

    given = http.get(url, limit=LIMIT, deadline=deadline(), ca_bundle=certificate)

    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # OpenSSL's own default, read now
    from_env = http.get(url, limit=LIMIT, deadline=deadline())

    assert given.body == from_env.body == b"over tls"
    assert https_server.asked == ["/file", "/file"]


def test_a_ca_bundle_that_is_none_is_an_input_error(https_server: Server, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_text("not a certificate\n")

    with pytest.raises(InputError) as info:
        http.get(https_server.at("/file"), limit=LIMIT, deadline=deadline(), ca_bundle=bundle)

    assert one_line(info.value).startswith(f"cannot use the CA bundle {bundle}: ")
    assert info.value.exit_code == 3


def test_a_redirect_from_https_to_http_is_refused(
    https_server: Server, http_server: Server, certificate: Path
) -> None:
    http_server.files["/plain"] = b"unencrypted"
    https_server.routes["/moved"] = redirect_to(http_server.at("/plain"))
    url = https_server.at("/moved")

    with pytest.raises(http.RedirectRefused) as info:
        http.get(url, limit=LIMIT, deadline=deadline(), ca_bundle=certificate)

    assert info.value.why == (
        f"the server answered 302: it redirects to {http_server.at('/plain')}, from https to plain "
        "http"
    )
    assert http_server.asked == []
