"""The doctor's checks that need no engine: each verdict from recorded engine facts and plans."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from tests import wheels
from tests.conftest import ROOT, recorded_host, reprs_in
from tests.receipts import make_receipt
from tfbuild.build.doctor import (
    Check,
    canary_check,
    decode_probe,
    engine_checks,
    expected_instructions,
    isa_text,
    network_check,
    resource_check,
    smoke_failure_text,
    speedup_text,
)
from tfbuild.core import serial
from tfbuild.core.engine import EngineInfo
from tfbuild.core.stats import Verdict, sequential
from tfbuild.detect.host import HostFacts
from tfbuild.plan import GIB, BuildPlan, PlanOptions, make_plan
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes
from tfbuild.wheel.receipt import (
    CanaryCheck,
    InstructionCheck,
    Receipt,
    SmokeOutcome,
    decode_receipt,
)


def info(**changes: object) -> EngineInfo:
    values: dict[str, object] = {
        "endpoint": "unix:///var/run/docker.sock",
        "server_version": "20.10.24+dfsg1",
        "api_version": "1.41",
        "storage_driver": "overlay2",
        "cgroup_version": "1",
        "cgroup_driver": "cgroupfs",
        "docker_root_dir": "/var/lib/docker",
        "free_disk_bytes": 78 * GIB,
        "warnings": (),
    }
    return EngineInfo(**(values | changes))  # type: ignore[arg-type]


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_a_healthy_engine_passes() -> None:
    checks = by_name(engine_checks(info(), disk_needed_gib=40))
    assert [c.status for c in checks.values()] == ["ok", "ok", "ok"]
    assert "Docker 20.10.24+dfsg1" in checks["engine"].detail


def test_vfs_warns_and_too_little_disk_fails_with_a_fix() -> None:
    checks = by_name(
        engine_checks(info(storage_driver="vfs", free_disk_bytes=12 * GIB), disk_needed_gib=40)
    )
    assert checks["storage driver"].status == "warn"
    assert "overlay2" in checks["storage driver"].fix
    assert checks["disk"].status == "fail"
    assert "12 GiB free" in checks["disk"].detail


def test_a_remote_engines_disk_is_not_measured_here() -> None:
    checks = by_name(engine_checks(info(free_disk_bytes=None), disk_needed_gib=40))
    assert checks["disk"].status == "skip"


def _plan(memory_gib: int, cpus: int) -> tuple[BuildPlan, HostFacts]:
    recipe = load_recipes().get("2.21")
    host = recorded_host("zen4", memory_gib=memory_gib, disk_gib=200, build_cpus=cpus)
    return make_plan(PlanOptions(), recipe, host, base_images=load_base_images()), host


def test_memory_for_less_than_one_compile_job_fails() -> None:
    plan, _ = _plan(2, 2)
    check = resource_check(plan, cpus=2, memory_bytes=2 * GIB)
    assert check.status == "fail"
    assert "at least" in check.fix


def test_few_cores_warn_and_a_big_machine_passes() -> None:
    plan, _ = _plan(24, 2)
    assert resource_check(plan, cpus=2, memory_bytes=24 * GIB).status == "warn"
    plan, _ = _plan(128, 32)
    check = resource_check(plan, cpus=32, memory_bytes=128 * GIB)
    assert check.status == "ok"
    assert f"--jobs={plan.resources.jobs}" in check.detail


def test_proxies_and_the_ca_bundle_are_reported(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("pem\n")
    check = network_check({"HTTPS_PROXY": "http://proxy:3128", "SSL_CERT_FILE": str(bundle)})
    assert check.status == "ok"
    assert "HTTPS_PROXY=http://proxy:3128" in check.detail and str(bundle) in check.detail
    broken = network_check({"SSL_CERT_FILE": str(tmp_path / "gone.pem")})
    assert broken.status == "fail"
    assert "gone.pem" in broken.detail


def test_the_expected_instructions_follow_the_planned_flags() -> None:
    recipe = load_recipes().get("2.21")
    images = load_base_images()
    for machine, expected in (
        ("zen4", ["zmm", "fma"]),
        ("haswell", ["ymm", "fma"]),
    ):
        host = recorded_host(machine, memory_gib=64, disk_gib=200)
        plan = make_plan(PlanOptions(), recipe, host, base_images=images)
        assert expected_instructions(plan) == expected
    baseline = make_plan(
        PlanOptions(target="x86_64"),
        recipe,
        recorded_host("zen4", memory_gib=64, disk_gib=200),
        base_images=images,
    )
    assert expected_instructions(baseline) == []


# --- the canary's findings, written for people ------------------------------------------------------

# As the canary's probe reports them (tfbuild/scripts/canary_probe.py) and run_canary keeps them.
FOUND: Any = {"host": {"zmm": 32, "ymm": 0, "fma": 6}, "baseline": {"zmm": 0, "ymm": 0, "fma": 0}}


def test_the_instruction_check_counts_in_words() -> None:
    text = isa_text(InstructionCheck(expected=("zmm", "fma"), found=FOUND, ok=True))
    assert text == (
        "host build uses zmm and fma (32 zmm, 0 ymm, 6 fma instructions), "
        "the baseline none (0 zmm, 0 ymm, 0 fma)"
    )
    assert reprs_in(text) == []
    assert "no instructions counted" in isa_text(
        InstructionCheck(expected=("ymm",), found={}, ok=False)
    )
    unplanned = isa_text(InstructionCheck(expected=(), found=FOUND, ok=True))
    assert unplanned.startswith("host build uses no vector extensions (")


def _canary_verdict(host: list[float], baseline: list[float]) -> Verdict:
    """The verdict doctor keeps in its report: core.stats' over pairs timed 15 at a time."""
    return sequential(host, baseline, per_look=15)


def test_the_speedup_gives_its_verdict_interval_and_each_median() -> None:
    rng = random.Random(7)
    baseline = [3.5e-3 * rng.lognormvariate(0, 0.02) for _ in range(75)]
    host = [b / 4.9 * rng.lognormvariate(0, 0.02) for b in baseline]
    found = _canary_verdict(host, baseline)
    text = speedup_text(found, {"host": 0.709, "baseline": 3.498})
    assert found.label == "faster" and found.n_candidate == 15  # decided at the first look
    low, high = found.interval
    assert text == (
        f"the host-targeted canary kernel is faster: {found.ratio:.2f}x ({low:.2f}-{high:.2f}) "
        "the speed of the x86_64 build (15 alternating pairs: 0.709 ms host and 3.498 ms baseline)"
    )
    assert speedup_text(None, {}) == "the canary kernels could not be timed"


def test_a_noisy_canary_is_looked_at_again_and_said_undecided() -> None:
    """Pairs whose ratio swings by ±60 % around 1.1x: each look takes 15 pairs more, and after
    the fifth the answer is undecided, with the interval's reach; never "same"."""
    rng = random.Random(3)
    baseline = [1e-3 * rng.lognormvariate(0, 0.5) for _ in range(75)]
    host = [b / 1.1 * rng.lognormvariate(0, 0.5) for b in baseline]
    found = _canary_verdict(host, baseline)
    assert (found.label, found.looks, found.n_candidate) == ("undecided", 5, 75)
    text = speedup_text(found, {"host": 1.0, "baseline": 1.1})
    assert re.search(r"is undecided: \d\.\d\dx \(±\d+%\) the speed", text), text


def test_a_canary_wheel_that_did_not_run_is_named_with_its_exit_and_last_error() -> None:
    illegal = "Traceback ...\nIllegal instruction\n"
    smoke = {
        "host": SmokeOutcome(ok=False, exit_code=132, stderr=illegal),
        "baseline": SmokeOutcome(ok=True),
    }
    assert smoke_failure_text(smoke) == "the host wheel did not run (exit 132: Illegal instruction)"
    both = smoke_failure_text({"host": SmokeOutcome(ok=False), "baseline": SmokeOutcome(ok=False)})
    assert both == "the host wheel did not run; the baseline wheel did not run"


def test_a_check_wraps_under_its_detail_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Marks and names stay a column; a long detail and its fix wrap beneath the detail, whole
    words only, and nothing is lost."""
    from tfbuild.cli.display import print_doctor_check

    monkeypatch.setenv("COLUMNS", "80")
    check = Check(
        name="instruction set",
        status="fail",
        detail=isa_text(InstructionCheck(expected=("zmm", "fma"), found=FOUND, ok=True))
        + " "
        + speedup_text(_canary_verdict([0.7e-3] * 15, [3.4e-3] * 15), {"host": 0.7}),
        fix="The planned flags did not reach the compiler: report it.",
    )
    print_doctor_check(check)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("✗ instruction set  host build uses ")
    assert all(line.startswith(" " * 19) and line[19] != " " for line in lines[1:])
    assert [line for line in lines if "fix: " in line] == [
        " " * 19 + "fix: The planned flags did not reach the compiler: report it."
    ]
    shown = " ".join(" ".join(line[1:].split()) for line in lines)
    assert " ".join(check.detail.split()) in shown and reprs_in(shown) == []


# --- the probe's output (untrusted: printed in a container) and the section it makes -------------------

CANARY = ROOT / "tests" / "fixtures" / "canary"  # recorded: its README.md says how
PROBE_LINES = (CANARY / "probe-output.txt").read_text().splitlines()
RECORDED_SECTION = json.loads((CANARY / "section.json").read_text())


def _receipt_with(section: CanaryCheck, tmp_path: Path) -> Receipt:
    """``section`` written into a receipt as update_receipt writes it, and that receipt read back
    by the one decoder."""
    wheel = wheels.make_wheel(tmp_path, "tfbuild_canary-0.0.0-py3-none-any.whl")
    data = make_receipt(wheel, canary=section)
    return decode_receipt(json.dumps(data, indent=2).encode(), source="receipt.json")


def _without_spread(data: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    """The section's JSON without its verdict's spread (computed again, from the interval as
    written, when the receipt is read: it may differ in the last decimal), and that spread."""
    verdict = data.get("verdict")
    if not isinstance(verdict, dict):
        return data, None
    rest = {key: value for key, value in verdict.items() if key != "spread"}
    return {**data, "verdict": rest}, verdict["spread"]


def test_the_recorded_probe_output_decodes_and_makes_a_section_the_receipt_reads(
    tmp_path: Path,
) -> None:
    probe = decode_probe(PROBE_LINES, exit_code=0)
    assert all(s.ok and s.library for s in probe.smoke.values())
    assert probe.instructions == {
        "host": {"zmm": 32, "ymm": 0, "fma": 6},
        "baseline": {"zmm": 0, "ymm": 0, "fma": 0},
    }
    assert len(probe.seconds["host"]) == len(probe.seconds["baseline"]) == 75
    section = canary_check(probe, ["zmm", "fma"])
    assert section.isa.ok and section.smoke_ok and section.rounds == 75
    assert section.judged is not None and section.judged.n_candidate in (15, 30, 45, 60, 75)
    assert section.speedup == round(section.judged.ratio, 2)
    # The keys and kinds of the section doctor wrote in that run.
    written = serial.to_data(section)
    assert _shape(written) == _shape(RECORDED_SECTION)
    read = _receipt_with(section, tmp_path).canary
    assert read is not None
    again, spread = _without_spread(serial.to_data(read))
    expected, written_spread = _without_spread(written)
    assert again == expected and spread == pytest.approx(written_spread, abs=2e-4)


def _shape(value: Any) -> Any:
    """The keys and kinds of a JSON document, without its values."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [type(item).__name__ for item in value[:1]]
    return type(value).__name__


def test_the_recorded_section_reads_back_the_same(tmp_path: Path) -> None:
    """The section doctor wrote into a real receipt: typed, written back key for key (the spread
    computed again from the interval), and read again the same."""
    wheel = wheels.make_wheel(tmp_path, "tfbuild_canary-0.0.0-py3-none-any.whl")
    data = make_receipt(wheel) | {"canary": RECORDED_SECTION}
    receipt = decode_receipt(json.dumps(data).encode(), source="receipt.json")
    section = receipt.canary
    assert isinstance(section, CanaryCheck) and isinstance(section.verdict, Verdict)
    assert section.isa == InstructionCheck(expected=("zmm", "fma"), found=FOUND, ok=True)
    assert section.smoke == {"host": SmokeOutcome(ok=True), "baseline": SmokeOutcome(ok=True)}
    assert (section.verdict.label, section.verdict.n_candidate, section.rounds) == (
        "faster",
        15,
        75,
    )
    again, spread = _without_spread(receipt.to_json()["canary"])
    expected, recorded_spread = _without_spread(RECORDED_SECTION)
    assert again == expected and spread == pytest.approx(recorded_spread, abs=2e-4)
    assert list(receipt.to_json()["canary"]) == list(RECORDED_SECTION)  # key order too
    assert decode_receipt(json.dumps(receipt.to_json()).encode(), source="again") == receipt


GOOD = json.loads(PROBE_LINES[-1])


def _line(**changes: Any) -> str:
    return json.dumps(GOOD | changes)


#: Lines a broken or hostile probe could print as its result, and what tfbuild says of each.
BAD_PROBE_LINES = {
    "not-json": ('{"smoke": oops}', "Expecting value: line 1 column 11"),
    "unpaired-brackets": (
        '{"smoke": [}',
        "it nests deeper than 8 levels, or its brackets do not pair",
    ),
    "nan": (_line().replace("0.00", "NaN, 0.00", 1), "it holds NaN, which is not JSON"),
    "ok-text": (
        _line(smoke={**GOOD["smoke"], "host": {"ok": "yes"}}),
        "Expected `bool`, got `str` - at `$.smoke[...].ok`",
    ),
    "unknown-key": (_line(run="rm -rf /"), "Object contains unknown field `run`"),
    "unknown-build": (
        _line(instructions={**GOOD["instructions"], "third": {"zmm": 1}}),
        "Invalid enum value 'third' - at `key` in `$.instructions`",
    ),
    "no-baseline-smoke": (
        _line(smoke={"host": GOOD["smoke"]["host"]}),
        "it has no smoke of the baseline wheel",
    ),
    "count-negative": (
        _line(instructions={**GOOD["instructions"], "host": {"zmm": -1}}),
        "it holds an instruction count out of range",
    ),
    "count-bool": (
        _line(instructions={**GOOD["instructions"], "host": {"zmm": True}}),
        "Expected `int`, got `bool`",
    ),
    "unpaired": (
        _line(seconds={**GOOD["seconds"], "host": GOOD["seconds"]["host"][:-1]}),
        "its timings are not pairs (as many of each, 1 to 10000)",
    ),
    "timing-tiny": (
        _line(seconds={**GOOD["seconds"], "host": [1e-300] * 75}),
        "it holds a timing out of range (1e-06 to 600 seconds)",
    ),
    "timing-text": (
        _line(seconds={**GOOD["seconds"], "host": ["0.001"] * 75}),
        "Expected `float`, got `str`",
    ),
    "one-side-timed": (
        _line(seconds={"host": GOOD["seconds"]["host"]}),
        "its seconds are not those of both wheels",
    ),
    "deep": ('{"smoke": ' + "[" * 100_000 + "]" * 100_000 + "}", "it nests deeper than 8 levels"),
    "long": ("{" + " " * (1 << 20) + "}", "it is longer than 1048576 characters"),
    "digits": (
        _line(instructions={**GOOD["instructions"], "host": {"zmm": 7}}).replace(
            '"zmm": 7', '"zmm": ' + "9" * 5000
        ),
        "Exceeds the limit (4300 digits)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PROBE_LINES))
def test_a_bad_probe_result_is_a_failed_smoke_that_says_why(case: str, tmp_path: Path) -> None:
    """Whatever the probe prints, doctor does not crash: the host wheel's smoke fails, its last
    line says why the result could not be read, and the section is one the receipt reads."""
    line, why = BAD_PROBE_LINES[case]
    probe = decode_probe(["probe: starting", line], exit_code=0)
    host = probe.smoke["host"]
    assert not host.ok and host.exit_code == 0 and host.stderr is not None
    last = host.stderr.splitlines()[-1]
    assert last.startswith("tfbuild cannot read the probe's result: "), last
    assert why in last and len(last) < 600, last
    assert host.stderr.splitlines()[0] == "probe: starting"  # the container's other lines kept
    assert (probe.instructions, probe.seconds) == ({}, {})
    section = canary_check(probe, ["zmm", "fma"])
    assert not section.smoke_ok and not section.isa.ok and section.judged is None
    said = smoke_failure_text(section.smoke)
    assert said.startswith(f"the host wheel did not run (exit 0: {last[:40]}")
    assert said.endswith("; the baseline wheel did not run") and "\n" not in said
    assert _receipt_with(section, tmp_path).canary == section


def test_a_probe_that_printed_no_result_keeps_its_exit_code_and_last_lines(
    tmp_path: Path,
) -> None:
    lines = [f"line {i}" for i in range(30)] + ["Illegal instruction (core dumped)"]
    probe = decode_probe(lines, exit_code=132)
    section = canary_check(probe, ["ymm"])
    host = section.smoke["host"]
    assert (host.ok, host.exit_code) == (False, 132)
    assert isinstance(host.stderr, str) and host.stderr.splitlines() == lines[-20:]
    assert smoke_failure_text(section.smoke) == (
        "the host wheel did not run (exit 132: Illegal instruction (core dumped)); "
        "the baseline wheel did not run"
    )
    assert "no instructions counted" in isa_text(section.isa)
    assert (
        speedup_text(section.judged, section.median_ms) == "the canary kernels could not be timed"
    )
    read = _receipt_with(section, tmp_path).canary
    assert read == section
    assert serial.to_data(read)["smoke"]["baseline"] == {"ok": False}  # nothing more to say


def test_a_wheels_errors_reach_the_receipt_as_shown_text(tmp_path: Path) -> None:
    """A wheel that did not run: its errors as the probe printed them (escape sequences, a
    terminal's controls, thousands of lines) are kept as its last lines of shown text, which the
    receipt's decoder reads."""
    noisy = (
        "\x1b]8;;http://evil\x07link\x1b]8;;\x07\n" * 3000 + "\x1b[31mIllegal instruction\x1b[0m\r"
    )
    smoke = {**GOOD["smoke"], "host": {"ok": False, "exit_code": -4, "stderr": noisy}}
    probe = decode_probe([json.dumps({"smoke": smoke})], exit_code=0)  # as probe.py prints it
    section = canary_check(probe, ["zmm"])
    host = section.smoke["host"]
    assert isinstance(host.stderr, str) and len(host.stderr) <= 2000
    assert host.stderr.splitlines()[-1] == "Illegal instruction"
    assert "\x1b" not in host.stderr and "\r" not in host.stderr
    assert (
        smoke_failure_text(section.smoke)
        == "the host wheel did not run (exit -4: Illegal instruction)"
    )
    assert _receipt_with(section, tmp_path).canary == section
