"""Reproducible and verifiable builds, end to end on the real engine with the honest canary.

The canary carries TensorFlow's real sources of non-determinism (a build date and an absolute
output-base path compiled into its library, wheel members in filesystem order with build-time
mtimes): these tests show that tfbuild's measures remove them, that without the measures the
builds differ, and that `tfbuild verify` names what differs.
"""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from tests import wheels
from tests.conftest import Ran, one_error_line, run_cli
from tests.docker.test_wheel import standin_source, wheel_cli
from tfbuild.core import serial
from tfbuild.core.files import sha256_file
from tfbuild.recipes import canary
from tfbuild.wheel.receipt import canonical_sha256
from tfbuild.wheel.wheeldiff import compare

pytestmark = pytest.mark.docker


#: The real CLI in a subprocess, with a build's time to finish.
tfbuild = functools.partial(run_cli, timeout=900)


def built(result: Ran) -> Path:
    assert result.returncode == 0, result.stderr
    return Path(json.loads(result.stdout)["wheel"])


def test_two_builds_agree_to_the_byte_and_verify_says_so(
    engine: Any, base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    """Different time, source directory (so output base), dist/, cache volume and uid: same wheel."""
    from tfbuild.build.run import BuildRun
    from tfbuild.plan.here import plan_here
    from tfbuild.plan.options import PlanOptions

    first = built(wheel_cli(tmp_path / "a" / "dist", volumes(), "--json"))
    # The second as another user, from another copy of the source, into another dist/.
    source = standin_source(tmp_path / "b")
    dist = tmp_path / "b" / "dist"
    for path in (tmp_path / "b", source, *source.rglob("*")):
        os.lchown(path, 4321, 4321)
    dist.mkdir()
    os.chown(dist, 4321, 4321)
    args = PlanOptions(
        canary=True, base_image=base_image, cache_volume=volumes(), skip_disk_check=True
    )
    second = BuildRun(dist=dist, source=source, quiet=True, user="4321:4321").execute(
        plan_here(args, engine), engine=engine
    )
    assert second.wheel.stat().st_uid == 4321
    first_receipt = json.loads(first.with_suffix(".json").read_text())
    assert first_receipt["created"] != second.data.created  # each build takes over a second
    assert first_receipt["inputs"]["source"]["path"] != second.data.inputs.source.path
    assert sha256_file(first) == second.sha256, serial.to_data(compare(first, second.wheel))

    verified = tfbuild("verify", str(first), "--json")
    assert verified.returncode == 0, verified.stderr
    assert "[verify]" not in verified.stderr  # --json: the document alone
    report = json.loads(verified.stdout)
    assert report["reproducible"] is True
    assert report["rebuilt_sha256"] == report["sha256"] == first_receipt["wheel"]["sha256"]
    # For people, the rebuild says what it does as a build says it, and no tool's own lines.
    said = tfbuild("verify", str(first))
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith(f"reproducible {first.name}")
    lines = said.stderr.splitlines()
    assert lines and all(line.startswith("[verify] ") for line in lines), said.stderr
    for phase in ("toolchain image", "configure", "compile", "package", "publish"):
        assert any(line.startswith(f"[verify] {phase} (") for line in lines), said.stderr
    for chatter in ("Starting local Bazel server", "INFO: ", "Loading:", "Target //"):
        assert chatter not in said.stderr
    # verify rebuilt in isolation, in a volume of its own, removed afterwards.
    left = subprocess.run(
        ["docker", "volume", "ls", "-q", "--filter", "name=tfbuild-verify-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert left == []


def test_without_the_measures_builds_differ_and_verify_names_the_members(
    base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    wheel = built(wheel_cli(tmp_path / "dist", volumes(), "--no-reproducible", "--json"))
    receipt = json.loads(wheel.with_suffix(".json").read_text())
    assert receipt["plan"]["reproducible"] is False
    result = tfbuild("verify", str(wheel), "--json")
    assert result.returncode == 8, result.stderr
    assert "is not reproducible" in one_error_line(result, among_others=True)
    diff = json.loads(result.stdout)["diff"]
    changed = {member["path"]: member for member in diff["changed"]}
    library = changed[canary.LIBRARY]
    # The build date and the output base's path live in the library's read-only data.
    assert ".rodata" in library["elf"]["sections"]
    # The members' times came from the build's clock.
    assert any("mtime" in entry["fields"] for entry in diff["entries"])


def flip_a_text_byte(library: bytes) -> bytes:
    """The library with one byte in the middle of its .text section inverted."""
    text = ELFFile(io.BytesIO(library)).get_section_by_name(".text")
    offset = text["sh_offset"] + text["sh_size"] // 2
    changed = bytearray(library)
    changed[offset] ^= 0xFF
    return bytes(changed)


def test_a_changed_byte_in_the_library_fails_verify_naming_member_and_section(
    base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    wheel = built(wheel_cli(tmp_path / "dist", volumes(), "--json"))
    original = sha256_file(wheel)
    with zipfile.ZipFile(wheel) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    tampered = tmp_path / "tampered" / wheel.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(tampered, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            flipped = flip_a_text_byte(data) if info.filename == canary.LIBRARY else data
            archive.writestr(info, flipped)
    # And one flipped byte in another member's compressed data (issue 21, item 3).
    metadata = next(info.filename for info, _ in members if info.filename.endswith("/METADATA"))
    wheels.flip_compressed_byte(tampered, metadata)
    receipt = json.loads(wheel.with_suffix(".json").read_text())
    tampered.with_suffix(".json").write_text(json.dumps(receipt))
    # With the build's receipt, the wheel is refused before any build: not the file it describes.
    refused = tfbuild("verify", str(tampered))
    assert refused.returncode == 3, refused.stderr
    line = one_error_line(refused, among_others=True)
    assert "is not the wheel its receipt describes" in line
    assert sha256_file(tampered) in line and original in line
    # With the receipt made to describe it, the rebuild runs and names both members.
    receipt["wheel"].update(sha256=sha256_file(tampered), size=tampered.stat().st_size)
    tampered.with_suffix(".json").write_text(json.dumps(receipt))
    result = tfbuild("verify", str(tampered), "--json")
    assert result.returncode == 8, result.stderr
    corrupt = f"member {metadata} is corrupt in {tampered.name}: "
    assert corrupt in one_error_line(result, among_others=True)
    report = json.loads(result.stdout)
    assert report["receipt_sha256"] == report["sha256"] != original
    assert report["rebuilt_sha256"] == original  # the rebuild is the wheel that was built
    changed = {m["path"]: m for m in report["diff"]["changed"]}
    assert changed[canary.LIBRARY]["elf"]["sections"] == [".text"]
    why = changed[metadata]["corrupt_a"]  # zipfile's or zlib's words: a bad CRC, a bad stream
    assert why and f"{corrupt}{why}" in one_error_line(result, among_others=True)
    assert changed[metadata]["sha256_a"] is None and changed[metadata]["corrupt_b"] is None
    human = tfbuild("verify", str(tampered))
    assert human.returncode == 8
    words = " ".join(human.stdout.split())  # each line wrapped under itself at 80 columns
    assert canary.LIBRARY in words and "ELF sections that differ: .text" in words
    assert f"{metadata} differs" in words and f"corrupt: {' '.join(why.split())}" in words


def test_another_target_differs_in_the_library_and_what_names_its_flags(
    base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    volume = volumes()
    host = built(wheel_cli(tmp_path / "host", volume, "--no-label", "--json"))
    baseline = built(
        wheel_cli(tmp_path / "base", volume, "--no-label", "--target", "x86_64", "--json")
    )
    assert host.name == baseline.name
    diff = compare(host, baseline)
    assert not diff.only_in_a and not diff.only_in_b
    dist_info = "tfbuild_canary-0.0.0+tfbuild.canary.dist-info"
    # The library, the flags file that says how it was compiled, and RECORD listing both hashes.
    assert {m.path for m in diff.changed} == {
        canary.LIBRARY,
        "tfbuild_canary/BUILD_FLAGS",
        f"{dist_info}/RECORD",
    }
    assert diff.entries == ()  # every other member is the same, entry for entry


def test_wheel_from_receipt_builds_the_same_wheel(
    base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    wheel = built(wheel_cli(tmp_path / "dist", volumes(), "--json"))
    receipt = wheel.with_suffix(".json")
    again = tfbuild(
        "wheel", "--from-receipt", str(receipt), "--dist", str(tmp_path / "again"), "--json"
    )
    rebuilt = built(again)
    assert rebuilt.name == wheel.name
    assert sha256_file(rebuilt) == sha256_file(wheel)
    data = json.loads(rebuilt.with_suffix(".json").read_text())
    original = json.loads(receipt.read_text())
    # Every package at the version the first build installed.
    assert data["plan"]["package_versions"]
    assert all(
        original["inputs"]["packages"][name] == version
        for name, version in data["plan"]["package_versions"].items()
    )


# --- bad input: one line, its exit code, nothing in dist/ ---------------------------------------


def _receipt_of_a_build(tmp_path: Path, volumes: Callable[[], str]) -> tuple[Path, dict[str, Any]]:
    wheel = built(wheel_cli(tmp_path / "dist", volumes(), "--json"))
    return wheel, json.loads(wheel.with_suffix(".json").read_text())


def test_bad_receipts_are_refused_in_one_line(
    base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    wheel, data = _receipt_of_a_build(tmp_path, volumes)
    receipt = wheel.with_suffix(".json")
    out = tmp_path / "out"

    old = dict(data, schema="tfbuild.receipt/1")
    receipt.write_text(json.dumps(old))
    result = tfbuild("verify", str(wheel))
    assert result.returncode == 3
    assert "tfbuild.receipt/1" in one_error_line(result, among_others=True)

    edited = json.loads(json.dumps(data))
    edited["plan"]["cflags"] = ["-march=native"]
    receipt.write_text(json.dumps(edited))
    result = tfbuild("wheel", "--from-receipt", str(receipt), "--dist", str(out))
    assert result.returncode == 3
    assert "was changed after the build" in one_error_line(result, among_others=True)

    receipt.unlink()
    result = tfbuild("verify", str(wheel))
    assert result.returncode == 3
    assert f"{wheel.name} has no receipt" in one_error_line(result, among_others=True)

    receipt.write_text(json.dumps(data))
    result = tfbuild("wheel", "--from-receipt", str(receipt), "--mkl", "--dist", str(out))
    assert result.returncode == 2
    assert "--from-receipt with plan options" in one_error_line(result, among_others=True)
    assert not out.exists() or not list(out.glob("*.whl"))


def test_a_package_that_can_no_longer_be_had_is_named(
    base_image: str, volumes: Callable[[], str], tmp_path: Path
) -> None:
    _, data = _receipt_of_a_build(tmp_path, volumes)
    gone = json.loads(json.dumps(data))
    gone["inputs"]["packages"]["zip"] = "0.0-tfbuild-test-nonexistent"
    assert canonical_sha256(gone["plan"]) == gone["plan_sha256"]  # inputs are not the plan
    # As a receipt recorded when that version was still offered: its inputs' hash fits them.
    gone["inputs_sha256"] = canonical_sha256(gone["inputs"])
    receipt = tmp_path / "gone.json"
    receipt.write_text(json.dumps(gone))
    out = tmp_path / "out"
    result = tfbuild("wheel", "--from-receipt", str(receipt), "--dist", str(out))
    assert result.returncode == 5, result.stderr
    line = one_error_line(result, among_others=True)
    assert "zip 0.0-tfbuild-test-nonexistent can no longer be had" in line
    assert not list(out.glob("*.whl")) and not list(out.glob("*.json"))
