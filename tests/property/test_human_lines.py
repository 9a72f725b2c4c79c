"""Every line `smoke`, `verify` and `pick` print for people: no Python repr (dict, list, tuple,
None, True), numbers with their units, and at 80 columns nothing cut and nothing wider than 80 but
a word that is (a path, a file name, a hash)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, reprs_in, run_cli
from tests.pick.conftest import WHEELS, make_wheels
from tests.smoke.test_display import _report
from tests.wheel.test_wheeldiff import NAME, compile_library, members
from tests.wheels import pack
from tfbuild.build.rebuild import VerifyResult
from tfbuild.cli.wheel_display import print_smoke, print_verify
from tfbuild.wheel.wheeldiff import compare


def too_wide(text: str, width: int = 80) -> list[str]:
    """Lines wider than ``width`` that hold a break they were not broken at."""
    return [line for line in text.splitlines() if len(line) > width and len(line.split()) > 2]


@pytest.mark.parametrize("columns", ["80", "200"])
def test_smoke_gives_every_throughput_its_unit(
    columns: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    print_smoke(_report())
    out = capsys.readouterr().out
    assert reprs_in(out) == []
    assert too_wide(out, int(columns)) == []
    rows = [line for line in out.splitlines() if re.match(r"\s+(exp|add|erf|matmul)", line)]
    assert len(rows) == 5
    for row in rows:  # candidate and baseline, each a number and its unit
        assert len(re.findall(r"\d+\.\d\d? GF/s", row)) == 2, row


def test_verify_says_what_differs_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real difference between two wheels (wheeldiff): a library's .rodata, a member in one
    only, an entry's time and mode."""
    monkeypatch.setenv("COLUMNS", "80")
    first = pack(tmp_path / "a" / NAME, members(compile_library(tmp_path / "la", "hello")))
    changed = members(compile_library(tmp_path / "lb", "howdy"))
    changed["tfbuild_standin/extra.py"] = b"X = 1\n"
    second = pack(tmp_path / "b" / NAME, changed, date_time=(2026, 1, 2, 3, 4, 8), mode=0o755)
    diff = compare(first, second)
    assert diff.changed and diff.only_in_b
    result = VerifyResult(
        wheel=first,
        sha256="a" * 64,
        receipt_sha256="a" * 64,
        rebuilt_sha256="b" * 64,
        reproducible=False,
        diff=diff,
        rebuild_seconds=12.5,
        warnings=("the receipt has no inputs_sha256: its inputs were checked to their grammar",),
    )
    print_verify(result)
    out = capsys.readouterr().out
    assert reprs_in(out) == [], out
    assert too_wide(out) == [], out
    assert "ELF sections that differ: .rodata" in out
    assert "only in the rebuild: tfbuild_standin/extra.py" in out
    assert re.search(r"differs: \d+ (bytes|KiB)", out)


def test_pick_at_80_columns_keeps_every_file_name_whole(tmp_path: Path) -> None:
    """One block a wheel: its rank and status, its whole file name (to copy), its reason below."""
    dist = make_wheels(tmp_path / "dist")
    zen4 = str(cpuinfo_fixture("zen4"))
    result = run_cli(
        "pick", str(dist), "--cpuinfo", zen4, "--python", "3.11", env={"COLUMNS": "80"}
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert reprs_in(out) == [], out
    assert too_wide(out) == [], out
    lines = out.splitlines()
    for name in WHEELS.values():  # each on a line of its own, after its rank and status
        [line] = [x for x in lines if name in x and not x.startswith("chosen")]
        assert re.match(rf"( +\d+| +) (runs|refused|filtered) +{re.escape(name)}", line), line
    # The reasons are all there, as the JSON has them, wrapped at spaces.
    report = run_cli("pick", str(dist), "--cpuinfo", zen4, "--python", "3.11", "--json").json()
    words = " ".join(out.split())
    for wheel in report["wheels"]:
        assert " ".join(wheel["reason"].split()) in words, wheel["reason"]


def test_smoke_keeps_each_op_on_one_line_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The longest cells a real run has (a bf16 matmul near the peak, a noisy elementwise op, a
    four-digit rate with a two-digit reach): op, threads, both throughputs with units and the
    verdict fit one line each."""
    from dataclasses import replace

    from tfbuild.core.stats import Summary, verdict
    from tfbuild.measure.run import OpResult

    monkeypatch.setenv("COLUMNS", "80")
    rng = random.Random(1)
    candidate = [2.0e-3 * rng.lognormvariate(0, 0.5) for i in range(15)]
    baseline = [2.0e-3 * rng.lognormvariate(0, 0.5) for i in range(15)]
    found = verdict(candidate, baseline, paired=True)  # noisy: undecided, a reach of 2-3 digits
    assert found.label == "undecided" and found.spread >= 0.10
    slow = [2.0e-3 * rng.lognormvariate(0, 0.06) for i in range(15)]
    fast = [s / 1.6 * rng.lognormvariate(0, 0.06) for s in slow]
    faster = verdict(fast, slow, paired=True)
    assert faster.label == "faster" and faster.spread >= 0.10  # "faster 1.60x ±12%"
    rows = tuple(
        OpResult(
            op=op,
            threads="default",
            candidate=Summary.of(cand, 1.87e10, "GFLOP/s"),
            baseline=Summary.of(base, 1.87e10, "GFLOP/s"),
            verdict=judged,
        )
        for op, cand, base, judged in (
            ("matmul_bf16_1024", candidate, baseline, found),
            ("log_softmax", fast, slow, faster),
        )
    )
    print_smoke(replace(_report(), results=rows))
    lines = capsys.readouterr().out.splitlines()
    for op in ("matmul_bf16_1024", "log_softmax"):
        [row] = [line for line in lines if line.split()[:1] == [op]]
        index = lines.index(row)
        follows = lines[index + 1]  # the next op, or the blank line after the table: no wrap
        assert not follows.strip() or not follows.startswith(" " * 20), lines
        verdict_cell = r"(undecided ±\d+%|faster \d\.\d\dx ±\d+%)"
        assert re.search(rf"\d+\.\d\d? GF/s +\d+\.\d\d? GF/s +{verdict_cell} *$", row), row


def test_smoke_wraps_the_unused_instructions_and_the_failure_under_themselves(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorFlow's own complaint (the stock 2.21 wheel on an AVX-512 machine) and the failure it
    gives: wrapped under their text at 80 columns, every instruction named."""
    from dataclasses import replace

    from tfbuild.smoke.messages import parse_messages

    monkeypatch.setenv("COLUMNS", "80")
    message = (
        "I0000 00:00:1700000000.000000 1 cpu_feature_guard.cc:227] This TensorFlow binary is "
        "optimized to use available CPU instructions in performance-critical operations.\n"
        "To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 AVX_VNNI FMA, "
        "in other operations, rebuild TensorFlow with the appropriate compiler flags.\n"
    )
    guard = parse_messages(message)
    assert len(guard.unused) == 6
    report = _report()
    report = replace(report, candidate=replace(report.candidate, guard=guard), results=())
    print_smoke(report)
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if len(line) > 80] == [], out
    assert reprs_in(out) == []
    words = " ".join(out.split())
    assert "unused instructions (TensorFlow's own message): " + " ".join(guard.unused) in words
    assert "FAILED: TensorFlow says it leaves " + " ".join(guard.unused) in words
    continued = [line for line in out.splitlines() if line.startswith("  ") and line.strip()]
    assert continued, out  # the wrapped parts are indented, not at the left edge
