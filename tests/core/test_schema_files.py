"""The published JSON Schema files (schemas/) are the types' own: regenerated here and compared.

Each file is :func:`tfbuild.core.serial.schema` of the type that decodes that JSON, so a change to
the type that changes what is accepted shows as a difference here. Rewrite the files after an
intended change with TFBUILD_UPDATE_GOLDEN=1, then review the diff.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.goldens import compare_or_write
from tfbuild.core import serial
from tfbuild.plan.model import BuildPlan
from tfbuild.wheel.receipt import Receipt

SCHEMAS = ROOT / "schemas"

#: (file under schemas/, the type that decodes that JSON). Another file: one more pair here.
FILES: list[tuple[str, Any]] = [
    ("plan.schema.json", BuildPlan),
    ("receipt.schema.json", Receipt),
]
#: What each file describes, for people reading it (its title); the type's docstring follows.
TITLES = {
    "plan.schema.json": "tfbuild plan (tfbuild.plan/4): plan --json, plan.json, a receipt's plan",
    "receipt.schema.json": "tfbuild receipt (tfbuild.receipt/2): <wheel>.json beside a wheel",
}


def document(name: str, kind: Any) -> str:
    """The text of schemas/``name`` for ``kind``: JSON Schema 2020-12, keys in a stable order."""
    found = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if name in TITLES:
        found["title"] = TITLES[name]
    return json.dumps({**found, **serial.schema(kind)}, indent=2, sort_keys=False) + "\n"


@pytest.mark.parametrize(("name", "kind"), FILES, ids=[f[0] for f in FILES])
def test_the_schema_file_is_the_types_own(name: str, kind: Any) -> None:
    compare_or_write(SCHEMAS / name, document(name, kind))


def test_every_golden_plan_is_valid_under_the_plan_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMAS / "plan.schema.json").read_text())
    goldens = sorted((ROOT / "tests" / "plan" / "golden_json").glob("*.json"))
    assert goldens
    for path in goldens:
        jsonschema.validate(json.loads(path.read_text()), schema)
    stray = {**json.loads(goldens[0].read_text()), "stray": 1}
    with pytest.raises(jsonschema.ValidationError, match="stray"):
        jsonschema.validate(stray, schema)


def test_the_sample_receipts_are_valid_under_the_receipt_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMAS / "receipt.schema.json").read_text())
    samples = sorted((ROOT / "tests" / "wheel" / "receipt_samples").glob("*.json"))
    assert samples
    for path in samples:
        jsonschema.validate(json.loads(path.read_text()), schema)
