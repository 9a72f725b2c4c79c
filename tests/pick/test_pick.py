"""`tfbuild pick` decisions on real recorded machines, against the stand-in wheels.

The expectations below were worked out by hand from each dump's flags, archspec's targets (vendor,
features, ancestry) and the wheels' labels and receipts; they are not computed by the code under
test.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import receipts
from tests.conftest import cpuinfo_fixture
from tests.pick.conftest import (
    DIST,
    V3_FEATURES,
    WHEELS,
    ZEN4_FEATURES,
    make_wheel,
    make_wheels,
    write_receipt,
)
from tfbuild.core import serial
from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.variants import Variant
from tfbuild.detect.system import glibc_version
from tfbuild.pick.compat import UNLABELLED_REASON
from tfbuild.pick.listing import load_wheels, parse_index
from tfbuild.pick.machine import Host, describe_host
from tfbuild.pick.rank import PickOptions, PickResult, pick
from tfbuild.pick.report import pick_report


def host_from(suffix: str, *, python: str = "3.11", driver_cuda: str | None = None) -> Host:
    return describe_host(cpuinfo=cpuinfo_fixture(suffix), python=python, driver_cuda=driver_cuda)


def by_short(result: PickResult) -> dict[str, tuple[str, str, str]]:
    """short name -> (status, stage, reason)."""
    names = {filename: short for short, filename in WHEELS.items()}
    return {names[v.wheel.filename]: (v.status, v.stage, v.reason) for v in result.wheels}


def ranked(result: PickResult) -> list[str]:
    names = {filename: short for short, filename in WHEELS.items()}
    return [names[v.wheel.filename] for v in result.wheels if v.rank is not None]


@dataclass(frozen=True)
class Expect:
    chosen: str | None
    runs: tuple[str, ...]  # the wheels that run, best first
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)  # short -> (stage, in reason)
    chosen_reason: str = ""


NO_GPU = "a CUDA 12.5 build, but there is no GPU here (no GPU assumed for a --cpuinfo machine"
PY312 = "built for cp312-cp312 (CPython 3.12), not the CPython 3.11 here (--python)"
UNKNOWN = "its label segment 'mystery9' names no CPU target tfbuild knows"
NATIVE_LACKS = "would die with Illegal instruction: built with -march=native on a CPU with "
INTEL_ONLY = "not for this CPU: skylake_avx512 targets vendor GenuineIntel, but the CPU vendor is AuthenticAMD"
AMD_ONLY = "not for this CPU: zen4 targets vendor AuthenticAMD, but the CPU vendor is GenuineIntel"


def lacks(target: str) -> str:
    return f"would die with Illegal instruction: {target} requires features the CPU lacks: "


def on_aarch64(tag: str) -> str:
    return f"built for x86_64 ({tag}), but the machine is aarch64"


# Per recorded machine, with --python 3.11 and no GPU (the default for --cpuinfo).
EXPECTED: dict[str, Expect] = {
    # Xeon E5-2680 v3: AVX2 + FMA, no AVX-512. Intel, so AMD's zen4 is refused on vendor.
    "haswell": Expect(
        chosen="v3",
        runs=("v3", "mkl", "v2", "stock"),
        chosen_reason="x86_64_v3 runs here: it is an ancestor of the detected haswell",
        refused={
            "v4": ("cpu", lacks("x86_64_v4") + "avx512bw, avx512cd, avx512dq, avx512f, avx512vl"),
            "zen4": ("cpu", AMD_ONLY),
            "sky": ("cpu", lacks("skylake_avx512")),
            "cu125": ("cuda", NO_GPU),
            "py312": ("python", PY312),
            "old": ("cpu", lacks("x86_64_v4")),
            "native": ("cpu", NATIVE_LACKS + "AVX512F, AVX512_VNNI, AVX512_BF16, AVX_VNNI, which"),
            "unknown": ("cpu", UNKNOWN),
        },
    ),
    # Skylake-SP: AVX-512 F/BW/CD/DQ/VL but no VNNI; its own named target is the most specific.
    "skylake_avx512": Expect(
        chosen="sky",
        runs=("sky", "v4", "v3", "mkl", "v2", "stock", "old"),
        chosen_reason="skylake_avx512 is this machine's microarchitecture",
        refused={
            "zen4": ("cpu", AMD_ONLY),
            "cu125": ("cuda", NO_GPU),
            "py312": ("python", PY312),
            "native": ("cpu", NATIVE_LACKS + "AVX512_VNNI, AVX512_BF16, AVX_VNNI, which"),
            "unknown": ("cpu", UNKNOWN),
        },
    ),
    # EPYC Zen 4: AVX-512 with VNNI and BF16, but no AVX_VNNI (the VEX one), which the native
    # build's receipt records.
    "zen4": Expect(
        chosen="zen4",
        runs=("zen4", "v4", "v3", "mkl", "v2", "stock", "old"),
        chosen_reason="zen4 is this machine's microarchitecture; every feature its receipt records",
        refused={
            "sky": ("cpu", INTEL_ONLY),
            "cu125": ("cuda", NO_GPU),
            "py312": ("python", PY312),
            "native": ("cpu", NATIVE_LACKS + "AVX_VNNI, which"),
            "unknown": ("cpu", UNKNOWN),
        },
    ),
    # The Zen 5 VM hides flush_l1d, pku and rdseed: archspec says x86_64_v4, not zen4. Only rdseed
    # is an instruction set, so it alone refuses the zen4 wheel (test_isa.py). The native wheel was
    # built on a CPU with exactly its TensorFlow features, so it ranks as x86_64_v4, just below the
    # named x86_64_v4 wheel.
    "epyc-zen5-vm": Expect(
        chosen="v4",
        runs=("v4", "native", "v3", "mkl", "v2", "stock", "old"),
        chosen_reason="x86_64_v4 is this machine's microarchitecture",
        refused={
            "zen4": ("cpu", lacks("zen4") + "rdseed"),
            "sky": ("cpu", INTEL_ONLY),
            "cu125": ("cuda", NO_GPU),
            "py312": ("python", PY312),
            "unknown": ("cpu", UNKNOWN),
        },
    ),
    # Piledriver: AVX and FMA but no AVX2, so x86_64_v2 is the best level.
    "piledriver": Expect(
        chosen="v2",
        runs=("v2", "stock"),
        chosen_reason="x86_64_v2 runs here: it is an ancestor of the detected piledriver",
        refused={
            "v3": ("cpu", lacks("x86_64_v3")),
            "v4": ("cpu", lacks("x86_64_v4")),
            "zen4": ("cpu", lacks("zen4")),
            "sky": ("cpu", INTEL_ONLY),
            "cu125": ("cpu", lacks("x86_64_v3")),  # the CPU check comes before the GPU's
            "mkl": ("cpu", lacks("x86_64_v3")),
            "py312": ("python", PY312),
            "old": ("cpu", lacks("x86_64_v4")),
            "native": ("cpu", NATIVE_LACKS + "AVX2, AVX512F, AVX512_VNNI, AVX512_BF16, AVX_VNNI"),
            "unknown": ("cpu", UNKNOWN),
        },
    ),
    # K10 (Barcelona era): no SSSE3 / SSE4.1, not even x86_64_v2. Only the unlabelled wheel is left.
    "k10": Expect(
        chosen="stock",
        runs=("stock",),
        chosen_reason=UNLABELLED_REASON,
        refused={
            "v2": ("cpu", lacks("x86_64_v2")),
            "v3": ("cpu", lacks("x86_64_v3")),
            "v4": ("cpu", lacks("x86_64_v4")),
            "zen4": ("cpu", lacks("zen4")),
            "cu125": ("cpu", lacks("x86_64_v3")),
            "mkl": ("cpu", lacks("x86_64_v3")),
            "old": ("cpu", lacks("x86_64_v4")),
            "sky": ("cpu", INTEL_ONLY),
            "py312": ("python", PY312),
            "native": ("cpu", NATIVE_LACKS + "SSE4.1, SSE4.2, AVX, AVX2, FMA, AVX512F"),
            "unknown": ("cpu", UNKNOWN),
        },
    ),
    # Graviton-class aarch64: every wheel is for x86_64.
    "neoverse_v2": Expect(
        chosen=None,
        runs=(),
        refused={
            **{short: ("platform", on_aarch64("linux_x86_64")) for short in WHEELS},
            "stock": ("platform", on_aarch64("manylinux_2_17_x86_64")),
        },
    ),
}


@pytest.mark.parametrize("machine", sorted(EXPECTED))
def test_expectation_table(standin_dir: Path, machine: str) -> None:
    expect = EXPECTED[machine]
    result = pick(load_wheels(str(standin_dir)), host_from(machine))
    assessments = by_short(result)
    assert ranked(result) == list(expect.runs)
    for short in expect.runs:
        assert assessments[short][0] == "runs", (short, assessments[short])
    for short, (stage, reason) in expect.refused.items():
        status, got_stage, got_reason = assessments[short]
        assert (status, got_stage) == ("refused", stage), (short, assessments[short])
        assert reason in got_reason, (short, got_reason)
    # Every wheel is either expected to run or named with its refusal.
    assert set(expect.runs) | set(expect.refused) == set(WHEELS)
    if expect.chosen is None:
        assert result.chosen is None
    else:
        assert result.chosen is not None
        assert result.chosen.wheel.filename == WHEELS[expect.chosen]
        assert expect.chosen_reason in result.chosen.reason
        assert result.why[0] == result.chosen.reason


def test_the_nearest_miss_names_the_least_demanding_target(tmp_path: Path) -> None:
    # Without the unlabelled wheel nothing runs on K10; the error names x86_64_v2's missing features,
    # the nearest miss, not those of some AVX-512 target.
    names = {k: v for k, v in WHEELS.items() if k != "stock"}
    result = pick(load_wheels(str(make_wheels(tmp_path / "w", names))), host_from("k10"))
    assert result.chosen is None
    error = result.no_choice()
    assert error.exit_code == 4
    assert "runs on k10 (" in error.line()
    assert f"the nearest, {WHEELS['v2']}: " + lacks("x86_64_v2") in error.line()
    assert "sse4_1" in error.line()


# --- CUDA -------------------------------------------------------------------------------------------


def test_driver_too_old_for_the_cuda_wheel(standin_dir: Path) -> None:
    result = pick(load_wheels(str(standin_dir)), host_from("haswell", driver_cuda="12.4"))
    status, stage, reason = by_short(result)["cu125"]
    assert (status, stage) == ("refused", "cuda")
    # NVIDIA's table: CUDA 12.5 GA shipped with driver 555.42.02.
    assert reason == (
        "a CUDA 12.5 build, but the driver supports only CUDA 12.4 "
        "(CUDA 12.5 needs driver 555.42.02 or newer)"
    )
    assert result.chosen is not None and result.chosen.wheel.filename == WHEELS["v3"]


@pytest.mark.parametrize("driver", ["12.5", "12.8", "13.0"])
def test_a_usable_cuda_wheel_wins_over_cpu_wheels(standin_dir: Path, driver: str) -> None:
    result = pick(load_wheels(str(standin_dir)), host_from("haswell", driver_cuda=driver))
    assert result.chosen is not None
    assert result.chosen.wheel.filename == WHEELS["cu125"]
    assert result.chosen.reason.endswith(f"a CUDA 12.5 build; the driver supports CUDA {driver}")
    assert "a CUDA build the driver can run, preferred over CPU builds" in result.why
    # Even on Zen 4 with its own named wheel: the CUDA build comes first.
    zen4 = pick(load_wheels(str(standin_dir)), host_from("zen4", driver_cuda=driver))
    assert zen4.chosen is not None and zen4.chosen.wheel.filename == WHEELS["cu125"]
    assert ranked(zen4)[:2] == ["cu125", "zen4"]


def test_driver_none_means_the_cpu_wheel(standin_dir: Path) -> None:
    result = pick(load_wheels(str(standin_dir)), host_from("haswell", driver_cuda="none"))
    assert (
        by_short(result)["cu125"][2]
        == "a CUDA 12.5 build, but there is no GPU here (--driver-cuda)"
    )
    assert result.chosen is not None and result.chosen.wheel.filename == WHEELS["v3"]


# --- options -----------------------------------------------------------------------------------------


def test_variant_mkl_asks_for_the_onednn_build(standin_dir: Path) -> None:
    result = pick(
        load_wheels(str(standin_dir)),
        host_from("haswell"),
        PickOptions(variant=Variant.mkl),
    )
    assert result.chosen is not None and result.chosen.wheel.filename == WHEELS["mkl"]
    assessments = by_short(result)
    assert assessments["v3"][0] == "filtered"
    assert ranked(result) == ["mkl"]


def test_plain_build_is_preferred_over_mkl_and_says_so(standin_dir: Path) -> None:
    result = pick(load_wheels(str(standin_dir)), host_from("haswell"))
    assert "the plain build over the oneDNN (mkl) one; --variant mkl asks for that" in result.why
    assert (
        "the most specific CPU target that runs here: x86_64_v3 (over unlabelled, x86_64_v2)"
        in result.why
    )


def test_variant_cuda_without_gpu_names_the_gpu(standin_dir: Path) -> None:
    result = pick(
        load_wheels(str(standin_dir)),
        host_from("haswell"),
        PickOptions(variant=Variant.cuda),
    )
    assert result.chosen is None
    assert f"the nearest, {WHEELS['cu125']}: {NO_GPU}" in result.no_choice().line()


def test_tf_restricts_the_release(standin_dir: Path) -> None:
    options = PickOptions(tf="2.20")
    result = pick(load_wheels(str(standin_dir)), host_from("zen4"), options)
    assert result.chosen is not None and result.chosen.wheel.filename == WHEELS["old"]
    # On Haswell the only 2.20 wheel needs AVX-512: no choice, and that is the reason given.
    none = pick(load_wheels(str(standin_dir)), host_from("haswell"), options)
    assert none.chosen is None
    assert f"the nearest, {WHEELS['old']}: " + lacks("x86_64_v4") in none.no_choice().line()


def test_newest_release_wins_over_a_more_specific_older_one(standin_dir: Path) -> None:
    result = pick(load_wheels(str(standin_dir)), host_from("skylake_avx512"))
    assert ranked(result)[-1] == "old"  # x86_64_v4, but 2.20
    assert "the newest TensorFlow that runs here: 2.21.0" in result.why


def test_python_312_picks_the_cp312_wheel(standin_dir: Path) -> None:
    result = pick(load_wheels(str(standin_dir)), host_from("haswell", python="3.12"))
    assert result.chosen is not None and result.chosen.wheel.filename == WHEELS["py312"]
    assert by_short(result)["stock"][1] == "python"


def test_a_tf_that_is_no_version_is_a_usage_error() -> None:
    """(--variant is a choice the command line checks: tests/pick/test_cli.py.)"""
    with pytest.raises(UsageError, match=r"--tf 'two' is not a version"):
        PickOptions(tf="two")


def test_variant_option_is_the_shared_variant() -> None:
    options = PickOptions(tf="2.21", variant=Variant.mkl)
    assert serial.to_data(options) == {"tf": "2.21", "variant": "mkl", "overlay": False}
    assert (
        json.dumps(serial.to_data(options)) == '{"tf": "2.21", "variant": "mkl", "overlay": false}'
    )


@pytest.mark.parametrize(
    ("python", "driver"), [("3", None), ("3.x", None), (None, "12"), (None, "gpu")]
)
def test_bad_host_options_are_usage_errors(python: str | None, driver: str | None) -> None:
    with pytest.raises(UsageError):
        describe_host(cpuinfo=cpuinfo_fixture("haswell"), python=python, driver_cuda=driver)


# --- Python tags ----------------------------------------------------------------------------------------


def test_python_tags_exact_over_abi3_over_py3(tmp_path: Path) -> None:
    exact = f"{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl"
    abi3 = f"{DIST}-2.21.0+x86_64v3-cp39-abi3-linux_x86_64.whl"
    pure = f"{DIST}-2.21.0+x86_64v3-py3-none-any.whl"
    for name in (exact, abi3, pure):
        make_wheel(tmp_path, name)
    haswell = host_from("haswell")
    order = [v.wheel.filename for v in pick(load_wheels(str(tmp_path)), haswell).wheels]
    assert order == [exact, abi3, pure]
    # Python 3.8 is older than abi3's cp39: only the pure wheel fits.
    old = pick(load_wheels(str(tmp_path)), host_from("haswell", python="3.8"))
    assert old.chosen is not None and old.chosen.wheel.filename == pure
    refused = {v.wheel.filename: v.reason for v in old.wheels if not v.runs}
    assert refused[abi3] == (
        "built for cp39-abi3 (CPython 3.9 or newer), not the CPython 3.8 here (--python)"
    )


def test_other_platforms_are_refused_by_name(tmp_path: Path) -> None:
    mac = f"{DIST}-2.21.0-cp311-cp311-macosx_12_0_arm64.whl"
    arm = f"{DIST}-2.21.0+neoverse_v2-cp311-cp311-manylinux_2_17_aarch64.whl"
    for name in (mac, arm):
        make_wheel(tmp_path, name)
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    reasons = {v.wheel.filename: v.reason for v in result.wheels}
    assert reasons[mac] == "built for another operating system (macosx_12_0_arm64)"
    assert reasons[arm] == "built for aarch64 (manylinux_2_17_aarch64), but the machine is x86_64"
    # ... and the aarch64 wheel is the one for the Neoverse V2 machine.
    neoverse = pick(load_wheels(str(tmp_path)), host_from("neoverse_v2"))
    assert neoverse.chosen is not None and neoverse.chosen.wheel.filename == arm
    assert neoverse.chosen.reason == "neoverse_v2 is this machine's microarchitecture"


# --- receipts and labels --------------------------------------------------------------------------------


def test_receipt_features_beyond_the_label_refuse_the_wheel(tmp_path: Path) -> None:
    # Labelled x86_64_v3, but the receipt says -mavx512f was passed too: not for Haswell.
    wheel = make_wheel(tmp_path, WHEELS["v3"])
    write_receipt(wheel, "x86_64_v3", (*V3_FEATURES, "AVX512F"), "-mavx512f")
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    (assessment,) = result.wheels
    assert assessment.stage == "cpu"
    assert assessment.reason == (
        "would die with Illegal instruction: its receipt says the compiler turned on AVX512F, "
        "which this CPU lacks"
    )


def test_a_broken_receipt_is_a_warning_and_the_label_decides(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, WHEELS["v3"])
    wheel.with_suffix(".json").write_text("{not json")
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    assert result.chosen is not None and result.chosen.wheel.receipt is None
    (warning,) = result.warnings
    assert warning.startswith(f"receipt {wheel.with_suffix('.json')} not used: ")


def test_a_schema_1_receipt_is_only_a_warning(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, WHEELS["v3"])
    old = receipts.make_receipt(wheel, target="x86_64_v3") | {"schema": "tfbuild.receipt/1"}
    path = receipts.write_receipt(wheel, old)
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    assert result.chosen is not None and result.chosen.wheel.receipt is None
    assert result.chosen.reason == "x86_64_v3 runs here: it is an ancestor of the detected haswell"
    assert result.warnings == (
        f"receipt {path} not used: its schema is 'tfbuild.receipt/1'; this tfbuild reads "
        "tfbuild.receipt/2",
    )


def test_a_receipt_whose_plan_was_edited_is_not_believed(tmp_path: Path) -> None:
    # A native build's receipt edited to claim only AVX2: the wheel is judged without it.
    wheel = make_wheel(tmp_path, WHEELS["native"])
    data = receipts.make_receipt(wheel, target="native", label="native", cflags=("-march=native",))
    data["plan"]["coverage"] = [{"feature": "AVX2", "flag": "-march=native", "note": None}]
    path = receipts.write_receipt(wheel, data)
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    (assessment,) = result.wheels
    assert assessment.wheel.receipt is None and not assessment.runs
    assert "no receipt beside it says which instructions it uses" in assessment.reason
    assert result.warnings == (
        f"receipt {path} not used: its plan no longer matches its plan_sha256",
    )


def test_another_wheels_receipt_is_not_used(tmp_path: Path) -> None:
    v3 = make_wheel(tmp_path, WHEELS["v3"])
    v4 = make_wheel(tmp_path, WHEELS["v4"])
    receipts.write_receipt(v3, receipts.make_receipt(v4))
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    assert all(v.wheel.receipt is None for v in result.wheels)
    assert result.warnings == (
        f"receipt {v3.with_suffix('.json')} not used: it describes {v4.name!r}, not this wheel",
    )


def test_native_without_receipt_is_refused(tmp_path: Path) -> None:
    make_wheel(tmp_path, WHEELS["native"])
    (assessment,) = pick(load_wheels(str(tmp_path)), host_from("zen4")).wheels
    assert assessment.reason == (
        "built with -march=native on some machine, and no receipt beside it says which "
        "instructions it uses"
    )


def test_an_unlabelled_snapshot_takes_its_target_from_the_receipt(tmp_path: Path) -> None:
    named = f"{DIST}-2.20.0.dev0+selfbuilt-cp311-cp311-linux_x86_64.whl"
    write_receipt(make_wheel(tmp_path, named), "x86_64_v3", V3_FEATURES, "-march=x86-64-v3")
    haswell = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    assert haswell.chosen is not None
    assert haswell.chosen.target == "x86_64_v3"
    assert "(target from its receipt)" in haswell.chosen.reason
    piledriver = pick(load_wheels(str(tmp_path)), host_from("piledriver"))
    assert piledriver.chosen is None


def test_labels_spelt_with_dots_still_name_their_target(tmp_path: Path) -> None:
    # PEP 440 normalises x86_64v3 to x86.64v3; a wheel renamed that way keeps its meaning.
    make_wheel(tmp_path, f"{DIST}-2.21.0+x86.64v3-cp311-cp311-linux_x86_64.whl")
    result = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    assert result.chosen is not None and result.chosen.target == "x86_64_v3"


# --- this machine -----------------------------------------------------------------------------------


def test_manylinux_needs_this_machines_glibc(tmp_path: Path) -> None:
    if platform.machine() != "x86_64" or glibc_version() is None:
        pytest.skip("needs an x86-64 glibc host")
    future = f"{DIST}-2.21.0+x86_64-cp311-cp311-manylinux_2_99_x86_64.whl"
    today = f"{DIST}-2.21.0+x86_64-cp311-cp311-manylinux_2_17_x86_64.whl"
    for name in (future, today):
        make_wheel(tmp_path, name)
    here = describe_host(python="3.11", driver_cuda="none")
    assert here.live and here.source == "this machine"
    result = pick(load_wheels(str(tmp_path)), here)
    reasons = {v.wheel.filename: (v.stage, v.reason) for v in result.wheels}
    assert reasons[future] == (
        "glibc",
        f"needs glibc 2.99 or newer (manylinux_2_99_x86_64), but this machine has glibc "
        f"{platform.libc_ver()[1]}",
    )
    assert result.chosen is not None and result.chosen.wheel.filename == today
    # For a --cpuinfo machine the C library is unknown: not checked.
    elsewhere = pick(load_wheels(str(tmp_path)), host_from("haswell"))
    assert all(v.runs for v in elsewhere.wheels)


# --- sources ----------------------------------------------------------------------------------------


def test_empty_and_missing_directories(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no wheels here")
    with pytest.raises(InputError, match="no wheels in"):
        load_wheels(str(tmp_path))
    with pytest.raises(InputError, match="no such file or directory"):
        load_wheels(str(tmp_path / "absent"))
    (tmp_path / "broken.whl").write_text("")
    with pytest.raises(InputError, match="not a valid wheel file name"):
        load_wheels(str(tmp_path))


def test_parse_index_resolves_links_and_keeps_hashes() -> None:
    digest = "ab" * 32
    page = f"""<!DOCTYPE html><html><body>
    <a href="../../files/{DIST}-2.21.0%2Bx86_64v3-cp311-cp311-linux_x86_64.whl#sha256={digest}">a</a>
    <a href="https://mirror.example/{DIST}-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl">b</a>
    <a href="/files/{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.json">receipt</a>
    <a href="../">up</a><a>no href</a>
    <a href="../../files/{DIST}-2.21.0%2Bx86_64v3-cp311-cp311-linux_x86_64.whl#sha256={digest}">dup</a>
    </body></html>"""
    links = parse_index(page, "https://host.example/simple/tfbuild-standin/")
    assert links.wheels == (
        (
            f"{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl",
            f"https://host.example/files/{DIST}-2.21.0%2Bx86_64v3-cp311-cp311-linux_x86_64.whl",
            digest,
        ),
        (
            f"{DIST}-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl",
            f"https://mirror.example/{DIST}-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl",
            None,
        ),
    )
    assert links.receipts == (
        (
            f"{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.json",
            f"https://host.example/files/{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.json",
        ),
    )
    based = parse_index(
        '<base href="https://cdn.example/w/"><a href="x-1.0-py3-none-any.whl">x</a>',
        "https://a.example/",
    )
    assert based.wheels == (
        ("x-1.0-py3-none-any.whl", "https://cdn.example/w/x-1.0-py3-none-any.whl", None),
    )


def test_json_shape(standin_dir: Path) -> None:
    data = serial.to_data(pick_report(pick(load_wheels(str(standin_dir)), host_from("zen4"))))
    assert data["schema"] == "tfbuild.pick/1"
    host = data["host"]
    assert (host["target"], host["python"], host["driver_cuda"]) == ("zen4", "3.11", None)
    assert host["source"].endswith("linux-rocky8.5-zen4")
    assert data["chosen"]["filename"] == WHEELS["zen4"]
    assert data["chosen"]["receipt"] == {
        "source": str(standin_dir / WHEELS["zen4"].replace(".whl", ".json")),
        "target": "zen4",
        "variant": "cpu",
        "architecture": "x86_64",
        "cflags": ["-march=znver4"],
        "covered": list(ZEN4_FEATURES),
        "floor": None,
    }
    assert len(data["wheels"]) == len(WHEELS)
    assert {w["status"] for w in data["wheels"]} == {"runs", "refused"}
    stock = next(w for w in data["wheels"] if w["filename"] == WHEELS["stock"])
    assert stock["label"] is None and stock["target"] is None and stock["rank"] == 6
