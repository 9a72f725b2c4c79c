"""The one way tests write a receipt: a valid ``tfbuild.receipt/2`` made through the ``Receipt`` type.

:func:`make_receipt` describes a real wheel file (its name, sha256 and size), with a small plan whose
``plan_sha256`` is computed, so that every reader accepts it; a test then spoils the part it is about
(the dict it returns, or a ``Receipt`` field through ``changes``). :func:`write_receipt` puts it where
``tfbuild wheel`` does, beside the wheel.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from tfbuild.wheel.receipt import (
    Inputs,
    Receipt,
    SourceRecord,
    WheelRecord,
    canonical_sha256,
    receipt_path,
)

_TARBALL = "https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.21.0.tar.gz"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_receipt(
    wheel_path: Path,
    *,
    target: str = "x86_64_v4",
    variant: str = "cpu",
    label: str | None = "x86_64v4",
    plan_overrides: dict[str, Any] | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """The receipt ``tfbuild wheel`` writes for ``wheel_path``, as JSON.

    The plan says ``x86_64``, the target and variant, the cflags (``changes["cflags"]``, default
    none), no coverage and no CUDA; ``plan_overrides`` replaces its keys (``coverage``, ``cuda``)
    before it is hashed. ``changes`` replace other :class:`Receipt` fields (``standin``,
    ``sections``, ``wheel``).
    """
    data = wheel_path.read_bytes()
    cflags = tuple(changes.pop("cflags", ()))
    plan: dict[str, Any] = {
        "architecture": "x86_64",
        "target": target,
        "variant": variant,
        "label": label,
        "cflags": list(cflags),
        "coverage": [],
        "cuda": None,
        **(plan_overrides or {}),
    }
    receipt = Receipt(
        build_id="test",
        created="2025-01-01T00:00:00+00:00",
        standin=False,
        wheel=WheelRecord(
            name=wheel_path.name, sha256=hashlib.sha256(data).hexdigest(), size=len(data)
        ),
        target=target,
        variant=variant,
        label=label,
        cflags=cflags,
        plan=plan,
        plan_sha256=canonical_sha256(plan),
        inputs=Inputs(
            tfbuild="0.0.0",
            recipe="recipes/tf-2.21.yaml",
            recipe_sha256=_digest("recipe"),
            source=SourceRecord(
                kind="tarball", url=_TARBALL, sha256=_digest("source"), pinned=True
            ),
            base_image=f"debian:bookworm-slim@sha256:{_digest('base')}",
            base_image_id=None,
            toolchain_image="tfbuild/toolchain:test",
            toolchain_image_id=f"sha256:{_digest('toolchain')}",
            packages={"clang-18": "1:18.1.8-18"},
            tools={"bazel": "7.4.1", "compiler": "clang 18.1.8"},
        ),
        timings={"build": 1.0},
        runtime_env_file=wheel_path.with_suffix(".env").name,
    )
    receipt = dataclasses.replace(receipt, **changes)
    if "inputs_sha256" not in changes:  # as the build writes it: the hash of the inputs it records
        receipt = dataclasses.replace(receipt, inputs_sha256=receipt.inputs.sha256)
    return receipt.to_json()


def write_receipt(wheel_path: Path, receipt: dict[str, Any] | None = None, **options: Any) -> Path:
    """Write ``receipt`` (default: ``make_receipt(wheel_path, **options)``) beside the wheel."""
    data = receipt if receipt is not None else make_receipt(wheel_path, **options)
    path = receipt_path(wheel_path)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
