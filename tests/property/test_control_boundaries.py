"""One rule for what a line may hold (tfbuild.core.controls), at every boundary a value crosses (issue
31): a plan read back, a receipt's decoder, an error message, a build's and TensorFlow's output.

No value one boundary accepts is refused, or changed, by the next; and a plan value holding U+2028
or U+202E, which the plan's old check let through into the rendered files, is refused with one line.
The plan and the receipt are real ones: the receipt ``tfbuild wheel`` wrote for the canary wheel
(tests/fixtures/receipts), its plan included.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, recorded_host
from tfbuild.build.rebuild import plan_from_receipt
from tfbuild.core.controls import CONTROL, char_name, control_in, printable, printable_line
from tfbuild.core.errors import InputError, TfbuildError
from tfbuild.plan.decode import decode_plan
from tfbuild.smoke.messages import parse_messages
from tfbuild.wheel.receipt import MAX_TEXT, Receipt, canonical_sha256, decode_receipt

RECEIPT = ROOT / "tests" / "fixtures" / "receipts"
RECEIPT /= "tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v4-py3-none-manylinux_2_34_x86_64.json"
SETTINGS = settings(max_examples=300, deadline=None)
HOST = recorded_host("haswell", memory_gib=16, disk_gib=100)

#: Every character of the rule, and text made of them among others.
CONTROLS = sorted(set(CONTROL.findall("".join(map(chr, range(0x110000))))))
_PIECES = st.sampled_from(
    [
        *"\x1b\x9b\x9d\x07\t\n\r\x00\x7f\x85\u2028\u2029\u202a\u202e\u2066\u2069",
        "\udce9",
        *"ab é字[]:;0m\u200d\ufeff\u200f",
    ]
)
TEXTS = st.one_of(
    st.text(st.characters(exclude_categories=())),  # any code point, surrogates included
    st.lists(_PIECES, max_size=20).map("".join),
)
#: Where a plan's text goes: free text (the recipe's name, a reason), a value rendered into the
#: Dockerfile, a line of the rc file.
PLAN_PLACES: tuple[tuple[str | int, ...], ...] = (
    ("recipe",),
    ("reasons", 0, "why"),
    ("base_image", "reference"),
    ("rc_lines", 0),
)


def _receipt() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECEIPT.read_text(encoding="utf-8"))
    return data


def _with(data: dict[str, Any], place: tuple[str | int, ...], value: str) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    node: Any = changed
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    return changed


def _decoded(data: dict[str, Any]) -> Receipt:
    return decode_receipt(json.dumps(data).encode(), source="receipt.json")


@SETTINGS
@given(text=TEXTS)
def test_a_plan_value_is_refused_exactly_when_it_holds_a_control(text: str) -> None:
    plan = _with(_receipt()["plan"], ("recipe",), text)
    try:
        decode_plan(plan)
    except ValueError as exc:
        char = control_in(text)
        assert char is not None, exc
        assert f"plan.recipe holds a control character ({char_name(char)})" in str(exc)
    else:
        assert control_in(text) is None


@SETTINGS
@given(text=TEXTS)
def test_what_the_plan_takes_every_later_boundary_takes_unchanged(text: str) -> None:
    receipt = _receipt()
    try:
        plan = decode_plan(_with(receipt["plan"], ("recipe",), text))
    except ValueError:
        return
    assert plan.recipe == text
    # The receipt's decoder: the same text as one of its text fields (which are never empty).
    if text and len(text) <= MAX_TEXT:
        assert _decoded(_with(receipt, ("inputs", "recipe"), text)).inputs.recipe == text
        assert _decoded(_with(receipt, ("host", "user"), text)).host.user == text
    # Shown: in a message, in a line of a build's log, in TensorFlow's output.
    assert printable(text) == text
    assert printable_line(text) == text
    assert TfbuildError(f"cannot use {text}").what == " ".join(f"cannot use {text}".split())
    line = f"E0000 00:00:1795313969.500936 17197 util.cc:131] {text}".strip()
    assert parse_messages(line).errors == (line,)


@pytest.mark.parametrize("place", PLAN_PLACES, ids=lambda place: ".".join(map(str, place)))
@SETTINGS
@given(data=st.data())
def test_a_plan_value_with_any_control_is_refused_in_one_line(
    place: tuple[str | int, ...], data: st.DataObject
) -> None:
    """Even with its plan_sha256 recomputed (a hash is no signature), a receipt whose plan holds a
    control character anywhere in a value is refused, in one line that does not hold it."""
    receipt = _receipt()
    node: Any = receipt["plan"]
    for key in place:
        node = node[key]
    char = data.draw(st.sampled_from(CONTROLS))
    at = data.draw(st.integers(0, len(node)))
    value = _with(receipt["plan"], place, node[:at] + char + node[at:])
    if "\ud800" <= char <= "\udfff":
        # No receipt carries a lone surrogate to the plan: its decoder refuses one anywhere (and
        # plan_sha256 cannot be computed over one).
        with pytest.raises(InputError) as caught:
            _decoded({**receipt, "plan": value})
        assert "lone surrogate" in caught.value.line()
    else:
        spoilt = {**receipt, "plan": value, "plan_sha256": canonical_sha256(value)}
        with pytest.raises(InputError) as caught:
            plan_from_receipt(_decoded(spoilt), host=HOST)
        assert "cannot be read" in caught.value.line()
        assert f"holds a control character ({char_name(char)})" in caught.value.line()
    assert caught.value.exit_code == 3
    assert control_in(caught.value.line()) is None


@pytest.mark.parametrize("char", ["\u2028", "\u202e"], ids=["LINE SEPARATOR", "RLO"])
def test_the_characters_the_plan_let_through_are_refused(char: str) -> None:
    """The finding: a plan read back took U+2028 and U+202E (its check knew C0 and DEL only), and a
    free text value such as the recipe's name met no other check after it."""
    receipt = _receipt()
    plan = _with(receipt["plan"], ("recipe",), f"recipes/tf-2.21.yaml{char}x")
    with pytest.raises(ValueError, match=r"plan\.recipe holds a control character"):
        decode_plan(plan)
    spoilt = {**receipt, "plan": plan, "plan_sha256": canonical_sha256(plan)}
    with pytest.raises(InputError) as caught:
        plan_from_receipt(_decoded(spoilt), host=HOST)
    line = caught.value.line()
    assert line.startswith("the plan in the receipt of tensorflow_cpu-0.0.0+tfbuild.canary")
    assert f"plan.recipe holds a control character ({char_name(char)})" in line
    assert "\n" not in line
    assert char not in line
