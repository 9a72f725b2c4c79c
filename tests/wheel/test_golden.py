"""``tfbuild index --json`` and ``tfbuild wheeldiff --json`` byte for byte, on wheels made here.

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

from tests.conftest import in_json
from tests.wheel.test_index import dist  # noqa: F401 (the fixture)
from tfbuild.core import serial
from tfbuild.wheel.index import write_index
from tfbuild.wheel.wheeldiff import compare

UPDATE = os.environ.get("TFBUILD_UPDATE_GOLDEN") == "1"
GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "wheel"


def check(name: str, data: object, folder: Path) -> None:
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"  # as the CLI prints it
    text = text.replace(in_json(folder), "<dir>")  # $TMPDIR may hold any letter
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"no golden file {path}; run with TFBUILD_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


def test_index_json(dist: Path) -> None:  # noqa: F811 (the fixture)
    result = write_index(dist, title="release v1", base_url="https://example.org/dl")
    data = result.to_json()
    for wheel in data["wheels"]:  # the wheels' bytes hold the time they were made
        assert wheel["sha256"] == hashlib.sha256((dist / wheel["name"]).read_bytes()).hexdigest()
        wheel["sha256"] = "<sha256>"
    check("index", data, dist)


def pack(path: Path, members: dict[str, bytes], *, mode: int = 0o644, comment: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 2, 3, 4, 6))
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, data)
        archive.comment = comment
    return path


NAME = "tfbuild_standin-2.21.0-cp311-cp311-linux_x86_64.whl"


def test_wheeldiff_json(tmp_path: Path) -> None:
    a = pack(
        tmp_path / "a" / NAME,
        {"pkg/__init__.py": b"A = 1\n", "pkg/only_a.py": b"", "pkg/same.py": b"x\n"},
    )
    b = pack(
        tmp_path / "b" / NAME,
        {"pkg/same.py": b"x\n", "pkg/__init__.py": b"A = 2\n", "pkg/only_b.py": b""},
        mode=0o755,
        comment=b"built by B",
    )
    check("wheeldiff", serial.to_data(compare(a, b)), tmp_path)
    check("wheeldiff-equal", serial.to_data(compare(a, a)), tmp_path)
