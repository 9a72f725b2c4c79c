"""What ``tfbuild overlay`` says of the wheel it made, from a real overlay's receipt."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tfbuild.cli.overlay import built_lines
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
    assert Path(lines[0]) == wheel and f"tfbuild smoke {wheel}" in text
