"""`tfbuild doctor` against the real engine: every check, and the canary through the whole pipeline."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import as_a_process
from tfbuild.core import serial
from tfbuild.core.stats import LABELS
from tfbuild.wheel.receipt import CanaryCheck, read_receipt

pytestmark = pytest.mark.docker


def test_doctor_builds_smokes_checks_and_times_the_canary(base_image: str, tmp_path: Path) -> None:
    dist = tmp_path / "doctor"
    result = as_a_process(["doctor", "--json", "--dist", str(dist)], dict(os.environ), timeout=900)
    report = json.loads(result.stdout)
    assert "[doctor]" not in result.stderr  # --json: the document alone
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["engine"] == "ok"
    assert statuses["base image"] == "ok"  # the local tfbuild base image: no registry needed
    for name in ("canary build", "canary smoke", "instruction set"):
        assert statuses[name] == "ok", report
    assert result.returncode == (0 if report["ok"] else 5), result.stderr

    canary = report["canary"]
    assert canary["standin"] is True
    assert canary["base_image"] == base_image
    assert canary["builds"]["baseline"]["target"] == "x86_64"
    assert canary["builds"]["host"]["cflags"] != canary["builds"]["baseline"]["cflags"]
    found = canary["isa"]["found"]
    for marker in canary["isa"]["expected"]:
        assert found["host"][marker] > 0
    assert found["baseline"] == {"zmm": 0, "ymm": 0, "fma": 0}
    # A measurement, reported, not asserted on: the figure is in benchmarks and the receipt. Its
    # verdict is core.stats' over the probe's 75 pairs, looked at 15 pairs at a time.
    assert canary["rounds"] == 75
    found = canary["verdict"]
    assert found["label"] in LABELS
    assert found["n_candidate"] in (15, 30, 45, 60, 75)
    assert found["paired"] is True
    low, high = found["interval"]
    assert low <= found["ratio"] <= high
    assert canary["speedup"] == round(found["ratio"], 2)

    path = Path(canary["builds"]["host"]["receipt"])
    receipt: dict[str, Any] = json.loads(path.read_text())
    # The receipt holds the report's canary section, key for key, read back by its decoder.
    section = {key: value for key, value in canary.items() if key not in ("base_image", "builds")}
    assert receipt["canary"] == section
    assert receipt["canary"]["isa"]["ok"] is True
    read = read_receipt(path).canary
    assert isinstance(read, CanaryCheck) and read.judged is not None
    assert read.judged.label == canary["verdict"]["label"] and read.speedup == canary["speedup"]
    again = serial.to_data(read)
    spread = again["verdict"].pop("spread")  # computed again, from the interval as written
    written = dict(section["verdict"])
    assert spread == pytest.approx(written.pop("spread"), abs=2e-4)
    assert again == {**section, "verdict": written}


def test_doctor_without_an_engine_fails_in_one_line(tmp_path: Path) -> None:
    socket = f"unix://{tmp_path}/no-engine.sock"
    env = {"DOCKER_HOST": socket, "PATH": "/usr/bin:/bin"}  # this environment only
    result = as_a_process(["doctor"], env, timeout=60)
    assert result.returncode == 5
    # The detail wraps under itself in the report (80 columns here): read it as words.
    assert f"cannot reach the Docker engine at {socket}" in " ".join(result.stdout.split())
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("tfbuild: error: 1 check(s) failed: engine")


def test_a_canary_without_its_base_image_says_the_fix_once(
    engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No local base image, debootstrap missing, and a registry that cannot be reached: the base
    image check says what is missing and what to do; the canary build's failure says why, and the
    fix is printed once (then once more in the error line the doctor exits with)."""
    from tfbuild.build.doctor import (
        DoctorReport,
        base_image_warning,
        canary_failure,
        run_canary,
    )
    from tfbuild.cli.display import print_doctor_check
    from tfbuild.core.errors import TfbuildError
    from tfbuild.detect.host import host_facts

    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "base-images.yaml").write_text(
        "unpullable-12:\n"  # Debian 12 from a registry that is not there (never resolves)
        "  image: registry.invalid/library/debian\n"
        '  tag: "12"\n'
        "  digest: sha256:" + "8a8c" * 16 + "\n"
        "  distro: debian\n  suite: bookworm\n"
        '  glibc: "2.36"\n  python: "3.11"\n'
        "  tcmalloc_package: libgoogle-perftools4\n"
        "  packaged_compilers: [gcc-12, clang-16]\n"
    )
    monkeypatch.setenv("TFBUILD_RECIPES_DIR", str(recipes))
    base_check = base_image_warning("tfbuild/base:bookworm", "bookworm", ("debootstrap",))
    with pytest.raises(TfbuildError) as caught:
        run_canary(
            engine, base="unpullable-12", dist=tmp_path / "dist", facts=host_facts(), say=print
        )
    capsys.readouterr()
    failed = canary_failure(caught.value, base_check)
    report = DoctorReport(checks=[base_check, failed])
    for check in report.checks:
        print_doctor_check(check)
    shown = capsys.readouterr().out
    fix = (
        "Where no registry can be reached, install debootstrap (sudo apt-get install "
        "debootstrap), then sudo tfbuild base --suite bookworm."
    )
    assert base_check.fix == fix
    assert "debootstrap is not installed" in base_check.detail
    assert " ".join(shown.split()).count(fix) == 1, shown
    assert failed.detail.startswith("cannot get the image registry.invalid/library/debian:12@")
    assert "see the base image check" in failed.detail and failed.fix == ""
    error = report.failure()
    assert error is not None and error.exit_code == 5
    assert error.line().count(fix) == 1
    assert error.line().startswith("1 check(s) failed: canary build: cannot get the image ")


def test_doctor_in_an_80_column_terminal_writes_for_people(base_image: str) -> None:
    """The human report: one block per check, its detail wrapped under itself within 80 columns,
    no Python repr anywhere, the instruction counts and the medians in words with their units."""
    from tests.conftest import reprs_in, run_cli

    result = run_cli("doctor", env={"COLUMNS": "80"}, timeout=900)
    assert result.returncode in (0, 5), result.stderr
    # On stderr, what it is doing: each canary build's phases and bazel's actions, as a build
    # says them; no tool's own lines (those are in each build's log).
    said = result.stderr.splitlines()
    assert all(line.startswith(("[doctor] ", "tfbuild: error: ")) for line in said), said
    for line in (
        "[doctor] canary: building the host wheel (STAND-IN source, real pipeline)",
        "[doctor] canary: building the baseline wheel (STAND-IN source, real pipeline)",
    ):
        assert line in said
    assert sum(line.startswith("[doctor] compile (") for line in said) == 2  # each build's
    for chatter in ("Starting local Bazel server", "INFO: ", " ---> ", "I: Retrieving"):
        assert chatter not in result.stderr
    lines = result.stdout.splitlines()
    assert reprs_in(result.stdout) == [], result.stdout
    # Paths and flags are never cut: a line runs over only by one word longer than the room.
    over = [line for line in lines if len(line) > 80 and len(line[19:].split()) > 1]
    assert over == [], over
    blocks: dict[str, str] = {}
    name = ""
    for line in lines:
        if line.startswith(" " * 19):
            blocks[name] += " " + line.strip()
        else:
            name = line[2:18].strip()
            blocks[name] = line[19:].strip()
    assert blocks["canary smoke"] == "both wheels install, import and run", result.stdout
    isa = blocks["instruction set"]
    counts = re.fullmatch(
        r"host build uses (.+) \((\d+) zmm, (\d+) ymm, (\d+) fma instructions\), "
        r"the baseline none \(0 zmm, 0 ymm, 0 fma\)",
        isa,
    )
    assert counts is not None, isa
    found = dict(zip(("zmm", "ymm", "fma"), map(int, counts.groups()[1:]), strict=True))
    for marker in counts.group(1).split(" and "):  # what the plan expected: each one counted
        assert marker == "no vector extensions" or found[marker] > 0, isa
    speedup = re.fullmatch(
        r"the host-targeted canary kernel is (faster|same|slower|undecided): (\d+\.\d\d)x "
        r"\((\d+\.\d\d-\d+\.\d\d|±\d+%)\) the speed of the x86_64 build \((\d+) alternating "
        r"pairs: (\d+\.\d{3}) ms host and (\d+\.\d{3}) ms baseline\)",
        blocks["speedup"],
    )
    assert speedup is not None, blocks["speedup"]
    ratio, host, baseline = (float(speedup.group(i)) for i in (2, 5, 6))
    assert int(speedup.group(4)) in (15, 30, 45, 60, 75)
    assert ratio > 0 and host > 0 and baseline > 0
    # How near the ratio of medians is to the estimate is a figure load moves (issue 39): not
    # asserted here. The estimate lies in its own interval, whatever the load.
    if "-" in speedup.group(3):
        low, high = (float(x) for x in speedup.group(3).split("-"))
        assert low <= ratio <= high, blocks["speedup"]
