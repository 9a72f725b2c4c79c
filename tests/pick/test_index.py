"""`tfbuild pick URL`: an index page served by a real local HTTP server."""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import cpuinfo_fixture
from tests.pick.conftest import WHEELS, make_wheels
from tfbuild.core.errors import EnvironmentProblem, InputError, UsageError
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import describe_host
from tfbuild.pick.rank import pick


def write_index(root: Path, *, receipts: tuple[str, ...] = ()) -> str:
    """PEP 503 style: /simple/tfbuild-standin/ links to ../../files/NAME#sha256=HEX."""
    files = make_wheels(root / "files")
    links = []
    for wheel in sorted(files.glob("*.whl")):
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        links.append(f'<a href="../../files/{quote(wheel.name)}#sha256={digest}">{wheel.name}</a>')
    for short in receipts:
        receipt = WHEELS[short][: -len(".whl")] + ".json"
        links.append(f'<a href="/files/{quote(receipt)}">receipt</a>')
    page = root / "simple" / "tfbuild-standin"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "<br>\n".join(links) + "\n</body></html>\n"
    )
    return "/simple/tfbuild-standin/"


def test_index_url_is_read_resolved_and_hashed(http_root: tuple[Path, str]) -> None:
    root, base = http_root
    path = write_index(root, receipts=("zen4",))
    source = load_wheels(base + path)
    assert source.kind == "index"
    assert sorted(w.filename for w in source.wheels) == sorted(WHEELS.values())
    zen4 = next(w for w in source.wheels if w.filename == WHEELS["zen4"])
    assert zen4.location == f"{base}/files/{quote(WHEELS['zen4'])}"
    assert zen4.sha256 == hashlib.sha256((root / "files" / WHEELS["zen4"]).read_bytes()).hexdigest()
    assert zen4.install_spec == f"{zen4.location}#sha256={zen4.sha256}"
    # The linked receipt is read; the native wheel's is fetched from beside it although unlinked.
    assert zen4.receipt is not None and zen4.receipt.target == "zen4"
    native = next(w for w in source.wheels if w.filename == WHEELS["native"])
    assert native.receipt is not None and native.receipt.target == "native"
    v3 = next(w for w in source.wheels if w.filename == WHEELS["v3"])
    assert v3.receipt is None  # not linked, not needed
    host = describe_host(cpuinfo=cpuinfo_fixture("zen4"), python="3.11")
    result = pick(source, host)
    assert result.chosen is not None and result.chosen.wheel == zen4
    assert "every feature its receipt records is here" in result.chosen.reason


def test_http_errors(http_root: tuple[Path, str]) -> None:
    root, base = http_root
    with pytest.raises(InputError, match="the server answered 404"):
        load_wheels(base + "/simple/absent/")
    (root / "empty.html").write_text('<html><a href="x.tar.gz">sdist</a></html>')
    with pytest.raises(InputError, match=r"the page links to no \.whl files"):
        load_wheels(base + "/empty.html")


def test_unreachable_and_unsupported_urls() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more: connection refused.
    with pytest.raises(EnvironmentProblem, match="cannot reach"):
        load_wheels(f"http://127.0.0.1:{port}/simple/")
    with pytest.raises(UsageError, match="ftp:// is not supported"):
        load_wheels("ftp://example.org/wheels/")
