"""``tfbuild detect`` at 80 columns, as a user reads it: a wrapped sentence goes on indented under
its start instead of at column 0, counts are words, not Python's "(s)"."""

from __future__ import annotations

import re

from tests.conftest import cpuinfo_fixture, run_cli


def test_wrapped_sentences_stay_indented_under_their_start() -> None:
    dump = cpuinfo_fixture("haswell")
    result = run_cli(
        "detect", "--cpuinfo", str(dump), "--target", "zen4", "--why-not", "skylake_avx512",
        env={"COLUMNS": "80"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    report = run_cli("detect", "--cpuinfo", str(dump), "--target", "zen4", "--json").json()
    (fit,) = report["target"]["runs_on"]
    assert not fit["runs"]
    start = next(i for i, line in enumerate(lines) if line.startswith("  does not run: "))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        block.append(line)
    assert len(block) > 1  # the reason is longer than a line at 80 columns: it wrapped, indented
    assert " ".join(" ".join(block).split()) == f"does not run: {fit['reason']}"
    why_not = next(i for i, line in enumerate(lines) if line.startswith("why not skylake_avx512"))
    assert lines[why_not + 1].startswith("  ") and lines[why_not + 1].strip()
    # Every line fits, but the flags: one command line, left whole to be copied.
    assert all(len(line) <= 80 for line in lines if not line.startswith(("flags", "Target"))), lines
    assert "(s)" not in result.stdout
    assert re.search(r"\b\d+ sockets?\b", result.stdout)
