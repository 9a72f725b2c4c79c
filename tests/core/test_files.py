"""core.files' small helpers."""

from __future__ import annotations

import errno
import os
import re
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tfbuild.core.files import utc_stamp, write_files


def test_a_stamp_is_the_time_in_utc_sortable() -> None:
    assert utc_stamp(datetime(2026, 11, 23, 9, 15, 2, tzinfo=timezone.utc)) == "20261123-091502"
    assert re.fullmatch(r"\d{8}-\d{6}", utc_stamp())


@pytest.mark.parametrize("link_fails", [False, True], ids=["linked", "copied"])
def test_a_file_is_taken_in_whole_linked_or_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, link_fails: bool
) -> None:
    source = tmp_path / "elsewhere" / "built.whl"
    source.parent.mkdir()
    source.write_bytes(b"wheel" * 1000)
    source.chmod(0o600)
    target = tmp_path / "dist"
    target.mkdir()
    (target / "built.whl").write_bytes(b"old")
    if link_fails:  # the file taken in is on another filesystem
        link = os.link

        def no_link(src: Path, dst: Path, *, follow_symlinks: bool = True) -> None:
            if src == source:
                raise OSError(errno.EXDEV, "Invalid cross-device link")
            link(src, dst, follow_symlinks=follow_symlinks)

        monkeypatch.setattr(os, "link", no_link)
    written = write_files(target, {"receipt.json": ("{}\n", 0o644), "built.whl": (source, 0o644)})
    assert written == [target / "receipt.json", target / "built.whl"]
    assert sorted(p.name for p in target.iterdir()) == ["built.whl", "receipt.json"]
    assert (target / "built.whl").read_bytes() == b"wheel" * 1000
    assert stat.S_IMODE((target / "built.whl").stat().st_mode) == 0o644
    assert source.read_bytes() == b"wheel" * 1000  # the caller removes the original
