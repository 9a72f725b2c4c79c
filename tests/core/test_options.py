"""``declared``: an option said in place is a field with its default and its declaration, and
``MISSING`` makes it one the command line requires."""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, dataclass
from pathlib import Path

import pytest

from tfbuild.core.options import Cli, declaration, declared, parameters


@dataclass(frozen=True, kw_only=True)
class _Asked:
    source: str = declared(MISSING, argument=True, metavar="DIR", help="Where.")
    out: Path | None = declared(None, "-o", "--out", metavar="FILE", show_default=False)
    quick: bool = declared(False, "--quick/--slow", help="Shorter.")


def test_a_field_declared_in_place_carries_its_default_and_its_declaration() -> None:
    fields = {field.name: field for field in dataclasses.fields(_Asked)}
    assert declaration(fields["out"]) == Cli(
        flags=("-o", "--out"), metavar="FILE", show_default=False
    )
    assert declaration(fields["quick"]) == Cli(flags=("--quick/--slow",), help="Shorter.")
    assert _Asked(source="d") == _Asked(source="d", out=None, quick=False)
    given = {parameter.name: parameter.default for parameter in parameters(_Asked)}
    assert given == {"source": MISSING, "out": None, "quick": False}


def test_missing_makes_a_required_field() -> None:
    with pytest.raises(TypeError, match="source"):
        _Asked()  # type: ignore[call-arg]
