"""The canary's bazel workspace honours build.sh's contract and really compiles for the planned
instruction set.

This runs a real bazel on the host: Debian's bazel-bootstrap (4.2.3), which .ci/run installs; the
toolchain image installs the same package, and the real-engine run of the whole pipeline belongs to
`tfbuild wheel`. The flags come from tfbuild's own planner for the installed gcc. The canary has a
real build's sources of non-determinism (member order and times, the build date, the output base in
``__FILE__``), and the measures (SOURCE_DATE_EPOCH, a prefix map of the output base) remove the
dates and paths but leave the order to tfbuild's normalisation. The builds that differ only in
their rc file share one tree and one bazel server (started once, which is most of a build's time
here); every server stops itself 30 s after its last build (``--max_idle_secs``)."""

from __future__ import annotations

import base64
import calendar
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import archspec.cpu
import pytest

from tfbuild.detect import cpu, features
from tfbuild.detect.compilers import flags_for, parse_compiler
from tfbuild.recipes.canary import TREE

WHEEL_HOUSE = "bazel-bin/tensorflow/tools/pip_package/wheel_house"
TARGET = "//tensorflow/tools/pip_package:wheel"
FLAGS = ("-march=x86-64",)
IN_CI = bool(os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS"))
#: A test that runs bazel: a server start and a build take tens of seconds (make quick skips them).
BAZEL = pytest.mark.slow


@pytest.fixture(autouse=True, scope="module")
def real_bazel() -> None:
    """Debian's bazel on the host; CI (.ci/run installs bazel-bootstrap) fails without it."""
    if shutil.which("bazel") is None:
        message = "no bazel on this host: apt-get install bazel-bootstrap (as .ci/run does)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def make_rc(tree: Path, cflags: tuple[str, ...], *lines: str) -> None:
    """The rc file tfbuild renders, in small: the compiler, the wheel's name, the target flags."""
    rc = ['build --action_env CC="gcc"', "build --repo_env=WHEEL_NAME=tfbuild_canary"]
    rc += [f"build:opt --copt={flag}" for flag in cflags]
    (tree / ".tf_configure.bazelrc").write_text("\n".join((*rc, *lines)) + "\n")


def make_tree(tmp_path: Path, name: str, cflags: tuple[str, ...]) -> Path:
    tree = tmp_path / name
    shutil.copytree(TREE, tree)
    make_rc(tree, cflags)
    return tree


def run_bazel(
    tree: Path, *args: str, startup: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    if not any(option.startswith("--output_base=") for option in startup):
        startup = (*startup, f"--output_base={tree.parent / 'output' / tree.name}")
    return subprocess.run(
        [
            "bazel",
            "--max_idle_secs=30",
            *startup,
            "build",
            "--color=no",
            "--curses=no",
            "--subcommands",  # the compiler command lines, as the stand-in script printed them
            *args,
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One canary tree for the builds that differ only in their rc file (one bazel server)."""
    return make_tree(tmp_path_factory.mktemp("shared"), "tree", ())


def build(
    tree: Path, name: str, cflags: tuple[str, ...], *args: str, rc: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """A build of ``tree`` with an rc file of these flags (and ``rc`` lines); its library, when it
    built one, copied to ``NAME.so`` beside the tree."""
    make_rc(tree, cflags, *rc)
    result = run_bazel(tree, *args)
    wheels = list((tree / WHEEL_HOUSE).glob("*.whl")) if result.returncode == 0 else []
    for wheel in wheels:
        assert wheel.name.startswith("tfbuild_canary-0.0.0+tfbuild.canary-")
        (tree.parent / f"{name}.so").write_bytes(
            zipfile.ZipFile(wheel).read("tfbuild_canary/libcanary.so")
        )
    return result


def library(tree: Path, name: str) -> Path:
    return tree.parent / f"{name}.so"


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


@pytest.fixture(scope="module")
def host_and_base(shared: Path) -> tuple[Path, str, str]:
    """One build with this CPU's planned flags, one for the x86_64 baseline; their stderr."""
    host = build(shared, "host", host_flags(), "--config=opt", TARGET)
    base = build(shared, "base", ("-march=x86-64", "-mtune=generic"), "--config=opt", TARGET)
    assert host.returncode == 0, host.stderr
    assert base.returncode == 0, base.stderr
    return shared, host.stderr, base.stderr


@BAZEL
@pytest.mark.skipif(shutil.which("objdump") is None, reason="binutils' objdump is not installed")
def test_host_build_uses_the_planned_instructions_and_baseline_does_not(
    host_and_base: tuple[Path, str, str],
) -> None:
    tmp_path, host_log, _ = host_and_base
    # bazel's own progress lines, which tfbuild.build.progress reads, and the compile's command line.
    assert "INFO: Build completed successfully, 5 total actions" in host_log
    assert f"{host_flags()[0]}" in compile_lines(host_log)[0]
    host_asm, base_asm = (
        disassembly(library(tmp_path, "host")),
        disassembly(library(tmp_path, "base")),
    )
    assert_planned_isa(host_asm, base_asm)


@BAZEL
def test_both_builds_compute_the_same_result(host_and_base: tuple[Path, str, str]) -> None:
    tmp_path, _, _ = host_and_base
    results = []
    for name in ("host", "base"):
        lib = ctypes.CDLL(str(library(tmp_path, name)))
        lib.canary_kernel.restype = ctypes.c_float
        lib.canary_kernel.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_int]
        data = (ctypes.c_float * 4096)(*([0.001] * 4096))
        results.append(lib.canary_kernel(data, 4096, 10))
    assert results[0] == pytest.approx(results[1], rel=1e-4)


def compile_lines(log: str) -> list[str]:
    """The compile commands bazel's --subcommands printed (the canary's CppCompile actions)."""
    return [line for line in log.splitlines() if "/_objs/canary/" in line and " src/" in line]


@BAZEL
def test_without_config_opt_no_target_flags_are_used(shared: Path) -> None:
    result = build(shared, "plain", ("-march=x86-64-v4",), TARGET)
    assert result.returncode == 0, result.stderr
    assert len(compile_lines(result.stderr)) == 2
    assert "-march=x86-64-v4" not in result.stderr


@BAZEL
def test_an_undefined_config_and_an_unknown_target_are_errors(shared: Path) -> None:
    """Real bazel: a --config no rc file defines stops the build, and so does a target the canary
    does not have (TensorFlow's other targets)."""
    undefined = build(shared, "undefined", FLAGS, "--config=no_such_config", TARGET)
    assert undefined.returncode != 0
    assert "Config value 'no_such_config' is not defined in any .rc file" in undefined.stderr
    other = build(shared, "other", FLAGS, "--config=opt", "//tensorflow:libtensorflow.so")
    assert other.returncode != 0
    assert "no such package 'tensorflow'" in other.stderr


@BAZEL
def test_a_compile_failure_is_reported(shared: Path) -> None:
    result = build(shared, "broken", ("-mno-such-flag",), "--config=opt", TARGET)
    assert result.returncode == 1
    # bazel stops at the first failed action: whichever of the two compiles that was.
    assert re.search(
        r"ERROR: compiling src/(kernel\.c|runtime\.cc) failed \(exit 1\)", result.stderr
    )
    assert not (shared.parent / "broken.so").exists()


@BAZEL
def test_the_hermetic_toolchain_switch_is_refused(shared: Path) -> None:
    """The build setting tfbuild's rc lines name for TensorFlow 2.21 exists; its True is refused."""
    flag = "--@rules_ml_toolchain//common:enable_hermetic_cc"
    off = build(shared, "off", FLAGS, "--config=opt", TARGET, rc=(f"build {flag}=False",))
    assert off.returncode == 0, off.stderr
    on = build(shared, "on", FLAGS, "--config=opt", TARGET, rc=(f"build {flag}=True",))
    assert on.returncode != 0
    assert "the canary has no hermetic toolchain" in on.stderr


def test_the_canary_tree_ships_in_the_package() -> None:
    for name in ("WORKSPACE", ".bazelrc", "third_party/canary.bzl", "src/BUILD"):
        assert (TREE / name).is_file(), name
    assert (TREE / "tensorflow/tools/pip_package/pack_wheel.py").stat().st_mode & 0o111
    assert (TREE / "src/kernel.c").is_file()
    assert features.BY_NAME["AVX512F"].option == "-mavx512f"  # the guard table the flags come from
    assert archspec.cpu.TARGETS["x86_64_v4"]  # the planner's names


# --- the stand-in's deliberate sources of non-determinism ----------------------------------------

#: The wheel rule's staging directory (a tree artifact), through bazel's convenience link.
STAGING = "bazel-bin/tensorflow/tools/pip_package/wheel_staging"
RECORD = "tfbuild_canary-0.0.0+tfbuild.canary.dist-info/RECORD"
EPOCH = 1_700_000_000  # 2023-11-14 22:13:20 UTC, an even second (zip times have two-second steps)


def plain_env() -> dict[str, str]:
    """This environment without the measures (a CI runner may set SOURCE_DATE_EPOCH itself)."""
    return {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}


def source_times(tree: Path, seconds: int) -> None:
    """The source files' mtimes, as a checkout made at another time would leave them."""
    for path in (tree / "src").iterdir():
        os.utime(path, (seconds, seconds))


def the_wheel(tree: Path) -> zipfile.ZipFile:
    (wheel,) = (tree / WHEEL_HOUSE).glob("*.whl")
    assert wheel.name.startswith("tfbuild_canary-0.0.0+tfbuild.canary-")
    return zipfile.ZipFile(wheel)


def build_info(wheel: zipfile.ZipFile, target: Path) -> bytes:
    target.write_bytes(wheel.read("tfbuild_canary/libcanary.so"))
    function = ctypes.CDLL(str(target)).canary_build_info
    function.restype = ctypes.c_char_p
    value: bytes = function()
    return value


def walk_order(staging: Path) -> list[str]:
    """The staging directory's files as os.walk lists them: the filesystem's order, unsorted."""
    return [
        (Path(root) / file).relative_to(staging).as_posix()
        for root, _dirs, files in os.walk(staging)
        for file in files
    ]


def assert_valid_record(wheel: zipfile.ZipFile) -> None:
    """RECORD lists every member in the archive's order, itself last, each with hash and size."""
    lines = wheel.read(RECORD).decode().splitlines()
    assert [line.split(",")[0] for line in lines] == wheel.namelist()
    assert lines[-1] == f"{RECORD},,"
    for line in lines[:-1]:
        name, digest, size = line.split(",")
        data = wheel.read(name)
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (digest, int(size)) == (f"sha256={expected}", len(data))


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Two checkouts made at other times, each with its own output base (and bazel server), for
    the builds with and without the measures."""
    tmp_path = tmp_path_factory.mktemp("checkouts")
    made = {}
    for name, checkout in (("first", 1_000_000_000), ("second", 1_300_000_000)):
        tree = make_tree(tmp_path, name, FLAGS)
        source_times(tree, checkout)
        made[name] = (tree, tmp_path / "cache" / "output" / name)
    return made


@BAZEL
def test_two_builds_without_the_measures_differ(
    checkouts: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    """Other output bases, other checkout times: member times and the embedded path differ."""
    wheels, infos = {}, {}
    for name, checkout in (("first", 1_000_000_000), ("second", 1_300_000_000)):
        tree, output_base = checkouts[name]
        start = time.time()
        result = run_bazel(
            tree, "--config=opt", TARGET, startup=(f"--output_base={output_base}",), env=plain_env()
        )
        end = time.time()
        assert result.returncode == 0, result.stderr
        wheel = wheels[name] = the_wheel(tree)
        assert_valid_record(wheel)
        times = {info.filename: calendar.timegm(info.date_time) for info in wheel.infolist()}
        # Copied with its times, as build_py copies: the checkout's time (an even second here).
        assert times["tfbuild_canary/__init__.py"] == checkout
        for member in ("tfbuild_canary/libcanary.so", "tfbuild_canary/BUILD_FLAGS", RECORD):
            assert start - 5 <= times[member] <= end + 1  # the build's time (zip: 2 s steps)
        infos[name] = build_info(wheel, tmp_path / f"{name}.so")
        assert f"{output_base}/execroot/canary/src/kernel.c".encode() in infos[name]
        assert (output_base / "execroot/canary/src/kernel.c").is_file()
        assert (tree / "bazel-bin" / "src" / "libcanary.so").is_file()
    first, second = wheels["first"], wheels["second"]
    first_times = {info.filename: info.date_time for info in first.infolist()}
    assert first_times != {info.filename: info.date_time for info in second.infolist()}
    assert infos["first"] != infos["second"]
    so = "tfbuild_canary/libcanary.so"
    assert first.read(so) != second.read(so)


@BAZEL
def test_the_measures_remove_the_dates_and_paths_but_not_the_order(
    checkouts: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    """SOURCE_DATE_EPOCH and a prefix map of the output base: same library, every time the epoch;
    the members stay in the staging directory's walk order (tfbuild normalises it afterwards)."""
    env = plain_env() | {"SOURCE_DATE_EPOCH": str(EPOCH), "TZ": "UTC", "LC_ALL": "C"}
    wheels, infos = {}, {}
    for name in ("first", "second"):
        tree, output_base = checkouts[name]
        prefix_map = f"-ffile-prefix-map={output_base}=."
        result = run_bazel(
            tree,
            "--config=opt",
            f"--copt={prefix_map}",
            f"--host_copt={prefix_map}",
            # The environment reaches the actions as tfbuild's reproducible plans pass it.
            "--action_env=SOURCE_DATE_EPOCH",
            "--action_env=TZ",
            "--action_env=LC_ALL",
            TARGET,
            startup=(f"--output_base={output_base}",),
            env=env,
        )
        assert result.returncode == 0, result.stderr
        assert prefix_map in result.stderr  # on the compiler's command line
        wheel = wheels[name] = the_wheel(tree)
        assert_valid_record(wheel)
        assert {info.date_time for info in wheel.infolist()} == {time.gmtime(EPOCH)[:6]}
        names = wheel.namelist()
        assert names[:-1] == walk_order(tree / STAGING)
        assert names[-1] == RECORD
        # Never sorted: RECORD comes after WHEEL and the package's files, and the rest is in the
        # filesystem's order, so tfbuild's normalisation has work to do.
        assert names != sorted(names)
        assert wheel.read("tfbuild_canary/BUILD_FLAGS") == b"-march=x86-64\n"  # the planned flags
        infos[name] = build_info(wheel, tmp_path / f"{name}.so")
    first, second = wheels["first"], wheels["second"]
    assert first.read("tfbuild_canary/libcanary.so") == second.read("tfbuild_canary/libcanary.so")
    assert (
        infos["first"]
        == infos["second"]
        == b"built Nov 14 2023 22:13:20 from ./execroot/canary/src/kernel.c"
    )
    assert {n: first.read(n) for n in first.namelist()} == {
        n: second.read(n) for n in second.namelist()
    }


@BAZEL
def test_tf_sysroot_reaches_the_compiler_only_through_tensorflows_crosstool(shared: Path) -> None:
    """As in TensorFlow's build, TF_SYSROOT is read by the @local_config_cuda crosstool: with that
    crosstool every compile and the link get --sysroot; without it the variable changes nothing."""
    sysroot = 'build --repo_env=TF_SYSROOT="/"'  # the host's own root: a sysroot that works here
    crosstool = "build --crosstool_top=@local_config_cuda//crosstool:toolchain"
    through = build(shared, "through", FLAGS, "--config=opt", TARGET, rc=(crosstool, sysroot))
    assert through.returncode == 0, through.stderr
    compiles = compile_lines(through.stderr)
    assert len(compiles) == 2 and all("'--sysroot=/'" in line for line in compiles)
    (link,) = [line for line in through.stderr.splitlines() if " -shared -o " in line]
    assert "'--sysroot=/'" in link
    # Other flags than any build before, so that both sources are compiled again.
    alone = build(shared, "alone", (*FLAGS, "-DALONE"), "--config=opt", TARGET, rc=(sysroot,))
    assert alone.returncode == 0, alone.stderr
    assert len(compile_lines(alone.stderr)) == 2
    assert "--sysroot" not in alone.stderr
