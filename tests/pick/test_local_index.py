"""`tfbuild pick dist/index.html`: a local index page (the one `tfbuild index` writes), its links
resolved against the page's own place, whatever the current directory; and what is not a page."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, one_error_line, run_cli
from tests.pick.conftest import WHEELS, make_wheels
from tfbuild.core.errors import InputError
from tfbuild.pick.listing import load_wheels
from tfbuild.wheel.index import write_index


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    """dist/ with the stand-in wheels, their receipts and the page `tfbuild index` writes."""
    dist = make_wheels(tmp_path / "dist")
    result = run_cli("index", str(dist))
    assert result.returncode == 0, result.stderr
    return dist


def test_a_local_page_from_another_directory(
    indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the page's relative links must not depend on this
    result = run_cli(
        "pick", "../dist/index.html", "--cpuinfo", str(cpuinfo_fixture("zen4")),
        "--python", "3.11", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["source"] == {"input": "../dist/index.html", "kind": "index", "wheels": len(WHEELS)}
    chosen = data["chosen"]
    wheel = (indexed / WHEELS["zen4"]).resolve()
    assert chosen["filename"] == WHEELS["zen4"]
    assert chosen["location"] == str(wheel)
    assert chosen["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    # Its receipt is read from beside the wheel, as for a directory.
    assert chosen["receipt"]["source"] == str(wheel.with_suffix(".json"))
    assert chosen["receipt"]["target"] == "zen4"


def test_a_file_url_is_the_same_page(indexed: Path) -> None:
    by_path = load_wheels(str(indexed / "index.html"))
    by_url = load_wheels((indexed / "index.html").as_uri())
    assert by_url.kind == by_path.kind == "index"
    assert by_url.wheels == by_path.wheels
    assert sorted(w.filename for w in by_url.wheels) == sorted(WHEELS.values())


def test_a_wheel_the_page_links_but_that_is_gone_is_a_warning(indexed: Path) -> None:
    (indexed / WHEELS["v2"]).unlink()
    source = load_wheels(str(indexed / "index.html"))
    assert WHEELS["v2"] not in {w.filename for w in source.wheels}
    assert len(source.wheels) == len(WHEELS) - 1
    assert source.warnings == (
        f"{WHEELS['v2']} skipped: the page links to {(indexed / WHEELS['v2']).resolve()}, "
        "which is not there",
    )
    for wheel in indexed.glob("*.whl"):
        wheel.unlink()
    with pytest.raises(InputError, match=r"no wheels at .*: .* skipped: the page links to"):
        load_wheels(str(indexed / "index.html"))


def test_a_file_that_is_no_page_exit_3(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("wheels are in dist/\n")
    result = run_cli("pick", str(notes))
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: no wheels in {notes}: it is neither a directory nor a .whl file, and it "
        "links to no .whl files as an index page would. Name a directory of .whl files (e.g. "
        "dist/), one .whl file, or an index page that links to them (a file such as "
        "dist/index.html, or an http(s) URL)."
    )


def test_a_page_read_over_http_may_not_name_local_files(
    http_root: tuple[Path, str], tmp_path: Path
) -> None:
    """A page from the network that links file: URLs must not make pick read this machine's files."""
    dist = make_wheels(tmp_path / "local")
    write_index(dist)  # a real page, whose links are then made to point into this machine
    root, base = http_root
    page = (dist / "index.html").read_text()
    (root / "index.html").write_text(page.replace('href="', f'href="{dist.as_uri()}/'))
    with pytest.raises(InputError, match=r"skipped: a file: link \(file://.*\) is not followed"):
        load_wheels(base + "/index.html")
