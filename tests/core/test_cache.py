"""``tfbuild cache``: what tfbuild keeps, listed with sizes and ages, and pruned, never what a running
tfbuild uses. Real environments (real venvs with a real wheel pip installs), in a cache directory of
the test's own (TFBUILD_CACHE_DIR); one held by another real process, as a running smoke holds it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import one_error_line, run_cli
from tests.wheels import make_wheel
from tfbuild.core import cache
from tfbuild.core.errors import UsageError

#: Holds the environment of the wheel given, as a command that uses it does, until stdin closes.
HOLDER = """
import sys
from tfbuild.measure.envs import WheelSpec, ensure_env
env = ensure_env(WheelSpec(kind="file", value=sys.argv[1]))
print(env.location, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("TFBUILD_CACHE_DIR", str(where))
    return where


def _env_for(wheel: Path) -> Path:
    from tfbuild.measure.envs import WheelSpec, ensure_env

    made = ensure_env(WheelSpec(kind="file", value=str(wheel)))
    assert made.location is not None
    return Path(made.location)


def test_it_lists_sizes_and_prunes_only_what_nothing_needs(root: Path, tmp_path: Path) -> None:
    kept_wheel = make_wheel(tmp_path / "w", "kept-1.0-py3-none-any.whl", module="kept")
    gone_wheel = make_wheel(tmp_path / "w", "gone-1.0-py3-none-any.whl", module="gone")
    kept, gone = _env_for(kept_wheel), _env_for(gone_wheel)
    cache.release_all()  # this process is done with them, as a command's exit would be
    gone_wheel.unlink()
    (root / cache.LOGS).mkdir()
    old_log, new_log = root / cache.LOGS / "old.log", root / cache.LOGS / "new.log"
    for log in (old_log, new_log):
        log.write_text("x" * 1000)
    long_ago = time.time() - 10 * 86400
    os.utime(old_log, (long_ago, long_ago))

    listed = run_cli("cache", "--kind", "environment,log", "--json")
    assert listed.returncode == 0, listed.stderr
    entries = {e["name"]: e for e in listed.json()["kept"]}
    assert set(entries) == {str(kept), str(gone), str(old_log), str(new_log)}
    assert entries[str(kept)]["size"] > 1_000_000  # a venv: its pip alone is megabytes
    assert entries[str(kept)]["what"] == str(kept_wheel) and entries[str(kept)]["orphan"] is None
    assert entries[str(gone)]["orphan"] == "its wheel is gone"
    assert entries[str(old_log)]["size"] == 1000

    text = run_cli("cache", "--kind", "environment,log", env={**os.environ, "COLUMNS": "80"})
    assert text.returncode == 0, text.stderr
    assert "tfbuild cache --prune frees " in text.stdout and ": the 1 nothing needs" in text.stdout

    pruned = run_cli("cache", "--prune", "--older-than", "7", "--kind", "environment,log")
    assert pruned.returncode == 0, pruned.stderr
    assert not gone.exists() and not old_log.exists()  # an orphan, and a log 10 days old
    assert kept.is_dir() and new_log.is_file()
    assert "removed 2 (" in pruned.stdout


def test_an_environment_a_running_tfbuild_uses_is_never_removed(root: Path, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "busy-1.0-py3-none-any.whl", module="busy")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(wheel)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TFBUILD_CACHE_DIR": str(root)},
    )
    try:
        assert holder.stdout is not None
        location = Path(holder.stdout.readline().strip())
        assert location.is_dir()
        wheel.unlink()  # an orphan, but in use
        ran = run_cli("cache", "--prune", "--all", "--kind", "environment", "--json")
        assert ran.returncode == 0, ran.stderr
        data = ran.json()
        (entry,) = data["kept"]
        assert (entry["name"], entry["in_use"]) == (str(location), True)
        assert data["removed"] == [] and location.is_dir()
    finally:
        holder.communicate(timeout=60)  # stdin closed: it lets go and exits
    # let go: now it goes
    ran = run_cli("cache", "--prune", "--kind", "environment", "--json")
    assert ran.json()["removed"] == [str(location)] and not location.exists()


def test_a_half_made_environment_is_left_to_its_maker(root: Path) -> None:
    envs = root / cache.ENVIRONMENTS
    staging = envs / ".0123456789abcdef-py3.11.x1"
    staging.mkdir(parents=True)
    cache.hold(staging)  # its maker, this process, still at work
    try:
        (entry,) = cache.kept_files(root)
        assert entry.in_use and entry.orphan == "unfinished: a run stopped while making it"
        assert cache.to_remove([entry]) == []
    finally:
        cache.release_all()
    (entry,) = cache.kept_files(root)
    assert cache.to_remove([entry]) == [entry] and cache.remove_file(entry)
    assert not staging.exists()


def test_what_prune_shapes_needs_prune_and_kinds_are_checked(root: Path) -> None:
    ran = run_cli("cache", "--all")
    assert one_error_line(ran, UsageError.exit_code) == (
        "tfbuild: error: --all shape what --prune removes. Add --prune, or drop them."
    )
    ran = run_cli("cache", "--kind", "wheels")
    assert one_error_line(ran, UsageError.exit_code).startswith(
        "tfbuild: error: unknown --kind 'wheels': the kinds are environment, forecast, log,"
    )


def test_the_cache_root_follows_the_xdg_rules() -> None:
    home = {"HOME": "/home/u"}
    assert cache.cache_root(home) == Path("/home/u/.cache/tfbuild")
    assert cache.cache_root({**home, "XDG_CACHE_HOME": "/x"}) == Path("/x/tfbuild")
    assert cache.cache_root({**home, "XDG_CACHE_HOME": "rel"}) == Path("/home/u/.cache/tfbuild")
    assert cache.cache_root({**home, "TFBUILD_CACHE_DIR": "/c"}) == Path("/c")
