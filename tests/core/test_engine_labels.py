"""TFBUILD_LABELS: labels of the user's own on every engine object tfbuild makes, read strictly."""

from __future__ import annotations

import pytest

from tfbuild.core.engine_objects import own_labels
from tfbuild.core.errors import UsageError


def test_pairs_are_read_in_order() -> None:
    env = {"TFBUILD_LABELS": " ci.job=1234, ci.runner=a-1 ,org.example.x=y@z:1/2"}
    assert own_labels(env) == {"ci.job": "1234", "ci.runner": "a-1", "org.example.x": "y@z:1/2"}


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("ci.job", "TFBUILD_LABELS holds 'ci.job', which is no label"),
        ("CI=1", "TFBUILD_LABELS holds 'CI=1', which is no label"),
        ("ci.job=a b", "TFBUILD_LABELS holds 'ci.job=a b', which is no label"),
        ("ci.job=$(rm -rf /)", "TFBUILD_LABELS holds 'ci.job=$(rm -rf /)', which is no label"),
        ("org.tfbuild=0", "TFBUILD_LABELS sets org.tfbuild, a label of tfbuild's own"),
        ("org.tfbuild.build=x", "TFBUILD_LABELS sets org.tfbuild.build, a label of tfbuild's own"),
    ],
)
def test_anything_else_is_one_line(text: str, what: str) -> None:
    with pytest.raises(UsageError) as refused:
        own_labels({"TFBUILD_LABELS": text})
    assert refused.value.what == what


def test_none_by_default() -> None:
    assert own_labels({}) == {} and own_labels({"TFBUILD_LABELS": " , "}) == {}
