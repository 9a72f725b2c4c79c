"""What finding a real TensorFlow wheel's floor and retagging it cost, against copying the file.

After a build tfbuild asks auditwheel for the wheel's glibc/libstdc++/libgcc floor and best
manylinux policy (``tfbuild.wheel.floor.inspect_wheel``), then puts that tag on the wheel
(``tfbuild.wheel.wheelfile.retag``, a raw copy of every member but WHEEL and RECORD). The stock
tensorflow-cpu 2.21.0 wheel (270 MB, ~15,600 members, 77 ELF files; the one for the running Python:
run it with Python 3.11) goes through each ROUNDS times, side by side with a plain file copy and
with recompressing every member (zipfile). Medians and ratios, measured in one run; then the floor
auditwheel found, and a check that the retag copied every other member's compressed bytes.

    python benchmarks/floor_speed.py [WHEEL]   (default: downloads tensorflow-cpu==2.21.0 once)
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

# Beside this script: the stock wheel for the running Python, fetched once with pip download into
# ~/.cache/tfbuild-tests/wheels (shared with the tests), and zipfile recompressing every member.
from relabel_speed import interleaved, recompress, report, stock_wheel

from tfbuild.core import serial
from tfbuild.wheel.floor import inspect_wheel
from tfbuild.wheel.receipt import WheelFloor
from tfbuild.wheel.wheelfile import retag

ROUNDS = 3
TAG = "manylinux_2_28_x86_64"  # another tag than the stock wheel's manylinux_2_27


def raw_digests(wheel: Path) -> dict[str, str]:
    """Each member's compressed bytes (past its local header), as a sha256."""
    found = {}
    with zipfile.ZipFile(wheel) as archive, wheel.open("rb") as handle:
        for info in archive.infolist():
            handle.seek(info.header_offset + 26)
            name_length = int.from_bytes(handle.read(2), "little")
            extra_length = int.from_bytes(handle.read(2), "little")
            handle.seek(name_length + extra_length, 1)
            found[info.filename] = hashlib.sha256(handle.read(info.compress_size)).hexdigest()
    return found


def main() -> None:
    wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else stock_wheel()
    floors: list[WheelFloor] = []
    ways = {
        "plain copy": lambda out: shutil.copyfile(wheel, out / wheel.name),
        "tfbuild retag": lambda out: retag(wheel, TAG, out),
        "zipfile recompress": lambda out: recompress(wheel, out),
        "auditwheel inspect": lambda out: floors.append(inspect_wheel(wheel)),
    }
    report(wheel, interleaved(wheel, ways, ROUNDS), copy="plain copy")
    assert all(floor == floors[0] for floor in floors)
    print(f"  floor: {serial.to_data(floors[0])}")

    with tempfile.TemporaryDirectory(dir=wheel.parent) as out:
        retagged = retag(wheel, TAG, Path(out))
        before, after = raw_digests(wheel), raw_digests(retagged)
    dist_info = next(n for n in before if n.endswith(".dist-info/WHEEL")).rpartition("/")[0]
    changed = {name for name in before if after.get(name) != before[name]}
    assert set(after) == set(before)
    assert changed == {f"{dist_info}/WHEEL", f"{dist_info}/RECORD"}, changed
    print(f"  retag -> {retagged.name}: {len(before) - len(changed)} of {len(before)} members")
    print("  copied raw (same compressed bytes); WHEEL and RECORD written again")


if __name__ == "__main__":
    main()
