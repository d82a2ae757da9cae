"""No module of the tree is in an import cycle, imports under TYPE_CHECKING included.

A cycle hides a design that is one piece split across files (each calling the other's
insides); under TYPE_CHECKING it still is one. The import-linter contract
(``acyclic_siblings`` in pyproject.toml) checks the same between the siblings of every
package; this test reads the sources themselves, so a cycle across packages or through a
function-level import fails here too, in the suite, without lint-imports.
"""

from __future__ import annotations

import ast
import functools
import graphlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _importlinter() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _modules() -> dict[str, Path]:
    modules = {}
    for package in _importlinter()["root_packages"]:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the tree ``name`` is (or is in: an attribute of a module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Every module of the tree -> the modules of the tree it imports, wherever the import
    is (module level, a function, an ``if TYPE_CHECKING:`` block)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported.update(_known(alias.name, modules) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    imported.add(_known(f"{base}.{alias.name}", modules))
        graph[name] = {module for module in imported if module and module != name}
    return graph


def test_the_graph_sees_the_imports_that_matter() -> None:
    graph = import_graph()
    # A plain import, one under TYPE_CHECKING and one inside a function are all edges.
    assert "controller.table.transitions" in graph["controller.table.machine"]
    assert "drivers.shoe.driver" in graph["controller.service.config"]  # TYPE_CHECKING
    assert "controller.table.machine" in graph["controller.tools.bench_table"]  # a function's
    assert len(graph) > 100


def test_no_import_cycle_in_the_tree() -> None:
    try:
        graphlib.TopologicalSorter(import_graph()).prepare()
    except graphlib.CycleError as error:
        cycle = error.args[1]
        raise AssertionError(f"an import cycle: {' -> '.join(reversed(cycle))}") from None


def test_the_cycle_contract_covers_the_whole_tree() -> None:
    importlinter = _importlinter()
    (contract,) = [c for c in importlinter["contracts"] if c["type"] == "acyclic_siblings"]
    assert sorted(contract["ancestors"]) == sorted(importlinter["root_packages"])
