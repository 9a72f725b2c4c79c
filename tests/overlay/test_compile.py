"""The overlay's kernel files and their flags: the part compiled without Eigen's fast math is kept
apart from the others (real object files, made by this host's C++ compiler)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tfbuild.core.compilers import CompilerExecutable, compiler_at, find_compiler
from tfbuild.core.errors import EnvironmentProblem
from tfbuild.overlay import compile as overlay_compile
from tfbuild.overlay.compile import (
    FP16_CLANG,
    LOADER_SAYS,
    MACROS,
    PART_FLAGS,
    SOURCES,
    SYSTEM_FLAGS,
    SYSTEM_ONLY,
    host_toolchain,
    loader_line,
    predefined,
    shared_math,
    target_features,
    workarounds,
)
from tfbuild.overlay.ops import PARTS

PACKAGE = Path(overlay_compile.__file__).parent

#: A template of Eigen::internal (what fast math changes) and one of another namespace, both
#: instantiated out of line, as the linker merges them across object files.
SHARED = """
namespace Eigen { namespace internal {
template <typename T> __attribute__((noinline)) T psquare(T x) { return x * x; }
}}
namespace other {
template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }
}
"""


def compiled(tmp_path: Path, name: str, body: str) -> Path:
    try:
        compiler = find_compiler("clang", needed_for="these tests compile").path
    except EnvironmentProblem:
        pytest.skip("no C++ compiler on this host")
    source = tmp_path / f"{name}.cc"
    source.write_text(body)
    obj = tmp_path / f"{name}.o"
    subprocess.run([compiler, "-c", "-O2", str(source), "-o", str(obj)], check=True, timeout=120)
    return obj


def test_the_code_fast_math_changes_that_two_objects_both_define_is_found(tmp_path: Path) -> None:
    own = compiled(
        tmp_path,
        "own",
        SHARED + "float a(float x) { return Eigen::internal::psquare(x); }\n"
        "float b(float x) { return other::twice(x); }\n"
        "double c(double x) { return Eigen::internal::psquare(x); }\n",
    )
    other = compiled(
        tmp_path,
        "other",
        SHARED + "float d(float x) { return Eigen::internal::psquare(x); }\n"
        "float e(float x) { return other::twice(x); }\n",
    )
    # psquare<float> is in both; psquare<double> only in one; twice<float> is no Eigen math
    assert shared_math(own, [other]) == ("_ZN5Eigen8internal7psquareIfEET_S2_",)
    assert shared_math(own, []) == ()


def test_objects_that_share_nothing_of_it_pass(tmp_path: Path) -> None:
    own = compiled(
        tmp_path, "own", SHARED + "double c(double x) { return Eigen::internal::psquare(x); }\n"
    )
    other = compiled(
        tmp_path, "other", SHARED + "float d(float x) { return Eigen::internal::psquare(x); }\n"
    )
    assert shared_math(own, [other]) == ()


def test_every_part_is_a_kernel_file_of_the_package_that_includes_its_inc_file() -> None:
    for part in PARTS:
        assert f"{part}_kernels.cc" in SOURCES
        assert f'#include "{part}_ops.inc"' in (PACKAGE / f"{part}_kernels.cc").read_text()
    assert set(PART_FLAGS) <= set(PARTS)


#: Sapphire Rapids enables AVX512-FP16, Haswell does not.
FP16_TARGET, OLDER_TARGET = "-march=sapphirerapids", "-march=haswell"


def host_compiler(program: str) -> CompilerExecutable:
    compiler = compiler_at(program, why="this test")
    if compiler is None:
        pytest.skip(f"no {program} on this machine")
    return compiler


def test_clang_16_builds_a_target_with_fp16_without_it(tmp_path: Path) -> None:
    clang = host_compiler("clang++-16")
    assert clang.family == "clang" and clang.major == 16 < FP16_CLANG
    toolchain = host_toolchain(clang.path)
    (fp16,) = (
        o
        for o in workarounds(clang, toolchain, [FP16_TARGET], cwd=tmp_path)
        if o.flag == "-mno-avx512fp16"
    )
    assert fp16.instruction_set == "avx512_fp16" and "clang before 19" in fp16.why
    assert not fp16.system  # a vector set left out for the compiler's sake
    older = workarounds(clang, toolchain, [OLDER_TARGET], cwd=tmp_path)
    assert "-mno-avx512fp16" not in {o.flag for o in older}


def test_gcc_builds_a_target_with_fp16_as_it_is(tmp_path: Path) -> None:
    gcc = host_compiler("g++")
    assert gcc.family == "gcc"
    found = workarounds(gcc, host_toolchain(gcc.path), [FP16_TARGET], cwd=tmp_path)
    assert "-mno-avx512fp16" not in {o.flag for o in found}
    assert found  # the system-only sets, still left out


#: Targets whose -march enables system-only instruction sets a hypervisor may hide: pku and
#: rdseed (icelake-server), rdpru, mwaitx, clzero and wbnoinvd (znver3), shstk (sapphirerapids).
SYSTEM_TARGETS = (
    "-march=icelake-server",
    "-march=znver3",
    "-march=sapphirerapids",
    "-march=haswell",
)


@pytest.mark.parametrize("program", ["clang++-16", "g++"])
@pytest.mark.parametrize("march", SYSTEM_TARGETS)
def test_the_kernels_keep_every_vector_set_and_no_system_one(
    program: str, march: str, tmp_path: Path
) -> None:
    """Compiled with the workarounds, a target's kernels are left no system-only instruction set
    (nothing the loader would check that a virtual machine may hide), and every vector and
    arithmetic set the target enables stays, as the compiler itself says (its macros)."""
    compiler = host_compiler(program)
    toolchain = host_toolchain(compiler.path)
    before = predefined(toolchain, [march], cwd=tmp_path)
    left_out = workarounds(compiler, toolchain, [march], cwd=tmp_path)
    added = [o.flag for o in left_out]
    # each named by what /proc/cpuinfo (and so the loader and pick) call it
    assert {o.instruction_set for o in left_out if o.system} <= SYSTEM_FLAGS
    assert {o.instruction_set for o in left_out if not o.system} <= {"avx512_fp16"}
    after = predefined(toolchain, [march, *added], cwd=tmp_path)
    assert not after & set(SYSTEM_ONLY), sorted(after & set(SYSTEM_ONLY))
    fp16 = {"__AVX512FP16__"} if "-mno-avx512fp16" in added else set()
    vector = {m for m in before if MACROS.get(m)} - set(SYSTEM_ONLY) - fp16
    assert vector <= after, sorted(vector - after)
    # each flag added turns off one set the target had: none is there for nothing
    turned_off = {SYSTEM_ONLY[m][0] for m in before & set(SYSTEM_ONLY)} | (
        {"-mno-avx512fp16"} if fp16 else set()
    )
    assert set(added) == turned_off
    assert set(target_features(toolchain, [march, *added], cwd=tmp_path)).isdisjoint(
        {"pku", "rdseed", "rdrand", "fsgsbase", "rdpid", "clflushopt", "clwb"}
    )


def _fleet() -> list[str]:
    """Every x86-64 target TensorFlow's stock wheels run on that tfbuild knows (archspec's and its
    additions): the portable levels with AVX, and each microarchitecture from haswell and zen on."""
    from tfbuild.core.targets import targets

    table = targets()
    roots = {table["haswell"], table["zen"]}
    return sorted(
        name
        for name, t in table.items()
        if name in ("x86_64_v3", "x86_64_v4") or t in roots or roots & set(t.ancestors)
    )


@pytest.mark.parametrize("program", ["clang++-16", "g++"])
@pytest.mark.parametrize("target", _fleet())
def test_every_target_of_the_fleet_compiles_with_every_set_checked(
    program: str, target: str, tmp_path: Path
) -> None:
    """The target's flags as tfbuild overlay --compiler plans them for this compiler (archspec's, or
    the nearest target it knows plus -m options); where neither reaches the target, one line names
    the compiler to use. Otherwise the compiler takes them, the workarounds leave only system sets
    and (for clang before 19) AVX512-FP16 out, and every set the kernels may use is one the loader
    checks (an unknown one would stop the build)."""
    from tfbuild.core.compilers import release_in
    from tfbuild.core.errors import UnsupportedError
    from tfbuild.detect import features
    from tfbuild.detect.compilers import Compiler, flags_for
    from tfbuild.detect.cpu import lookup_target

    compiler = host_compiler(program)
    release = release_in(compiler.version)
    assert release is not None
    micro = lookup_target(target)
    family = Compiler(name=compiler.family, version=release, spec=program)
    try:
        planned = flags_for(micro, family, machine_features=features.present(micro.features))
    except UnsupportedError as refused:
        assert refused.fix.startswith(f"Use {compiler.family} "), refused.line()
        return
    cflags = list(planned.flags)
    toolchain = host_toolchain(compiler.path)
    left_out = workarounds(compiler, toolchain, cflags, cwd=tmp_path)
    assert {o.instruction_set for o in left_out if not o.system} <= {"avx512_fp16"}
    found = target_features(toolchain, [*cflags, *(o.flag for o in left_out)], cwd=tmp_path)
    loader = (PACKAGE / "loader.c").read_text()
    assert all(f'{{"{name}", ' in loader for name in found), found
    assert "avx" in found  # more than stock's


def test_the_loaders_line_is_picked_out_of_standard_error_first_or_last() -> None:
    said = (
        "2026-11-29 06:39:11: I tensorflow/core/platform/cpu_feature_guard.cc:210] AVX2\n"
        "tfbuild overlay (x86_64_v4, TensorFlow 2.21): not loaded, stock kernels run: first\n"
        "run: tfbuild overlay --check\n"
        "tfbuild overlay (x86_64_v4, TensorFlow 2.21): loaded, 9 kernels\n"
    )
    assert loader_line(said, last=False) == (
        "tfbuild overlay (x86_64_v4, TensorFlow 2.21): not loaded, stock kernels run: first"
    )
    assert (
        loader_line(said, last=True)
        == "tfbuild overlay (x86_64_v4, TensorFlow 2.21): loaded, 9 kernels"
    )
    assert loader_line("run: tfbuild overlay --check\n", last=True) is None
    # Every line the loader writes begins so.
    loader = (PACKAGE / "loader.c").read_text()
    assert (
        loader.count("fprintf(stderr,") == loader.count(f'"{LOADER_SAYS}%s, TensorFlow %s): ') == 3
    )
