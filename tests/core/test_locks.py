"""Lock files removed when released, without ever two holders at once; signals held off (issue 21,
item 13: one lock file per canary build was left in the temporary directory, 65 -> 212).

Real flock locks between real processes, real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tfbuild.core.errors import EnvironmentProblem
from tfbuild.core.files import DIST_LOCK, held_signals, locked


def test_a_lock_file_is_gone_once_released(tmp_path: Path) -> None:
    lock = tmp_path / "some.lock"
    for _ in range(50):
        with locked(lock):
            assert lock.is_file()
        assert not lock.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_held_lock_is_busy_and_stays_held(tmp_path: Path) -> None:
    lock = tmp_path / "some.lock"
    with locked(lock):
        refused = pytest.raises(EnvironmentProblem, match=r"^someone has it\. Wait\.$")
        with refused, locked(lock, blocking=False, busy="someone has it", fix="Wait."):
            pass
        assert lock.is_file()  # the refused one removed nothing
    assert not lock.exists()


_HOLDER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from tfbuild.core.files import locked

    lock, log, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    me = str(os.getpid())
    for _ in range(rounds):
        with locked(lock):
            with log.open("a") as out:
                out.write(f"start {me}\\n")
            # Some work inside: the log read back whole, as another holder would see it.
            assert log.read_text().endswith(f"start {me}\\n")
            with log.open("a") as out:
                out.write(f"end {me}\\n")
    """
)


def test_removing_the_lock_file_never_lets_two_holders_in(tmp_path: Path) -> None:
    """Four processes take one lock 100 times each, each writing start and end markers into one
    file while it holds it: the markers never interleave, and no lock file is left."""
    lock, log = tmp_path / "shared.lock", tmp_path / "markers"
    log.touch()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(lock), str(log), "100"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    lines = log.read_text().splitlines()
    assert len(lines) == 4 * 100 * 2
    for start, end in zip(lines[0::2], lines[1::2], strict=True):
        assert start.startswith("start ") and end == "end " + start.removeprefix("start ")
    assert not lock.exists()


def test_a_link_planted_as_the_dist_lock_is_refused_not_followed(tmp_path: Path) -> None:
    """The lock is opened without following a link: a link in its place is one line, and its
    target is neither created nor touched."""
    from tests import wheels

    dist = tmp_path / "dist"
    dist.mkdir()
    wheels.make_wheel(dist, "demo-1.0-py3-none-any.whl")
    target = tmp_path / "elsewhere"
    (dist / DIST_LOCK).symlink_to(target)
    result = run_cli("index", str(dist))
    assert result.returncode == 3
    assert result.stderr == (
        f"tfbuild: error: cannot write the index in {dist}: {dist}/{DIST_LOCK}: Too many levels of "
        "symbolic links; nothing was written. Let tfbuild write index.html and SHA256SUMS there "
        "(neither may be a directory).\n"
    )
    assert not target.exists()
    assert not (dist / "index.html").exists()


def test_the_source_locks_live_in_a_private_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a shared /tmp another user could make tfbuild's directory of locks first, or plant a
    link in its place: refused. One of this user's that others could write into is narrowed."""
    from tfbuild.build.run import _source_lock

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    directory = tmp_path / "run" / f"tfbuild-{os.getuid()}"
    with locked(_source_lock(tmp_path / "src")):
        assert [p.parent for p in directory.iterdir()] == [directory]
    assert list(directory.iterdir()) == []
    assert directory.stat().st_mode & 0o777 == 0o700
    directory.chmod(0o777)  # as an older tfbuild made it under a umask of 0
    _source_lock(tmp_path / "src")
    assert directory.stat().st_mode & 0o777 == 0o700
    if os.geteuid() == 0:  # another user's (root can give it away)
        os.chown(directory, 65534, 65534)
        with pytest.raises(EnvironmentProblem, match="is not a directory of this user"):
            _source_lock(tmp_path / "src")
    directory.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    directory.symlink_to(elsewhere)
    with pytest.raises(EnvironmentProblem, match="is not a directory of this user"):
        _source_lock(tmp_path / "src")


class Stop(Exception):
    pass


@pytest.mark.usefixtures("own_signals")
def test_a_signal_while_held_is_acted_on_just_after(tmp_path: Path) -> None:
    def stop(signum: int, _frame: object) -> None:
        raise Stop(signal.Signals(signum).name)

    before = signal.signal(signal.SIGTERM, stop)
    reached = []
    try:
        with pytest.raises(Stop, match="SIGTERM"), held_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            reached.append("the rest of the step")
        assert signal.getsignal(signal.SIGTERM) is stop
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, before)
    assert reached == ["the rest of the step"]


def test_a_deadly_signal_while_held_kills_just_after() -> None:
    """SIGTERM with its default action (no handler: the process dies) is held off too."""
    code = textwrap.dedent(
        """
        import os, signal
        from tfbuild.core.files import held_signals
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        with held_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            print("the step finished", flush=True)
        print("not reached", flush=True)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == -signal.SIGTERM
    assert proc.stdout == "the step finished\n"


_LOCK_LOOP = """
import sys
from pathlib import Path
from tfbuild.core.files import locked

path = Path(sys.argv[1])
try:
    print("ready", flush=True)  # a signal may come before print returns
    while True:
        with locked(path):
            pass
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_taking_or_giving_back_the_lock_leaves_no_lock_file(
    tmp_path: Path, signum: int
) -> None:
    """A process that does nothing but take and give back the lock, stopped at 40 moments: the
    lock file is gone every time. (A signal between making the file and owning its removal, or
    between flock and the check that the path still names it, left the file behind: seen once in a
    clean-clone CI run of the publishing test.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Both signals raise KeyboardInterrupt, whatever this pytest inherited (a SIGINT ignored).
    handlers = "".join(
        f"signal.signal(signal.{name}, signal.default_int_handler)\n"
        for name in ("SIGINT", "SIGTERM")
    )
    code = f"import signal\n{handlers}{_LOCK_LOOP}"
    for round_ in range(40):
        path = tmp_path / f"{round_}.lock"
        with subprocess.Popen(
            [sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True, env=env
        ) as proc:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            os.sched_yield()
            proc.send_signal(signum)
            assert proc.wait(timeout=60) == 130
        assert not path.exists(), f"round {round_}: the lock file was left"
