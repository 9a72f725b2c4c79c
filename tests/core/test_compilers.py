"""The one compiler prober, asked of this host's real compilers (g++ and a clang++, on PATH or in a
directory of links to them): which one is found for a plan, its family, version line and release,
and the C driver beside it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tfbuild.core.compilers import (
    CXX_NAMES,
    c_driver,
    compiler_at,
    find_compiler,
    release_in,
    release_of,
    version_line,
)
from tfbuild.core.errors import EnvironmentProblem

GXX = shutil.which("g++")
CLANGXX = next(filter(None, map(shutil.which, CXX_NAMES["clang"])), None)
needs_gxx = pytest.mark.skipif(GXX is None, reason="no g++ on this machine")
needs_clang = pytest.mark.skipif(CLANGXX is None, reason="no clang++ on this machine")
NEEDED_FOR = "these tests compile"


def said(*argv: str) -> str:
    """What a real compiler prints, stripped: the truth the prober is held to."""
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def links(tmp_path: Path, programs: dict[str, str | None]) -> str:
    """A directory holding only links to real programs, by name: a PATH of just those."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in programs.items():
        assert target is not None
        (bin_dir / name).symlink_to(target)
    return str(bin_dir)


@needs_gxx
def test_a_gcc_plan_finds_g_plus_plus_and_says_why() -> None:
    assert GXX is not None
    found = find_compiler("gcc-12", needed_for=NEEDED_FOR)
    assert found.path == GXX
    assert found.family == "gcc"
    assert found.version == said(GXX, "--version").splitlines()[0]
    assert found.why == "the plan's compiler family (gcc-12)"
    assert found.major == int(said(GXX, "-dumpfullversion").split(".")[0])


@needs_clang
def test_a_clang_plan_finds_a_clang_plus_plus_first() -> None:
    assert CLANGXX is not None
    found = find_compiler("clang-18.1.8", needed_for=NEEDED_FOR)
    assert found.path == CLANGXX  # the first of the names looked for that this host has
    assert found.family == "clang"
    assert found.why == "the plan's compiler family (clang-18.1.8)"
    assert found.major == int(said(CLANGXX, "-dumpversion").split(".")[0])


@needs_gxx
def test_without_the_plans_family_the_other_is_used_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", links(tmp_path, {"g++": GXX}))
    found = find_compiler("clang-18", needed_for=NEEDED_FOR)
    assert (found.path, found.family) == (str(tmp_path / "bin/g++"), "gcc")
    assert found.why == "this host has no clang (the plan's clang-18): its gcc instead"


@needs_clang
def test_c_plus_plus_is_the_last_resort_and_its_family_is_read_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", links(tmp_path, {"c++": CLANGXX}))  # a c++ that is clang
    found = find_compiler("gcc-12", needed_for=NEEDED_FOR)
    assert (found.path, found.family) == (str(tmp_path / "bin/c++"), "clang")
    assert found.why == "this host has no gcc (the plan's gcc-12): its clang instead"


def test_no_compiler_at_all_is_refused_with_what_needs_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", links(tmp_path, {}))
    with pytest.raises(EnvironmentProblem) as refused:
        find_compiler("clang-18", needed_for=NEEDED_FOR)
    assert refused.value.what == "no C++ compiler on this host"
    assert refused.value.why == f"{NEEDED_FOR} (clang++, g++ or c++ on PATH)"


def test_a_program_that_is_missing_or_fails_is_no_compiler() -> None:
    assert compiler_at("tfbuild-no-such-compiler", why="--compiler") is None
    assert compiler_at("false", why="--compiler") is None  # runs, exits 1
    assert version_line("false") is None


@needs_gxx
def test_a_program_named_by_its_path_is_probed_as_it_is() -> None:
    assert GXX is not None
    found = compiler_at(GXX, why="--compiler")
    assert found is not None
    assert (found.path, found.family, found.why) == (GXX, "gcc", "--compiler")


@needs_gxx
def test_gcc_tells_its_release_whole() -> None:
    assert release_of("gcc", family="gcc") == said("gcc", "-dumpfullversion")


@needs_clang
def test_clang_names_its_release_in_its_version_line() -> None:
    assert CLANGXX is not None
    assert release_of(CLANGXX, family="clang") == said(CLANGXX, "-dumpversion")


def test_a_missing_compiler_has_no_release() -> None:
    assert release_of("tfbuild-no-such-gcc", family="gcc") is None
    assert release_of("tfbuild-no-such-clang", family="clang") is None


@pytest.mark.parametrize(
    ("line", "release"),
    [
        ("g++ (Debian 12.2.0-14+deb12u1) 12.2.0", "12.2.0"),
        ("g++ (GCC) 13.2.1 20230801", "13.2.1"),  # Fedora's: a date after the release
        ("g++-11 (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0", "11.4.0"),
        ("Debian clang version 16.0.6 (15~deb12u1)", "16.0.6"),
        (
            "Ubuntu clang version 18.1.8 (++20240731024944+3b5b5c1ec4a3-1~exp1~20240731145000.144)",
            "18.1.8",
        ),
        ("Apple clang version 15.0.0 (clang-1500.3.9.4)", "15.0.0"),
        ("cc: fatal error: no input files", None),
    ],
)
def test_the_release_is_read_from_a_version_line(line: str, release: str | None) -> None:
    assert release_in(line) == release


@needs_clang
def test_the_c_driver_beside_a_clang_plus_plus_is_its_clang_of_the_same_version() -> None:
    assert CLANGXX is not None
    clang = Path(CLANGXX).with_name(Path(CLANGXX).name.replace("clang++", "clang"))
    assert clang.is_file()
    assert c_driver(CLANGXX) == str(clang)  # by path
    assert c_driver(Path(CLANGXX).name) == shutil.which(clang.name)  # by name, on PATH


@needs_gxx
def test_the_c_driver_beside_g_plus_plus_is_gcc() -> None:
    assert c_driver("g++") == shutil.which("gcc")


def test_a_driver_with_no_c_driver_beside_it_is_its_own() -> None:
    assert c_driver("/opt/tfbuild-none/bin/g++-99") == "/opt/tfbuild-none/bin/g++-99"
