"""`tfbuild smoke` on real wheels: the stock tensorflow-cpu, and wheels that really crash."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests import wheels
from tests.conftest import NO_FILE_KINDS, plant_no_file, run_cli
from tests.receipts import make_receipt, write_receipt
from tfbuild.core import serial
from tfbuild.detect import cpu, features
from tfbuild.measure.envs import clean_env
from tfbuild.measure.run import Method, compare
from tfbuild.smoke.probe import run_probe
from tfbuild.smoke.session import built_for
from tfbuild.wheel.receipt import receipt_path

TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4")


def expected_unused() -> list[str]:
    """What a stock (-mavx) wheel must name on this CPU: its guard features beyond AVX."""
    have = cpu.guard_features(cpu.host_cpuinfo())
    return [f for f in have if f not in features.closure(["AVX"])]


def test_stock_wheel_is_reported_as_leaving_instructions_unused(stock_python: str) -> None:
    result = run_cli("smoke", "tensorflow-cpu==2.21.0", "--no-bench", "--json")
    assert result.returncode == 7, result.stderr
    report = result.json()
    candidate = report["candidate"]
    assert candidate["ok"] is True
    assert candidate["version"] == "2.21.0"
    assert candidate["guard"]["unused"] == expected_unused()
    assert candidate["build_info"]["is_cuda_build"] is False
    assert report["passed"] is False
    assert any("leaves" in f and "unused" in f for f in report["failures"])
    assert "tfbuild: error:" in result.stderr
    assert "did not pass" in result.stderr


def test_on_this_zen5_machine_the_list_is_the_known_one() -> None:
    # stock-wheel-baseline.md: the stock wheel prints exactly these on the project's Zen 5 VMs.
    info = cpu.host_cpuinfo()
    if not {"avx512_bf16", "avx_vnni"} <= info.flags or "avx512_fp16" in info.flags:
        pytest.skip("not a Zen 5-class CPU (AVX512_BF16 and AVX_VNNI, no AVX512_FP16)")
    assert expected_unused() == ["AVX2", "AVX512F", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI", "FMA"]


def test_the_probe_clears_the_log_level_that_would_hide_the_message(stock_python: str) -> None:
    env = {**clean_env(), "TF_CPP_MIN_LOG_LEVEL": "1"}
    hidden = run_probe(stock_python, env=env)
    assert hidden.ok and hidden.guard.unused == ()  # what a naive check would call a pass
    shown = run_probe(stock_python, env=clean_env())
    assert list(shown.guard.unused) == expected_unused()
    # TensorFlow's DefaultOneDnnPolicy (tensorflow/core/util/util.cc): on Linux, oneDNN is on by
    # default only on CPUs with these neural-network features, and only then says so at import.
    neural = {"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"}
    assert shown.guard.onednn_custom_ops is bool(neural & cpu.host_cpuinfo().flags)
    assert not shown.guard.errors, shown.guard.errors  # the DT_HALF line is benign


@pytest.mark.skipif(not TCMALLOC.exists(), reason="libgoogle-perftools4 is not installed")
def test_tcmalloc_is_checked_in_the_probes_memory_map(stock_python: str, tmp_path: Path) -> None:
    good = tmp_path / "good.env"
    good.write_text(f"LD_PRELOAD={TCMALLOC}\n")
    result = run_cli(
        "smoke", "tensorflow-cpu==2.21.0", "--no-bench", "--json", "--env-file", str(good)
    )
    report = result.json()
    assert report["candidate"]["tcmalloc_loaded"] is True
    assert str(TCMALLOC.resolve()) in report["candidate"]["tcmalloc_maps"] or any(
        "libtcmalloc" in m for m in report["candidate"]["tcmalloc_maps"]
    )
    assert not any("TCMalloc should be preloaded" in f for f in report["failures"])
    bad = tmp_path / "bad.env"
    bad.write_text("LD_PRELOAD=/nonexistent/libtcmalloc.so.4\n")
    result = run_cli(
        "smoke", "tensorflow-cpu==2.21.0", "--no-bench", "--json", "--env-file", str(bad)
    )
    report = result.json()
    assert report["candidate"]["tcmalloc_loaded"] is False
    assert any("TCMalloc should be preloaded" in f for f in report["failures"])


# --- wheels that really die on import -------------------------------------------------------------

# vaddph zmm0, zmm0, zmm0 (AVX512-FP16), as raw bytes so that no assembler support is needed.
# A CPU without AVX512-FP16 raises #UD on it: a real SIGILL, as a wheel built for a newer CPU gets.
ILLEGAL = r"""
void boom(void) { __asm__ volatile(".byte 0x62, 0xf5, 0x7c, 0x48, 0x58, 0xc0"); }
"""
MISSING = r"""
extern void tf_symbol_from_a_newer_library(void);
void boom(void) { tf_symbol_from_a_newer_library(); }
"""
INIT = """
import ctypes, pathlib
_lib = ctypes.CDLL(str(pathlib.Path(__file__).with_name("libboom.so")))
_lib.boom()
__version__ = "0.0.1"
"""


def _wheel(tmp_path: Path, source: str, link_flags: list[str]) -> Path:
    """A real wheel named tensorflow whose native library does something bad on import."""
    c_file = tmp_path / "boom.c"
    c_file.write_text(source)
    lib = tmp_path / "libboom.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(lib), str(c_file), *link_flags], check=True
    )
    return wheels.make_wheel(
        tmp_path,
        "tensorflow-0.0.1-py3-none-any.whl",
        module_text=INIT,
        members={"tensorflow/libboom.so": lib.read_bytes()},
    )


def test_a_wheel_that_dies_with_sigill_is_reported_as_such(tmp_path: Path) -> None:
    if "avx512_fp16" in cpu.host_cpuinfo().flags:
        pytest.skip("this CPU has AVX512-FP16, so the instruction would not trap")
    wheel = _wheel(tmp_path, ILLEGAL, [])
    write_receipt(wheel, target="sapphirerapids", label=None, cflags=("-march=sapphirerapids",))
    result = run_cli("smoke", str(wheel), "--json")
    assert result.returncode == 7, result.stderr
    report = result.json()
    assert report["candidate"]["ok"] is False
    assert report["candidate"]["signal"] == "SIGILL"
    assert "Illegal instruction" in report["candidate"]["failure"]
    assert "built for sapphirerapids (-march=sapphirerapids)" in report["failures"][0]
    assert report["results"] == [] and report["baseline"] is None
    assert "Traceback" not in result.stderr


def test_built_for_comes_from_a_usable_receipt_or_not_at_all(tmp_path: Path) -> None:
    wheel = wheels.make_wheel(tmp_path, "tensorflow-0.0.1-py3-none-any.whl")
    assert built_for(wheel) is None  # no receipt
    receipt = make_receipt(wheel, target="x86_64_v3", cflags=("-march=x86-64-v3", "-mtune=generic"))
    write_receipt(wheel, receipt)
    assert built_for(wheel) == "x86_64_v3 (-march=x86-64-v3 -mtune=generic)"
    write_receipt(wheel, receipt | {"schema": "tfbuild.receipt/1"})
    assert built_for(wheel) is None
    other = wheels.make_wheel(tmp_path, "tensorflow-0.0.2-py3-none-any.whl")
    write_receipt(wheel, make_receipt(other))
    assert built_for(wheel) is None  # another wheel's receipt says nothing about this one
    receipt_path(wheel).write_text("{not json")
    assert built_for(wheel) is None


@pytest.mark.slow  # tfbuild smoke makes a Python environment for the wheel
def test_a_wheel_with_a_missing_symbol_is_reported_in_one_line(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, MISSING, ["-Wl,--unresolved-symbols=ignore-all"])
    result = run_cli("smoke", str(wheel))
    assert result.returncode == 7
    assert "undefined symbol: tf_symbol_from_a_newer_library" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


# --- the comparison logic, on the real stock wheel -------------------------------------------------

OPS = ("matmul_1024", "conv2d_nhwc", "exp", "add")


def test_stock_against_itself_is_the_same_everywhere(stock_python: str) -> None:
    results = compare(
        stock_python,
        stock_python,
        candidate_env=clean_env(),
        method=Method(pairs=15, min_rep_seconds=0.02, ops=OPS, budget=60),
        thread_settings=(("default", 0, 0),),
    )
    labels = {r.op: r.verdict.label for r in results if r.verdict}
    assert set(labels) == set(OPS)
    assert "faster" not in labels.values(), labels
    assert "slower" not in labels.values(), labels
    for r in results:  # "same" only where the interval says so; else undecided, never a claim
        assert r.verdict is not None
        if r.verdict.label == "same":
            low, high = r.verdict.interval
            assert 1 / (1 + r.verdict.margin) <= low and high <= 1 + r.verdict.margin


def test_a_handicapped_stock_is_detected_as_slower(stock_python: str) -> None:
    # One intra-op thread against all of them: a handicap on any machine with two or more cores
    # (oneDNN off alone only handicaps CPUs where TensorFlow turns it on by default).
    results = compare(
        stock_python,
        stock_python,
        candidate_env={**clean_env(), "TF_ENABLE_ONEDNN_OPTS": "0", "TF_NUM_INTRAOP_THREADS": "1"},
        baseline_env=clean_env(),
        method=Method(pairs=15, min_rep_seconds=0.05, ops=("conv2d_nhwc",), budget=90),
        thread_settings=(("default", 0, 0),),
    )
    (conv,) = results
    assert conv.verdict is not None
    found = serial.to_data(conv.verdict)
    # Never the wrong way, never "same"; undecided only when the CPU was shared meanwhile.
    assert conv.verdict.label in ("slower", "undecided"), found
    if conv.verdict.label == "undecided":
        assert conv.contention is not None and conv.contention.busy, found


def test_quick_smoke_end_to_end_with_a_plot(stock_python: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "smoke.png"
    result = run_cli(
        "smoke",
        "tensorflow-cpu==2.21.0",
        "--quick",
        "--budget",
        "30",  # the flow, not the precision: few extra rounds (--quick alone gives them 90 s)
        "--json",
        "--allow-unused",
        "--plot",
        str(plot),
        timeout=900,  # about 60 s when the machine is quiet
    )
    report = result.json()
    assert report["method"]["pairs"] == 15 and report["method"]["budget"] == 30
    assert report["schema"] == "tfbuild.smoke/3"
    for r in report["results"]:  # every comparison one of the four answers, with its interval
        assert r["verdict"]["label"] in ("faster", "same", "slower", "undecided")
        assert r["verdict"]["interval"][0] <= r["verdict"]["ratio"] <= r["verdict"]["interval"][1]
    assert report["machine"]["cpus"] >= 1
    undecided = [
        f"{r['op']} ({r['threads']})"
        for r in report["results"]
        if r["verdict"]["label"] == "undecided"
    ]
    assert report["undecided"] == undecided
    assert (report["undecided_note"] is None) == (not undecided)
    ops = {r["op"] for r in report["results"]}
    assert {"matmul_2048", "conv2d_nhwc", "exp", "tanh", "cast_f32_bf16", "add", "relu"} <= ops
    assert {r["threads"] for r in report["results"]} == {"1", "default"}
    matmul = [
        r for r in report["results"] if r["op"] == "matmul_2048" and r["threads"] == "default"
    ]
    assert matmul[0]["candidate"]["throughput"]["median"] > 0
    assert "peak" not in report and "peak_fraction" not in matmul[0]  # tfbuild.smoke/3
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.returncode == (0 if report["passed"] else 7), json.dumps(report["failures"])


@pytest.mark.parametrize("beside", [".json", ".env"])
@pytest.mark.parametrize("kind", NO_FILE_KINDS)
def test_a_receipt_or_env_file_beside_the_wheel_that_is_no_file_is_one_line_exit_3(
    tmp_path: Path, beside: str, kind: str
) -> None:
    """Issue 21, item 15: a receipt (or env file) beside the wheel that is a FIFO hung smoke."""
    wheel = wheels.make_wheel(tmp_path, "tensorflow-0.0.1-py3-none-any.whl")
    path = wheel.with_suffix(beside)
    said = f"{path} is {plant_no_file(path, kind)}; tfbuild reads regular files only"
    result = run_cli("smoke", str(wheel), "--json", timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    noun = "receipt" if beside == ".json" else "env file"
    assert line.startswith(f"tfbuild: error: the {noun} {path} is not a file: {said}.")


@pytest.mark.parametrize("preloaded", [False, True], ids=["tcmalloc-free", "ld-preload-set"])
def test_the_settings_are_tried_in_order_each_with_its_name_and_env(
    monkeypatch: pytest.MonkeyPatch, preloaded: bool
) -> None:
    """TCMalloc (where it is installed and LD_PRELOAD is not already set), then the thread pools
    at the physical cores, then OpenMP's variables: each said, then tried, in that order."""
    from tfbuild.detect.cpuinfo import CpuInfo
    from tfbuild.smoke import session

    events: list[object] = []

    def tried(python: str, *, base_env: object, name: str, env: object, method: object) -> str:
        events.append((name, env))
        return name

    monkeypatch.setattr(session, "try_setting", tried)
    monkeypatch.setattr(Path, "exists", lambda self: self == TCMALLOC)
    info = CpuInfo(
        source="-", architecture="x86_64", vendor="GenuineIntel", brand=None, physical_cores=8
    )
    base_env = {"LD_PRELOAD": "x.so"} if preloaded else {}
    trials = session._try_settings("py", base_env, info, Method(budget=1.0), events.append)
    tcmalloc = ["trying TCMalloc preloaded", ("tcmalloc", {"LD_PRELOAD": str(TCMALLOC)})]
    assert events == [
        *([] if preloaded else tcmalloc),
        "trying intra-op threads = 8 physical cores, inter-op = 1",
        ("threads intra=8 inter=1", {"TF_NUM_INTRAOP_THREADS": "8", "TF_NUM_INTEROP_THREADS": "1"}),
        "trying OpenMP settings (OMP_NUM_THREADS, KMP_BLOCKTIME, KMP_AFFINITY)",
        (
            "openmp",
            {
                "OMP_NUM_THREADS": "8",
                "KMP_BLOCKTIME": "1",
                "KMP_AFFINITY": "granularity=fine,compact,1,0",
            },
        ),
    ]
    assert trials == tuple(event[0] for event in events if isinstance(event, tuple))
