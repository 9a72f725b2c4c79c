"""A receipt is untrusted input (issue 21, items 1 and 2), through the real CLI with a real engine:
``verify`` and ``wheel --from-receipt`` refuse a hostile receipt in one line (exit 3) before they
connect to Docker, so before any image is built (tests/build/test_rebuild.py shows it with no engine
at all); a rebuild mounts this machine's cache volume, never the one its receipt names.

The refusals start from the receipt and wheel of a real canary build that ``tfbuild wheel`` wrote
before this change (``tests/fixtures/receipts/``); the cache-volume test builds its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Ran, one_error_line
from tests.docker.test_reproducible import built, tfbuild
from tests.docker.test_wheel import wheel_cli
from tests.wheel.test_receipt_untrusted import FIXTURES, HOSTILE, RECEIPT, WHEEL
from tfbuild.core.files import sha256_file
from tfbuild.wheel.receipt import canonical_sha256

pytestmark = pytest.mark.docker


def _docker(*args: str) -> str:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=120
    ).stdout


def images_built_with(marker: str, since: float) -> list[str]:
    """The images that had an event since ``since`` (built, tagged) whose build steps mention
    ``marker``: none, unless a step of a hostile receipt reached an image build."""
    until = time.time() + 1
    seen = _docker(
        "events", "--since", f"{since:.0f}", "--until", f"{until:.0f}",
        "--filter", "type=image", "--format", "{{.Actor.ID}}",
    ).split()  # fmt: skip
    return [
        image
        for image in sorted(set(seen))
        if marker in _docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", image)
    ]


def copy_fixture(into: Path) -> tuple[Path, Path, dict[str, Any]]:
    into.mkdir(parents=True)
    for name in (WHEEL, RECEIPT):
        shutil.copyfile(FIXTURES / name, into / name)
    data = json.loads((into / RECEIPT).read_text(encoding="utf-8"))
    return into / WHEEL, into / RECEIPT, data


def rebuild(command: str, wheel: Path, receipt: Path, out: Path) -> Ran:
    """``verify`` or ``wheel --from-receipt`` of ``receipt``, as a user runs them."""
    if command == "verify":
        return tfbuild("verify", str(wheel), "--receipt", str(receipt), "-v")
    return tfbuild("wheel", "--from-receipt", str(receipt), "--dist", str(out), "-v")


@pytest.mark.parametrize("command", ["verify", "from-receipt"])
@pytest.mark.parametrize("resealed", [False, True], ids=["as-edited", "inputs-sha256-recomputed"])
def test_an_injected_package_pin_is_refused_before_any_image_is_built(
    engine: Any, command: str, resealed: bool, tmp_path: Path
) -> None:
    """The issue's reproduction: a shell command in ``inputs.packages.zip``. Recomputing the
    receipt's hashes (they are not a signature) does not get it through: the pin's grammar stops it."""
    wheel, receipt, data = copy_fixture(tmp_path / "dist")
    marker = f"INJECTED-{uuid.uuid4().hex[:12]}"
    pin = f"3.0-13+deb12u1 && echo {marker}-$(id -u) | tee /etc/x && echo"
    data["inputs"]["packages"]["zip"] = pin
    if resealed:
        data["inputs_sha256"] = canonical_sha256(data["inputs"])
    receipt.write_text(json.dumps(data), encoding="utf-8")
    since = time.time()
    result = rebuild(command, wheel, receipt, tmp_path / "out")
    assert result.returncode == 3, result.stderr
    line = one_error_line(result, among_others=True)
    shown = pin[:60] + "..."  # a long value is cut in the message
    assert f"its inputs.packages['zip'] holds {shown!r}, not a Debian version" in line
    output = result.stdout + result.stderr
    assert f"{marker}-0" not in output and "toolchain image" not in output  # never ran, never built
    assert images_built_with(marker, since) == []
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.whl"))


@pytest.mark.parametrize("command", ["verify", "from-receipt"])
@pytest.mark.parametrize(
    "case",
    ["nested-100k", "size-1e400", "size-5000-digits", "unknown-inputs-key", "bad-sha256"],
)
def test_a_hostile_receipt_is_one_line_for_verify_and_from_receipt(
    engine: Any, command: str, case: str, tmp_path: Path
) -> None:
    make, said = HOSTILE[case]
    wheel, receipt, _ = copy_fixture(tmp_path / "dist")
    receipt.write_bytes(make())
    result = rebuild(command, wheel, receipt, tmp_path / "out")
    assert result.returncode == 3, result.stderr
    line = one_error_line(result, among_others=True)
    assert line.startswith(f"tfbuild: error: {receipt} is not a ") and said in line


def _named(data: dict[str, Any], volume: str) -> dict[str, Any]:
    """The receipt with its plan naming ``volume`` and its plan_sha256 recomputed to fit."""
    edited = json.loads(json.dumps(data))
    edited["plan"]["cache_volume"] = volume
    edited["plan_sha256"] = canonical_sha256(edited["plan"])
    return edited


def test_a_rebuild_mounts_its_own_cache_volume_never_the_receipts(
    engine: Any, base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    wheel = built(wheel_cli(tmp_path / "dist", volumes(), "--json"))
    data = json.loads(wheel.with_suffix(".json").read_text(encoding="utf-8"))
    # A volume of this engine that holds something, named by the receipt.
    theirs = volumes()
    _docker(
        "run", "--rm", "-v", f"{theirs}:/v", base_image, "sh", "-c", "echo keep > /v/sentinel"
    )  # fmt: skip
    receipt = tmp_path / "theirs.json"
    receipt.write_text(json.dumps(_named(data, theirs)), encoding="utf-8")
    mine = volumes()
    again = tfbuild(
        "wheel", "--from-receipt", str(receipt), "--cache-volume", mine,
        "--dist", str(tmp_path / "again"), "--json",
    )  # fmt: skip
    rebuilt = built(again)
    assert sha256_file(rebuilt) == sha256_file(wheel)
    assert json.loads(again.stdout)["receipt_data"]["plan"]["cache_volume"] == mine
    listed = _docker("run", "--rm", "-v", f"{theirs}:/v", base_image, "ls", "-A", "/v").split()
    assert listed == ["sentinel"]  # nothing of the rebuild's was written into it
    assert _docker("volume", "ls", "-q", "--filter", f"name={theirs}.output-base").split() == []
    # A host path where a volume name goes: verify rebuilds in a fresh volume of its own.
    etc = tmp_path / "etc.json"
    etc.write_text(json.dumps(_named(data, "/etc")), encoding="utf-8")
    verified = tfbuild("verify", str(wheel), "--receipt", str(etc), "--json")
    assert verified.returncode == 0, verified.stderr
    report = json.loads(verified.stdout)
    assert report["reproducible"] is True
    assert report["inputs_covered"] is True and report["warnings"] == []
