"""Compiler flags: archspec's -march plus TensorFlow's guard features, checked with real compilers.

The claims in tfbuild.detect.features and the flags tfbuild computes are compiled with every gcc and
clang found on this machine (``-dM -E``): each feature claimed covered must really be enabled, and no
guard feature the machine lacks may be enabled (that wheel would die with SIGILL there).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import archspec.cpu
import pytest

from tests.conftest import cpuinfo_fixture, cpuinfo_fixtures
from tfbuild.core import commands
from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.detect import cpu, features
from tfbuild.detect.compilers import Compiler, first_version, flags_for, parse_compiler
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.recipes.tfversions import parse_version


def _installed_compilers() -> list[str]:
    found = []
    for name in ("gcc", "clang", *(f"clang-{v}" for v in range(14, 22))):
        if shutil.which(name):
            found.append(name)
    return found


INSTALLED = _installed_compilers()


def _version_of(executable: str) -> Compiler:
    family = "gcc" if executable.startswith("gcc") else "clang"
    out = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True)
    version = re.search(r"(\d+\.\d+\.\d+)", out.stdout)
    assert version, out.stdout
    return parse_compiler(f"{family}-{version.group(1)}")


def _macros(executable: str, flags: tuple[str, ...]) -> set[str]:
    out = subprocess.run(
        [executable, *flags, "-dM", "-E", "-x", "c", "/dev/null"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split()[1] for line in out.stdout.splitlines() if line.startswith("#define")}


def _macro(feature: features.GuardFeature) -> str:
    """The predefined macro the guard tests at compile time (``-msse4.1``: ``__SSE4_1__``)."""
    name = feature.option.removeprefix("-m").replace(".", "_").replace("-", "_")
    return f"__{name.upper()}__"


def _guard_macros(defined: set[str]) -> set[str]:
    return {f.name for f in features.GUARD_FEATURES if _macro(f) in defined}


def test_a_compiler_is_installed_to_check_against() -> None:
    # gcc is part of this project's machines; without it the checks below would check nothing.
    assert "gcc" in INSTALLED


X86_DUMPS = [p for p in cpuinfo_fixtures() if read_cpuinfo(p).architecture == "x86_64"]


@pytest.mark.parametrize("executable", INSTALLED)
@pytest.mark.parametrize("dump", X86_DUMPS, ids=lambda p: p.name)
def test_host_flags_enable_exactly_what_the_machine_has(executable: str, dump: Path) -> None:
    compiler = _version_of(executable)
    info = read_cpuinfo(dump)
    have = set(cpu.guard_features(info))
    result = flags_for(cpu.identify(info), compiler, machine_features=have)
    enabled = _guard_macros(_macros(executable, result.flags))
    claimed = {c.feature for c in result.coverage if c.flag}
    assert claimed <= enabled, f"claimed but not enabled: {claimed - enabled} by {result.flags}"
    assert enabled <= have, f"enables what {dump.name} lacks: {enabled - have}"
    # Compilers new enough to know every guard option leave nothing uncovered.
    newest_needed = (13, 1) if compiler.name == "gcc" else (16, 0)
    if parse_version(compiler.version) >= newest_needed:
        assert result.uncovered == ()


@pytest.mark.parametrize("executable", INSTALLED)
@pytest.mark.parametrize("level", ["x86_64", "x86_64_v2", "x86_64_v3", "x86_64_v4", "haswell"])
def test_portable_targets_stay_portable(executable: str, level: str) -> None:
    compiler = _version_of(executable)
    target = archspec.cpu.TARGETS[level]
    guaranteed = set(features.present(target.features))
    result = flags_for(target, compiler, machine_features=guaranteed)
    enabled = _guard_macros(_macros(executable, result.flags))
    assert enabled <= guaranteed
    assert {c.feature for c in result.coverage if c.flag} <= enabled


@pytest.mark.parametrize("executable", INSTALLED)
@pytest.mark.parametrize("feature", features.GUARD_FEATURES, ids=lambda f: f.name)
def test_each_option_enables_its_feature_and_what_it_claims_to_imply(
    executable: str, feature: features.GuardFeature
) -> None:
    compiler = _version_of(executable)
    minimum = feature.gcc if compiler.name == "gcc" else feature.clang
    if parse_version(compiler.version) < parse_version(minimum):
        probe = subprocess.run(
            [executable, feature.option, "-E", "-x", "c", "/dev/null"],
            capture_output=True,
            check=False,
        )
        assert probe.returncode != 0, f"{compiler} accepts {feature.option}: lower the minimum"
        return
    enabled = _guard_macros(_macros(executable, (feature.option,)))
    assert features.closure([feature.name]) <= enabled


def test_zen5_guest_needs_three_options_beyond_x86_64_v4() -> None:
    # The project's own Zen 5 VM: -march=x86-64-v4 leaves AVX512_VNNI, AVX512_BF16 and AVX_VNNI
    # uncovered, exactly the extra names the stock wheel prints beyond what -mavx covers.
    info = read_cpuinfo(cpuinfo_fixture("zen5-vm"))
    result = flags_for(
        cpu.identify(info), parse_compiler("clang-18"), machine_features=cpu.guard_features(info)
    )
    assert result.flags == (
        "-march=x86-64-v4",
        "-mtune=generic",
        "-mavx512vnni",
        "-mavx512bf16",
        "-mavxvnni",
    )
    by_feature = {c.feature: c.flag for c in result.coverage}
    assert by_feature["AVX2"] == "-march=x86-64-v4"
    assert by_feature["AVX_VNNI"] == "-mavxvnni"


def test_zen5_features_beyond_avx_are_the_stock_wheels_message() -> None:
    # stock-wheel-baseline.md: "To enable the following instructions: AVX2 AVX512F AVX512_VNNI
    # AVX512_BF16 AVX_VNNI FMA" on this CPU, from a wheel built with -mavx.
    info = read_cpuinfo(cpuinfo_fixture("zen5-vm"))
    unused = [f for f in cpu.guard_features(info) if f not in features.closure(["AVX"])]
    assert " ".join(unused) == "AVX2 AVX512F AVX512_VNNI AVX512_BF16 AVX_VNNI FMA"


def test_znver4_needs_only_avxvnni_on_zen5() -> None:
    info = read_cpuinfo(cpuinfo_fixture("zen5-vm"))
    result = flags_for(
        archspec.cpu.TARGETS["zen4"],
        parse_compiler("clang-18"),
        machine_features=cpu.guard_features(info),
    )
    assert " ".join(result.flags) == "-march=znver4 -mtune=znver4 -mavxvnni"


def test_a_compiler_that_does_not_know_the_target_falls_back_when_its_options_cover_it() -> None:
    # archspec spells zen5 for clang from 19.1 on; clang 18's znver4 plus -mavxvnni still turns
    # on every guard feature Zen 5 has, so the wheel loses nothing TensorFlow checks.
    zen5 = archspec.cpu.TARGETS["zen5"]
    result = flags_for(
        zen5, parse_compiler("clang-18.1.8"), machine_features=features.present(zen5.features)
    )
    assert result.march_target == "zen4"
    assert result.flags == ("-march=znver4", "-mtune=znver4", "-mavxvnni")
    assert result.uncovered == ()
    assert any("does not know zen5" in w for w in result.warnings)


def test_old_gcc_that_leaves_guard_features_off_is_refused() -> None:
    # gcc 9.4 does not know zen4 (archspec: 10.3 on), and its zen2 fallback has no -mavx512bf16.
    info = read_cpuinfo(cpuinfo_fixture("zen4"))
    with pytest.raises(UnsupportedError) as caught:
        flags_for(
            cpu.identify(info), parse_compiler("gcc-9.4"), machine_features=cpu.guard_features(info)
        )
    line = caught.value.line()
    assert line.startswith("gcc-9.4.0 cannot build for zen4: archspec: cannot produce")
    assert "the nearest target it knows, zen2," in line and "leaves AVX512_BF16 off" in line
    assert line.endswith(
        "Use gcc 10.3 or newer (archspec spells zen4 from there on), or build for zen2."
    )
    assert caught.value.exit_code == 4


def test_gcc_4_8_is_too_old_for_an_avx512_machine() -> None:
    # archspec spells x86_64_v4 for gcc from 6.0 on; gcc 4.8 has no -mavx512f at all.
    info = read_cpuinfo(cpuinfo_fixture("zen5-vm"))
    with pytest.raises(
        UnsupportedError, match="leaves AVX512F, AVX512_VNNI, AVX512_BF16, AVX_VNNI off"
    ):
        flags_for(
            cpu.identify(info), parse_compiler("gcc-4.8"), machine_features=cpu.guard_features(info)
        )
    # The same compiler still knows the Haswell of another dump: only the target decides.
    haswell = read_cpuinfo(cpuinfo_fixture("haswell"))
    result = flags_for(
        cpu.identify(haswell),
        parse_compiler("gcc-4.8"),
        machine_features=cpu.guard_features(haswell),
    )
    assert result.flags[:2] == ("-march=core-avx2", "-mtune=core-avx2")


def test_a_family_archspec_has_no_flags_for_is_refused() -> None:
    # archspec's answer for gcc on 32-bit Arm is an empty string: no target, only gcc's default.
    with pytest.raises(UnsupportedError, match="archspec knows no gcc flags for the arm family"):
        flags_for(archspec.cpu.TARGETS["arm"], parse_compiler("gcc-12"), machine_features=())


@pytest.mark.parametrize(
    ("target", "compiler", "first"),
    [("x86_64_v4", "gcc", "6.0"), ("zen4", "gcc", "10.3"), ("zen5", "clang", "19.1"),
     ("x86_64", "clang", None)],
)  # fmt: skip
def test_first_version_is_archspecs_oldest_range(target: str, compiler: str, first: str) -> None:
    assert first_version(archspec.cpu.TARGETS[target], compiler) == first


def test_gcc_12_2_gets_archspecs_znver3_list_for_zen4() -> None:
    # archspec's range "10.3:12.2" must include 12.2.x (a full version compares above "12.2").
    info = read_cpuinfo(cpuinfo_fixture("zen4"))
    result = flags_for(
        cpu.identify(info), parse_compiler("gcc-12.2.0"), machine_features=cpu.guard_features(info)
    )
    assert result.march_target == "zen4"
    assert result.flags[:2] == ("-march=znver3", "-mtune=znver3")
    assert result.flags[-1] == "-mavx512bf16"  # archspec's list lacks it; Zen 4 has it


def test_too_old_compiler_for_any_ancestor_is_refused() -> None:
    # archspec: nvhpc has no flags for the plain x86_64 level, and x86_64 has no ancestors.
    with pytest.raises(UnsupportedError, match="cannot build for x86_64"):
        flags_for(
            archspec.cpu.TARGETS["x86_64"],
            Compiler(name="nvhpc", version="23.0.0", spec="nvhpc-23"),
            machine_features=(),
        )


@pytest.mark.parametrize(
    ("spec", "name", "version"),
    [
        ("gcc-12", "gcc", "12.1.0"),
        ("gcc-12.2", "gcc", "12.2.0"),
        ("gcc@11.4.0", "gcc", "11.4.0"),
        ("clang-18", "clang", "18.1.0"),
        ("clang-16", "clang", "16.0.0"),
        ("Clang-18.1.8", "clang", "18.1.8"),
        ("apple-clang-15", "apple-clang", "15.0.0"),
    ],
)
def test_compiler_specs(spec: str, name: str, version: str) -> None:
    compiler = parse_compiler(spec)
    assert (compiler.name, compiler.version) == (name, version)


def test_bare_name_asks_the_compiler_on_path() -> None:
    real = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=True)
    assert parse_compiler("gcc").version == real.stdout.strip()


def test_bare_name_without_a_compiler_is_a_usage_error() -> None:
    def nothing_installed(call: commands.Command) -> commands.Finished:
        return commands.Finished(returncode=None, problem="it cannot run: No such file")

    with (
        commands.replaying(nothing_installed),
        pytest.raises(UsageError, match="Give the version explicitly"),
    ):
        parse_compiler("clang")
