"""Receipts written by earlier tfbuilds still read, and write back byte for byte.

``receipt_samples/<name>.<commit>.json`` is a receipt as tfbuild at that commit writes it (a real plan,
host facts, two attempts after an OOM kill, a floor, bazel's process counts and doctor's canary
section), made with that commit's own ``Receipt`` type.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfbuild.core import serial
from tfbuild.plan.bazel import bazel_command
from tfbuild.plan.decode import decode_plan
from tfbuild.wheel.receipt import decode_receipt

SAMPLES = sorted((Path(__file__).parent / "receipt_samples").glob("*.json"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_an_older_receipt_reads_and_writes_back_the_same(path: Path) -> None:
    raw = path.read_bytes()
    receipt = decode_receipt(raw, source=str(path))
    assert (
        json.dumps(receipt.to_json(), indent=2) + "\n" == raw.decode()
    )  # as update_receipt writes
    assert receipt.plan_intact() and receipt.inputs_intact()
    plan = decode_plan(receipt.plan)
    # Read as this version's plan (tfbuild.plan/4): the resource options its lists held lifted
    # out, their values (the same as its resources') in resources, its "standin" read as
    # "canary" (--canary's word), everything else as written.
    resource_options = ("--jobs=", "--local_ram_resources=", "--host_jvm_args=-Xmx")
    assert receipt.plan["schema"] in ("tfbuild.plan/2", "tfbuild.plan/3")
    written = {k: v for k, v in receipt.plan.items() if k != "standin"}
    assert serial.to_data(plan) == {
        **written,
        "canary": receipt.plan["standin"],
        "schema": "tfbuild.plan/4",
        **{
            key: [o for o in receipt.plan[key] if not o.startswith(resource_options)]
            for key in ("build_options", "startup_options")
        },
    }
    # bazel's options made from it are the ones the build ran with, in their order.
    command = bazel_command(plan)
    assert command.startup == tuple(receipt.plan["startup_options"])
    assert command.build == tuple(receipt.plan["build_options"])
    assert receipt.covered and receipt.architecture == "x86_64"
