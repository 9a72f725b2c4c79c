"""``tfbuild index --json`` and ``tfbuild wheeldiff --json`` byte for byte, on wheels made here.

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from tests.conftest import in_json
from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tests.wheel.test_index import dist  # noqa: F401 (the fixture)
from tests.wheels import pack
from tfbuild.core import serial
from tfbuild.wheel.index import write_index
from tfbuild.wheel.wheeldiff import compare

GOLDEN = (
    GOLDEN_DIR / "wheel"
)  # the outputs name their directory "<dir>": $TMPDIR may hold any letter


def test_index_json(dist: Path) -> None:  # noqa: F811 (the fixture)
    result = write_index(dist, title="release v1", base_url="https://example.org/dl")
    data = result.to_json()
    for wheel in data["wheels"]:  # the wheels' bytes are zlib's: another zlib, others
        assert wheel["sha256"] == hashlib.sha256((dist / wheel["name"]).read_bytes()).hexdigest()
        wheel["sha256"] = "<sha256>"
    compare_or_write(GOLDEN / "index.json", json_text(data).replace(in_json(dist), "<dir>"))


NAME = "tfbuild_standin-2.21.0-cp311-cp311-linux_x86_64.whl"


def test_wheeldiff_json(tmp_path: Path) -> None:
    a = pack(
        tmp_path / "a" / NAME,
        {"pkg/__init__.py": b"A = 1\n", "pkg/only_a.py": b"", "pkg/same.py": b"x\n"},
        compression=zipfile.ZIP_STORED,
    )
    b = pack(
        tmp_path / "b" / NAME,
        {"pkg/same.py": b"x\n", "pkg/__init__.py": b"A = 2\n", "pkg/only_b.py": b""},
        compression=zipfile.ZIP_STORED,
        mode=0o755,
        comment=b"built by B",
    )
    compare_or_write(
        GOLDEN / "wheeldiff.json",
        json_text(serial.to_data(compare(a, b))).replace(in_json(tmp_path), "<dir>"),
    )
    compare_or_write(
        GOLDEN / "wheeldiff-equal.json",
        json_text(serial.to_data(compare(a, a))).replace(in_json(tmp_path), "<dir>"),
    )
