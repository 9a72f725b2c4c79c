"""tfbuild tune, run for real on the stock wheel, and its refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.mark.slow
def test_tune_measures_a_knob_and_writes_the_profile(stock_python: str, tmp_path: Path) -> None:
    profile = tmp_path / "stock.env"
    result = run_cli(
        "tune", "tensorflow-cpu==2.21.0", "--budget", "1", "--output", str(profile), "--json",
        timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.tune/1"
    assert data["written"] == str(profile)
    # A budget of one second: the first knob is timed, the rest are reported as not tried.
    tried = data["kept"] + data["rejected"]
    assert len(tried) == 1 and tried[0]["name"].startswith("threads intra="), tried
    assert data["not_tried"] and "oneDNN off" in data["not_tried"]
    for trial in tried:
        low, high = trial["interval"]
        assert low <= high and trial["gain"] > 0
        assert set(trial["ops"]) == {"matmul_1024", "conv2d_nhwc", "exp", "add", "softmax"}
    text = profile.read_text()
    assert text.startswith("# runtime profile measured by tfbuild tune for tensorflow-cpu==2.21.0")
    for name, value in data["env"].items():
        assert f"{name}={value}" in text.splitlines()
    if not data["kept"]:
        assert "TensorFlow's defaults are the profile" in text


def test_tune_needs_a_wheel_or_installed() -> None:
    result = run_cli("tune")
    assert result.returncode == 2, result.stderr
    assert "tune needs one wheel" in result.stderr
