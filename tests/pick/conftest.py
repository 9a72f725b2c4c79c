"""STAND-IN wheels for `tfbuild pick`: small, valid, installable wheels of a distribution called
``tfbuild_standin`` (not TensorFlow), labelled like tfbuild's wheels, some with a receipt beside them.

Each wheel holds one module, ``tfbuild_standin``, whose ``LABEL`` is the wheel's local version label,
so that a test can tell which wheel pip installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import receipts, wheels
from tests.http_server import Server

DIST = "tfbuild_standin"
#: The project's own Zen 4 VM, whose hypervisor hides flush_l1d and pku (fixtures/README.md).
ZEN4_VM = Path(__file__).parent / "fixtures" / "linux-debian12-epyc-zen4-vm"

# TensorFlow's guard features, as `tfbuild detect` names them.
V3_FEATURES = ("SSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA")
V4_FEATURES = (*V3_FEATURES, "AVX512F")
ZEN4_FEATURES = (*V4_FEATURES, "AVX512_VNNI", "AVX512_BF16")
# What the project's Zen 5 build VM has (linux-debian12-epyc-zen5-vm): a -march=native build there.
ZEN5_VM_FEATURES = (*ZEN4_FEATURES, "AVX_VNNI")

# The main set: short name -> file name. Every one is cp311 unless its name says otherwise.
WHEELS = {
    "v2": f"{DIST}-2.21.0+x86_64v2-cp311-cp311-linux_x86_64.whl",
    "v3": f"{DIST}-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl",
    "v4": f"{DIST}-2.21.0+x86_64v4-cp311-cp311-linux_x86_64.whl",
    "zen4": f"{DIST}-2.21.0+zen4-cp311-cp311-linux_x86_64.whl",
    "sky": f"{DIST}-2.21.0+skylake_avx512-cp311-cp311-linux_x86_64.whl",
    "cu125": f"{DIST}-2.21.0+x86_64v3.cu125-cp311-cp311-linux_x86_64.whl",
    "mkl": f"{DIST}-2.21.0+x86_64v3.mkl-cp311-cp311-linux_x86_64.whl",
    "stock": f"{DIST}-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl",
    "py312": f"{DIST}-2.21.0+x86_64v3-cp312-cp312-linux_x86_64.whl",
    "old": f"{DIST}-2.20.0+x86_64v4-cp311-cp311-linux_x86_64.whl",
    "native": f"{DIST}-2.21.0+native-cp311-cp311-linux_x86_64.whl",
    "unknown": f"{DIST}-2.21.0+mystery9-cp311-cp311-linux_x86_64.whl",
}
# Receipts written beside some of them: (target, covered guard features, the flag that covers them).
RECEIPTS = {
    "v3": ("x86_64_v3", V3_FEATURES, "-march=x86-64-v3"),
    "v4": ("x86_64_v4", V4_FEATURES, "-march=x86-64-v4"),
    "zen4": ("zen4", ZEN4_FEATURES, "-march=znver4"),
    "native": ("native", ZEN5_VM_FEATURES, "-march=native"),
}


def make_wheel(directory: Path, filename: str) -> Path:
    """A stand-in wheel whose module says which label it carries."""
    version = filename.split("-")[1]
    label = version.partition("+")[2]
    text = (
        '"""STAND-IN for tfbuild\'s pick tests: not TensorFlow."""\n'
        f"STANDIN = True\nLABEL = {label!r}\nVERSION = {version!r}\n"
    )
    return wheels.make_wheel(directory, filename, module=DIST, module_text=text)


def write_receipt(
    wheel: Path, target: str, covered: tuple[str, ...], flag: str = "-march=native"
) -> Path:
    """The receipt of a stand-in wheel: built for ``target``, ``flag`` turning on ``covered``."""
    return receipts.write_receipt(
        wheel,
        target=target,
        label=wheel.name.split("-")[1].partition("+")[2] or None,
        standin=True,
        cflags=(flag,),
        plan_overrides={
            "coverage": [
                *({"feature": f, "flag": flag, "note": None} for f in covered),
                {"feature": "AMX_FP16", "flag": None, "note": "the machine lacks it"},
            ]
        },
    )


def make_wheels(directory: Path, names: dict[str, str] = WHEELS, *, receipts: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for short, filename in names.items():
        wheel = make_wheel(directory, filename)
        if receipts and short in RECEIPTS:
            write_receipt(wheel, *RECEIPTS[short])
    return directory


@pytest.fixture(scope="session")
def standin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The main set of stand-in wheels (see WHEELS), with receipts for v3, v4, zen4 and native."""
    return make_wheels(tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def http_root(http_server: Server) -> tuple[Path, str]:
    """The loopback HTTP server (tests/http_server.py) serving a temporary directory: (dir, URL)."""
    return http_server.root, http_server.url


@pytest.fixture
def server(http_server: Server) -> Server:
    """The pick tests' name for the loopback server (tests/conftest.py's ``http_server``)."""
    return http_server


@pytest.fixture
def other(other_http_server: Server) -> Server:
    """A second server: another origin (another port)."""
    return other_http_server
