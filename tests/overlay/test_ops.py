"""Which kernels the overlay registers, from the real registry of tensorflow-cpu 2.21.0 (recorded by
tfbuild.overlay.stock.read_stock into data/registry-2.21.0.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tfbuild.core import serial
from tfbuild.measure.stock import RegisteredKernel
from tfbuild.overlay import compile as overlay_compile
from tfbuild.overlay.ops import LEFT_OUT, OPS, inc_files, plan_kernels

DATA = Path(__file__).parent / "data"
LOADER = Path(overlay_compile.__file__).with_name("loader.c")


def recorded_registry() -> dict[str, tuple[tuple[dict[str, tuple[str, ...]], int, str], ...]]:
    raw = json.loads((DATA / "registry-2.21.0.json").read_text())["kernels"]
    decoded = serial.from_data(raw, dict[str, tuple[RegisteredKernel, ...]])
    return {
        op: tuple((dict(k.constraints), k.priority, k.label) for k in found)
        for op, found in decoded.items()
    }


def test_every_type_tensorflow_registers_and_no_other() -> None:
    registry = recorded_registry()
    registration = plan_kernels(registry)
    for op in OPS:
        stock = {t for k in registry[op.name] for t in k[0]["T"]}
        mine = {dtype for name, dtype in registration.kernels if name == op.name}
        left = {dtype for (name, dtype) in LEFT_OUT if name == op.name}
        assert mine == (stock & {"float32", "float64", "bfloat16", "float16"}) - left, op.name
    assert ("Erf", "float32") in registration.kernels
    assert ("Exp", "complex64") not in registration.kernels  # no functor of ours takes complex
    assert ("Softmax", "float32") not in registration.kernels  # measured: no gain
    assert ("Log1p", "float32") not in registration.kernels  # stock flushes subnormals, AVX-512 not
    assert {("Sqrt", t) for t in ("float32", "float64", "bfloat16")} <= set(registration.kernels)
    assert registration.casts == (("float32", "bfloat16"), ("bfloat16", "float32"))


def test_an_op_already_above_priority_zero_is_left_to_stock() -> None:
    registry = recorded_registry()
    registry["Exp"] = (*registry["Exp"], ({"T": ("float32",)}, 1, ""))
    registration = plan_kernels(registry)
    assert not any(name == "Exp" for name, _ in registration.kernels)
    assert any(line.startswith("Exp: a CPU kernel") for line in registration.skipped)


def test_a_labelled_kernel_is_ignored_and_a_missing_op_said() -> None:
    registry = recorded_registry()
    registry["Tanh"] = (({"T": ("float32",)}, 5, "only_with_label"), *registry["Tanh"])
    del registry["Erfc"]
    registration = plan_kernels(registry)
    assert ("Tanh", "float32") in registration.kernels
    assert "Erfc: this release registers no CPU kernel for it" in registration.skipped


def test_the_inc_files_name_only_registered_kernels_in_a_fixed_order() -> None:
    registration = plan_kernels(recorded_registry())
    files = inc_files(registration)
    lines = [
        line for text in files.values() for line in text.splitlines() if line.startswith("TFB_")
    ]
    assert len(lines) == len(registration.names)
    assert 'TFB_UNARY("Exp", exp, float);' in files["cwise_ops.inc"]
    assert 'TFB_CLASS("Elu", EluOp, Eigen::half);' in files["nn_ops.inc"]
    assert files["exact_ops.inc"].count("TFB_") == 4  # Sqrt of each float type, no fast math
    assert 'TFB_UNARY("Sqrt", sqrt, float);' in files["exact_ops.inc"]
    assert '"Sqrt",' not in files["cwise_ops.inc"]
    assert "TFB_CAST(float, bfloat16);" in files["cwise_ops.inc"]
    assert files == inc_files(plan_kernels(recorded_registry()))


def loader_names() -> set[str]:
    return set(re.findall(r'\{"([a-z0-9_]+)", ', LOADER.read_text()))


def test_the_loader_checks_every_instruction_set_the_compiler_may_be_told_to_use() -> None:
    names = loader_names()
    mapped = {v for v in overlay_compile.MACROS.values() if v}
    assert mapped <= names, mapped - names


def test_the_loader_knows_every_x86_feature_archspec_names() -> None:
    from tfbuild.core.targets import targets

    features = {f for m in targets().values() if m.family.name == "x86_64" for f in m.features}
    assert features <= loader_names(), features - loader_names()
