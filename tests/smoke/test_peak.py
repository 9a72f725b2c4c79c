"""The FP32 ceiling: hand-computed peaks for recorded machines, and a real FMA measurement here."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, cpuinfo_fixtures
from tfbuild.core import serial
from tfbuild.core.errors import UsageError
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.smoke.peak import Peak, measure_fma_peak, theoretical_peak


def _peak(suffix: str, *, cores: int | None = None, ghz: float | None = None) -> Peak:
    return theoretical_peak(read_cpuinfo(cpuinfo_fixture(suffix)), cores=cores, ghz=ghz)


# --- theoretical peak, hand-computed ----------------------------------------------------------------


def test_zen5_vm_matches_the_baseline_nominal_figure() -> None:
    peak = _peak("epyc-zen5-vm")
    # 2 cores × 16 lanes × 2 (FMA) × 2 pipes × 2.59612 GHz, the baseline doc's 332 GFLOP/s.
    assert (peak.cores, peak.lanes, peak.fma_pipes, peak.ghz) == (2, 16, 2, 2.59612)
    assert peak.gflops == pytest.approx(2 * 16 * 2 * 2 * 2.59612)
    assert round(peak.gflops or 0) == 332
    assert peak.isa == "avx512"
    assert peak.fused
    assert peak.flops_per_cycle == 64
    text = " ".join(peak.assumptions)
    # archspec names the VM by its generic level, so the pipes come from vendor + family, and say so.
    assert peak.microarchitecture == "x86_64_v4"
    assert "not in the table" in text
    assert "family 26" in text
    assert "Zen 5" in text
    assert "nominal" in text
    assert "boost" in text


def test_haswell_uses_the_rated_clock_of_the_model_name() -> None:
    peak = _peak("rhel7-haswell")
    # Xeon E5-2680 v3 @ 2.50GHz, 12 cores, AVX2 + two 256-bit FMA ports. The dump's 'cpu MHz' of
    # 1757.91 is the clock of an idle core at the moment it was read, not the nominal one.
    assert (peak.cores, peak.lanes, peak.fma_pipes, peak.ghz) == (12, 8, 2, 2.5)
    assert peak.gflops == pytest.approx(12 * 8 * 2 * 2 * 2.5)  # 960
    assert peak.isa == "avx2"
    assert any("model name" in sentence for sentence in peak.assumptions)


def test_skylake_avx512_gold_6132_has_two_fma_units() -> None:
    peak = _peak("rhel7-skylake_avx512")
    # Xeon Gold 6132 @ 2.60GHz: 14 cores, two 512-bit FMA units.
    assert (peak.cores, peak.lanes, peak.fma_pipes, peak.ghz) == (14, 16, 2, 2.6)
    assert peak.gflops == pytest.approx(14 * 16 * 2 * 2 * 2.6)  # 2329.6
    assert peak.microarchitecture == "skylake_avx512"


def test_skylake_avx512_silver_and_small_gold_parts_have_one_fma_unit() -> None:
    info = read_cpuinfo(cpuinfo_fixture("rhel7-skylake_avx512"))
    silver = theoretical_peak(replace(info, brand="Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz"))
    assert (silver.fma_pipes, silver.ghz) == (1, 2.2)
    assert silver.gflops == pytest.approx(14 * 16 * 2 * 1 * 2.2)
    assert any("one 512-bit FMA unit" in s for s in silver.assumptions)
    gold_5122 = theoretical_peak(replace(info, brand="Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz"))
    assert gold_5122.fma_pipes == 2


def test_zen3_counts_physical_cores_and_two_256_bit_pipes() -> None:
    peak = _peak("ubuntu20.04-zen3")
    # Ryzen 9 5950X: 16 cores (32 threads), no clock in the model name, 'cpu MHz' 2122.858.
    assert (peak.cores, peak.lanes, peak.fma_pipes) == (16, 8, 2)
    assert peak.ghz == pytest.approx(2.122858)
    assert peak.gflops == pytest.approx(16 * 8 * 2 * 2 * 2.122858)  # 1086.9
    assert any("SMT" in s for s in peak.assumptions)


def test_zen4_does_one_zmm_fma_per_cycle() -> None:
    peak = _peak("rocky8.5-zen4")
    # EPYC 9654: 96 cores; 512-bit FMAs run as two 256-bit halves, so 32 flops/cycle like AVX2.
    assert (peak.cores, peak.lanes, peak.fma_pipes, peak.flops_per_cycle) == (96, 16, 1, 32)
    assert peak.gflops == pytest.approx(96 * 16 * 2 * 1 * 2.4)


def test_sandy_bridge_style_avx_without_fma_counts_mul_plus_add() -> None:
    info = read_cpuinfo(cpuinfo_fixture("rhel7-haswell"))
    no_fma = replace(info, flags=info.flags - {"fma", "avx2", "bmi1", "bmi2", "movbe"})
    peak = theoretical_peak(no_fma, ghz=2.0)
    assert peak.microarchitecture == "ivybridge"
    assert (peak.isa, peak.lanes, peak.fma_pipes, peak.fused) == ("avx", 8, 1, False)
    assert peak.gflops == pytest.approx(12 * 8 * 2 * 1 * 2.0)
    assert any("multiply and an add" in s for s in peak.assumptions)


def test_aarch64_dump_without_clock_or_cores_does_not_crash_and_says_what_is_unknown() -> None:
    peak = _peak("neoverse_v2")
    assert peak.gflops is None
    assert peak.ghz is None
    assert (peak.isa, peak.lanes, peak.fma_pipes) == ("sve", 4, 4)
    text = " ".join(peak.assumptions)
    assert "vector length" in text  # SVE width is not in cpuinfo
    assert "gives no physical core count" in text
    assert "gives none" in text  # no clock
    json.dumps(serial.to_data(peak))
    given = _peak("neoverse_v2", ghz=3.1, cores=72)
    assert given.gflops == pytest.approx(72 * 4 * 2 * 4 * 3.1)
    assert _peak("neoverse_n1", ghz=2.5).fma_pipes == 2


def test_arguments_override_the_dump_and_bad_values_are_refused() -> None:
    peak = _peak("epyc-zen5-vm", cores=1, ghz=3.9)
    assert peak.gflops == pytest.approx(1 * 16 * 2 * 2 * 3.9)
    assert any("as passed in" in s for s in peak.assumptions)
    with pytest.raises(UsageError):
        _peak("epyc-zen5-vm", ghz=0)
    with pytest.raises(UsageError):
        _peak("epyc-zen5-vm", cores=0)


@pytest.mark.parametrize("dump", cpuinfo_fixtures(), ids=lambda p: p.name)
def test_every_recorded_machine_gives_a_peak_with_plain_sentences(dump: Path) -> None:
    peak = theoretical_peak(read_cpuinfo(dump))
    assert peak.cores >= 1
    assert peak.lanes in (1, 4, 8, 16)
    assert peak.fma_pipes >= 1
    assert peak.gflops is None or peak.gflops > 0
    assert peak.assumptions
    for sentence in peak.assumptions:
        assert sentence[0].isupper(), sentence
        assert sentence.endswith("."), sentence
    assert json.loads(json.dumps(serial.to_data(peak)))["fma_pipes"] == peak.fma_pipes


# --- measured peak, on this machine -----------------------------------------------------------------


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    pytest.skip("no C compiler on this machine")


@pytest.mark.slow  # compiles and times a real FMA loop on every core: it needs the machine to itself
def test_measured_fma_peak_is_plausible_against_the_theoretical_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiler = _compiler()
    theory = theoretical_peak(read_cpuinfo(Path("/proc/cpuinfo")))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # to see that nothing is left behind
    measured = measure_fma_peak(compiler=compiler, seconds=0.1)
    assert measured is not None
    assert list(tmp_path.iterdir()) == []
    assert measured.gflops_total > 0
    assert measured.gflops_single > 0
    assert len(measured.gflops_per_process) >= 1
    assert measured.gflops_total == pytest.approx(sum(measured.gflops_per_process))
    assert measured.isa in ("avx512", "avx2", "avx", "sse", "neon", "generic")
    assert measured.lanes * 32 in (128, 256, 512)
    if theory.gflops is None:
        pytest.skip("this machine's cpuinfo gives no clock, so there is no theoretical peak")
    assert measured.gflops_total <= 4 * theory.gflops, (measured, theory)
    # The lower bound is per core, on the single-process figure, and on the best of three tries:
    # other work on a shared machine takes cores away from the all-core figure (seen: 41 of 166
    # GFLOP/s while four other test runs used both vCPUs), but one process still gets most of a
    # core, and a counting mistake (a factor of lanes or of two flops per FMA) stays far below.
    per_core = theory.gflops / theory.cores
    best = measured.gflops_single
    for _ in range(2):
        if best >= 0.3 * per_core:
            break
        again = measure_fma_peak(compiler=compiler, seconds=0.1)
        assert again is not None
        best = max(best, again.gflops_single)
    assert best >= 0.3 * per_core, (measured, theory)
    json.dumps(serial.to_data(measured))


def test_one_process_per_requested_process() -> None:
    measured = measure_fma_peak(compiler=_compiler(), processes=2, seconds=0.05)
    assert measured is not None
    assert len(measured.gflops_per_process) == 2
    assert all(g > 0 for g in measured.gflops_per_process)


def test_a_missing_or_failing_compiler_gives_none() -> None:
    assert measure_fma_peak(compiler="no-such-cc", seconds=0.05) is None
    assert measure_fma_peak(compiler="false", seconds=0.05) is None


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(UsageError):
        measure_fma_peak(seconds=0)
    with pytest.raises(UsageError):
        measure_fma_peak(processes=0)
