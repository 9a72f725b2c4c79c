"""How ``tfbuild smoke`` prints a report: the verdict column says when a recheck settled it."""

from __future__ import annotations

import pytest

from tfbuild.cli.wheel_display import print_smoke
from tfbuild.smoke.messages import parse_messages
from tfbuild.smoke.probe import ProbeResult
from tfbuild.smoke.report import SmokeReport
from tfbuild.smoke.run import Method, OpResult
from tfbuild.smoke.stats import Summary, Verdict, settle, verdict

FIRST_C, FIRST_B = [1.0] * 12 + [3.0] * 3, [1.5] * 12 + [0.9] * 3  # "faster", not decisive


def _result(op: str, candidate: list[float], baseline: list[float], found: Verdict) -> OpResult:
    return OpResult(
        op=op,
        threads="default",
        candidate=Summary.of(candidate, 1e9, "GFLOP/s"),
        baseline=Summary.of(baseline, 1e9, "GFLOP/s"),
        verdict=found,
    )


def _report() -> SmokeReport:
    first = verdict(FIRST_C, FIRST_B)
    held_c, held_b = FIRST_C + [1.0] * 15, FIRST_B + [1.5] * 15
    gone_c, gone_b = FIRST_C + [1.5] * 15, FIRST_B + [1.0] * 15
    plain_c, plain_b = [1.0 + i / 100 for i in range(15)], [2.0 + i / 100 for i in range(15)]
    return SmokeReport(
        candidate_label="candidate.whl",
        baseline_label="tensorflow-cpu==2.21.0",
        candidate=ProbeResult(
            ok=True,
            returncode=0,
            signal=None,
            failure=None,
            version="2.21.0",
            git_version="v2.21.0",
            guard=parse_messages(""),
        ),
        baseline=None,
        method=Method(),
        results=(
            _result("cast_f32_bf16", held_c, held_b, settle(first, verdict(held_c, held_b))),
            _result("conv2d_nhwc", gone_c, gone_b, settle(first, verdict(gone_c, gone_b))),
            _result("matmul_2048", plain_c, plain_b, verdict(plain_c, plain_b)),
        ),
    )


def test_the_verdict_column_tells_a_held_difference_from_one_gone_on_the_recheck(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    print_smoke(_report())
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "faster" in lines["cast_f32_bf16"] and "held on a recheck" in lines["cast_f32_bf16"]
    assert "same" in lines["conv2d_nhwc"] and "gone on a recheck" in lines["conv2d_nhwc"]
    assert "faster" in lines["matmul_2048"] and "recheck" not in lines["matmul_2048"]


def test_in_an_80_column_terminal_the_verdict_wraps_and_nothing_is_cut(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    print_smoke(_report())
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    assert "GFLOP/s" not in out and "GF/s" in out
    words = out.split()
    assert words.count("recheck)") == 2
