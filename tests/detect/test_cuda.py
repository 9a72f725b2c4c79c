"""The CUDA locator against recorded install layouts (tests/fixtures/cuda/) and this machine."""

from __future__ import annotations

import contextvars
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import pytest

from tfbuild.core import commands, serial
from tfbuild.core.commands import Finished
from tfbuild.detect.cuda import locate_cuda
from tfbuild.detect.cuda_report import CudaReport, CudaToolkit, LibraryInstall
from tfbuild.detect.cuda_versions import (
    parse_cuda_version_macro,
    parse_header_version,
    parse_nvcc_version,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cuda"
P = PurePosixPath
PIP_VENV = "/venv/lib/python3.11/site-packages"
PIP_USER = "/home/user/.local/lib/python3.11/site-packages"

# Real `nvcc --version` outputs (the fixture scripts print these same texts).
NVCC_12_5 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Thu_Jun__6_02:18:23_PDT_2024
Cuda compilation tools, release 12.5, V12.5.82
Build cuda_12.5.r12.5/compiler.34385749_0
"""


class Recorder:
    """A runner that runs each call for real (in the context it was made in, outside the replay)
    and remembers what it ran."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.outside = contextvars.copy_context()

    def __call__(self, call: commands.Command) -> Finished:
        self.calls.append(call.argv[0])
        return self.outside.run(commands.attempt, call)


def locate(
    case: str | Path, env: Mapping[str, str], site_packages: Sequence[str] = ()
) -> CudaReport:
    root = case if isinstance(case, Path) else FIXTURES / case
    return locate_cuda(root=root, env=env, site_packages=site_packages)


def evidence_of(found: CudaToolkit | LibraryInstall, source: str) -> str | None:
    """What one source (``cuda.h``, ``nvcc``, ``version.json``, ...) says, if it was read."""
    return dict(found.evidence).get(source)


def warned(report: CudaReport, *fragments: str) -> bool:
    """Whether one warning contains every fragment."""
    return any(all(f in w for f in fragments) for w in report.warnings)


# -- parsing --------------------------------------------------------------------------------------


def test_parse_nvcc_version_reads_the_v_number() -> None:
    assert parse_nvcc_version(NVCC_12_5) == "12.5.82"
    assert parse_nvcc_version("Cuda compilation tools, release 12.5") == "12.5"
    assert parse_nvcc_version("nvcc: command not found") is None


def test_parse_cuda_h_as_tensorflow_does() -> None:
    # find_cuda_config.py: version // 1000 . version % 1000 // 10
    assert parse_cuda_version_macro("#define CUDA_VERSION 12050\n") == "12.5"
    assert parse_cuda_version_macro("#define CUDA_VERSION 13000\n") == "13.0"
    assert parse_cuda_version_macro("# define CUDA_VERSION 11080 /* 11.8 */\n") == "11.8"
    assert parse_cuda_version_macro("#define CUDA_VERSION_MAJOR 12\n") is None


def test_parse_tensorrt_header_both_styles() -> None:
    macros = ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH")
    # TensorRT 8.x spells the numbers out (NVIDIA/TensorRT include/NvInferVersion.h, 8.4.2).
    old = (
        "#define NV_TENSORRT_MAJOR 8 //!< TensorRT major version.\n"
        "#define NV_TENSORRT_MINOR 4 //!< TensorRT minor version.\n"
        "#define NV_TENSORRT_PATCH 2 //!< TensorRT patch version.\n"
        "#define NV_TENSORRT_BUILD 4 //!< TensorRT build number.\n"
    )
    assert parse_header_version(old, macros) == "8.4.2"
    new = (FIXTURES / "debian/usr/include/x86_64-linux-gnu/NvInferVersion.h").read_text()
    assert "#define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE" in new
    assert parse_header_version(new, macros) == "10.14.1"
    assert parse_header_version("#define NV_TENSORRT_MAJOR UNDEFINED_THING\n", macros) is None


# -- recorded layouts -----------------------------------------------------------------------------


def test_classic_toolkits_side_by_side() -> None:
    run = Recorder()
    env = {"PATH": "/usr/local/cuda/bin:/usr/bin", "CUDA_HOME": "/usr/local/cuda-11.8"}
    with commands.replaying(run):
        report = locate("classic", env)
    assert report.warnings == ()
    old, new = report.toolkits
    assert old.root == P("/usr/local/cuda-11.8")
    assert old.version == "11.8"
    assert dict(old.evidence) == {
        "cuda.h": "11.8",
        "version.json": "11.8.0",
        "nvcc": "11.8.89",
        "libcudart": "11.8.89",
    }
    assert old.found_by == ("/usr/local/cuda-*", "CUDA_HOME")
    # /usr/local/cuda chooses 12.6, and PATH reaches it through that symlink: one toolkit.
    assert new.root == P("/usr/local/cuda-12.6")
    assert new.version == "12.6"
    assert evidence_of(new, "version.json") == "12.6.20241114"
    assert evidence_of(new, "nvcc") == "12.6.85"
    assert evidence_of(new, "libcudart") == "12.6.77"
    assert new.found_by == ("/usr/local/cuda", "/usr/local/cuda-*", "PATH")
    assert new.nvcc == P("/usr/local/cuda-12.6/bin/nvcc")
    lib = P("/usr/local/cuda-12.6/targets/x86_64-linux/lib")
    assert new.libraries == (
        lib / "libcudart.so",
        lib / "libcudart.so.12",
        lib / "libcudart.so.12.6.77",
    )
    # Each nvcc ran once, however many ways led to its toolkit.
    assert sorted(run.calls) == [
        str(FIXTURES / "classic/usr/local/cuda-11.8/bin/nvcc"),
        str(FIXTURES / "classic/usr/local/cuda-12.6/bin/nvcc"),
    ]
    (cudnn,) = report.cudnn
    assert cudnn.version == "9.3.0"
    assert cudnn.header == P("/usr/local/cuda-12.6/targets/x86_64-linux/include/cudnn_version.h")
    assert cudnn.libraries[-1] == lib / "libcudnn.so.9.3.0"
    assert cudnn.found_by == ("toolkit",)
    assert report.nccl == report.tensorrt == ()


def test_wrapper_script_on_path_leads_to_its_toolkit() -> None:
    # Like /usr/local/bin/nvcc on the development machine: `exec /usr/local/cuda-X/bin/nvcc "$@"`.
    report = locate("classic", {"PATH": "/usr/local/bin:/usr/bin"})
    by_root = {str(t.root): t for t in report.toolkits}
    assert by_root["/usr/local/cuda-11.8"].found_by == ("/usr/local/cuda-*", "PATH")
    assert "PATH" not in by_root["/usr/local/cuda-12.6"].found_by
    assert report.warnings == ()


def test_debian_multiarch_packages() -> None:
    report = locate("debian", {"PATH": "/usr/bin"})
    assert report.toolkits == ()
    assert report.warnings == ()
    (cudnn,) = report.cudnn
    # /usr/include/cudnn_version.h -> /etc/alternatives/cudnn_version_h -> the versioned header:
    # absolute links resolve inside the fixture, not on this machine.
    assert cudnn.header == P("/usr/include/x86_64-linux-gnu/cudnn_version_v9.h")
    assert cudnn.version == "9.5.0"
    lib = P("/usr/lib/x86_64-linux-gnu")
    assert cudnn.libraries == (
        lib / "libcudnn.so",
        lib / "libcudnn.so.9",
        lib / "libcudnn.so.9.5.0",
    )
    assert dict(cudnn.evidence) == {"header": "9.5.0", "library": "9.5.0"}
    assert cudnn.found_by == ("system",)
    (nccl,) = report.nccl
    assert (nccl.version, nccl.header) == ("2.27.7", P("/usr/include/nccl.h"))
    assert nccl.libraries[-1] == lib / "libnccl.so.2.27.7"
    (trt,) = report.tensorrt
    assert (trt.version, trt.header) == (
        "10.14.1",
        P("/usr/include/x86_64-linux-gnu/NvInferVersion.h"),
    )
    assert trt.libraries == (lib / "libnvinfer.so.10", lib / "libnvinfer.so.10.14.1")


def test_pip_wheels_cuda12_and_cuda13() -> None:
    report = locate("pip", {"PATH": "/usr/bin"}, site_packages=(PIP_VENV, PIP_USER))
    assert report.warnings == ()
    cu13, cu12 = report.toolkits
    assert cu12.root == P(f"{PIP_VENV}/nvidia/cuda_runtime")
    assert cu12.nvcc == P(f"{PIP_VENV}/nvidia/cuda_nvcc/bin/nvcc")
    assert cu12.version == "12.5"
    assert dict(cu12.evidence) == {
        "cuda.h": "12.5",
        "nvcc": "12.5.82",
        "dist-info": "12.5.82",
        "libcudart": "12",
    }
    assert cu12.found_by == ("pip",)
    assert cu13.root == P(f"{PIP_USER}/nvidia/cu13")
    assert cu13.nvcc == P(f"{PIP_USER}/nvidia/cu13/bin/nvcc")
    assert dict(cu13.evidence) == {
        "cuda.h": "13.0",
        "nvcc": "13.0.88",
        "dist-info": "13.0.96",
        "libcudart": "13",
    }
    (cudnn,) = report.cudnn
    assert cudnn.version == "9.3.0"
    assert cudnn.header == P(f"{PIP_VENV}/nvidia/cudnn/include/cudnn_version.h")
    assert cudnn.libraries == (P(f"{PIP_VENV}/nvidia/cudnn/lib/libcudnn.so.9"),)
    assert evidence_of(cudnn, "dist-info") == "9.3.0.75"
    assert cudnn.found_by == ("pip",)
    (nccl,) = report.nccl
    assert (nccl.version, evidence_of(nccl, "dist-info")) == ("2.27.7", "2.27.7")


def test_pip_nvcc_put_on_path() -> None:
    env = {"PATH": f"{PIP_VENV}/nvidia/cuda_nvcc/bin:/usr/bin"}
    report = locate("pip", env, site_packages=(PIP_VENV,))
    (toolkit,) = report.toolkits
    assert toolkit.root == P(f"{PIP_VENV}/nvidia/cuda_runtime")
    assert toolkit.found_by == ("PATH", "pip")
    assert evidence_of(toolkit, "nvcc") == "12.5.82"
    assert report.warnings == ()


def test_conda_prefix() -> None:
    prefix = "/opt/conda/envs/tf"
    report = locate("conda", {"PATH": f"{prefix}/bin:/usr/bin", "CONDA_PREFIX": prefix})
    assert report.warnings == ()
    (toolkit,) = report.toolkits
    assert toolkit.root == P(prefix)
    assert toolkit.version == "12.4"
    assert dict(toolkit.evidence) == {
        "cuda.h": "12.4",
        "nvcc": "12.4.131",
        "conda-meta": "12.4.127",
        "libcudart": "12.4.127",
    }
    assert toolkit.found_by == ("PATH", "conda")
    assert P(f"{prefix}/lib/libcudart.so.12") in toolkit.libraries
    (cudnn,) = report.cudnn
    assert (cudnn.version, cudnn.header) == ("8.9.7", P(f"{prefix}/include/cudnn_version.h"))
    assert evidence_of(cudnn, "conda-meta") == "8.9.7.29"
    assert "conda" in cudnn.found_by


def test_conda_prefix_without_cuda_is_quietly_nothing(tmp_path: Path) -> None:
    (tmp_path / "opt/env/bin").mkdir(parents=True)
    report = locate(tmp_path, {"CONDA_PREFIX": "/opt/env"})
    assert report.toolkits == ()
    assert report.warnings == ()


def test_broken_installs_become_warnings() -> None:
    env = {
        "PATH": "/usr/local/cuda-11.2/bin:/usr/bin",
        "CUDA_HOME": "/opt/cuda-missing",
        "LD_LIBRARY_PATH": "/opt/cudnn/lib",
    }
    report = locate("broken", env)
    assert warned(report, "/usr/local/cuda is a broken symlink to cuda-12.8")
    assert warned(report, "/usr/local/cuda-loop", "symlink loop")
    assert warned(report, "/usr/local/cuda-empty does not look like a CUDA toolkit")
    assert warned(report, "CUDA_HOME is set to /opt/cuda-missing, which does not exist")

    broken, mixed = report.toolkits
    # Headers of 12.4 with an nvcc of 12.2: reported as a warning, cuda.h decides the version.
    assert mixed.root == P("/usr/local/cuda-12.4")
    assert mixed.version == "12.4"
    assert (evidence_of(mixed, "cuda.h"), evidence_of(mixed, "nvcc")) == ("12.4", "12.2.140")
    assert warned(
        report, "/usr/local/cuda-12.4 reports different versions", "cuda.h 12.4", "nvcc 12.2.140"
    )
    assert warned(report, "/usr/local/cuda-12.4/version.json")
    # An HTML page for cuda.h, an nvcc that fails, a dangling libcudart link: no version at all.
    assert broken.root == P("/usr/local/cuda-11.2")
    assert broken.version is None
    assert broken.evidence == ()
    assert broken.found_by == ("/usr/local/cuda-*", "PATH")
    assert warned(report, "/usr/local/cuda-11.2/include/cuda.h has no '#define CUDA_VERSION'")
    assert warned(report, "nvcc at /usr/local/cuda-11.2/bin/nvcc exited with status 1")
    assert warned(report, "/usr/local/cuda-11.2/lib64/libcudart.so is a broken symlink")
    assert warned(report, "No version could be read for the CUDA toolkit at /usr/local/cuda-11.2")

    garbage, orphan, clash = report.cudnn
    # A "header" that is really an ELF file: the version comes from the library's name.
    assert garbage.header == P("/opt/cudnn/include/cudnn_version.h")
    assert (garbage.version, garbage.found_by) == ("9", ("LD_LIBRARY_PATH",))
    assert warned(report, "/opt/cudnn/include/cudnn_version.h has no CUDNN_MAJOR and CUDNN_MINOR")
    # A library with no header anywhere.
    assert orphan.header is None
    assert orphan.version == "8.9.7"
    assert warned(
        report, "cuDNN library /usr/lib/x86_64-linux-gnu/libcudnn.so.8 was found without its header"
    )
    # A cuDNN 9 header beside a cuDNN 8 library.
    assert (clash.version, evidence_of(clash, "library")) == ("9.1.0", "8")
    assert warned(
        report,
        "cuDNN header /usr/local/cuda-12.4/include/cudnn_version.h says 9.1.0",
        "libcudnn.so.8 is version 8",
    )
    assert len(report.warnings) == 13, report.warnings


def test_nvcc_that_cannot_run_or_prints_nonsense() -> None:
    def missing(call: commands.Command) -> Finished:
        return Finished(returncode=None, problem="it cannot run: Permission denied")

    def chatty(call: commands.Command) -> Finished:
        return Finished(returncode=0, stdout="hello\n")

    env = {"PATH": "/usr/bin"}
    with commands.replaying(missing):
        report = locate("classic", env)
    assert warned(report, "nvcc at /usr/local/cuda-12.6/bin/nvcc could not be run")
    assert report.toolkits[1].version == "12.6"  # the files still say it
    assert evidence_of(report.toolkits[1], "nvcc") is None
    with commands.replaying(chatty):
        report = locate("classic", env)
    assert warned(report, "nvcc at /usr/local/cuda-11.8/bin/nvcc printed no 'release X.Y' line")


def test_odd_files_do_not_hang_or_crash(tmp_path: Path) -> None:
    top = tmp_path / "usr/local/cuda-12.0"
    (top / "include").mkdir(parents=True)
    os.mkfifo(top / "include/cuda.h")  # opening a FIFO to read would block forever
    (top / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": 12}}')
    # An absolute symlink must resolve inside the searched root, even where this machine has it.
    (tmp_path / "usr/local/cuda").symlink_to("/usr/local/cuda-13.0")
    report = locate(tmp_path, {"PATH": "/usr/bin", "CUDA_HOME": "relative/cuda"})
    assert warned(report, "/usr/local/cuda-12.0/include/cuda.h is not a regular file")
    assert warned(report, "Could not read the CUDA version from /usr/local/cuda-12.0/version.json")
    assert warned(report, "/usr/local/cuda is a broken symlink to /usr/local/cuda-13.0")
    assert warned(report, "CUDA_HOME is set to relative/cuda, which is not an absolute path")
    (toolkit,) = report.toolkits  # a version.json makes it a toolkit, if one without a version
    assert (toolkit.root, toolkit.version) == (P("/usr/local/cuda-12.0"), None)
    assert warned(report, "No version could be read for the CUDA toolkit at /usr/local/cuda-12.0")


def test_old_cudnn_h_is_a_fallback(tmp_path: Path) -> None:
    # cuDNN 7 kept its version macros in cudnn.h itself.
    include, lib = tmp_path / "usr/include", tmp_path / "usr/lib/x86_64-linux-gnu"
    include.mkdir(parents=True)
    lib.mkdir(parents=True)
    (include / "cudnn.h").write_text(
        "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n"
    )
    (lib / "libcudnn.so.7.6.5").touch()
    (cudnn,) = locate(tmp_path, {}).cudnn
    assert (cudnn.version, cudnn.header) == ("7.6.5", P("/usr/include/cudnn.h"))


def test_tensorrt_header_without_library_and_pip_libraries_without_header(tmp_path: Path) -> None:
    include = tmp_path / "usr/include/x86_64-linux-gnu"
    include.mkdir(parents=True)
    header = FIXTURES / "debian/usr/include/x86_64-linux-gnu/NvInferVersion.h"
    (include / "NvInferVersion.h").write_text(header.read_text())
    # The tensorrt-cu12-libs wheel ships libnvinfer in site-packages/tensorrt_libs, no headers.
    sp = tmp_path / "venv/lib/python3.11/site-packages"
    (sp / "tensorrt_libs").mkdir(parents=True)
    (sp / "tensorrt_libs/libnvinfer.so.10").touch()
    (sp / "tensorrt_cu12_libs-10.3.0.dist-info").mkdir()
    (sp / "tensorrt_cu12_libs-10.3.0.dist-info/METADATA").touch()
    report = locate(tmp_path, {}, site_packages=(PIP_VENV,))
    system, wheel = report.tensorrt
    assert (system.version, system.libraries) == ("10.14.1", ())
    assert warned(
        report, "TensorRT header /usr/include/x86_64-linux-gnu/NvInferVersion.h", "10.14.1"
    )
    assert (wheel.version, wheel.header, wheel.found_by) == ("10.3.0", None, ("pip",))
    assert dict(wheel.evidence) == {"dist-info": "10.3.0", "library": "10"}
    assert warned(report, f"TensorRT library {PIP_VENV}/tensorrt_libs/libnvinfer.so.10")


def test_json_is_ready_and_deterministic() -> None:
    env = {"PATH": "/usr/local/cuda/bin", "CUDA_HOME": "/usr/local/cuda-11.8"}
    first = serial.to_data(locate("classic", env))
    assert first == serial.to_data(locate("classic", env))
    assert json.loads(json.dumps(first)) == first
    assert list(first) == ["toolkits", "cudnn", "nccl", "tensorrt", "warnings"]
    toolkit = first["toolkits"][1]
    assert toolkit["root"] == "/usr/local/cuda-12.6"
    assert toolkit["evidence"] == {
        "cuda.h": "12.6",
        "libcudart": "12.6.77",
        "nvcc": "12.6.85",
        "version.json": "12.6.20241114",
    }
    assert toolkit["libraries"] == sorted(toolkit["libraries"])
    assert first["cudnn"][0]["header"].endswith("/cudnn_version.h")


# -- this machine ---------------------------------------------------------------------------------


def test_this_machine_reports_what_its_files_and_nvcc_say() -> None:
    default = Path("/usr/local/cuda")
    if not default.exists():
        pytest.skip("/usr/local/cuda does not exist on this machine")
    root = default.resolve()
    report = locate_cuda()  # how long it takes: benchmarks/gpu_detect_speed.py

    toolkit = next(t for t in report.toolkits if t.root == P(root))
    assert {"/usr/local/cuda", "/usr/local/cuda-*"} <= set(toolkit.found_by)
    headers = (root / "include/cuda.h", root / "targets/x86_64-linux/include/cuda.h")
    cuda_h = next(p for p in headers if p.is_file())
    code = re.search(r"#define CUDA_VERSION (\d+)", cuda_h.read_text(errors="replace"))
    assert code, f"{cuda_h} has no CUDA_VERSION"
    major, minor = int(code[1]) // 1000, int(code[1]) % 1000 // 10
    assert toolkit.version == f"{major}.{minor}"
    assert evidence_of(toolkit, "cuda.h") == f"{major}.{minor}"
    nvcc = root / "bin/nvcc"
    if nvcc.exists():
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True)
        release = re.search(r"release \d+\.\d+, V([\d.]+)", out.stdout)
        assert release, out.stdout
        assert evidence_of(toolkit, "nvcc") == release[1]
        assert toolkit.nvcc == P(nvcc)
    wheels = sorted((root / "dist-info").glob("nvidia_cuda_runtime*-*.dist-info"))
    if wheels:  # this machine's toolkit was assembled from pip wheels
        version = wheels[0].name.removesuffix(".dist-info").split("-")[1]
        assert evidence_of(toolkit, "dist-info") == version
    which = shutil.which("nvcc")
    if which:
        on_path = Path(which)
        # Either nvcc itself or a small wrapper script that execs this toolkit's nvcc.
        wrapper = on_path.stat().st_size < 4096 and str(root) in on_path.read_text(errors="replace")
        if on_path.resolve() == nvcc.resolve() or wrapper:
            assert "PATH" in toolkit.found_by

    # No cuDNN here unless its files exist where the locator looks.
    cudnn_files = [
        *root.glob("include/cudnn*.h"),
        *root.glob("lib*/libcudnn.so*"),
        *Path("/usr/include").glob("cudnn*.h"),
        *Path("/usr/include/x86_64-linux-gnu").glob("cudnn_version*.h"),
        *Path("/usr/lib/x86_64-linux-gnu").glob("libcudnn.so*"),
    ]
    if not cudnn_files:
        assert report.cudnn == ()
    json.dumps(serial.to_data(report))
