"""Publishing a wheel, its receipt and env file into dist/ as one set (issue 21, items 9, 11, 12).

Everything here is real: real wheels and receipts published by ``build.publish`` (what ``tfbuild
wheel`` calls), a real tmpfs for a full disk (we mount it: root only), real processes for a
concurrent publisher and reader (``tfbuild index`` through the CLI), real signals.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.build import publisher
from tests.conftest import ROOT, mounted_tmpfs, run_cli
from tfbuild.build.publish import publish
from tfbuild.core.errors import InputError
from tfbuild.core.files import DIST_LOCK, TEMP_PREFIX, sha256_file, wheel_files
from tfbuild.wheel.receipt import receipt_path

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: root only")


def assert_whole_set(dist: Path) -> int:
    """One wheel with its own receipt and env file, nothing half-done beside them; its generation."""
    (wheel,) = wheel_files(dist)
    receipt = json.loads(receipt_path(wheel).read_text())
    assert receipt["wheel"]["sha256"] == sha256_file(wheel)
    generation = publisher.generation_of(wheel)
    assert wheel.with_suffix(".env").read_text() == f"GENERATION={generation}\n"
    assert [p.name for p in dist.iterdir() if p.name.startswith((TEMP_PREFIX, DIST_LOCK))] == []
    return generation


def contents(dist: Path) -> dict[str, bytes]:
    """The visible files of ``dist`` (not the work directories), byte for byte."""
    return {p.name: p.read_bytes() for p in dist.iterdir() if p.is_file()}


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small filesystem of its own (1 MiB to start with; a test shrinks it by remounting)."""
    with mounted_tmpfs(tmp_path / "tmpfs", size="1m") as where:
        yield where


def remount(where: Path, option: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{option}", str(where)], check=True)


def test_a_set_replaces_the_previous_one_whole(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    for generation in (1, 2):
        wheel, receipt, env_text = publisher.built(dist, generation)
        published, receipt_file, env_file, replaced = publish(dist, wheel, receipt, env_text)
        assert replaced == (generation == 2)
        assert (published, receipt_file, env_file) == (
            dist / publisher.NAME,
            receipt_path(dist / publisher.NAME),
            (dist / publisher.NAME).with_suffix(".env"),
        )
        assert assert_whole_set(dist) == generation


@root_only
def test_a_wheel_built_on_another_filesystem_is_copied_in_whole(
    tmp_path: Path, tmpfs: Path
) -> None:
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    wheel, receipt, env_text = publisher.built(elsewhere, 1)
    data = wheel.read_bytes()
    publish(tmpfs, wheel, receipt, env_text)
    assert assert_whole_set(tmpfs) == 1
    assert (tmpfs / publisher.NAME).read_bytes() == data
    assert not wheel.exists()  # moved


@root_only
def test_a_full_dist_is_exit_3_naming_it_and_keeps_the_previous_set(tmpfs: Path) -> None:
    """Item 11 on a 64k tmpfs. Before: "internal error: OSError [Errno 28]" with no path, and the
    env file published without its receipt."""
    wheel, receipt, env_text = publisher.built(tmpfs, 1)
    publish(tmpfs, wheel, receipt, env_text)
    remount(tmpfs, "size=64k")
    before = contents(tmpfs)
    wheel, receipt, env_text = publisher.built(tmpfs, 2, padding=30_000)  # built in dist/, whole
    with pytest.raises(InputError) as caught:
        publish(tmpfs, wheel, receipt, env_text)
    assert caught.value.exit_code == 3
    line = caught.value.line()
    assert line.startswith(f"no space left in {tmpfs}: publishing {publisher.NAME} needs ")
    assert " KiB free; nothing was published. Free some space there" in line
    assert contents(tmpfs) == before
    assert assert_whole_set(tmpfs) == 1


@root_only
def test_a_full_disk_at_any_step_of_publishing_keeps_the_previous_set(tmpfs: Path) -> None:
    """A real ENOSPC at each step in turn: the tmpfs is given 0, 1, 2... more inodes than it uses
    (a file and a hard link each take one: the temp files, the wheel's link, the old set's
    backups), until publishing fits. Each failure is one line, exit 3, the previous set whole."""
    wheel, receipt, env_text = publisher.built(tmpfs, 1)
    publish(tmpfs, wheel, receipt, env_text)
    before = contents(tmpfs)
    failures = []
    for spare in range(20):
        wheel, receipt, env_text = publisher.built(tmpfs, 2)
        found = os.statvfs(tmpfs)
        remount(tmpfs, f"nr_inodes={found.f_files - found.f_ffree + spare}")
        try:
            publish(tmpfs, wheel, receipt, env_text)
        except InputError as exc:
            assert exc.exit_code == 3
            assert exc.line().startswith(f"no space left in {tmpfs}: {tmpfs}/"), exc.line()
            assert "No space left on device" in exc.line()
            assert contents(tmpfs) == before
            assert assert_whole_set(tmpfs) == 1
            failures.append(spare)
        else:
            break
        finally:
            remount(tmpfs, "nr_inodes=1000")
    assert assert_whole_set(tmpfs) == 2
    assert failures == list(range(len(failures))) and len(failures) >= 4, failures


def test_an_unwritable_dist_is_one_line(tmp_path: Path) -> None:
    """A read-only bind mount for root (whom permission bits do not stop)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount: root only")
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel, receipt, env_text = publisher.built(dist, 1)
    publish(dist, wheel, receipt, env_text)
    wheel, receipt, env_text = publisher.built(dist, 2)
    before = contents(dist)
    subprocess.run(["mount", "--bind", str(dist), str(dist)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(dist)], check=True)
        with pytest.raises(InputError) as caught:
            publish(dist, wheel, receipt, env_text)
    finally:
        subprocess.run(["umount", str(dist)], check=True)
    assert caught.value.exit_code == 3
    assert caught.value.line() == (
        f"cannot publish {publisher.NAME} into {dist}: {dist}/{DIST_LOCK}: Read-only file system; "
        "nothing was published. Let tfbuild write there (a writable --dist directory), or build "
        "into another --dist."
    )
    assert contents(dist) == before


def start_publisher(dist: Path, *args: str, out: Path | None = None) -> subprocess.Popen[str]:
    """The publisher (tests/build/publisher.py), its lines to a pipe or to the file ``out``."""
    # As from a terminal: SIGINT not ignored (a test run in the background of a shell inherits it
    # ignored, and so would the child).
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with contextlib.ExitStack() as stack:
            stdout = subprocess.PIPE if out is None else stack.enter_context(out.open("w"))
            return subprocess.Popen(
                [sys.executable, "-m", "tests.build.publisher", str(dist), *args],
                cwd=ROOT,
                stdout=stdout,
                text=True,
            )
    finally:
        signal.signal(signal.SIGINT, ignored)


@pytest.mark.slow  # publishes and indexes side by side for seconds on end
def test_index_never_reads_a_set_half_published(tmp_path: Path) -> None:
    """Items 9 and 12: `tfbuild index` again and again while another process publishes the same
    wheel name over and over (at least 40 times meanwhile). Before, index took no lock and
    reported "changed or corrupted... Do not publish" in 3 runs of 40."""
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel, receipt, env_text = publisher.built(dist, 0)
    publish(dist, wheel, receipt, env_text)
    stop, lines = tmp_path / "stop", tmp_path / "published"
    proc = start_publisher(dist, str(stop), out=lines)
    runs = 0
    try:
        while runs < 10 or lines.read_text().count("published ") < 40:
            result = run_cli("index", str(dist))
            runs += 1
            assert result.returncode == 0, result.stderr
            assert result.stdout.endswith(": 1 wheel\n")
            sums = (dist / "SHA256SUMS").read_text()
            assert sums.endswith(f"  {publisher.NAME}\n")
            assert proc.poll() is None, lines.read_text()
    finally:
        stop.touch()
        proc.wait(timeout=120)
    assert proc.returncode == 0
    assert assert_whole_set(dist) == int(lines.read_text().split()[-1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_publishing_leaves_a_whole_set(tmp_path: Path, signum: int) -> None:
    """Item 9: SIGTERM or SIGINT while publishing in a loop (a process that does nothing else)
    stops it with exit 130 and a true message, and leaves one whole set: never a receipt or env
    file without its wheel, nor one beside another generation's wheel, nor a temp file."""
    for round_ in range(5):
        dist = tmp_path / f"dist-{round_}"
        dist.mkdir()
        with start_publisher(dist) as proc:  # closes its pipe and waits, whatever happens
            assert proc.stdout is not None
            try:
                seen = [proc.stdout.readline() for _ in range(round_ + 2)]  # a few publishes in
                proc.send_signal(signum)
                proc.wait(timeout=120)  # its few lines fit the pipe
                # The rest through the same reader: readline() may have read more lines than it
                # returned, which communicate(timeout=...) (reading the pipe itself) would lose.
                out = "".join(seen) + proc.stdout.read()
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.returncode == 130, out
        last = out.splitlines()[-1]
        # Before or after publishing: the usual stop; during it: the set went in first, and the
        # message says so.
        name = signal.Signals(signum).name
        stopped = f"stopped by {name}: the build container was stopped and removed"
        during = (
            f"stopped by {name}: it came while publishing, which finished first: "
            f"{dist}/{publisher.NAME}, its receipt and env file are in place, whole"
        )
        assert last.startswith((stopped, during)), last
        generation = assert_whole_set(dist)
        printed = [
            int(line.split()[1]) for line in out.splitlines() if line.startswith("published")
        ]
        assert generation in {max(printed, default=0), max(printed, default=0) + 1}
