"""``schemas/detect.schema.json`` is what the detect report's types say, and the reports fit it.

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.goldens import GOLDEN_DIR, compare_or_write
from tfbuild.core import serial
from tfbuild.detect.report import SCHEMA, DetectReport

ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMA_FILE = ROOT / "schemas" / "detect.schema.json"
GOLDEN = GOLDEN_DIR / "detect"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``tfbuild.detect/1``, from the types.

    ``detect --json`` writes every key of every object, defaults included, so every key is required;
    keys the schema does not name may be added in a later version (its rule: add keys, or bump).
    """
    schema = serial.schema(DetectReport)
    for definition in schema["$defs"].values():
        if definition.get("type") == "object" and "properties" in definition:
            definition["required"] = list(definition["properties"])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": SCHEMA,
        **schema,
    }


def written() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


def test_the_schema_file_is_generated_from_the_types() -> None:
    compare_or_write(SCHEMA_FILE, written())


def test_the_schema_names_its_version() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["title"] == SCHEMA
    report = schema["$defs"]["DetectReport"]
    assert report["properties"]["schema"]["enum"] == [SCHEMA]
    assert sorted(report["required"]) == sorted(report["properties"])


@pytest.mark.parametrize("report", sorted(p.name for p in GOLDEN.glob("*.json")))
def test_every_recorded_report_has_exactly_the_keys_the_schema_names(report: str) -> None:
    """A small structural check (no validator dependency): every object in the recorded reports has
    exactly the properties its schema definition names, recursively through refs and arrays."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    defs = schema["$defs"]

    def walk(data: object, node: dict[str, object], where: str) -> None:
        if "$ref" in node:
            walk(data, defs[str(node["$ref"]).rsplit("/", 1)[1]], where)
            return
        if "anyOf" in node:
            options = [o for o in node["anyOf"] if isinstance(o, dict)]  # type: ignore[attr-defined]
            if data is None:
                assert {"type": "null"} in options, where
                return
            walk(data, next(o for o in options if o != {"type": "null"}), where)
            return
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            assert isinstance(data, dict), where
            properties = node["properties"]
            assert sorted(data) == sorted(properties), where  # type: ignore[arg-type]
            for key, value in data.items():
                walk(value, properties[key], f"{where}.{key}")  # type: ignore[index]
            return
        if node.get("type") == "array" and isinstance(data, list):
            for index, item in enumerate(data):
                walk(item, node.get("items", {}), f"{where}[{index}]")  # type: ignore[arg-type]

    walk(json.loads((GOLDEN / report).read_text(encoding="utf-8")), schema, "$")
