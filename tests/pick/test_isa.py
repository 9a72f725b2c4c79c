"""`tfbuild pick`'s CPU check decides by instruction sets: flags archspec lists for a target that are
not instruction sets compiled code can depend on (flush_l1d, pku, tsc_adjust) never refuse a wheel.

The machine is the project's own Zen 4 VM (tests/pick/fixtures/README.md), whose hypervisor hides
flush_l1d and pku; the Zen 5 VM of the shared dumps also hides rdseed, a real instruction set. The
expected reasons were worked out by hand from the dumps' flags and archspec's targets.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture
from tests.pick.conftest import DIST, WHEELS, ZEN4_VM, make_wheel
from tfbuild.detect.cpu import NOT_INSTRUCTION_SETS
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.detect.features import GUARD_FEATURES
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import describe_host
from tfbuild.pick.rank import PickResult, pick

ZEN5_WHEEL = f"{DIST}-2.21.0+zen5-cp311-cp311-linux_x86_64.whl"


def reasons(result: PickResult) -> dict[str, tuple[str, str]]:
    return {v.wheel.filename: (v.status, v.reason) for v in result.wheels}


def test_the_recorded_zen4_vm_is_what_its_readme_says() -> None:
    from archspec.cpu import TARGETS

    info = read_cpuinfo(ZEN4_VM)
    assert (info.vendor, info.family, info.model, info.logical_cpus) == ("AuthenticAMD", 25, 17, 2)
    assert {"flush_l1d", "pku"} <= TARGETS["zen4"].features
    assert {"flush_l1d", "pku"}.isdisjoint(info.flags)
    assert {"rdseed", "avx512_bf16", "avx512_vnni"} <= info.flags


def test_a_zen4_wheel_runs_on_a_zen4_vm_that_hides_flush_l1d_and_pku(standin_dir: Path) -> None:
    host = describe_host(cpuinfo=ZEN4_VM, python="3.11")
    assert host.target == "x86_64_v4"  # archspec's name, unchanged: the two flags are missing
    result = pick(load_wheels(str(standin_dir)), host)
    assert result.chosen is not None and result.chosen.wheel.filename == WHEELS["zen4"]
    assert result.chosen.reason == (
        "zen4 runs here: the CPU has every instruction set it needs; it lacks only flush_l1d (a "
        "cache-flush command the kernel writes to a model-specific register), pku (protection "
        "keys, usable only once the kernel grants one at run time), which compiled code cannot "
        "depend on; every feature its receipt records is here"
    )
    ranked = [v.wheel.filename for v in result.wheels if v.rank is not None]
    short = {name: key for key, name in WHEELS.items()}
    assert [short[name] for name in ranked] == ["zen4", "v4", "v3", "mkl", "v2", "stock", "old"]


def test_a_missing_instruction_set_still_refuses_and_only_it_is_named(tmp_path: Path) -> None:
    # The Zen 5 VM lacks flush_l1d, pku and rdseed: only rdseed (RDSEED) is an instruction set.
    make_wheel(tmp_path, WHEELS["zen4"])
    make_wheel(tmp_path, ZEN5_WHEEL)
    zen5_vm = describe_host(cpuinfo=cpuinfo_fixture("epyc-zen5-vm"), python="3.11")
    on_zen5 = reasons(pick(load_wheels(str(tmp_path)), zen5_vm))
    assert on_zen5[WHEELS["zen4"]] == (
        "refused",
        "would die with Illegal instruction: zen4 requires features the CPU lacks: rdseed",
    )
    # On the Zen 4 VM a zen5 wheel lacks four instruction sets besides flush_l1d and pku.
    zen4_vm = describe_host(cpuinfo=ZEN4_VM, python="3.11")
    on_zen4 = reasons(pick(load_wheels(str(tmp_path)), zen4_vm))
    assert on_zen4[ZEN5_WHEEL] == (
        "refused",
        "would die with Illegal instruction: zen5 requires features the CPU lacks: "
        "avx512_vp2intersect, avx_vnni, movdir64b, movdiri",
    )
    assert on_zen4[WHEELS["zen4"]][0] == "runs"


def test_a_bare_metal_zen4_is_judged_as_before(tmp_path: Path) -> None:
    make_wheel(tmp_path, WHEELS["zen4"])
    host = describe_host(cpuinfo=cpuinfo_fixture("rocky8.5-zen4"), python="3.11")
    result = pick(load_wheels(str(tmp_path)), host)
    assert reasons(result)[WHEELS["zen4"]] == ("runs", "zen4 is this machine's microarchitecture")


def test_the_flags_left_out_are_archspec_features_but_no_instruction_level() -> None:
    """Each name is one archspec uses for some x86-64 target (no dead or misspelt entry), none is
    part of a portable level (x86_64_v2..v4, the psABI's instruction sets) nor one of TensorFlow's
    guard features."""
    from archspec.cpu import TARGETS

    root = TARGETS["x86_64"]
    x86 = [t for t in TARGETS.values() if t == root or root in t.ancestors]
    levels = [t for t in x86 if t.vendor == "generic"]
    guard_flags = {flag for feature in GUARD_FEATURES for flag in feature.cpuinfo}
    for flag in NOT_INSTRUCTION_SETS:
        assert any(flag in t.features for t in x86), flag
        assert not any(flag in t.features for t in levels), flag
        assert flag not in guard_flags, flag


def test_no_compiler_option_turns_on_flush_l1d_or_tsc_adjust() -> None:
    """The real gcc's target options: none for flush_l1d or tsc_adjust (kernel-only registers). pku
    has one (-mpku: RDPKRU/WRPKRU), so it is left out for another reason, the run-time grant of a key
    (detect.cpu.NOT_INSTRUCTION_SETS)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc on this machine")
    listed = subprocess.run(
        [gcc, "-Q", "--help=target"], capture_output=True, text=True, check=True
    ).stdout
    options = {re.sub(r"[-_]", "", o) for o in re.findall(r"^\s+(-m[\w.=-]+)", listed, re.M)}
    assert "mavx512f" in options  # the listing is the one expected
    assert "mpku" in options
    for flag in ("flush_l1d", "tsc_adjust"):
        squashed = flag.replace("_", "")
        assert not any(squashed in option for option in options), flag
