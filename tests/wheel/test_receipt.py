"""The one ``Receipt`` type: its JSON round trip, the sections other commands add, what readers ask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import wheels
from tests.receipts import make_receipt, write_receipt
from tfbuild.core.errors import InputError
from tfbuild.wheel.receipt import (
    SCHEMA,
    CanaryCheck,
    InstructionCheck,
    InvalidReceipt,
    Receipt,
    SmokeOutcome,
    read_receipt,
    receipt_path,
)

NAME = "tensorflow_cpu-2.21.0+zen4.cu125-cp311-cp311-linux_x86_64.whl"
CUDA_PLAN = {"hermetic": True, "cuda": "12.5.1", "cudnn": "9.3.0", "capabilities": ["8.9"]}
COVERAGE = [
    {"feature": "AVX512F", "flag": "-march=znver4", "note": None},
    {"feature": "AMX_FP16", "flag": None, "note": "the machine lacks it"},
]


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return wheels.make_wheel(tmp_path, NAME)


def _receipt(wheel: Path) -> Receipt:
    return Receipt.from_json(
        make_receipt(
            wheel,
            target="zen4",
            variant="cuda",
            label="zen4.cu125",
            cflags=("-march=znver4",),
            plan_overrides={"cuda": CUDA_PLAN, "coverage": COVERAGE},
        )
    )


def test_the_json_round_trip_is_exact(wheel: Path) -> None:
    receipt = _receipt(wheel)
    assert Receipt.from_json(receipt.to_json()) == receipt
    # Through text too, as the file is written and read.
    assert Receipt.from_json(json.loads(json.dumps(receipt.to_json()))) == receipt
    assert receipt.to_json()["schema"] == SCHEMA == "tfbuild.receipt/2"


#: A receipt written by an earlier tfbuild, with the canary section doctor added to it.
SAMPLE = Path(__file__).parent / "receipt_samples" / "tf2.21-mkl-zen5.c6ab0f0.json"


def test_sections_added_later_survive_the_round_trip(wheel: Path) -> None:
    data = make_receipt(wheel)
    canary = json.loads(SAMPLE.read_text())["canary"]  # as doctor added it to a published receipt
    data["canary"] = canary
    receipt = Receipt.from_json(data)
    section = receipt.canary
    assert isinstance(section, CanaryCheck)
    assert section.isa == InstructionCheck(
        expected=("zmm",), found={"host": {"zmm": 12}, "baseline": {}}, ok=True
    )
    assert section.smoke == {"host": SmokeOutcome(ok=True), "baseline": SmokeOutcome(ok=True)}
    assert (section.median_ms, section.rounds, section.speedup) == (
        {"host": 1.5, "baseline": 3.0},
        5,
        2.0,
    )
    # Written before doctor kept the verdict: none is read, and no key is written back.
    assert section.judged is None and "verdict" not in canary
    assert receipt.to_json()["canary"] == canary
    assert json.dumps(receipt.to_json()["canary"]) == json.dumps(canary)  # key order too
    assert Receipt.from_json(receipt.to_json()) == receipt
    assert receipt.plan_intact()  # a section is not part of the plan


def test_what_readers_ask(wheel: Path) -> None:
    receipt = _receipt(wheel)
    assert receipt.architecture == "x86_64"
    assert receipt.covered == ("AVX512F",)  # AMX_FP16 had no flag
    assert receipt.cuda == "12.5.1"
    assert receipt.built_for == "zen4 (-march=znver4)"
    assert receipt.plan_intact()


def test_an_edited_plan_is_no_longer_intact(wheel: Path) -> None:
    data = make_receipt(wheel)
    data["plan"]["target"] = "x86_64_v2"
    receipt = Receipt.from_json(data)  # readable, but not the plan the build recorded
    assert not receipt.plan_intact()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ([], "it is not a JSON object"),
        ({"schema": "tfbuild.receipt/1"}, "its schema is 'tfbuild.receipt/1'"),
        ({"schema": SCHEMA}, "it is malformed: it has no 'build_id'"),
    ],
)
def test_what_is_not_a_receipt_says_why(data: object, said: str) -> None:
    with pytest.raises(InvalidReceipt, match=said):
        Receipt.from_json(data)


def test_read_receipt_checks_whose_receipt_it_is(wheel: Path, tmp_path: Path) -> None:
    write_receipt(wheel)
    assert read_receipt(receipt_path(wheel), wheel=wheel).wheel.name == NAME
    other = tmp_path / "other-1.0-py3-none-any.whl"
    with pytest.raises(InputError, match=f"is not the receipt of {other.name}"):
        read_receipt(receipt_path(wheel), wheel=other)
    with pytest.raises(InputError, match=f"{other.name} has no receipt"):
        read_receipt(receipt_path(other), wheel=other)
