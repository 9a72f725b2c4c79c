"""Where a build's TensorFlow tree comes from: a local checkout, or the recipe's release tarball.

The tarballs are tiny real ``.tar.gz`` archives served by a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import socket
import subprocess
import tarfile
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tfbuild import sources
from tfbuild.errors import EnvironmentProblem, InputError
from tfbuild.sources import Source, default_cache_dir, fetch_source, local_source

VERSION = "9.9.9"
TOP = f"tensorflow-{VERSION}"
#: A TensorFlow-like tree with GitHub's single top-level directory.
TREE: dict[str, bytes] = {
    f"{TOP}/tensorflow/tools/pip_package/BUILD": b"# the wheel's BUILD file\n",
    f"{TOP}/README.md": b"TensorFlow 9.9.9\n",
    f"{TOP}/configure.py": b"print('configure')\n",
}
PATH = "/archive/v9.9.9.tar.gz"


def tar_gz(members: dict[str, bytes]) -> bytes:
    """A gzip-compressed tar archive of regular files named exactly as given (no checks)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_dir(cache: Path, data: bytes) -> Path:
    return cache / f"tensorflow-{VERSION}-{sha256(data)[:12]}"


def partials(root: Path) -> list[Path]:
    return sorted(root.rglob("*.partial-*")) if root.exists() else []


@dataclass
class Server:
    """A real HTTP server: ``files`` maps a path to its body; ``hits`` counts requests per path."""

    base: str
    files: dict[str, bytes] = field(default_factory=dict)
    #: A Content-Length to announce instead of the body's (to cut a download short).
    lengths: dict[str, int] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)

    def url(self, path: str = PATH) -> str:
        return self.base + path


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")


@pytest.fixture
def server(no_proxy: None) -> Iterator[Server]:
    state = Server(base="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits[self.path] += 1
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(state.lengths.get(self.path, len(body))))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def fetch(server: Server, cache: Path, sha: str | None, lines: list[str] | None = None) -> Source:
    return fetch_source(
        server.url(),
        version=VERSION,
        sha256=sha,
        cache_dir=cache,
        on_line=(lines if lines is not None else []).append,
        timeout=10,
    )


# --- the release tarball: downloading, verifying, reusing -------------------------------------


def test_pinned_tarball_is_downloaded_verified_and_extracted(
    server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    lines: list[str] = []

    source = fetch(server, cache, sha256(data).upper(), lines)  # case does not matter

    assert source.path == tree_dir(cache, data) / TOP
    assert (source.path / "tensorflow/tools/pip_package/BUILD").read_bytes() == TREE[
        f"{TOP}/tensorflow/tools/pip_package/BUILD"
    ]
    assert (source.kind, source.origin, source.sha256) == ("tarball", server.url(), sha256(data))
    assert source.pinned is True
    assert (source.git_commit, source.git_dirty) == (None, None)
    assert (cache / f"tensorflow-{VERSION}.tar.gz").read_bytes() == data
    assert not (cache / f"tensorflow-{VERSION}.tar.gz.sha256").exists()  # pinned: nothing recorded
    assert (tree_dir(cache, data) / ".complete").is_file()
    assert server.hits[PATH] == 1
    assert f"downloading {server.url()}" in lines
    assert any(re.fullmatch(r"downloaded [0-9.]+ / [0-9.]+ MB", line) for line in lines)
    assert partials(cache) == []
    assert source.to_json() == {
        "path": str(source.path),
        "kind": "tarball",
        "origin": server.url(),
        "sha256": sha256(data),
        "pinned": True,
        "git_commit": None,
        "git_dirty": None,
    }


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "trust-on-first-use"])
def test_an_extracted_tree_is_reused_without_network(
    server: Server, tmp_path: Path, pinned: bool
) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    sha = sha256(data) if pinned else None
    first = fetch(server, cache, sha)
    server.files.clear()  # any request would now fail with 404
    lines: list[str] = []

    second = fetch(server, cache, sha, lines)

    assert second == first
    assert server.hits[PATH] == 1
    assert lines == []


def test_a_cached_tarball_is_extracted_again_without_network(
    server: Server, tmp_path: Path
) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    first = fetch(server, cache, sha256(data))
    shutil.rmtree(tree_dir(cache, data))

    second = fetch(server, cache, sha256(data))

    assert second == first
    assert (second.path / "README.md").read_bytes() == TREE[f"{TOP}/README.md"]
    assert server.hits[PATH] == 1


def test_a_pinned_sha256_mismatch_leaves_nothing(server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    wrong = "0" * 64

    with pytest.raises(InputError) as info:
        fetch(server, cache, wrong)

    message = str(info.value)
    assert "\n" not in message
    assert f"the download of {server.url()} does not match its pinned sha256" in message
    assert f"expected {wrong}, got {sha256(data)}" in message
    assert "source.sha256" in message
    assert info.value.exit_code == 3
    assert list(cache.iterdir()) == []


def test_trust_on_first_use_records_the_sha256(server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    lines: list[str] = []

    source = fetch(server, cache, None, lines)

    record = cache / f"tensorflow-{VERSION}.tar.gz.sha256"
    assert record.read_text() == sha256(data) + "\n"
    assert source.sha256 == sha256(data)
    assert source.pinned is False
    assert source.path == tree_dir(cache, data) / TOP
    assert (
        f"the recipe pins no sha256 for {server.url()}: recorded {sha256(data)} at this first "
        "download; later runs verify against it"
    ) in lines


def test_trust_on_first_use_verifies_later_downloads(server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    fetch(server, cache, None)
    # The cache loses the download and the tree, and the server now serves other bytes.
    (cache / f"tensorflow-{VERSION}.tar.gz").unlink()
    shutil.rmtree(tree_dir(cache, data))
    other = tar_gz({**TREE, f"{TOP}/injected.py": b"import os\n"})
    server.files[PATH] = other

    with pytest.raises(InputError) as info:
        fetch(server, cache, None)

    message = str(info.value)
    assert "does not match the sha256 recorded at its first download" in message
    assert f"expected {sha256(data)}" in message
    assert f"got {sha256(other)}" in message
    assert server.hits[PATH] == 2
    record = cache / f"tensorflow-{VERSION}.tar.gz.sha256"
    assert record.read_text() == sha256(data) + "\n"  # the record is kept
    assert sorted(p.name for p in cache.iterdir()) == [record.name]


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "trust-on-first-use"])
def test_a_corrupted_cached_tarball_is_downloaded_again(
    server: Server, tmp_path: Path, pinned: bool
) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    sha = sha256(data) if pinned else None
    fetch(server, cache, sha)
    shutil.rmtree(tree_dir(cache, data))
    tarball = cache / f"tensorflow-{VERSION}.tar.gz"
    tarball.write_bytes(data[:100] + b"\0" * 100)  # a damaged cache file
    lines: list[str] = []

    source = fetch(server, cache, sha, lines)

    assert server.hits[PATH] == 2
    assert tarball.read_bytes() == data
    assert (source.path / "configure.py").is_file()
    assert f"{tarball} does not match its sha256; downloading it again" in lines


def test_several_top_level_entries_give_the_extraction_directory(
    server: Server, tmp_path: Path
) -> None:
    data = tar_gz({"tensorflow/tools/pip_package/BUILD": b"", "configure.py": b""})
    server.files[PATH] = data
    cache = tmp_path / "cache"

    source = fetch(server, cache, sha256(data))

    assert source.path == tree_dir(cache, data)
    assert (source.path / "tensorflow/tools/pip_package/BUILD").is_file()


def test_another_run_that_finished_first_wins(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    theirs = tree_dir(cache, data)
    real_extract = sources._extract_archive

    def extract_while_another_run_finishes(tarball: Path, into: Path) -> None:
        real_extract(tarball, into)
        (theirs / TOP).mkdir(parents=True)
        (theirs / TOP / "theirs.txt").write_text("extracted by another run\n")
        (theirs / ".complete").write_text("")

    monkeypatch.setattr(sources, "_extract_archive", extract_while_another_run_finishes)

    source = fetch(server, cache, sha256(data))

    assert source.path == theirs / TOP
    assert (source.path / "theirs.txt").is_file()
    assert not (source.path / "README.md").exists()  # ours was discarded
    assert partials(cache) == []


def test_an_invalid_pinned_sha256_is_an_input_error(server: Server, tmp_path: Path) -> None:
    server.files[PATH] = tar_gz(TREE)

    with pytest.raises(InputError, match="is not a sha256: expected 64 hexadecimal digits"):
        fetch(server, tmp_path / "cache", "abc123")

    assert server.hits[PATH] == 0


# --- failures ----------------------------------------------------------------------------------


def assert_network_problem(error: EnvironmentProblem, url: str, why: str) -> None:
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"cannot download {url}: {why}")
    assert "HTTPS_PROXY" in message
    assert "--source DIR" in message
    assert error.exit_code == 5


def test_a_missing_file_is_an_environment_problem(server: Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"

    with pytest.raises(EnvironmentProblem) as info:
        fetch(server, cache, None)

    assert_network_problem(info.value, server.url(), "the server answered HTTP 404 Not Found")
    assert server.hits[PATH] == 1
    assert list(cache.iterdir()) == []


def test_a_refused_connection_is_an_environment_problem(no_proxy: None, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on once the socket is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v9.9.9.tar.gz"
    cache = tmp_path / "cache"

    with pytest.raises(EnvironmentProblem) as info:
        fetch_source(url, version=VERSION, sha256=None, cache_dir=cache, timeout=10)

    assert_network_problem(info.value, url, "Connection refused")
    assert list(cache.iterdir()) == []


def test_a_silent_server_times_out(no_proxy: None, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepts, never answers
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v9.9.9.tar.gz"
        with pytest.raises(EnvironmentProblem) as info:
            fetch_source(url, version=VERSION, sha256=None, cache_dir=cache, timeout=0.3)

    assert_network_problem(info.value, url, "no answer within 0.3 s")
    assert list(cache.iterdir()) == []


def test_a_download_cut_short_is_an_environment_problem(server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    server.lengths[PATH] = len(data) + 1000
    cache = tmp_path / "cache"

    with pytest.raises(EnvironmentProblem) as info:
        fetch(server, cache, sha256(data))

    why = f"the download ended after {len(data)} of {len(data) + 1000} bytes"
    assert_network_problem(info.value, server.url(), why)
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("evil", ["../evil", "{outside}/evil", "{top}/../../evil"])
def test_an_archive_with_members_outside_is_refused(
    server: Server, tmp_path: Path, evil: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    name = evil.format(outside=outside, top=TOP)
    data = tar_gz({**TREE, name: b"owned\n"})
    server.files[PATH] = data
    cache = tmp_path / "cache"

    with pytest.raises(InputError) as info:
        fetch(server, cache, sha256(data))

    assert f"the archive downloaded from {server.url()} is unsafe to extract" in str(info.value)
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "outside"]
    assert list(cache.iterdir()) == []  # the tarball is deleted, no partial tree remains


def test_a_symlink_pointing_outside_is_refused(server: Server, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        link = tarfile.TarInfo(f"{TOP}/escape")
        link.type = tarfile.SYMTYPE
        link.linkname = str(tmp_path)
        archive.addfile(link)
    data = buffer.getvalue()
    server.files[PATH] = data
    cache = tmp_path / "cache"

    with pytest.raises(InputError, match="unsafe to extract"):
        fetch(server, cache, None)

    assert list(cache.iterdir()) == []  # unpinned: the recorded sha256 goes with the tarball


def test_a_corrupt_archive_is_an_input_error_and_is_deleted(server: Server, tmp_path: Path) -> None:
    data = b"<html>a captive portal, not a tarball</html>"
    server.files[PATH] = data
    cache = tmp_path / "cache"

    with pytest.raises(InputError) as info:
        fetch(server, cache, sha256(data))

    assert f"the archive downloaded from {server.url()} cannot be extracted" in str(info.value)
    assert "rerun to download it again" in str(info.value)
    assert list(cache.iterdir()) == []


def test_ctrl_c_during_the_download_leaves_no_partial_file(server: Server, tmp_path: Path) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"

    def interrupt(line: str) -> None:
        if line.startswith("downloaded"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch_source(server.url(), version=VERSION, sha256=None, cache_dir=cache, on_line=interrupt)

    assert list(cache.iterdir()) == []


def test_ctrl_c_during_extraction_leaves_no_partial_tree(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tar_gz(TREE)
    server.files[PATH] = data
    cache = tmp_path / "cache"
    real_extract = sources._extract_archive
    seen: list[Path] = []

    def extract_then_interrupt(tarball: Path, into: Path) -> None:
        real_extract(tarball, into)
        seen.append(into)
        raise KeyboardInterrupt

    monkeypatch.setattr(sources, "_extract_archive", extract_then_interrupt)

    with pytest.raises(KeyboardInterrupt):
        fetch(server, cache, sha256(data))

    assert len(seen) == 1
    assert ".partial-" in seen[0].name
    assert not seen[0].exists()
    assert sorted(p.name for p in cache.iterdir()) == [f"tensorflow-{VERSION}.tar.gz"]


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
def test_default_cache_dir(env: dict[str, str], expected: str) -> None:
    assert default_cache_dir(env) == Path(expected)


# --- a local directory -------------------------------------------------------------------------


def make_tree(root: Path) -> Path:
    (root / "tensorflow/tools/pip_package").mkdir(parents=True)
    (root / "tensorflow/tools/pip_package/BUILD").write_text("# BUILD\n")
    (root / "configure.py").write_text("print('configure')\n")
    return root


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


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
    )


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
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "tree")
    head = git(root, "rev-parse", "HEAD").strip()
    (root / "untracked.txt").write_text("not part of the build\n")

    source = local_source(root)

    assert source.git_commit is not None
    assert re.fullmatch(r"[0-9a-f]{40}", source.git_commit)
    assert source.git_commit == head
    assert source.git_dirty is False  # untracked files do not count
    assert source.to_json()["git_commit"] == head


@needs_git
def test_a_modified_tracked_file_makes_the_checkout_dirty(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "tree")
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


@needs_git
def test_a_git_checkout_without_commits_has_no_commit(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tf")
    git(root, "init", "-q")

    source = local_source(root)

    assert (source.git_commit, source.git_dirty) == (None, None)


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


def test_the_marker_can_be_changed(tmp_path: Path) -> None:
    (tmp_path / "fork" / "tf_fork" / "pip").mkdir(parents=True)

    source = local_source(tmp_path / "fork", marker="tf_fork/pip")

    assert source.path == tmp_path / "fork"
