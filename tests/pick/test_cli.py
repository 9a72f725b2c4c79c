"""`tfbuild pick` as a user runs it: exit codes, the one-line errors, the JSON and the table."""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import cpuinfo_fixture, one_error_line, run_cli
from tests.pick.conftest import WHEELS
from tests.pick.test_index import write_index


def test_pick_never_imports_rich() -> None:
    """``--json`` stays free of rich: the package that decides does not import it."""
    code = (
        "import sys, tfbuild.pick.session, tfbuild.pick.report; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_json_for_a_recorded_machine(standin_dir: Path) -> None:
    zen4 = cpuinfo_fixture("zen4")
    result = run_cli("pick", str(standin_dir), "--cpuinfo", str(zen4), "--python", "3.11", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.pick/1"
    assert data["host"]["source"] == str(zen4)
    assert (data["host"]["target"], data["host"]["python"], data["host"]["driver_cuda"]) == (
        "zen4",
        "3.11",
        None,
    )
    assert data["chosen"]["filename"] == WHEELS["zen4"]
    assert data["chosen"]["location"] == str(standin_dir / WHEELS["zen4"])
    assert data["install"] is None
    assert [w["filename"] for w in data["wheels"]][:2] == [WHEELS["zen4"], WHEELS["v4"]]


def test_human_output_names_the_choice_and_every_wheel(standin_dir: Path) -> None:
    haswell = cpuinfo_fixture("haswell")
    result = run_cli(
        "pick", str(standin_dir), "--cpuinfo", str(haswell), "--python", "3.11",
        "--driver-cuda", "12.4",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"chosen: {WHEELS['v3']}" in result.stdout
    assert "x86_64_v3 runs here: it is an ancestor of the detected haswell" in result.stdout
    assert "driver supports only CUDA 12.4" in result.stdout
    for filename in WHEELS.values():
        assert filename in result.stdout
    assert result.stderr == ""


def test_nothing_runs_on_aarch64_exit_4(standin_dir: Path) -> None:
    neoverse = cpuinfo_fixture("neoverse_v2")
    result = run_cli("pick", str(standin_dir), "--cpuinfo", str(neoverse), "--python", "3.11")
    assert result.returncode == 4
    line = one_error_line(result, report=True)
    assert f"runs on neoverse_v2 ({neoverse}, CPython 3.11)" in line
    assert "but the machine is aarch64" in line
    assert "no wheel runs here" in result.stdout  # the table is still shown


def test_empty_directory_exit_3(tmp_path: Path) -> None:
    result = run_cli("pick", str(tmp_path))
    assert result.returncode == 3
    assert one_error_line(result) == (
        f"tfbuild: error: no wheels in {tmp_path}: the directory holds no .whl files. Name a "
        "directory of .whl files (e.g. dist/), one .whl file, or an index page that links to them "
        "(a file such as dist/index.html, or an http(s) URL)."
    )


def test_unreachable_url_exit_5() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_cli("pick", f"http://127.0.0.1:{port}/simple/tensorflow/")
    assert result.returncode == 5
    assert f"cannot reach http://127.0.0.1:{port}/simple/tensorflow/: " in one_error_line(result)


def test_index_url_through_the_cli(http_root: tuple[Path, str]) -> None:
    root, base = http_root
    url = base + write_index(root)
    result = run_cli(
        "pick", url, "--cpuinfo", str(cpuinfo_fixture("skylake_avx512")), "--python", "3.11",
        "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    chosen = result.json()["chosen"]
    assert chosen["filename"] == WHEELS["sky"]
    assert chosen["location"].startswith(f"{base}/files/")
    assert len(chosen["sha256"]) == 64


def test_usage_errors_exit_2(standin_dir: Path) -> None:
    # --variant is a closed choice that typer checks: one line in tfbuild's words names the choices.
    result = run_cli("pick", str(standin_dir), "--variant", "avx")
    line = one_error_line(result, 2, "invalid --variant: 'avx' is not one of")
    assert "'cpu', 'mkl', 'cuda'" in line
    upper = run_cli("pick", str(standin_dir), "--variant", "MKL", "--json")
    assert upper.json()["options"]["variant"] == "mkl", upper.stderr
    haswell = str(cpuinfo_fixture("haswell"))
    both = run_cli("pick", str(standin_dir), "--install", "--cpuinfo", haswell)
    assert both.returncode == 2
    assert "--install and --cpuinfo together" in one_error_line(both)


def test_this_machine(standin_dir: Path) -> None:
    import archspec.cpu

    result = run_cli("pick", str(standin_dir), "--json")
    # The stock wheel (cp311, manylinux_2_17_x86_64, no CPU label) runs on any x86_64 machine with
    # CPython 3.11; elsewhere nothing in the directory runs, which is exit 4.
    runs_stock = sys.version_info[:2] == (3, 11) and platform.machine() == "x86_64"
    assert result.returncode == (0 if runs_stock else 4), result.stderr
    host = result.json()["host"]
    assert (host["source"], host["live"]) == ("this machine", True)
    assert host["target"] == archspec.cpu.host().name
    assert host["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert host["python_source"].startswith("this interpreter, ")
    # nvidia-smi was asked: a driver's CUDA, or the reason there is none.
    assert host["driver_cuda_source"]


def test_a_cpuinfo_cut_inside_its_flags_line_is_said_and_picks_without_the_cut_flag(
    standin_dir: Path, tmp_path: Path
) -> None:
    """archspec's cascadelake dump (one block, flags last, no final newline) cut inside avx512f:
    pick says so, as detect and plan do, and chooses as for a machine without AVX-512."""
    whole = cpuinfo_fixture("cascadelake")
    text = whole.read_text()
    cut = tmp_path / "cut.cpuinfo"
    cut.write_text(text[: text.index(" avx512f ") + len(" avx512")])
    args = ("pick", str(standin_dir), "--python", "3.11", "--json", "--cpuinfo")
    full = run_cli(*args, str(whole))
    assert full.returncode == 0, full.stderr
    assert full.json()["warnings"] == []
    assert full.json()["chosen"]["filename"] in (WHEELS["v4"], WHEELS["sky"])
    result = run_cli(*args, str(cut))
    assert result.returncode == 0, result.stderr
    (warning,) = result.json()["warnings"]
    assert f"--cpuinfo {cut} ends without a final newline" in warning
    assert "its last token 'avx512' may be cut" in warning
    assert result.json()["chosen"]["filename"] == WHEELS["v3"]
    human = run_cli(*args[:-2], "--cpuinfo", str(cut))
    assert human.returncode == 0, human.stderr
    assert "its last token 'avx512' may be cut" in " ".join(human.stdout.split())
