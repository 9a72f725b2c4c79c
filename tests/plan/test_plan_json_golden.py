"""``tfbuild plan --json``'s text, byte for byte, for plans of every shape (golden files).

The CLI prints ``serial.to_data(plan)`` with ``json.dumps(indent=2)`` in field order; these goldens pin
that text (key order included, which ``plan.json``'s sorted goldens in tests/plan/golden_render do not) and
that every plan reads back to itself. Regenerate after an intended change with
TFBUILD_UPDATE_GOLDEN=1, then review the diff.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.conftest import recorded_host
from tests.goldens import compare_or_write, json_text
from tfbuild.core import serial
from tfbuild.plan import BuildPlan, PlanOptions, make_plan
from tfbuild.plan.decode import decode_plan
from tfbuild.recipes import canary
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes

GOLDEN = Path(__file__).parent / "golden_json"


def _plan(version: str, options: PlanOptions, machine: str = "zen5-vm") -> BuildPlan:
    recipe = load_recipes().get(version)
    if options.canary:
        recipe = canary.recipe(recipe)
    facts = recorded_host(machine, memory_gib=8, disk_gib=200)
    return make_plan(options, recipe, facts, base_images=load_base_images())


def _pinned() -> BuildPlan:
    """A plan with package pins, as a rebuild from a receipt makes it."""
    plan = _plan("2.16", PlanOptions(variant="mkl", portable=False), "zen4")
    pins = {"clang-17": "1:17.0.6~++20231209124227+6009708b4367-1~exp1~20231209124336.77"}
    return dataclasses.replace(plan, package_versions=pins)


CASES = {
    "tf2.21-mkl-zen5": lambda: _plan("2.21", PlanOptions(variant="mkl")),
    "tf2.21-cuda-x86_64_v3": lambda: _plan("2.21", PlanOptions(variant="cuda", target="x86_64_v3")),
    "tf2.21-cpu-native": lambda: _plan("2.21", PlanOptions(native=True), "sapphirerapids"),
    "tf2.21-canary": lambda: _plan("2.21", PlanOptions(canary=True, base_image="debian-12")),
    "tf2.21-remote": lambda: _plan(
        "2.21",
        PlanOptions(
            remote_cache="grpcs://cache.example.org:443",
            remote_executor="grpcs://exec.example.org:443",
            remote_instance="main",
            push_toolchain="registry.example.org:5000/tfbuild",
        ),
    ),
    "tf2.19-mkl-sysroot-debian-12": lambda: _plan(
        "2.19", PlanOptions(variant="mkl", sysroot_from="debian-12")
    ),
    "tf2.18-cpu-haswell-unlabelled": lambda: _plan(
        "2.18", PlanOptions(label=False, reproducible=False), "haswell"
    ),
    "tf2.16-mkl-zen4-pinned": _pinned,
    "tf2.13-cpu-skylake": lambda: _plan("2.13", PlanOptions(), "skylake_avx512"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_json_golden(case: str) -> None:
    plan = CASES[case]()
    text = json_text(serial.to_data(plan))  # as `plan --json` prints
    compare_or_write(GOLDEN / f"{case}.json", text)
    assert decode_plan(json.loads(text)) == plan
