"""The overlay's kernel files and their flags: the part compiled without Eigen's fast math is kept
apart from the others (real object files, made by this host's C++ compiler)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tfbuild.core.errors import EnvironmentProblem
from tfbuild.overlay import compile as overlay_compile
from tfbuild.overlay.compile import PART_FLAGS, SOURCES, shared_math
from tfbuild.overlay.ops import PARTS
from tfbuild.smoke.forecast import find_compiler

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
        compiler = find_compiler("clang").path
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
