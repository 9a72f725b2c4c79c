"""The canary stand-in honours build.sh's contract and really compiles for the planned instruction set.

This runs the stand-in `bazel` on the host (the real-engine run of the whole pipeline belongs to
`tfbuild wheel`); the flags come from tfbuild's own planner for the installed gcc."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import archspec.cpu
import pytest

from tfbuild.canary import TREE
from tfbuild.compilers import flags_for, parse_compiler
from tfbuild.detect import cpu, features

WHEEL_HOUSE = "bazel-bin/tensorflow/tools/pip_package/wheel_house"
TARGET = "//tensorflow/tools/pip_package:wheel"


def build(
    tmp_path: Path, name: str, cflags: tuple[str, ...], *args: str
) -> subprocess.CompletedProcess[str]:
    tree = tmp_path / name
    shutil.copytree(TREE, tree)
    rc = ["build --repo_env=CC=gcc", "build --repo_env=WHEEL_NAME=tensorflow_cpu"]
    rc += [f"build:opt --copt={flag}" for flag in cflags]
    (tree / ".tf_configure.bazelrc").write_text("\n".join(rc) + "\n")
    return subprocess.run(
        [sys.executable, str(tree / "bazel"), "--output_user_root=/tmp/x", "build", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )


def library(tmp_path: Path, name: str) -> Path:
    (wheel,) = (tmp_path / name / WHEEL_HOUSE).glob("*.whl")
    assert wheel.name.startswith("tensorflow_cpu-0.0.0+tfbuild.canary-")
    target = tmp_path / f"{name}.so"
    target.write_bytes(zipfile.ZipFile(wheel).read("tfbuild_canary/libcanary.so"))
    return target


def disassembly(path: Path) -> str:
    return subprocess.run(
        ["objdump", "-d", str(path)], capture_output=True, text=True, check=True
    ).stdout


def assert_planned_isa(host_asm: str, base_asm: str) -> None:
    """The host build uses this CPU's vector instructions; the x86_64 baseline build none of them."""
    have = set(cpu.guard_features(cpu.host_cpuinfo()))
    if "AVX512F" in have:
        assert "%zmm" in host_asm
    elif "AVX2" in have:
        assert "%ymm" in host_asm
    if "FMA" in have:
        assert "vfmadd" in host_asm
    for marker in ("%zmm", "%ymm", "vfmadd"):
        assert marker not in base_asm


def host_flags() -> tuple[str, ...]:
    gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, check=True)
    info = cpu.host_cpuinfo()
    return flags_for(
        cpu.identify(info),
        parse_compiler(f"gcc-{gcc.stdout.strip()}"),
        machine_features=cpu.guard_features(info),
    ).flags


@pytest.mark.skipif(shutil.which("objdump") is None, reason="binutils' objdump is not installed")
def test_host_build_uses_the_planned_instructions_and_baseline_does_not(tmp_path: Path) -> None:
    host = build(tmp_path, "host", host_flags(), "--config=opt", TARGET)
    base = build(tmp_path, "base", ("-march=x86-64", "-mtune=generic"), "--config=opt", TARGET)
    assert host.returncode == 0, host.stderr
    assert base.returncode == 0, base.stderr
    assert "[1 / 3] Compiling src/kernel.c" in host.stderr
    host_asm, base_asm = (
        disassembly(library(tmp_path, "host")),
        disassembly(library(tmp_path, "base")),
    )
    assert_planned_isa(host_asm, base_asm)


def test_both_builds_compute_the_same_result(tmp_path: Path) -> None:
    results = []
    for name, flags in (("host", host_flags()), ("base", ("-march=x86-64",))):
        assert build(tmp_path, name, flags, "--config=opt", TARGET).returncode == 0
        lib = ctypes.CDLL(str(library(tmp_path, name)))
        lib.canary_kernel.restype = ctypes.c_float
        lib.canary_kernel.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_int]
        data = (ctypes.c_float * 4096)(*([0.001] * 4096))
        results.append(lib.canary_kernel(data, 4096, 10))
    assert results[0] == pytest.approx(results[1], rel=1e-4)


def test_without_config_opt_no_target_flags_are_used(tmp_path: Path) -> None:
    result = build(tmp_path, "plain", ("-march=x86-64-v4",), TARGET)
    assert result.returncode == 0, result.stderr
    assert "-march=x86-64-v4" not in result.stderr


def test_only_the_wheel_target_is_known(tmp_path: Path) -> None:
    result = build(tmp_path, "other", (), "--config=opt", "//tensorflow:libtensorflow.so")
    assert result.returncode == 2
    assert "the only target is //tensorflow/tools/pip_package:wheel" in result.stderr


def test_a_compile_failure_is_reported(tmp_path: Path) -> None:
    result = build(tmp_path, "broken", ("-mno-such-flag",), "--config=opt", TARGET)
    assert result.returncode == 1
    assert "ERROR: compiling src/kernel.c failed" in result.stderr
    assert not list((tmp_path / "broken" / WHEEL_HOUSE).glob("*.whl"))


def test_the_canary_tree_ships_in_the_package() -> None:
    assert (TREE / "bazel").stat().st_mode & 0o111
    assert (TREE / "src/kernel.c").is_file()
    assert features.BY_NAME["AVX512F"].macro == "__AVX512F__"  # the guard table the flags come from
    assert archspec.cpu.TARGETS["x86_64_v4"]  # the planner's names
