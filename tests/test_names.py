"""One name, one meaning (ARCHITECTURE.md, the rules of the house): no public class name is defined in
two modules of tfbuild, read from the source of every module (its AST, nothing imported)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import tfbuild

PACKAGE = Path(tfbuild.__file__).parent


def public_classes() -> dict[str, list[str]]:
    """Each public (non-underscore) class name defined anywhere under tfbuild/, with where: the
    module's path and the line, for every definition, nested ones included."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found[node.name].append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_the_scan_finds_each_class_where_it_is_defined() -> None:
    modules = {name: [w.split(":")[0] for w in where] for name, where in public_classes().items()}
    assert modules["BuildPlan"] == ["tfbuild/plan/model.py"]
    assert modules["CompilerExecutable"] == ["tfbuild/core/compilers.py"]
    assert modules["OpForecast"] == ["tfbuild/measure/forecast_report.py"]
    assert modules["OpResult"] == ["tfbuild/measure/run.py"]


def test_no_public_class_name_is_defined_twice() -> None:
    twice = {name: where for name, where in public_classes().items() if len(where) > 1}
    assert not twice, "public class names defined more than once:\n" + "\n".join(
        f"  {name}: {', '.join(where)}" for name, where in sorted(twice.items())
    )
