"""The import graph of ``src/mcpline``: no module imports another at runtime in a cycle.

Imports under ``if TYPE_CHECKING:`` are not runtime imports and are left out. An import inside
a function runs when the function does: a cycle that needs one fails the test when it
involves ``mcpline.check`` and is only reported (as a warning) elsewhere. ``from pkg import
sub`` of a submodule is an edge to ``pkg.sub`` (the package itself is already importing).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

ALLOWED_EDGES: frozenset[tuple[str, str]] = frozenset()
"""Module-level imports (importer, imported) outside ``mcpline.check`` that close a cycle and
are left to the engineers restructuring ``server/`` and ``client/``. Empty: the graph has no
module-level cycle today."""


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    in_function: bool


def module_names(root: Path) -> dict[str, Path]:
    """Every module under ``root`` (a directory holding top-level packages), by dotted name."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_edges(root: Path, package: str) -> list[Edge]:
    """The runtime imports between the modules of ``package``."""
    modules = module_names(root)
    edges: list[Edge] = []
    for name, path in modules.items():
        edges += _edges_of(name, path, modules, package)
    return edges


def _edges_of(name: str, path: Path, modules: dict[str, Path], package: str) -> list[Edge]:
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: list[Edge] = []

    def target(module: str, alias: str) -> str:
        sub = f"{module}.{alias}"
        return sub if sub in modules else module

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit_one(stmt, in_function)
            else:
                visit_one(child, in_function)

    def visit_one(node: ast.AST, in_function: bool) -> None:
        found: list[str] = []
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found = [target(module, a.name) for a in node.names]
        else:
            nested = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(node, in_function or nested)
            return
        for imported in found:
            if imported in modules and imported.split(".")[0] == package:
                edges.append(Edge(name, imported, node.lineno, in_function))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return edges


def cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges) for every strongly connected group of two or more modules."""
    graph: dict[str, dict[str, Edge]] = {}
    for e in edges:
        if e.importer != e.imported:
            graph.setdefault(e.importer, {}).setdefault(e.imported, e)
            graph.setdefault(e.imported, {})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_one_cycle(graph, set(g), g[0]) for g in groups]


def _one_cycle(graph: dict[str, dict[str, Edge]], members: set[str], start: str) -> list[Edge]:
    """The shortest path from ``start`` back to itself inside ``members``."""
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w, e in sorted(graph[v].items()):
                if w == start:
                    return paths[v] + [e]
                if w in members and w not in paths:
                    paths[w] = paths[v] + [e]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def describe(cycle: list[Edge]) -> str:
    steps = [
        f"{e.importer} (line {e.line}{', in a function' if e.in_function else ''})" for e in cycle
    ]
    return " → ".join([*steps, cycle[0].importer])


def test_no_import_cycles() -> None:
    edges = import_edges(SRC, "mcpline")
    module_level = [
        e for e in edges if not e.in_function and (e.importer, e.imported) not in ALLOWED_EDGES
    ]
    assert [describe(c) for c in cycles(module_level)] == []
    check_cycles: list[str] = []
    elsewhere: list[str] = []
    for c in cycles(edges):
        involves_check = any(e.importer.startswith("mcpline.check") for e in c)
        (check_cycles if involves_check else elsewhere).append(describe(c))
    assert check_cycles == []
    for text in elsewhere:
        warnings.warn(f"import cycle through a function-level import: {text}", stacklevel=1)


def test_the_graph_sees_the_imports() -> None:
    edges = {(e.importer, e.imported) for e in import_edges(SRC, "mcpline")}
    assert ("mcpline.check.checker", "mcpline.check.registry") in edges
    assert ("mcpline.check.runner", "mcpline.check.schema") in edges  # from . import schema
    assert ("mcpline.jsonrpc", "mcpline.errors") in edges


def test_a_cycle_is_found_and_type_checking_imports_are_not(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
    )
    edges = import_edges(tmp_path, "pkg")
    assert not cycles(e for e in edges if not e.in_function)
    found = cycles(edges)
    assert [describe(c) for c in found] == [
        "pkg.a (line 1) → pkg.b (line 2, in a function) → pkg.a"
    ]
    assert not any(e.importer == "pkg.c" for e in edges)
