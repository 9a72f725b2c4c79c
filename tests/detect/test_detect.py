"""`tfbuild detect` as a whole: the live machine, several machines, targets, why-not, the JSON."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import archspec.cpu
import pytest

from tests.conftest import cpuinfo_fixture, one_error_line, run_cli
from tfbuild.core.targets import targets
from tfbuild.detect import compilers, cpu, system
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.detect.report import SCHEMA


def test_live_machine_matches_archspec_host() -> None:
    # tfbuild applies archspec's rule to a parsed dump; on the live machine both must agree.
    assert cpu.identify(cpu.host_cpuinfo()).name == archspec.cpu.host().name


def test_live_json_report() -> None:
    result = run_cli("detect", "--json")
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["schema"] == SCHEMA
    assert report["live"] is True
    (machine,) = report["machines"]
    assert machine["microarchitecture"] == archspec.cpu.host().name
    info = machine["cpu"]
    assert info["architecture"] == platform.machine()
    assert info["logical_cpus"] == os.cpu_count()
    sysinfo = report["system"]
    assert sysinfo["python"]["version"] == platform.python_version()
    assert sysinfo["glibc"] == platform.libc_ver()[1]
    assert sysinfo["logical_cpus"] == os.cpu_count()
    meminfo = Path("/proc/meminfo").read_text()
    total_kib = int(meminfo.split("MemTotal:")[1].split()[0])
    assert sysinfo["memory"]["total_bytes"] == total_kib * 1024
    assert sysinfo["disk"]["free_bytes"] > 0
    flags = machine["compiler_flags"]
    assert flags["compiler"]["spec"] == "clang-18.1.8"
    assert flags["uncovered"] == []
    present = machine["tensorflow_features"]["present"]
    assert {c["feature"] for c in flags["coverage"]} == set(present)


def test_live_text_report_names_the_features() -> None:
    result = run_cli("detect", "--no-gpu")
    assert result.returncode == 0, result.stderr
    assert archspec.cpu.host().name in result.stdout
    assert "TensorFlow CPU features" in result.stdout
    assert "flags (clang-18.1.8" in result.stdout


def test_json_mode_does_not_import_docker_jinja2_or_rich() -> None:
    code = (
        "import sys\n"
        "from tfbuild.cli import main\n"
        "try:\n"
        "    main(['detect', '--json'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'docker', 'jinja2', 'rich'})\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("HEAVY="), proc.stderr


def test_several_machines_give_their_common_target() -> None:
    result = run_cli(
        "detect",
        "--cpuinfo",
        str(cpuinfo_fixture("haswell")),
        "--cpuinfo",
        str(cpuinfo_fixture("zen4")),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert [m["microarchitecture"] for m in report["machines"]] == ["haswell", "zen4"]
    common = report["common"]
    assert common["microarchitecture"] == "x86_64_v3"
    assert common["tensorflow_features"]["present"] == [
        "SSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA",
    ]  # fmt: skip
    assert common["compiler_flags"]["flags"] == "-march=x86-64-v3 -mtune=generic"


def test_same_vendor_machines_keep_a_named_common_target() -> None:
    infos = [read_cpuinfo(cpuinfo_fixture(n)) for n in ("broadwell", "skylake_avx512")]
    assert cpu.identify(cpu.common_info(infos)).name == "broadwell"


def test_machines_of_different_architectures_have_no_common_target() -> None:
    result = run_cli(
        "detect",
        "--cpuinfo",
        str(cpuinfo_fixture("haswell")),
        "--cpuinfo",
        str(cpuinfo_fixture("neoverse_v2")),
    )
    assert result.returncode == 4, result.stderr
    assert "different architectures (aarch64, x86_64)" in result.stderr
    assert "Traceback" not in result.stderr


def test_target_flags_and_where_it_runs() -> None:
    result = run_cli(
        "detect",
        "--cpuinfo",
        str(cpuinfo_fixture("haswell")),
        "--cpuinfo",
        str(cpuinfo_fixture("k10")),
        "--target",
        "x86_64_v3",
        "--compiler",
        "gcc-12",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    target = result.json()["target"]
    assert target["compiler_flags"]["flags"] == "-march=x86-64-v3 -mtune=generic"
    runs = {Path(f["machine"]).name.split("-")[-1]: f for f in target["runs_on"]}
    assert runs["haswell"]["runs"] is True
    assert runs["k10"]["runs"] is False
    assert "requires features the CPU lacks" in runs["k10"]["reason"]
    assert "avx2" in runs["k10"]["reason"]


@pytest.mark.parametrize(
    ("machine", "target", "runs", "fragment"),
    [
        ("haswell", "haswell", True, "is this machine's microarchitecture"),
        ("haswell", "x86_64_v3", True, "ancestor of the detected haswell"),
        ("haswell", "skylake_avx512", False, "requires features the CPU lacks: "),
        (
            "haswell",
            "zen2",
            False,
            "targets vendor AuthenticAMD, but the CPU vendor is GenuineIntel",
        ),
        ("haswell", "neoverse_v2", False, "belongs to the aarch64 architecture family"),
        ("power9", "power10", False, "needs POWER generation 10, but the machine is generation 9"),
        ("zen5-vm", "zen4", False, "rdseed"),  # flush_l1d, pku: not instruction sets
    ],
)
def test_why_not(machine: str, target: str, runs: bool, fragment: str) -> None:
    fit = cpu.why_not(cpu.lookup_target(target), read_cpuinfo(cpuinfo_fixture(machine)))
    assert fit.runs is runs
    assert fragment in fit.reason


def test_why_not_on_the_cli() -> None:
    result = run_cli("detect", "--cpuinfo", str(cpuinfo_fixture("haswell")), "--why-not", "icelake")
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())  # where it wraps moves with the dump's (absolute) path
    assert "why not icelake" in said
    assert "does not fit" in said
    assert "avx512" in said


def test_an_unknown_why_not_names_its_option_and_a_command_that_lists_every_name() -> None:
    result = run_cli("detect", "--why-not", "zen9", "--no-gpu")
    assert one_error_line(result, 2).startswith(
        "tfbuild: error: unknown --why-not 'zen9': it is not an archspec"
    )
    assert "Did you mean zen" in result.stderr
    # The command the message gives really lists every name (archspec's own CLI lists only the
    # host): run it with this Python, which has tfbuild's archspec.
    assert cpu.LIST_TARGETS in result.stderr
    argv = [sys.executable, *cpu.LIST_TARGETS.split()[1:]]
    listed = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    assert listed == sorted(targets()) and "neoverse_v2" in listed and "graniterapids" in listed
    target = run_cli("detect", "--target", "zen9", "--no-gpu")
    assert target.returncode == 2 and "unknown --target 'zen9'" in target.stderr


def test_a_compiler_too_old_for_the_machine_is_exit_4() -> None:
    # archspec spells x86_64_v4 for gcc from 6.0 on, and gcc 4.8 has no -mavx512f: the recorded
    # Zen 5 VM's AVX-512 cannot be enabled. Its Haswell neighbour is fine with gcc 4.8.
    zen5 = run_cli("detect", "--cpuinfo", str(cpuinfo_fixture("zen5-vm")), "--compiler", "gcc-4.8")
    assert one_error_line(zen5, 4).startswith(
        "tfbuild: error: gcc-4.8.0 cannot build for x86_64_v4: archspec:"
    )
    assert "leaves AVX512F, AVX512_VNNI, AVX512_BF16, AVX_VNNI off" in zen5.stderr
    assert "Use gcc 6.0 or newer" in zen5.stderr
    haswell = run_cli(
        "detect", "--cpuinfo", str(cpuinfo_fixture("haswell")), "--compiler", "gcc-4.8", "--json"
    )
    assert haswell.returncode == 0, haswell.stderr
    (machine,) = haswell.json()["machines"]
    assert machine["compiler_flags"]["flags"] == "-march=core-avx2 -mtune=core-avx2"


def test_a_compiler_version_no_release_has_is_a_usage_error(tmp_path: Path) -> None:
    """gcc 99 does not exist: archspec's data names no gcc near it and no gcc-99 answers on PATH,
    so its flags would be a guess; exit 2, as the README says of an unknown --compiler, before
    any machine is read. A "gcc-99" on PATH that is really another gcc is not taken for one."""
    newest = compilers.newest_known("gcc")
    assert newest is not None
    refused = run_cli("detect", "--compiler", "gcc-99")
    line = one_error_line(refused, 2, "unknown --compiler 'gcc-99': gcc 99 is newer than any gcc")
    assert f"its newest: {'.'.join(map(str, newest))}" in line
    assert f"--compiler gcc-{newest[0]}" in line
    assert "clang 99 is newer" in one_error_line(run_cli("detect", "--compiler", "clang-99"), 2)
    real = shutil.which("gcc")
    if real is not None:  # a gcc that calls itself gcc-99 but says it is its own version
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "gcc-99").symlink_to(real)
        path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        one_error_line(run_cli("detect", "--compiler", "gcc-99", env={"PATH": path}), 2)
    # The newest series archspec knows is a compiler, and its flags are given.
    known = run_cli("detect", "--compiler", f"gcc-{newest[0]}", "--no-gpu", "--json")
    assert known.returncode == 0, known.stderr
    assert known.json()["machines"][0]["compiler_flags"]["compiler"]["spec"] == f"gcc-{newest[0]}"


def test_non_x86_machines_say_the_guard_does_not_apply() -> None:
    result = run_cli("detect", "--cpuinfo", str(cpuinfo_fixture("neoverse_v2")), "--json")
    assert result.returncode == 0, result.stderr
    (machine,) = result.json()["machines"]
    guard = machine["tensorflow_features"]
    assert guard["applicable"] is False
    assert guard["present"] == [] and guard["absent"] == []
    assert "x86-64 features only" in guard["note"]
    assert machine["compiler_flags"]["flags"] == "-mcpu=neoverse-v2"
    text = run_cli("detect", "--cpuinfo", str(cpuinfo_fixture("power9")))
    assert text.returncode == 0, text.stderr
    assert "power9" in text.stdout
    assert "byte order" in text.stdout


def test_zen5_vm_explains_its_generic_level() -> None:
    result = run_cli("detect", "--cpuinfo", str(cpuinfo_fixture("zen5-vm")), "--json")
    warnings = result.json()["warnings"]
    assert any("nearest: zen4 requires features the CPU lacks" in w for w in warnings)


# --- facts about this host ------------------------------------------------------------------------


def test_meminfo_and_cgroup_limits(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text(
        "MemTotal:       24641300 kB\nMemFree:        23000000 kB\nMemAvailable:   24000000 kB\n"
    )
    cgroup = tmp_path / "sys/fs/cgroup"
    cgroup.mkdir(parents=True)
    (cgroup / "memory.max").write_text("8589934592\n")
    info = system.system_info(root=tmp_path, build_dir=tmp_path / "cache" / "tfbuild")
    assert info.memory.total_bytes == 24641300 * 1024
    assert info.memory.available_bytes == 24000000 * 1024
    assert info.memory.cgroup_limit_bytes == 8 * 2**30
    assert info.memory.usable_bytes == 8 * 2**30
    assert info.disk is not None and info.disk.path.endswith("cache/tfbuild")
    (cgroup / "memory.max").write_text("max\n")
    assert system.cgroup_memory_limit(tmp_path) is None


def test_live_caches_come_from_sysfs() -> None:
    caches = system.caches(Path("/"))
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    if not base.is_dir():
        pytest.skip("this kernel exposes no cache information in sysfs")
    assert len(caches) == len(list(base.glob("index*")))
    assert {c.level for c in caches} >= {1}


def test_live_report_tells_the_truth_about_cuda_and_the_driver() -> None:
    report = run_cli("detect", "--json").json()
    roots = [t["root"] for t in report["cuda"]["toolkits"]]
    cuda = Path("/usr/local/cuda")
    if cuda.exists():
        real = str(cuda.resolve())
        assert real in roots
        (kit,) = [t for t in report["cuda"]["toolkits"] if t["root"] == real]
        header = (cuda / "include/cuda.h").read_text(errors="replace")
        number = int(header.split("#define CUDA_VERSION ")[1].split()[0])
        assert kit["version"] == f"{number // 1000}.{number % 1000 // 10}"
    else:
        assert roots == [] or all(not r.startswith("/usr/local/cuda") for r in roots)
    if not Path("/proc/driver/nvidia/version").exists() and not shutil.which("nvidia-smi"):
        assert report["nvidia"] == {"driver": None, "gpus": [], "warnings": []}


def test_no_gpu_skips_the_gpu_detectors() -> None:
    report = run_cli("detect", "--json", "--no-gpu").json()
    assert report["cuda"] is None
    assert report["nvidia"] is None
    assert report["system"] is not None


def test_live_report_lists_the_tensorflow_versions_from_the_recipes() -> None:
    report = run_cli("detect", "--json").json()
    from tfbuild.recipes.recipe import load_recipes

    versions = [t["version"] for t in report["tensorflow"]]
    assert versions == [r.tensorflow for r in load_recipes().recipes]
    python = ".".join(platform.python_version().split(".")[:2])
    for entry, recipe in zip(report["tensorflow"], load_recipes().recipes, strict=True):
        assert entry["python_ok"] is (python in recipe.python)


def test_tensorflow_support_with_a_driver() -> None:
    from tfbuild.detect.report import tensorflow_support
    from tfbuild.recipes.recipe import load_recipes

    recipes = [r for r in load_recipes().recipes if r.short in ("2.15", "2.21")]
    old, new = tensorflow_support(recipes, python="3.12", architecture="x86_64", driver_cuda="12.4")
    assert (old.python_ok, old.cuda_ok) == (False, True)
    assert "Python 3.12 is outside 3.9-3.11" in old.note
    assert (new.python_ok, new.cuda, new.cuda_ok) == (True, "12.5.1", False)
    assert "the driver supports CUDA 12.4, the release defaults to 12.5.1" in new.note


def test_why_not_names_only_instruction_sets() -> None:
    """The Zen 5 VM's dump lacks flush_l1d and pku (hidden by the hypervisor) and rdseed: zen4 is
    refused for rdseed alone, the one an instruction compiled code can use."""
    fit = cpu.why_not(cpu.lookup_target("zen4"), read_cpuinfo(cpuinfo_fixture("zen5-vm")))
    assert not fit.runs
    assert fit.reason.endswith("requires features the CPU lacks: rdseed"), fit.reason
