"""tfbuild forecast's oneDNN probe: what oneDNN ran for matmul and conv in the stock wheel, read
from its verbose lines in both formats oneDNN has printed (2.x: TensorFlow 2.13's; 3.x: 2.21's),
recorded from real wheels (tests/fixtures/onednn/SOURCES.md) and run for real; a probe that fails
says it was tfbuild's, never asks the user a question about the wheel."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tfbuild.core import commands
from tfbuild.measure.forecast_onednn import onednn_call, read_probe

RECORDED = ROOT / "tests" / "fixtures" / "onednn"
ISA = "Intel AVX-512 with Intel DL Boost and bfloat16 support"  # the recording machine's


@pytest.mark.parametrize(
    ("recording", "conv"),
    [
        ("tf2.13.1-onednn2.7.3.txt", "brgconv:avx512_core"),  # no format marker, no category
        ("tf2.21.0-onednn3.7.3.txt", "brg_conv_fwd:avx512_core"),  # "v1", "primitive"
    ],
)
def test_both_verbose_formats_give_the_isa_and_the_kernels(recording: str, conv: str) -> None:
    onednn = read_probe(commands.Finished(returncode=0, stdout=(RECORDED / recording).read_text()))
    assert onednn.measured and onednn.error is None and onednn.forecast == "no change"
    assert onednn.isa == ISA
    # gemm_api's implementation column is empty in both: oneDNN's own sgemm.
    assert onednn.kernels == {"conv": (conv,), "matmul": ("oneDNN's sgemm",)}


@pytest.mark.parametrize(
    ("output", "code", "said"),
    [
        ("", 0, "the stock wheel printed no oneDNN verbose line under tfbuild's probe"),
        ("onednn_verbose,v9,something new\n", 0, "tfbuild's oneDNN probe could not read the ISA"),
        (
            (RECORDED / "tf2.21.0-onednn3.7.3.txt")
            .read_text()
            .split("onednn_verbose,v1,primitive,exec")[0],
            0,
            "tfbuild's oneDNN probe read no matmul or conv kernel",
        ),
        ("ImportError: x", 1, "tfbuild's oneDNN probe exited with 1: ImportError: x"),
        ("", None, "tfbuild's oneDNN probe did not run: not found"),
    ],
)
def test_a_probe_that_reads_nothing_says_it_was_tfbuilds(
    output: str, code: int | None, said: str
) -> None:
    onednn = read_probe(commands.Finished(returncode=code, stderr=output, problem="not found"))
    assert not onednn.measured and onednn.forecast is None
    assert onednn.error is not None and said in onednn.error
    assert onednn.describe().startswith("not measured: ")
    assert "?" not in onednn.describe()  # a statement of what failed, not a question


def test_the_probe_reads_the_real_stock_wheel(stock_python: str) -> None:
    onednn = read_probe(commands.attempt(onednn_call(stock_python)))
    assert onednn.measured, onednn.error
    assert set(onednn.kernels) == {"matmul", "conv"}


@pytest.mark.slow
def test_the_probe_reads_tensorflow_2_13s_onednn() -> None:
    """TensorFlow 2.13's oneDNN 2.7 prints the older verbose format: the probe reads it from the
    real wheel (it said "oneDNN printed no ISA (is oneDNN on in this wheel?)" once)."""
    from tfbuild.measure.envs import WheelSpec, ensure_env

    python = ensure_env(WheelSpec.parse("tensorflow-cpu==2.13.1")).python
    onednn = read_probe(commands.attempt(onednn_call(python)))
    assert onednn.error is None and onednn.isa, onednn
    assert set(onednn.kernels) == {"matmul", "conv"}, onednn
