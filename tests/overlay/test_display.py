"""What ``tfbuild overlay`` says of the wheel it made, from a real overlay's receipt; and what the
smoke of an overlay says of a model."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.overlays import compiled_for
from tfbuild.cli.overlay import _model_lines, built_lines
from tfbuild.core.stats import Summary, verdict
from tfbuild.measure.profile import KernelTime
from tfbuild.measure.run import OpResult
from tfbuild.overlay.models import ModelResult
from tfbuild.wheel.overlay_receipt import KernelCheck, read_overlay_receipt
from tfbuild.wheel.receipt import receipt_path

from .conftest import BuiltOverlay


def test_each_fact_once_in_80_columns(built_overlay: BuiltOverlay) -> None:
    wheel = built_overlay.result.wheel
    built = read_overlay_receipt(receipt_path(wheel), wheel=wheel)  # built without the check
    assert "not checked against stock" in " ".join(built_lines(wheel, built))
    checks = tuple(
        KernelCheck(kernel=k, values=100, exact=100 - i % 3, max_ulp=i % 3, bound=4 + i)
        for i, k in enumerate(built.kernels)
    )
    receipt = dataclasses.replace(built, checks=checks)
    lines = built_lines(wheel, receipt)
    # a line runs over only when one word does (a path: never broken)
    for line in lines:
        assert len(line) <= 80 or max(len(word) for word in line.split()) > 80 - 4, line
    text = " ".join(line.strip() for line in lines)
    assert f"{len(receipt.kernels)} kernels of {receipt.distribution}" in text
    exact = sum(1 for c in receipt.checks if c.max_ulp == 0)
    assert f"{len(receipt.checks)} kernels, {exact} exact" in text
    widest = max(checks, key=lambda c: (c.max_ulp, c.bound))
    assert f"(widest: {widest.kernel} 2 of {widest.bound})" in text
    left = {entry.partition(" ")[0] for entry in receipt.skipped}
    for op in left:  # each op left to stock named once, whatever its dtypes
        assert text.count(f"left to stock: {op} (") == 1
    assert Path(lines[0]) == wheel
    # each command copied whole: on one line, or its path after a shell continuation
    assert f"tfbuild smoke {wheel}" in text or f"tfbuild smoke \\ {wheel}" in text


def test_what_the_kernels_left_out_is_said_apart_from_what_they_need(
    built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    """The sapphirerapids overlay as clang 16 compiles it here: the system instructions on one
    line, AVX512-FP16 (left out for the compiler's sake) on its own with why."""
    compiled = compiled_for("sapphirerapids", tmp_path)
    wheel = Path("tfbuild_overlay-2.21.0+sapphirerapids-py3-none-manylinux_2_31_x86_64.whl")
    receipt = dataclasses.replace(
        built_overlay.result.receipt,
        cflags=compiled.cflags,
        features=compiled.features,
        left_out=compiled.left_out,
    )
    text = " ".join(line.strip() for line in built_lines(wheel, receipt))
    system = " ".join(o.instruction_set for o in compiled.left_out if o.system)
    assert "pku" in system.split() and "waitpkg" in system.split()
    assert f"system instructions no kernel contains; a VM may hide them): {system} " in text
    assert "not used: avx512_fp16 (Eigen's AVX512-FP16 packet math does not compile" in text
    assert "amx_tile" in text.split("loads only where the CPU has: ")[1].split(" not needed")[0]


def model_result(note: str | None) -> ModelResult:
    base = [0.010 * (1 + 0.004 * (i % 5)) for i in range(15)]
    cand = [s / 1.06 for s in base]
    return ModelResult(
        model="model:m.keras",
        what="your model (predict, batch 8)",
        share=0.0004,
        speedup=0.84,
        predicted=0.9999,
        kernels=(KernelTime(kernel="Rsqrt:float32", stock_s=1.4e-5, overlay_s=1.7e-5),),
        top=(("Mul", 0.0093), ("_MklNativeFusedConv2D", 0.0081)),
        not_run=(),
        measured=OpResult(
            op="model:m.keras",
            threads="default",
            candidate=Summary.of(cand, 8, "Gsample/s"),
            baseline=Summary.of(base, 8, "Gsample/s"),
            verdict=verdict(cand, base, paired=True),
        ),
        note=note,
    )


def test_a_models_gain_its_kernels_cannot_explain_is_said_not_claimed() -> None:
    note = "measured 1.06x faster while the replaced kernels ran 0.84x their stock speed: not their doing, so not claimed"
    lines = _model_lines([model_result(note)])
    (row,) = [line for line in lines if line.startswith("  model:m.keras")]
    assert "1.060x" in row and row.endswith("not claimed") and "faster" not in row
    text = " ".join(line.strip() for line in lines)
    assert "not claimed: measured 1.06x faster while the replaced kernels ran 0.84x" in text
    assert all(len(line) <= 80 for line in lines), lines
    (claimed,) = [line for line in _model_lines([model_result(None)]) if "model:m.keras" in line]
    assert claimed.endswith("faster")
