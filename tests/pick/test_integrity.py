"""`tfbuild pick` trusts a receipt only for the wheel it describes, from where the wheel may come.

Replays issue 21: item 3 (a wheel with one flipped byte, or replaced, is refused when its sha256 is
not its receipt's: computed for a local file, the link's ``#sha256=`` over HTTP), item 4 (a receipt
that redirects to another origin is not used), item 15 (a receipt that is a FIFO or a link to
/dev/zero is one line and exit 3, never a hang). Real wheels, real HTTP servers on 127.0.0.1 (two
ports: two origins), real FIFOs, through the real CLI.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from tests import wheels
from tests.conftest import NO_FILE_KINDS, one_error_line, plant_no_file, run_cli
from tests.http_server import Server, redirect_to
from tests.pick.conftest import WHEELS, make_wheel, make_wheels, write_receipt
from tests.pick.test_http_hostile import ZEN4, page, sha
from tfbuild.wheel.index import write_index

MEMBER = "tfbuild_standin/__init__.py"


def by_name(report: dict[str, object]) -> dict[str, dict[str, object]]:
    return {w["filename"]: w for w in report["wheels"]}  # type: ignore[attr-defined,index]


# --- item 3: the wheel must be the one its receipt describes ---------------------------------------


@pytest.mark.parametrize("damage", ["flipped", "appended"])
def test_a_local_wheel_that_is_not_its_receipts_is_refused(tmp_path: Path, damage: str) -> None:
    dist = make_wheels(tmp_path / "dist", {"zen4": WHEELS["zen4"], "v3": WHEELS["v3"]})
    zen4 = dist / WHEELS["zen4"]
    built, size = sha(zen4), zen4.stat().st_size
    if damage == "flipped":  # one byte in a member's compressed data: same size, another sha256
        wheels.flip_compressed_byte(zen4, MEMBER)
        reason = (
            f"its sha256 is {sha(zen4)}, but its receipt records {built}: it is not the wheel "
            "that build wrote (damaged or replaced)"
        )
    else:
        with zen4.open("ab") as handle:
            handle.write(b"\0")
        reason = (
            f"it is {size + 1} bytes, but its receipt records {size}: it is not the wheel that "
            "build wrote (damaged or replaced)"
        )
    result = run_cli("pick", str(dist), *ZEN4, "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["chosen"]["filename"] == WHEELS["v3"]
    refused = by_name(report)[WHEELS["zen4"]]
    assert (refused["status"], refused["stage"], refused["reason"]) == (
        "refused",
        "integrity",
        reason,
    )
    human = run_cli("pick", str(dist), *ZEN4)
    assert human.returncode == 0, human.stderr
    # The table folds the reason at spaces; the hashes and sizes are words it keeps whole.
    [row] = [line for line in human.stdout.splitlines() if WHEELS["zen4"] in line]
    assert "refused" in row
    named = (sha(zen4), built) if damage == "flipped" else (f"{size + 1} bytes", f"{size}:")
    assert all(word in human.stdout for word in named)


def test_a_linked_wheel_whose_hash_is_not_its_receipts_is_refused(server: Server) -> None:
    files = make_wheels(server.root, {"zen4": WHEELS["zen4"], "v3": WHEELS["v3"]})
    zen4 = files / WHEELS["zen4"]
    built = sha(zen4)
    wheels.flip_compressed_byte(zen4, MEMBER)  # replaced on the server, the link's hash is true
    names = [WHEELS["zen4"], WHEELS["v3"]]
    links = [f"{quote(n)}#sha256={sha(files / n)}" for n in names]
    links += [quote(n.replace(".whl", ".json")) for n in names]
    url = page(server, "/index.html", links)
    result = run_cli("pick", url, *ZEN4, "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["chosen"]["filename"] == WHEELS["v3"]
    refused = by_name(report)[WHEELS["zen4"]]
    assert refused["stage"] == "integrity"
    assert refused["reason"] == (
        f"the page links it with sha256 {sha(zen4)}, but its receipt records {built}: it is not "
        "the wheel that build wrote (damaged or replaced)"
    )
    # pick reads no wheel over HTTP: the link's hash is what it compares.
    assert not any(path.endswith(".whl") for path in server.asked)


def test_a_local_index_page_is_checked_against_the_files_too(tmp_path: Path) -> None:
    dist = make_wheels(tmp_path / "dist", {"zen4": WHEELS["zen4"], "v3": WHEELS["v3"]})
    write_index(dist)  # links with the true hashes, then the wheel is damaged
    zen4 = dist / WHEELS["zen4"]
    built = sha(zen4)
    wheels.flip_compressed_byte(zen4, MEMBER)
    result = run_cli("pick", str(dist / "index.html"), *ZEN4, "--json")
    assert result.returncode == 0, result.stderr
    refused = by_name(result.json())[WHEELS["zen4"]]
    assert refused["stage"] == "integrity"
    assert refused["reason"].startswith(
        f"its sha256 is {sha(zen4)}, but its receipt records {built}"
    )


# --- item 4: a receipt comes from where its wheel may ----------------------------------------------


def test_a_receipt_redirected_to_another_origin_is_not_used(server: Server, other: Server) -> None:
    """The page's receipt of the zen4 wheel redirects to another server, whose receipt says
    the wheel was built for x86-64-v2: followed, it would decide the pick."""
    zen4 = make_wheel(server.root, WHEELS["zen4"])
    write_receipt(zen4, "zen4", ("SSE3",))
    v3 = make_wheel(server.root, WHEELS["v3"])
    write_receipt(v3, "x86_64_v3", ("SSE3",))
    # The other origin's receipt describes the same file but claims features this CPU lacks.
    shutil.copyfile(zen4, other.root / zen4.name)
    lying = write_receipt(other.root / zen4.name, "zen4", ("SSE3", "AMX_TILE"))
    receipt = zen4.with_suffix(".json").name
    server.routes[f"/{quote(receipt)}"] = redirect_to(f"{other.url}/{quote(lying.name)}")
    links = [f"{quote(w.name)}#sha256={sha(w)}" for w in (zen4, v3)]
    links += [quote(receipt), quote(v3.with_suffix(".json").name)]
    url = page(server, "/index.html", links)
    result = run_cli("pick", url, *ZEN4, "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    host = other.url.removeprefix("http://")
    assert (
        f"receipt of {zen4.name} not used: cannot read {server.url}/{quote(receipt)}: the server "
        f"redirects it: another origin's link ({other.url}/{quote(lying.name)}) is not followed; "
        f"pass --allow-origin {host} to follow links to {host}."
    ) in report["warnings"]
    assert by_name(report)[zen4.name]["receipt"] is None  # judged without one, like a missing one
    assert other.asked == []  # refused before it was asked
    # Allowed, the other origin's receipt is read and decides.
    allowed = run_cli("pick", url, *ZEN4, "--allow-origin", host, "--json")
    assert allowed.returncode == 0, allowed.stderr
    used = by_name(allowed.json())[zen4.name]
    assert used["receipt"]["source"] == f"{server.url}/{quote(receipt)}"
    assert "AMX_TILE" in used["reason"]
    assert other.asked == [f"/{quote(lying.name)}"]


# --- item 15: a receipt that is no file ------------------------------------------------------------


@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_a_receipt_that_is_a_fifo_or_dev_zero_is_one_line_exit_3(tmp_path: Path, kind: str) -> None:
    dist = make_wheels(tmp_path / "dist", {"v3": WHEELS["v3"]}, receipts=False)
    receipt = (dist / WHEELS["v3"]).with_suffix(".json")
    said = "is " + plant_no_file(receipt, kind)
    result = run_cli("pick", str(dist), *ZEN4, timeout=60)
    assert result.returncode == 3, result.stderr
    line = one_error_line(result)
    assert line.startswith(f"tfbuild: error: the receipt {receipt} is not a file: {receipt} {said}")


def test_a_local_page_that_is_a_fifo_link_is_one_line_exit_3(tmp_path: Path) -> None:
    """A page given as a file: URL names the file directly; a FIFO there is refused, not waited on."""
    fifo = tmp_path / "index.html"
    os.mkfifo(fifo)
    result = run_cli("pick", fifo.as_uri(), *ZEN4, timeout=60)
    assert result.returncode == 3, result.stderr
    assert "is a FIFO" in one_error_line(result)
