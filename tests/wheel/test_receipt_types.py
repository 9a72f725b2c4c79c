"""The receipts' grammars as types (tfbuild.wheel.receipt): what the types refuse, and the one
clause :func:`explain` says for it, naming the field."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.conftest import ROOT
from tfbuild.core import serial
from tfbuild.core.stats import Verdict
from tfbuild.wheel import receipt
from tfbuild.wheel.receipt import (
    Count,
    DebianPackage,
    DebianVersion,
    ImageId,
    InvalidReceipt,
    Receipt,
    Sha256,
    Text,
    WheelRecord,
    explain,
)

FIXTURE = ROOT / "tests" / "fixtures" / "receipts"
FIXTURE /= "tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v4-py3-none-manylinux_2_34_x86_64.json"


def fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("kind", "good"),
    [
        (Sha256, "0" * 64),
        (ImageId, "sha256:" + "0" * 64),
        (DebianPackage, "zip"),
        (DebianVersion, "3.0-13+deb12u1"),
        (Text, "recipes/tf-2.21.yaml"),
    ],
)
def test_a_pattern_takes_the_whole_value_and_no_last_newline(kind: Any, good: str) -> None:
    """Python's ``$`` matches before a last newline; the types' patterns refuse one there."""
    assert serial.from_data(good, kind) == good
    for bad in (good + "\n", good + "\nRUN id", "\n" + good):
        with pytest.raises(serial.DecodeFailure):
            serial.from_data(bad, kind)


def test_explain_names_the_field_the_key_and_the_item() -> None:
    record = {"name": "a-1.0-py3-none-any.whl", "sha256": "0" * 64, "size": 1}
    assert explain(record, WheelRecord) is None
    assert explain({**record, "size": True}, WheelRecord, "wheel") == (
        "its wheel.size holds True, not a whole number from 0 to 1099511627776"
    )
    assert explain({"zip": "1.0 && id"}, dict[DebianPackage, DebianVersion], "packages") == (
        "its packages['zip'] holds '1.0 && id', not a Debian version ([epoch:]upstream[-revision])"
    )
    assert explain([1, -1], tuple[Count, ...], "counts") == (
        "its counts[1] holds -1, not a whole number from 0 to 1099511627776"
    )
    assert explain({"name": "x.whl"}, WheelRecord, "wheel") == (
        "it is malformed: its wheel has no 'sha256'"
    )


def test_the_verdict_is_checked_as_a_type_with_its_fields() -> None:
    """core.stats.Verdict's fields say no grammar; the receipt reads its JSON as _VerdictData."""
    names = [f.name for f in dataclasses.fields(Verdict)]
    assert [f.name for f in dataclasses.fields(receipt._VerdictData)] == names


def test_a_section_not_added_is_no_key_and_never_null() -> None:
    data = fixture()
    assert "canary" not in data and Receipt.from_json(data).canary is None
    with pytest.raises(InvalidReceipt, match="its canary holds NoneType, not an object"):
        Receipt.from_json({**data, "canary": None})


def test_a_created_time_that_is_text_but_no_time_is_refused() -> None:
    with pytest.raises(InvalidReceipt, match="its created holds 'yesterday', not an ISO 8601 time"):
        Receipt.from_json({**fixture(), "created": "yesterday"})
