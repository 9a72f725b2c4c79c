"""Where a build's TensorFlow tree comes from: a local checkout, or the recipe's release tarball.

The tarballs are tiny real ``.tar.gz`` archives served by a real HTTP server on 127.0.0.1
(tests/http_server.py's); nothing here reaches any other host.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import NO_FILE_KINDS, plant_no_file
from tests.http_server import Server, closed_port, hang, oversized, redirect_to, trickle
from tfbuild.build import source_download
from tfbuild.build import tarball as archives
from tfbuild.build.source_tree import Source, fetch_source, local_source
from tfbuild.core import serial
from tfbuild.core.cache import SOURCES, cache_root
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.wheel.receipt import SourceRecord

VERSION = "9.9.9"
TOP = f"tensorflow-{VERSION}"
#: A TensorFlow-like tree with GitHub's single top-level directory.
TREE: dict[str, bytes] = {
    f"{TOP}/tensorflow/tools/pip_package/BUILD": b"# the wheel's BUILD file\n",
    f"{TOP}/README.md": b"TensorFlow 9.9.9\n",
    f"{TOP}/configure.py": b"print('configure')\n",
}
#: The same version, other bytes: what an override recipe's tarball could hold.
OTHER_TREE: dict[str, bytes] = {**TREE, f"{TOP}/injected.py": b"import os  # not TensorFlow's\n"}
PATH = "/archive/v9.9.9.tar.gz"
OTHER_PATH = "/fork/archive/v9.9.9.tar.gz"
#: The members' mtime in the test tarballs (GitHub gives every member the commit's time).
MTIME = 1_700_000_000


def tar_gz(members: dict[str, bytes], mtimes: Mapping[str, int] | None = None) -> bytes:
    """A gzip-compressed tar archive of regular files named exactly as given (no checks), each
    with its mtime from ``mtimes`` (else :data:`MTIME`)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = (mtimes or {}).get(name, MTIME)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tarball_file(cache: Path, data: bytes) -> Path:
    return cache / "sha256" / f"{sha256(data)}.tar.gz"


def tree_dir(cache: Path, data: bytes) -> Path:
    return cache / "sha256" / sha256(data)


def record_file(cache: Path, url: str) -> Path:
    return cache / "urls" / f"{sha256(url.encode())}.json"


def files(root: Path) -> list[str]:
    """Every file below ``root`` (directories left out), relative, sorted."""
    if not root.exists():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())


def partials(root: Path) -> list[Path]:
    return sorted(root.rglob("*.partial-*")) if root.exists() else []


def fetch(
    http_server: Server,
    cache: Path,
    sha: str | None,
    lines: list[str] | None = None,
    *,
    path: str = PATH,
) -> Source:
    return fetch_source(
        http_server.at(path),
        version=VERSION,
        sha256=sha,
        cache_dir=cache,
        on_line=(lines if lines is not None else []).append,
        timeout=10,
    )


# --- the release tarball: downloading, verifying, reusing -------------------------------------


def test_pinned_tarball_is_downloaded_verified_and_extracted(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    lines: list[str] = []

    source = fetch(http_server, cache, sha256(data).upper(), lines)  # case does not matter

    assert source.path == tree_dir(cache, data) / TOP
    assert (source.path / "tensorflow/tools/pip_package/BUILD").read_bytes() == TREE[
        f"{TOP}/tensorflow/tools/pip_package/BUILD"
    ]
    assert (source.kind, source.origin, source.sha256) == (
        "tarball",
        http_server.at(PATH),
        sha256(data),
    )
    assert source.pinned is True
    assert (source.git_commit, source.git_dirty) == (None, None)
    assert source.epoch == MTIME
    assert tarball_file(cache, data).read_bytes() == data
    assert not (cache / "urls").exists()  # pinned: no URL is recorded
    assert json.loads((tree_dir(cache, data) / ".complete").read_text()) == {
        "sha256": sha256(data),
        "epoch": MTIME,
    }
    assert http_server.hits[PATH] == 1
    assert f"downloading {http_server.at(PATH)}" in lines
    assert any(re.fullmatch(r"downloaded [0-9.]+ / [0-9.]+ MB", line) for line in lines)
    assert partials(cache) == []
    assert source.record() == SourceRecord(
        kind="tarball", url=http_server.at(PATH), sha256=sha256(data), pinned=True, epoch=MTIME
    )
    assert serial.to_data(source.record()) == {
        "kind": "tarball",
        "url": http_server.at(PATH),
        "sha256": sha256(data),
        "pinned": True,
        "path": None,
        "commit": None,
        "dirty": None,
        "epoch": MTIME,
    }


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "trust-on-first-use"])
def test_a_cached_entry_is_reused_with_the_server_stopped(
    http_server: Server, tmp_path: Path, pinned: bool
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    sha = sha256(data) if pinned else None
    first = fetch(http_server, cache, sha)
    http_server.stop()  # any request would now be refused
    lines: list[str] = []

    second = fetch(http_server, cache, sha, lines)

    assert second == first
    assert http_server.hits[PATH] == 1
    assert lines == []


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "trust-on-first-use"])
def test_a_cached_tarball_is_extracted_again_without_network(
    http_server: Server, tmp_path: Path, pinned: bool
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    sha = sha256(data) if pinned else None
    first = fetch(http_server, cache, sha)
    shutil.rmtree(tree_dir(cache, data))
    http_server.stop()

    second = fetch(http_server, cache, sha)

    assert second == first
    assert (second.path / "README.md").read_bytes() == TREE[f"{TOP}/README.md"]
    assert http_server.hits[PATH] == 1


def test_a_pinned_sha256_mismatch_leaves_nothing(http_server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    wrong = "0" * 64

    with pytest.raises(InputError) as info:
        fetch(http_server, cache, wrong)

    message = str(info.value)
    assert "\n" not in message
    assert f"the download of {http_server.at(PATH)} does not match its pinned sha256" in message
    assert f"expected {wrong}, got {sha256(data)}" in message
    assert "source.sha256" in message
    assert info.value.exit_code == 3
    assert files(cache) == []


def test_trust_on_first_use_records_the_url_and_its_sha256(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    lines: list[str] = []

    source = fetch(http_server, cache, None, lines)

    record = json.loads(record_file(cache, http_server.at(PATH)).read_text())
    assert (record["url"], record["sha256"]) == (http_server.at(PATH), sha256(data))
    assert datetime.fromisoformat(record["first_seen"]).tzinfo is not None
    assert source.sha256 == sha256(data)
    assert source.pinned is False
    assert source.record().pinned is False
    assert source.record().sha256 == sha256(data)  # the receipt names the content all the same
    assert source.path == tree_dir(cache, data) / TOP
    assert files(cache / "urls") == [record_file(cache, http_server.at(PATH)).name]
    assert (
        f"the recipe pins no sha256 for {http_server.at(PATH)}: recorded {sha256(data)} at this first "
        "download; later runs verify against it"
    ) in lines


def test_an_upstream_that_serves_other_bytes_later_is_refused(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    fetch(http_server, cache, None)
    # The cache loses the download and the tree, and the same URL now serves other bytes.
    tarball_file(cache, data).unlink()
    shutil.rmtree(tree_dir(cache, data))
    other = tar_gz(OTHER_TREE)
    http_server.files[PATH] = other

    with pytest.raises(InputError) as info:
        fetch(http_server, cache, None)

    message = str(info.value)
    assert "does not match the sha256 recorded at its first download" in message
    assert f"expected {sha256(data)}" in message
    assert f"got {sha256(other)}" in message
    assert http_server.hits[PATH] == 2
    record = record_file(cache, http_server.at(PATH))
    assert json.loads(record.read_text())["sha256"] == sha256(data)  # the record is kept
    assert files(cache) == [f"urls/{record.name}"]  # the other bytes are not kept


# --- the attack: one cache entry standing in for another ----------------------------------------


@pytest.mark.parametrize("override_pinned", [True, False], ids=["override-pinned", "override-tofu"])
@pytest.mark.parametrize("shipped_pinned", [True, False], ids=["shipped-pinned", "shipped-tofu"])
def test_an_override_tarball_never_stands_in_for_the_shipped_one(
    http_server: Server, tmp_path: Path, override_pinned: bool, shipped_pinned: bool
) -> None:
    shipped, other = tar_gz(TREE), tar_gz(OTHER_TREE)  # the same version, other bytes
    http_server.files[PATH] = shipped
    http_server.files[OTHER_PATH] = other
    cache = tmp_path / "cache"
    # A run with an override recipe fills the cache with its tarball, for the same version.
    override = fetch(
        http_server, cache, sha256(other) if override_pinned else None, path=OTHER_PATH
    )
    assert (override.path / "injected.py").is_file()

    source = fetch(http_server, cache, sha256(shipped) if shipped_pinned else None)

    assert http_server.hits[PATH] == 1  # the shipped tarball was downloaded
    assert source.path == tree_dir(cache, shipped) / TOP
    assert not (source.path / "injected.py").exists()
    assert (source.origin, source.sha256) == (http_server.at(PATH), sha256(shipped))
    assert source.record().url == http_server.at(PATH)
    assert source.record().sha256 == sha256(shipped)
    assert http_server.hits[OTHER_PATH] == 1


def test_entries_of_the_per_version_layout_are_ignored(http_server: Server, tmp_path: Path) -> None:
    shipped, other = tar_gz(TREE), tar_gz(OTHER_TREE)
    http_server.files[PATH] = shipped
    cache = tmp_path / "cache"
    # What tfbuild 0.1 left after a run with an override recipe: the other tarball, its recorded
    # sha256 and its complete tree, all named by the version.
    cache.mkdir()
    (cache / f"tensorflow-{VERSION}.tar.gz").write_bytes(other)
    (cache / f"tensorflow-{VERSION}.tar.gz.sha256").write_text(sha256(other) + "\n")
    old_tree = cache / f"tensorflow-{VERSION}-{sha256(other)[:12]}"
    (old_tree / TOP).mkdir(parents=True)
    (old_tree / TOP / "injected.py").write_text("import os\n")
    (old_tree / ".complete").write_text(f"{http_server.at(PATH)}\n{sha256(other)}\n")

    for sha in (None, sha256(shipped)):
        source = fetch(http_server, cache, sha)

        assert source.path == tree_dir(cache, shipped) / TOP
        assert not (source.path / "injected.py").exists()
    assert http_server.hits[PATH] == 1


# --- a damaged or tampered cache -----------------------------------------------------------------


def test_a_tampered_pinned_tarball_is_downloaded_and_extracted_again(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    fetch(http_server, cache, sha256(data))
    tarball = tarball_file(cache, data)
    tarball.write_bytes(tar_gz(OTHER_TREE))  # swapped in behind tfbuild's back
    (tree_dir(cache, data) / TOP / "injected.py").write_text("import os\n")
    lines: list[str] = []

    source = fetch(http_server, cache, sha256(data), lines)

    assert http_server.hits[PATH] == 2
    assert tarball.read_bytes() == data
    assert (source.path / "configure.py").is_file()
    assert not (source.path / "injected.py").exists()  # the tree went with its tarball
    assert f"{tarball} does not match its sha256; downloading it again" in lines


def test_a_tampered_first_seen_tarball_is_refused(http_server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    fetch(http_server, cache, None)
    tarball = tarball_file(cache, data)
    bad = data[:100] + b"\0" * 100
    tarball.write_bytes(bad)

    with pytest.raises(InputError) as info:
        fetch(http_server, cache, None)

    message = str(info.value)
    assert "\n" not in message
    assert f"the cached tarball {tarball} does not match the sha256 recorded" in message
    assert f"expected {sha256(data)}" in message
    assert f"got {sha256(bad)}" in message
    assert f"delete {tarball}" in message
    assert http_server.hits[PATH] == 1  # refused before any download
    assert tarball.read_bytes() == bad  # left for the user to look at


def test_a_malformed_record_is_discarded(http_server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    record = record_file(cache, http_server.at(PATH))
    record.parent.mkdir(parents=True)
    record.write_text('{"url": "http://elsewhere/", "sha256": "' + "1" * 64 + '"}\n')
    lines: list[str] = []

    source = fetch(http_server, cache, None, lines)

    assert source.sha256 == sha256(data)
    assert json.loads(record.read_text())["sha256"] == sha256(data)
    assert any(line.startswith(f"discarding {record}") for line in lines)


@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_a_record_or_marker_that_is_no_file_is_discarded_not_waited_on(
    http_server: Server, tmp_path: Path, kind: str
) -> None:
    """Issue 21, item 15: the cache's own files are read by the one reader too. A record (or a
    tree's marker) that is a FIFO or a link to /dev/zero is no record: discarded, downloaded again."""
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    record = record_file(cache, http_server.at(PATH))
    record.parent.mkdir(parents=True)
    marker = cache / "sha256" / sha256(data) / ".complete"
    marker.parent.mkdir(parents=True)
    for path in (record, marker):
        plant_no_file(path, kind)
    lines: list[str] = []

    source = fetch(http_server, cache, None, lines)

    assert source.sha256 == sha256(data)
    assert record.is_file() and not record.is_symlink()
    assert json.loads(record.read_text())["sha256"] == sha256(data)
    assert any(line.startswith(f"discarding {record}") for line in lines)
    assert http_server.hits[PATH] == 1
    assert marker.is_file() and not marker.is_symlink()  # the tree extracted again, marked


def test_several_top_level_entries_give_the_extraction_directory(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz({"tensorflow/tools/pip_package/BUILD": b"", "configure.py": b""})
    http_server.files[PATH] = data
    cache = tmp_path / "cache"

    source = fetch(http_server, cache, sha256(data))

    assert source.path == tree_dir(cache, data)
    assert (source.path / "tensorflow/tools/pip_package/BUILD").is_file()


def test_another_run_that_finished_first_wins(
    http_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    theirs = tree_dir(cache, data)
    real_extract = archives.extract_archive

    def extract_while_another_run_finishes(archive: Path, into: Path) -> float | None:
        newest = real_extract(archive, into)
        epoch = None if newest is None else int(newest)
        (theirs / TOP).mkdir(parents=True)
        (theirs / TOP / "theirs.txt").write_text("extracted by another run\n")
        (theirs / ".complete").write_text(json.dumps({"sha256": sha256(data), "epoch": epoch}))
        return newest

    monkeypatch.setattr(archives, "extract_archive", extract_while_another_run_finishes)

    source = fetch(http_server, cache, sha256(data))

    assert source.path == theirs / TOP
    assert (source.path / "theirs.txt").is_file()
    assert not (source.path / "README.md").exists()  # ours was discarded
    assert source.epoch == MTIME
    assert partials(cache) == []


def test_an_invalid_pinned_sha256_is_an_input_error(http_server: Server, tmp_path: Path) -> None:
    http_server.files[PATH] = tar_gz(TREE)

    with pytest.raises(InputError, match="is not a sha256: expected 64 hexadecimal digits"):
        fetch(http_server, tmp_path / "cache", "abc123")

    assert http_server.hits[PATH] == 0


# --- the epoch -----------------------------------------------------------------------------------


def test_a_tarball_epoch_is_its_newest_member_and_is_read_once(
    http_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    newest = 1_750_000_000
    data = tar_gz(TREE, {f"{TOP}/README.md": newest, f"{TOP}/configure.py": 1_600_000_000})
    http_server.files[PATH] = data
    cache = tmp_path / "cache"

    first = fetch(http_server, cache, sha256(data))

    assert first.epoch == newest
    assert first.record().epoch == newest

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("the tarball was read again")

    monkeypatch.setattr(tarfile, "open", no_reading)
    again = fetch(http_server, cache, sha256(data))

    assert again.epoch == newest  # from the tree's marker


def test_an_archive_without_members_has_no_epoch(http_server: Server, tmp_path: Path) -> None:
    data = tar_gz({})
    http_server.files[PATH] = data

    source = fetch(http_server, tmp_path / "cache", sha256(data))

    assert source.epoch is None


# --- failures ----------------------------------------------------------------------------------


def assert_network_problem(error: EnvironmentProblem, url: str, why: str) -> None:
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"cannot download {url}: {why}")
    assert "HTTPS_PROXY" in message
    assert "--source DIR" in message
    # Honest about --source: the build itself still downloads (issue 14).
    assert "skips only this download" in message
    assert "without network access" not in message
    assert error.exit_code == 5


def test_a_missing_file_is_an_environment_problem(http_server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"

    with pytest.raises(EnvironmentProblem) as info:
        fetch(http_server, cache, None)

    assert_network_problem(
        info.value, http_server.at(PATH), "the server answered HTTP 404 Not Found"
    )
    assert http_server.hits[PATH] == 1
    assert files(cache) == []


def test_a_refused_connection_is_an_environment_problem(
    http_server: Server, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v9.9.9.tar.gz"
    cache = tmp_path / "cache"

    with pytest.raises(EnvironmentProblem) as info:
        fetch_source(url, version=VERSION, sha256=None, cache_dir=cache, timeout=10)

    assert_network_problem(info.value, url, "Connection refused")
    assert files(cache) == []


def test_a_silent_server_times_out(http_server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    http_server.routes[PATH] = hang(http_server)  # accepts, never answers
    url = http_server.at(PATH)
    with pytest.raises(EnvironmentProblem) as info:
        fetch_source(url, version=VERSION, sha256=None, cache_dir=cache, timeout=0.3)

    assert_network_problem(info.value, url, "no answer within 0.3 s")
    assert files(cache) == []


def test_a_redirect_to_another_host_is_followed_and_the_sha256_decides(
    http_server: Server, other_http_server: Server, tmp_path: Path
) -> None:
    """GitHub's archive URLs redirect to codeload.github.com: the download follows a redirect to
    another origin, and the pinned sha256 decides whether the bytes are used."""
    data = tar_gz(TREE)
    other_http_server.files[PATH] = data
    http_server.routes[PATH] = redirect_to(other_http_server.at(PATH))

    source = fetch(http_server, tmp_path / "cache", sha256(data))

    assert (source.origin, source.sha256) == (http_server.at(PATH), sha256(data))
    assert other_http_server.hits[PATH] == 1
    with pytest.raises(InputError, match="does not match its pinned sha256"):
        fetch(http_server, tmp_path / "other-cache", "0" * 64)


def test_a_body_over_the_cap_is_refused_with_the_recipe_to_check(
    http_server: Server, tmp_path: Path
) -> None:
    http_server.routes[PATH] = oversized(http_server, 5000)
    url = http_server.at(PATH)
    partial = tmp_path / "download.partial"
    lines: list[str] = []

    with pytest.raises(InputError) as info:
        source_download.download_to(url, partial, ca_bundle=None, limit=1000, on_line=lines.append)

    assert str(info.value) == (
        f"cannot download {url}: it is 5000 bytes, over 1000 bytes. Check the recipe's "
        "source.tarball."
    )
    assert info.value.exit_code == 3
    assert lines == [f"downloading {url}"]  # refused before any byte of it
    assert partial.read_bytes() == b""  # the caller deletes it


def test_a_download_cut_at_its_deadline_is_an_environment_problem(
    http_server: Server, tmp_path: Path
) -> None:
    http_server.routes[PATH] = trickle(http_server)
    url = http_server.at(PATH)

    with pytest.raises(EnvironmentProblem) as info:
        source_download.download_to(
            url, tmp_path / "download.partial", ca_bundle=None, deadline=1.0, on_line=[].append
        )

    assert_network_problem(info.value, url, "it ")
    assert "1 s deadline" in str(info.value)


def test_a_download_cut_short_is_an_environment_problem(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    http_server.lengths[PATH] = len(data) + 1000
    cache = tmp_path / "cache"

    with pytest.raises(EnvironmentProblem) as info:
        fetch(http_server, cache, sha256(data))

    why = f"the download ended after {len(data)} of {len(data) + 1000} bytes"
    assert_network_problem(info.value, http_server.at(PATH), why)
    assert files(cache) == []


@pytest.mark.parametrize("evil", ["../evil", "{outside}/evil", "{top}/../../evil"])
def test_an_archive_with_members_outside_is_refused(
    http_server: Server, tmp_path: Path, evil: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    name = evil.format(outside=outside, top=TOP)
    data = tar_gz({**TREE, name: b"owned\n"})
    http_server.files[PATH] = data
    cache = tmp_path / "cache"

    with pytest.raises(InputError) as info:
        fetch(http_server, cache, sha256(data))

    assert f"the archive downloaded from {http_server.at(PATH)} is unsafe to extract" in str(
        info.value
    )
    assert list(outside.iterdir()) == []
    # Nothing landed beside the cache either (the server's own directory, "www", stays empty).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "outside", "www"]
    assert list(http_server.root.iterdir()) == []
    assert files(cache) == []  # the tarball is deleted, no partial tree remains


def test_a_symlink_pointing_outside_is_refused(http_server: Server, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        link = tarfile.TarInfo(f"{TOP}/escape")
        link.type = tarfile.SYMTYPE
        link.linkname = str(tmp_path)
        archive.addfile(link)
    data = buffer.getvalue()
    http_server.files[PATH] = data
    cache = tmp_path / "cache"

    with pytest.raises(InputError, match="unsafe to extract"):
        fetch(http_server, cache, None)

    assert files(cache) == []  # unpinned: the URL's record goes with the tarball


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "trust-on-first-use"])
def test_a_corrupt_archive_is_an_input_error_and_is_deleted(
    http_server: Server, tmp_path: Path, pinned: bool
) -> None:
    data = b"<html>a captive portal, not a tarball</html>"
    http_server.files[PATH] = data
    cache = tmp_path / "cache"

    with pytest.raises(InputError) as info:
        fetch(http_server, cache, sha256(data) if pinned else None)

    assert f"the archive downloaded from {http_server.at(PATH)} cannot be extracted" in str(
        info.value
    )
    assert "rerun to download it again" in str(info.value)
    assert files(cache) == []


def test_after_a_captive_portal_the_real_tarball_is_trusted(
    http_server: Server, tmp_path: Path
) -> None:
    http_server.files[PATH] = b"<html>a captive portal, not a tarball</html>"
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match="cannot be extracted"):
        fetch(http_server, cache, None)
    data = tar_gz(TREE)
    http_server.files[PATH] = data

    source = fetch(http_server, cache, None)

    assert source.sha256 == sha256(data)
    assert json.loads(record_file(cache, http_server.at(PATH)).read_text())["sha256"] == sha256(
        data
    )


def test_ctrl_c_during_the_download_leaves_no_partial_file(
    http_server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"

    def interrupt(line: str) -> None:
        if line.startswith("downloaded"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch_source(
            http_server.at(PATH), version=VERSION, sha256=None, cache_dir=cache, on_line=interrupt
        )

    assert files(cache) == []


def test_ctrl_c_during_extraction_leaves_no_partial_tree(
    http_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tar_gz(TREE)
    http_server.files[PATH] = data
    cache = tmp_path / "cache"
    real_extract = archives.extract_archive
    seen: list[Path] = []

    def extract_then_interrupt(archive: Path, into: Path) -> float | None:
        real_extract(archive, into)
        seen.append(into)
        raise KeyboardInterrupt

    monkeypatch.setattr(archives, "extract_archive", extract_then_interrupt)

    with pytest.raises(KeyboardInterrupt):
        fetch(http_server, cache, sha256(data))

    assert len(seen) == 1
    assert ".partial-" in seen[0].name
    assert not seen[0].exists()
    assert files(cache) == [f"sha256/{sha256(data)}.tar.gz"]


# --- the cache directory -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"TFBUILD_CACHE_DIR": "/big/disk", "XDG_CACHE_HOME": "/xdg", "HOME": "/h"},
            "/big/disk/sources",
        ),
        ({"XDG_CACHE_HOME": "/xdg", "HOME": "/h"}, "/xdg/tfbuild/sources"),
        ({"XDG_CACHE_HOME": "relative", "HOME": "/h"}, "/h/.cache/tfbuild/sources"),
        ({"TFBUILD_CACHE_DIR": "", "HOME": "/h"}, "/h/.cache/tfbuild/sources"),
    ],
)
def test_the_source_cache_dir(env: dict[str, str], expected: str) -> None:
    assert cache_root(env) / SOURCES == Path(expected)


# --- a local directory -------------------------------------------------------------------------


#: The files' mtime in the test trees.
TREE_MTIME = 1_600_000_000


def make_tree(root: Path) -> Path:
    (root / "tensorflow/tools/pip_package").mkdir(parents=True)
    (root / "tensorflow/tools/pip_package/BUILD").write_text("# BUILD\n")
    (root / "configure.py").write_text("print('configure')\n")
    for path in root.rglob("*"):
        os.utime(path, (TREE_MTIME, TREE_MTIME))
    return root


def git(root: Path, *args: str, date: str | None = None) -> str:
    env = dict(os.environ)
    if date is not None:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    proc = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return proc.stdout


def commit_all(root: Path, *, date: str | None = None) -> str:
    """Make ``root`` a git checkout with one commit of everything; its HEAD."""
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "tree", date=date)
    return git(root, "rev-parse", "HEAD").strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def test_a_plain_directory(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")

    source = local_source(root)

    assert source == Source(
        path=root,
        kind="directory",
        origin=str(root),
        sha256=None,
        pinned=False,
        git_commit=None,
        git_dirty=None,
        epoch=TREE_MTIME,
    )
    assert serial.to_data(source.record()) == {
        "kind": "directory",
        "url": None,
        "sha256": None,
        "pinned": False,
        "path": str(root),
        "commit": None,
        "dirty": None,
        "epoch": TREE_MTIME,
    }


def test_the_configure_file_a_build_leaves_in_the_tree_does_not_move_its_date(
    tmp_path: Path,
) -> None:
    """build.sh copies .tf_configure.bazelrc into the tree (TensorFlow's .bazelrc imports it from
    there): the next build of the same plain directory must keep the same SOURCE_DATE_EPOCH. A file
    the user edits still moves it."""
    root = make_tree(tmp_path / "tf")
    (root / ".tf_configure.bazelrc").write_text("build --copt=-march=haswell\n")
    assert local_source(root).epoch == TREE_MTIME
    (root / "configure.py").write_text("print('changed')\n")
    assert local_source(root).epoch != TREE_MTIME


def test_a_relative_directory_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(tmp_path / "tf")
    monkeypatch.chdir(tmp_path)

    source = local_source(Path("tf"))

    assert source.path == tmp_path / "tf"
    assert source.origin == str(tmp_path / "tf")


@needs_git
def test_a_git_checkout_records_its_commit_and_cleanliness(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    head = commit_all(root)
    (root / "untracked.txt").write_text("not part of the build\n")

    source = local_source(root)

    assert source.git_commit is not None
    assert re.fullmatch(r"[0-9a-f]{40}", source.git_commit)
    assert source.git_commit == head
    assert source.git_dirty is False  # untracked files do not count
    assert source.record() == SourceRecord(
        kind="directory",
        path=str(root),
        commit=head,
        dirty=False,
        epoch=source.epoch,
    )
    assert serial.to_data(source.record())["commit"] == head


@needs_git
def test_a_git_checkout_epoch_is_its_head_commit_time(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    commit_all(root, date="2024-03-01T12:00:00+00:00")
    os.utime(root / "configure.py", (1_800_000_000, 1_800_000_000))  # edited after the commit

    source = local_source(root)

    assert source.epoch == 1_709_294_400  # 2024-03-01T12:00:00Z, not the newer file


@needs_git
def test_a_modified_tracked_file_makes_the_checkout_dirty(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    commit_all(root)
    (root / "configure.py").write_text("print('patched')\n")

    source = local_source(root)

    assert source.git_dirty is True
    assert source.git_commit is not None


@needs_git
def test_a_git_checkout_without_git_installed_is_still_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tf")
    git(root, "init", "-q")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))

    source = local_source(root)

    assert source.path == root
    assert (source.git_commit, source.git_dirty) == (None, None)
    assert source.epoch == TREE_MTIME  # the files' mtimes (.git left out)


@needs_git
def test_a_git_checkout_without_commits_has_no_commit(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    git(root, "init", "-q")

    source = local_source(root)

    assert (source.git_commit, source.git_dirty) == (None, None)
    assert source.epoch == TREE_MTIME


def test_a_plain_directory_epoch_is_its_newest_file(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    os.utime(root / "configure.py", (1_650_000_000, 1_650_000_000))
    # Left out: a .git directory (here not even a repository) and bazel's output links.
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    outputs = tmp_path / "bazel-outputs"
    outputs.mkdir()
    (outputs / "built.o").write_text("newer than the source\n")
    (root / "bazel-out").symlink_to(outputs)
    (root / "bazel-bin").symlink_to(tmp_path / "gone")  # dangling

    source = local_source(root)

    assert source.git_commit is None
    assert source.epoch == 1_650_000_000


def test_a_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        local_source(tmp_path / "nowhere")

    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"cannot use {tmp_path / 'nowhere'} as the TensorFlow source")
    assert "it does not exist" in message
    assert "git clone https://github.com/tensorflow/tensorflow" in message
    assert info.value.exit_code == 3


def test_a_file_is_not_a_source_directory(tmp_path: Path) -> None:
    file = tmp_path / "tensorflow.tar.gz"
    file.write_bytes(tar_gz(TREE))

    with pytest.raises(InputError, match="it is not a directory"):
        local_source(file)


def test_a_directory_without_the_marker_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "other" / "tensorflow").mkdir(parents=True)

    with pytest.raises(InputError) as info:
        local_source(tmp_path / "other")

    assert str(info.value) == (
        f"{tmp_path / 'other'} does not look like a TensorFlow source tree: it has no "
        "tensorflow/tools/pip_package. Pass the top of a TensorFlow checkout "
        "(e.g. git clone https://github.com/tensorflow/tensorflow)."
    )


def test_a_directory_without_files_has_no_epoch(tmp_path: Path) -> None:
    (tmp_path / "tf" / "tensorflow" / "tools" / "pip_package").mkdir(parents=True)

    source = local_source(tmp_path / "tf")

    assert source.path == tmp_path / "tf"
    assert source.epoch is None  # no file at all
