"""``render -o DIR`` writes its context as one set and never overwrites a file it did not write.

Issue 15, item 7: rendering into a directory where one output path is itself a directory left a new
Dockerfile next to the old plan.json. Now every place is checked and every file written under a temp
name before any is renamed into place, and the directory's ``.tfbuild-context`` (sha256sum lines of
what tfbuild wrote there, written last) decides whether the directory is tfbuild's to overwrite.
Every refusal is one line, exit 3, and leaves the directory byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, one_error_line, run_cli
from tfbuild.core.files import write_files
from tfbuild.plan.render import FILES, MANIFEST

OLD = ("--tf", "2.16", "--mkl", "--skip-disk-check")
NEW = ("--tf", "2.21", "--mkl", "--skip-disk-check")  # another Dockerfile, plan.json, rc file
FORCE_FIX = (
    "Render into an empty or new directory, or pass --force to overwrite tfbuild's files there "
    "anyway."
)


def contents(directory: Path) -> dict[str, bytes | None]:
    """Every entry of the directory: a file's bytes, None for anything else."""
    return {
        p.name: p.read_bytes() if p.is_file() and not p.is_symlink() else None
        for p in sorted(directory.iterdir())
    }


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    """A context rendered once with OLD: the five files and the manifest."""
    out = tmp_path / "ctx"
    result = run_cli("render", *OLD, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, MANIFEST])
    return out


def test_the_manifest_lists_what_was_written_and_sha256sum_checks_it(rendered: Path) -> None:
    lines = (rendered / MANIFEST).read_text().splitlines()
    assert lines == [
        f"{hashlib.sha256((rendered / n).read_bytes()).hexdigest()}  {n}" for n in sorted(FILES)
    ]
    checked = subprocess.run(
        ["sha256sum", "-c", MANIFEST], cwd=rendered, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert os.access(rendered / "build.sh", os.X_OK)


def test_rendering_again_over_its_own_context_replaces_it(rendered: Path) -> None:
    before = contents(rendered)
    result = run_cli("render", *NEW, "-o", str(rendered))
    assert result.returncode == 0, result.stderr
    after = contents(rendered)
    assert after.keys() == before.keys()
    assert after["Dockerfile"] != before["Dockerfile"] and after["plan.json"] != before["plan.json"]
    assert after[MANIFEST] != before[MANIFEST]


def test_an_output_path_that_is_a_directory_leaves_no_mixed_context(rendered: Path) -> None:
    """The finding: a new Dockerfile beside the old plan.json. With --force, so that it is the
    set writer (not the ownership check) that stops it."""
    (rendered / "plan.json").unlink()
    (rendered / "plan.json").mkdir()
    before = contents(rendered)
    line = one_error_line(run_cli("render", *NEW, "-o", str(rendered), "--force"), 3)
    assert line == (
        f"tfbuild: error: cannot write {rendered}/plan.json: it is a directory, not a file; "
        f"nothing was written. Remove or rename {rendered}/plan.json, or name another directory "
        "with -o DIR."
    )
    assert contents(rendered) == before  # the old Dockerfile, no temp file
    line = one_error_line(run_cli("render", *NEW, "-o", str(rendered)), 3)
    assert line == (
        f"tfbuild: error: refusing to write into -o {rendered}: it holds the directory plan.json, "
        f"and tfbuild writes only plain files there. {FORCE_FIX}"
    )


def test_a_file_tfbuild_did_not_write_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "project"
    out.mkdir()
    (out / "Dockerfile").write_text("FROM my-own-image\n")
    (out / "notes.txt").write_text("mine\n")
    before = contents(out)
    line = one_error_line(run_cli("render", *NEW, "-o", str(out)), 3)
    assert line == (
        f"tfbuild: error: refusing to write into -o {out}: it holds Dockerfile, which tfbuild did "
        f"not write there (not in its {MANIFEST}). {FORCE_FIX}"
    )
    assert contents(out) == before
    result = run_cli("render", *NEW, "-o", str(out), "--force")
    assert result.returncode == 0, result.stderr
    assert (out / "notes.txt").read_text() == "mine\n"  # --force writes tfbuild's files only
    assert (out / "Dockerfile").read_text() != "FROM my-own-image\n"
    # The manifest records only tfbuild's files: notes.txt still stops a render without --force.
    line = one_error_line(run_cli("render", *NEW, "-o", str(out)), 3)
    assert "it holds notes.txt, which tfbuild did not write there" in line


def test_a_file_changed_since_tfbuild_wrote_it_is_not_overwritten(rendered: Path) -> None:
    with (rendered / "build.sh").open("a") as handle:
        handle.write("echo my local change\n")
    before = contents(rendered)
    line = one_error_line(run_cli("render", *NEW, "-o", str(rendered)), 3)
    assert line == (
        f"tfbuild: error: refusing to write into -o {rendered}: build.sh was changed since tfbuild "
        f"wrote it (its sha256 is not the one in {MANIFEST}). {FORCE_FIX}"
    )
    assert contents(rendered) == before


def test_a_forged_or_garbled_manifest_vouches_for_nothing(rendered: Path) -> None:
    (rendered / MANIFEST).write_text("not a manifest\n")
    line = one_error_line(run_cli("render", *NEW, "-o", str(rendered)), 3)
    assert "it holds Dockerfile, which tfbuild did not write there" in line


def test_a_file_an_older_render_wrote_and_this_one_does_not_is_removed(rendered: Path) -> None:
    old = rendered / "old.cfg"
    old.write_text("from an older tfbuild\n")
    digest = hashlib.sha256(old.read_bytes()).hexdigest()
    with (rendered / MANIFEST).open("a") as handle:
        handle.write(f"{digest}  old.cfg\n")
    result = run_cli("render", *NEW, "-o", str(rendered))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in rendered.iterdir()) == sorted([*FILES, MANIFEST])


def test_an_empty_or_missing_directory_is_fine(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "missing" / "deeper"):
        result = run_cli("render", *NEW, "-o", str(out))
        assert result.returncode == 0, result.stderr
        assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, MANIFEST])


def test_proc_self_is_one_line() -> None:
    line = one_error_line(run_cli("render", *NEW, "-o", "/proc/self"), 3)
    assert line.startswith(
        "tfbuild: error: cannot write into -o /proc/self: no file can be created"
    )


def test_a_read_only_directory_is_one_line_and_keeps_its_context(rendered: Path) -> None:
    """Made read-only for real: a read-only bind mount for root (whom permission bits do not stop),
    the permission bits for anyone else."""
    before = contents(rendered)
    render = shlex.join(
        [sys.executable, "-m", "tfbuild", "render", *NEW, "-o", str(rendered), "--force"]
    )
    if os.geteuid() == 0:
        where = shlex.quote(str(rendered))
        script = f"mount --bind {where} {where} && mount -o remount,ro,bind {where} && {render}"
        command = ["unshare", "-m", "sh", "-c", script]
    else:
        rendered.chmod(0o555)
        command = ["sh", "-c", render]
    try:
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    finally:
        rendered.chmod(0o755)
    line = one_error_line(result, 3)
    assert line.startswith(
        f"tfbuild: error: cannot write into -o {rendered}: no file can be created"
    )
    assert contents(rendered) == before


def test_the_set_writer_checks_every_place_before_writing_any(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a").write_text("old a\n")
    with pytest.raises(IsADirectoryError) as caught:
        write_files(tmp_path, {"a": ("new a\n", 0o644), "b": ("new b\n", 0o644)})
    assert caught.value.filename == str(tmp_path / "b")
    assert (tmp_path / "a").read_text() == "old a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
