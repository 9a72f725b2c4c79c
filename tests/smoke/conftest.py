"""Real wheels for the smoke tests: the stock tensorflow-cpu from the package index, in a cached
environment made with tfbuild's own code (the first run downloads about 260 MB)."""

from __future__ import annotations

import sys

import pytest

from tfbuild.measure.envs import WheelSpec, ensure_env

STOCK = "tensorflow-cpu==2.21.0"


@pytest.fixture(scope="session")
def stock_python() -> str:
    if sys.version_info[:2] != (3, 11):
        pytest.skip(f"{STOCK} is tested on Python 3.11, this is {sys.version.split()[0]}")
    return ensure_env(WheelSpec.parse(STOCK)).python


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that runs the stock TensorFlow (it asks for ``stock_python``, or for a fixture that
    does) is slow: seconds to import TensorFlow, more to time it. ``make quick`` leaves them out."""
    for item in items:
        if "stock_python" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
