"""A real overlay for the overlay tests: built once per session against the real stock wheel (the
smoke tests' cached environment), for the target tfbuild plans for this host, and unpacked into a
directory named site-packages, which TensorFlow scans for tensorflow-plugins/ when it is on
PYTHONPATH. Building takes about 25 s on 2 cores; the numerical check is its own test."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tfbuild.overlay.build import OverlayRequest, OverlayResult, build_overlay
from tfbuild.plan.here import plan_here
from tfbuild.plan.options import PlanOptions
from tfbuild.smoke.envs import WheelSpec, ensure_env

STOCK = "tensorflow-cpu==2.21.0"


@dataclass(frozen=True)
class BuiltOverlay:
    python: str  # the stock interpreter
    site: str  # a site-packages directory holding the overlay's tensorflow-plugins/
    result: OverlayResult


def request_for(target: str | None, out: Path, python: str) -> OverlayRequest:
    plan = plan_here(PlanOptions(tf="2.21", target=target)).plan
    return OverlayRequest(
        tensorflow=plan.tensorflow,
        architecture=plan.architecture,
        target=plan.target,
        cflags=plan.cflags,
        compiler=plan.compiler,
        python=python,
        out=out,
        check=False,
    )


def unpack(wheel: Path, into: Path) -> Path:
    site = into / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            target = site / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))
    return site


@pytest.fixture(scope="session")
def stock_python() -> str:
    if sys.version_info[:2] != (3, 11):
        pytest.skip(f"{STOCK} is tested on Python 3.11, this is {sys.version.split()[0]}")
    return ensure_env(WheelSpec.parse(STOCK)).python


@pytest.fixture(scope="session")
def built_overlay(
    stock_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BuiltOverlay]:
    out = tmp_path_factory.mktemp("overlay")
    result = build_overlay(request_for(None, out / "dist", stock_python))
    yield BuiltOverlay(python=stock_python, site=str(unpack(result.wheel, out)), result=result)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that run the stock TensorFlow are slow (``make quick`` leaves them out)."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "stock_python" in names or "built_overlay" in names:
            item.add_marker(pytest.mark.slow)
