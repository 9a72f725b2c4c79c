"""No import cycle among tfbuild's modules, an import inside a function included.

import-linter's layers keep the packages pointing one way; inside a package two modules can still
import each other, one of them from inside a function where no import at the top shows it. grimp
(import-linter's graph) reads every import statement, at any depth, so a cycle it finds is one.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

#: The package whose modules are checked, every one of them.
ROOT = "tfbuild"


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each strongly connected group of modules (more than one module, or one importing itself),
    as one cycle through it: the modules in import order, the first again at the end."""
    modules = sorted(graph.modules)
    imports = {
        m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules
    }
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in modules:
        if start in order:
            continue
        # Tarjan's algorithm without recursion: (module, its next import to visit).
        work = [(start, 0)]
        while work:
            module, next_import = work.pop()
            if next_import == 0:
                order[module] = low[module] = len(order)
                stack.append(module)
            targets = imports[module]
            if next_import < len(targets):
                work.append((module, next_import + 1))
                target = targets[next_import]
                if target not in order:
                    work.append((target, 0))
                elif target in stack:
                    low[module] = min(low[module], order[target])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == order[module]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1 or module in imports[module]:
                    found.append(_cycle_through(sorted(group), imports))
    return sorted(found)


def _cycle_through(group: list[str], imports: dict[str, list[str]]) -> list[str]:
    """A shortest import path from the group's first module back to itself, inside the group."""
    first, members = group[0], set(group)
    paths = {first: [first]}
    frontier = [first]
    while frontier:
        following = []
        for module in frontier:
            for target in imports[module]:
                if target == first:
                    return [*paths[module], first]
                if target in members and target not in paths:
                    paths[target] = [*paths[module], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no path back to {first} in {group}")


def _graph(modules: dict[str, list[str]]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for module, imported in modules.items():
        graph.add_module(module)
        for target in imported:
            graph.add_import(importer=module, imported=target)
    return graph


def test_a_cycle_through_an_import_inside_a_function_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real package on disk, read by grimp as it reads tfbuild: b imports a inside a function.
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic import b\n")
    (package / "b.py").write_text("def later():\n    from cyclic import a\n    return a\n")
    (package / "c.py").write_text("from cyclic import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic", cache_dir=None)
    assert cycles(graph) == [["cyclic.a", "cyclic.b", "cyclic.a"]]


def test_every_cycle_is_named_once_with_a_path_through_it() -> None:
    graph = _graph(
        {
            "p.a": ["p.b"],
            "p.b": ["p.c"],
            "p.c": ["p.a", "p.d"],
            "p.d": ["p.e"],
            "p.e": ["p.d"],
            "p.f": ["p.f"],
            "p.g": ["p.a"],
        }
    )
    assert cycles(graph) == [
        ["p.a", "p.b", "p.c", "p.a"],
        ["p.d", "p.e", "p.d"],
        ["p.f", "p.f"],
    ]


def test_tfbuild_has_no_import_cycle() -> None:
    found = cycles(grimp.build_graph(ROOT, cache_dir=None))
    named = "\n".join("  " + " -> ".join(cycle) for cycle in found)
    assert not found, (
        f"import cycles among tfbuild's modules (move what both need to where it belongs):\n{named}"
    )
