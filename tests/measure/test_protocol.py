"""What a worker says is decoded strictly (tfbuild.measure.protocol): real worker processes that say
what the driver must refuse, and the decoders on lines a worker could print."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tfbuild.core.errors import SmokeFailed
from tfbuild.measure.protocol import MAX_LINE, decode_ready, decode_reply
from tfbuild.measure.run import Worker

READY = (
    '{"ready": true, "ops": {"exp": {"unit": "Gelem/s", "work": 262144}}, "tensorflow": "2.21.0"}'
)


def test_the_ready_line_keeps_its_ops_typed_and_the_rest_as_facts() -> None:
    ready = decode_ready(READY)
    assert ready.ops["exp"].work == 262144.0 and ready.facts == {"tensorflow": "2.21.0"}


@pytest.mark.parametrize(
    "line",
    [
        '{"ready": "yes"}',
        '{"ready": true, "ops": {"exp": {"unit": "Gelem/s", "work": -1}}}',
        '{"ready": true, "ops": {"exp": {"unit": "Gelem/s", "work": 1, "speed": 2}}}',
        '["ready"]',
        '{"ready": true, "model_error": {"error": "no stage"}}',
        "x" * (MAX_LINE + 1),
    ],
)
def test_a_ready_line_that_is_not_one_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        decode_ready(line)


@pytest.mark.parametrize(
    "line",
    [
        '{"op": "exp", "seconds_per_call": [NaN], "inner": 1}',
        '{"op": "exp", "seconds_per_call": [0.0], "inner": 1}',
        '{"op": "exp", "seconds_per_call": [1e-5], "inner": 0}',
        '{"op": "exp", "seconds_per_call": ["1e-5"], "inner": 1}',
        '{"op": "exp", "inner": 3}',
        '{"op": "exp", "seconds_per_call": [1e-5], "inner": 1, "extra": true}',
    ],
)
def test_a_reply_without_usable_timings_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        decode_reply(line)


def test_an_error_reply_needs_no_timings() -> None:
    assert decode_reply('{"op": "exp", "error": "NotFoundError"}').error == "NotFoundError"


def test_a_worker_that_says_something_else_stops_with_what_it_said(tmp_path: Path) -> None:
    script = tmp_path / "liar.py"
    script.write_text('print(\'{"ready": true, "ops": {"exp": {"unit": 3, "work": 1}}}\')\n')
    with pytest.raises(SmokeFailed, match="said what tfbuild cannot read") as caught:
        Worker(
            sys.executable, intra=1, inter=1, env=dict(os.environ), label="a liar", script=script
        )
    assert "the benchmark worker for a liar" in caught.value.what
