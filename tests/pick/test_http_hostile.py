"""`tfbuild pick URL` against hostile servers: real HTTP servers on 127.0.0.1 (tests/http_server.py's
server and routes) that trickle bytes, hang, send huge pages, link other schemes and other origins,
or leave out hashes.

Each test replays one finding of issue 15 ("Hostile input", item 3) and checks the one line (and
exit code) pick answers with, or what it read and skipped. No network beyond the loopback address.
"""

from __future__ import annotations

import hashlib
import itertools
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import cpuinfo_fixture, one_error_line, run_cli
from tests.http_server import Server, endless, hang, oversized, redirect_to, trickle
from tests.pick.conftest import DIST, WHEELS, make_wheel, make_wheels, write_receipt
from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError
from tfbuild.pick.fetch import FetchLimits, PickDeadline
from tfbuild.pick.listing import LinkPolicy, Origin, load_wheels, parse_index
from tfbuild.wheel.index import write_index

PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
ZEN4 = ("--cpuinfo", str(cpuinfo_fixture("zen4")), "--python", "3.11")
#: A page's worth of wheel links, over and over: what the oversized pages send.
LINKS = b'<a href="x-1.0-py3-none-any.whl">x</a>' * 1000


def page(state: Server, path: str, links: list[str]) -> str:
    (state.root / path.lstrip("/")).write_text(
        "<html><body>\n"
        + "\n".join(f'<a href="{link}">x</a>' for link in links)
        + "\n</body></html>"
    )
    return state.url + path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- one deadline -----------------------------------------------------------------------------------


def test_a_trickling_page_is_cut_at_the_deadline_exit_5(server: Server) -> None:
    server.routes["/slow.html"] = trickle(server)
    result = run_cli("pick", server.url + "/slow.html", *ZEN4, "--timeout", "2")
    assert result.returncode == 5
    line = one_error_line(result)
    assert line.startswith(
        "tfbuild: error: tfbuild pick stopped at its 2 s deadline (--timeout): "
        f"{server.url}/slow.html had sent "
    )
    assert line.endswith(
        " bytes and was still sending. Check that the server answers promptly, or allow more time "
        "with --timeout SECONDS."
    )


def test_trickling_headers_are_cut_too(server: Server) -> None:
    server.routes["/slow-headers.html"] = trickle(server, headers_too=True)
    result = run_cli("pick", server.url + "/slow-headers.html", *ZEN4, "--timeout", "1.5")
    assert result.returncode == 5
    assert one_error_line(result).startswith(
        "tfbuild: error: tfbuild pick stopped at its 1.5 s deadline (--timeout): "
        f"{server.url}/slow-headers.html "
    )


def test_hanging_receipts_are_read_together_under_the_one_deadline(server: Server) -> None:
    """Eight receipt links that never answer: read four at a time, all cut at the one deadline."""
    files = make_wheels(server.root / "files")
    names = sorted(p.name for p in files.glob("*.whl"))[:8]
    links = [f"files/{quote(n)}#sha256={sha(files / n)}" for n in names]
    for name in names:
        receipt = "/receipts/" + quote(name[: -len(".whl")] + ".json")
        server.routes[receipt] = hang(server)
        links.append(receipt)
    url = page(server, "/index.html", links)
    result = run_cli("pick", url, *ZEN4, "--timeout", "3")
    assert result.returncode == 5
    line = one_error_line(result)
    assert line.startswith("tfbuild: error: tfbuild pick stopped at its 3 s deadline (--timeout): ")
    assert f"{server.url}/receipts/" in line and "had not answered" in line
    # Not one after another: several at once, never more than the pool's workers.
    assert 2 <= server.most_in_flight <= FetchLimits().workers


def test_a_bad_timeout_exit_2(server: Server) -> None:
    for value in ("0", "-1", "nan", "inf"):
        result = run_cli("pick", server.url + "/index.html", *ZEN4, "--timeout", value)
        assert result.returncode == 2, (value, result.stderr)
        assert "the deadline must be more than 0 and at most 86400 seconds" in result.stderr
    assert server.asked == []  # refused before anything was read


# --- sizes and counts -------------------------------------------------------------------------------


def test_a_huge_page_is_refused_by_its_length_before_reading(server: Server) -> None:
    big = 15 * 2**20
    server.routes["/huge.html"] = oversized(server, big, LINKS)
    result = run_cli("pick", server.url + "/huge.html", *ZEN4)
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: cannot read {server.url}/huge.html: it is {big} bytes, over 4 MiB."
    )


def test_a_huge_page_without_a_length_is_cut_at_the_cap(server: Server) -> None:
    server.routes["/endless.html"] = endless(server, LINKS)
    result = run_cli("pick", server.url + "/endless.html", *ZEN4)
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: cannot read {server.url}/endless.html: it is larger than 4 MiB."
    )


def test_a_page_of_too_many_anchors_is_refused_with_its_count(server: Server) -> None:
    """The finding: 15 MB, 300,000 anchors took 30 s and 1.5 GB. That size is refused above; below
    the size cap, the count cap refuses a page after its first 10,000 links."""
    (server.root / "many.html").write_bytes(b"<a href=x.whl>x</a>\n" * 150_000)  # 3 MB
    result = run_cli("pick", server.url + "/many.html", *ZEN4)
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: cannot use {server.url}/many.html: the page has more than 10000 links. "
        "Give the page of one project's wheels (e.g. .../simple/tensorflow/, or the page tfbuild "
        "index writes)."
    )


def test_parsing_is_bounded_in_tags_tag_length_and_time() -> None:
    """html.parser's slow paths: many tags; an endless tag, which it would scan again on every
    piece (and whose close() is quadratic: 64 kB took 100 s); the deadline between pieces."""
    with pytest.raises(InputError, match="the page has more than 300 tags"):
        parse_index("<p>" * 400, "http://h/", max_links=10)
    with pytest.raises(InputError, match="the page has a tag or comment longer than 64 KiB"):
        parse_index('<a href="x.whl" ' + "x=1 " * 2**20, "http://h/")
    with pytest.raises(InputError, match="the page has a tag or comment longer than 64 KiB"):
        parse_index("<!--" + "a" * 2**20, "http://h/")
    # An unclosed tag shorter than that at the end is no link, and costs no close().
    page = '<a href="a-1.0-py3-none-any.whl">a</a>' * 2000 + "<a x=1 " * 8000  # 56 kB unclosed
    links = parse_index(page, "http://h/")
    assert links.wheels == (("a-1.0-py3-none-any.whl", "http://h/a-1.0-py3-none-any.whl", None),)
    ticks = itertools.count(0.0, 0.5)  # a clock that moves half a second each time it is read
    deadline = PickDeadline(2.5, clock=lambda: next(ticks))
    with pytest.raises(
        EnvironmentProblem, match=r"reading the links of http://h/ was not finished"
    ):
        parse_index("<p>x</p>" * 20_000, "http://h/", deadline=deadline)


def test_too_many_receipts_are_a_warning_and_a_huge_receipt_is_not_used(server: Server) -> None:
    files = make_wheels(server.root / "files")
    v3 = WHEELS["v3"]
    (files / (v3[: -len(".whl")] + ".json")).write_bytes(b" " * (3 * 2**20))
    links = [f"files/{quote(p.name)}" for p in sorted(files.glob("*.whl"))]
    links += [f"files/{quote(p.name)}" for p in sorted(files.glob("*.json"))]
    url = page(server, "/index.html", links)
    # Four receipts linked (native, v3, v4, zen4 in the page's order); three are read.
    source = load_wheels(url, limits=FetchLimits(max_receipts=3))
    read = {w.filename for w in source.wheels if w.receipt is not None}
    assert read == {WHEELS["native"], WHEELS["v4"]}
    receipt = f"{server.url}/files/{quote(v3[: -len('.whl')] + '.json')}"
    assert source.warnings == (
        "receipts of 1 wheel(s) not read: pick reads at most 3 receipts of a page; those wheels "
        "are judged by their names",
        f"receipt of {v3} not used: cannot read {receipt}: it is {3 * 2**20} bytes, over 2 MiB.",
    )
    assert f"/files/{quote(WHEELS['zen4'][: -len('.whl')] + '.json')}" not in server.asked


# --- schemes and origins ----------------------------------------------------------------------------


def test_other_schemes_are_skipped_with_a_warning_and_never_read(
    server: Server, tmp_path: Path
) -> None:
    local = make_wheels(tmp_path / "local")  # better wheels on this machine, with receipts
    files = make_wheels(server.root / "files", {"v2": WHEELS["v2"]}, receipts=False)
    v2 = files / WHEELS["v2"]
    links = [
        f"files/{quote(v2.name)}#sha256={sha(v2)}",
        (local / WHEELS["zen4"]).as_uri(),
        (local / (WHEELS["v2"][: -len(".whl")] + ".json")).as_uri(),  # a receipt for v2
        f"javascript:{WHEELS['v4']}",
        f"data:application/zip,{WHEELS['v3']}",
        f"ftp://127.0.0.1/{WHEELS['sky']}",
    ]
    url = page(server, "/index.html", links)
    result = run_cli("pick", url, *ZEN4, "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert [w["filename"] for w in data["wheels"]] == [WHEELS["v2"]]
    assert data["chosen"]["receipt"] is None  # the file: receipt was not read
    warnings = data["warnings"]
    assert len(warnings) == 5
    for scheme in ("file", "javascript", "data", "ftp"):
        assert any(f"a {scheme}: link (" in w and "is not followed" in w for w in warnings), scheme
    assert server.asked == ["/index.html"]  # and nothing else was asked for


def test_another_origin_is_skipped_unless_allowed(server: Server, other: Server) -> None:
    files = make_wheels(other.root / "files")
    zen4 = files / WHEELS["zen4"]
    receipt = zen4.with_suffix(".json").name
    links = [f"{other.url}/files/{quote(zen4.name)}#sha256={sha(zen4)}"]
    links.append(f"{other.url}/files/{quote(receipt)}")
    v2 = make_wheel(server.root, WHEELS["v2"])
    links.append(f"{quote(v2.name)}#sha256={sha(v2)}")
    url = page(server, "/index.html", links)
    host = other.url.removeprefix("http://")
    refused = load_wheels(url)
    assert [w.filename for w in refused.wheels] == [WHEELS["v2"]]
    assert refused.warnings == (
        f"receipt {receipt} skipped: another origin's link ({other.url}/files/{quote(receipt)}) is "
        f"not followed; pass --allow-origin {host} to follow links to {host}",
        f"{zen4.name} skipped: another origin's link ({other.url}/files/{quote(zen4.name)}) is not "
        f"followed; pass --allow-origin {host} to follow links to {host}",
    )
    assert other.asked == []
    allowed = run_cli("pick", url, *ZEN4, "--allow-origin", host, "--json")
    assert allowed.returncode == 0, allowed.stderr
    chosen = allowed.json()["chosen"]
    assert chosen["filename"] == zen4.name
    assert chosen["receipt"]["source"] == f"{other.url}/files/{quote(receipt)}"
    assert other.asked == [f"/files/{quote(receipt)}"]
    # The host alone admits every port; another port is another origin.
    assert Origin.parse("127.0.0.1").admits(f"{other.url}/x.whl")
    assert not Origin.parse("127.0.0.1:1").admits(f"{other.url}/x.whl")
    assert not Origin.parse("https://127.0.0.1").admits(f"{other.url}/x.whl")


def test_a_bad_allow_origin_exit_2() -> None:
    for value in ("http://h/path", "ftp://h", "h:port", ""):
        with pytest.raises(UsageError, match="is not an origin"):
            Origin.parse(value)
    result = run_cli("pick", "dist", "--allow-origin", "ftp://host")
    assert result.returncode == 2
    assert one_error_line(result) == (
        "tfbuild: error: --allow-origin 'ftp://host' is not an origin: give a host name, "
        "HOST:PORT or an http(s) origin, without a path. Give e.g. --allow-origin "
        "cdn.example.org or --allow-origin https://cdn.example.org:8443."
    )


def test_a_redirect_to_another_scheme_is_not_followed(server: Server) -> None:
    server.routes["/moved.html"] = redirect_to("ftp://127.0.0.1/index.html")
    result = run_cli("pick", server.url + "/moved.html", *ZEN4)
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: cannot read {server.url}/moved.html: the server answered 302: it "
        "redirects to ftp://127.0.0.1/index.html, not an http(s) URL. Give the page's own http(s) "
        "address."
    )


# --- a local page stays in its directory ------------------------------------------------------------


def test_a_local_page_may_not_leave_its_directory(tmp_path: Path) -> None:
    dist = make_wheels(tmp_path / "dist", {"v2": WHEELS["v2"]}, receipts=False)
    outside = make_wheels(tmp_path / "outside")
    escape = dist / WHEELS["v4"]
    escape.symlink_to(outside / WHEELS["v4"])
    # A receipt beside an inside wheel that is a symlink to a file outside.
    v2 = dist / WHEELS["v2"]
    write_receipt(outside / WHEELS["v2"], "x86_64_v2", ("SSE3",), "-march=x86-64-v2")
    v2.with_suffix(".json").symlink_to((outside / WHEELS["v2"]).with_suffix(".json"))
    links = [
        f"{quote(v2.name)}#sha256={sha(v2)}",
        f"../outside/{quote(WHEELS['zen4'])}",  # .. out of the directory
        str(outside / WHEELS["v3"]),  # an absolute path
        (outside / WHEELS["sky"]).as_uri(),  # an absolute file: URL
        quote(escape.name),  # a symlink out
    ]
    (dist / "index.html").write_text("".join(f'<a href="{link}">x</a>\n' for link in links))
    source = load_wheels(str(dist / "index.html"))
    assert [w.filename for w in source.wheels] == [WHEELS["v2"]]
    assert source.wheels[0].receipt is None
    real = dist.resolve()
    rule = f"outside its own directory {real}; a local page may link only to files inside its directory"
    receipt = real / v2.with_suffix(".json").name
    leads_out = (outside / WHEELS["v2"]).with_suffix(".json").resolve()
    assert source.warnings == (
        f"receipt of {WHEELS['v2']} not used: the page links to {receipt}, which leads to "
        f"{leads_out}, {rule}",
        f"{WHEELS['zen4']} skipped: the page links to {outside.resolve() / WHEELS['zen4']} {rule}",
        f"{WHEELS['v3']} skipped: the page links to {outside / WHEELS['v3']} {rule}",
        f"{WHEELS['sky']} skipped: the page links to {outside / WHEELS['sky']} {rule}",
        f"{WHEELS['v4']} skipped: the page links to {real / WHEELS['v4']}, which leads to "
        f"{(outside / WHEELS['v4']).resolve()}, {rule}",
    )
    # The policy on its own: inside is followed, a sibling directory with the same prefix is not.
    policy = LinkPolicy(directory=real)
    assert policy.refusal((real / WHEELS["v2"]).as_uri()) is None
    assert policy.refusal((tmp_path / "dist-evil" / "x.whl").as_uri()) is not None


def test_the_page_tfbuild_index_writes_still_works(tmp_path: Path) -> None:
    dist = make_wheels(tmp_path / "dist")
    write_index(dist)
    source = load_wheels(str(dist / "index.html"))
    assert source.warnings == ()
    assert sorted(w.filename for w in source.wheels) == sorted(WHEELS.values())
    assert all(w.sha256 and w.from_index for w in source.wheels)


# --- a hash for --install ---------------------------------------------------------------------------


def test_install_refuses_a_link_without_a_hash_exit_3(server: Server, tmp_path: Path) -> None:
    wheel = make_wheel(server.root, f"{DIST}-2.21.0+x86_64-{PY}-{PY}-linux_x86_64.whl")
    url = page(server, "/index.html", [quote(wheel.name)])
    # An interpreter without pip: had pip been run, it would say "No module named pip" (exit 5).
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    result = run_cli("pick", url, "--install", "--python", str(bare / "bin" / "python"))
    assert result.returncode == 3, result.stderr
    assert one_error_line(result) == (
        f"tfbuild: error: will not install {wheel.name}: its link on {url} carries no #sha256=, "
        "so pip could not check what it downloads. Use an index page whose links end in "
        "#sha256=HEX (tfbuild index writes them), or pass --allow-unhashed to install it "
        "unchecked."
    )
    assert server.asked == ["/index.html"]  # the wheel was never downloaded
