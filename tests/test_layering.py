"""The import graph of ``src/mcpline``: no module imports another at runtime in a cycle, and
no knot of more than `MAX_KNOT` modules names each other even in annotations.

Imports under ``if TYPE_CHECKING:`` are not runtime imports and are left out of the cycle
test; an import inside a function runs when the function does and is counted. The knot test
counts every import, type-only and in-function ones included: modules that name each other
must be read, changed and understood together, whether or not Python runs the import.
``from pkg import sub`` of a submodule is an edge to ``pkg.sub`` (the package itself is
already importing).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

MAX_KNOT = 6
"""The most modules that may import each other in one knot, type-only imports included."""


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    in_function: bool
    type_only: bool = False
    """Under ``if TYPE_CHECKING:`` (only with ``import_edges(..., type_only=True)``)."""


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


def import_edges(root: Path, package: str, *, type_only: bool = False) -> list[Edge]:
    """The runtime imports between the modules of ``package``; with ``type_only``, those
    under ``if TYPE_CHECKING:`` too."""
    modules = module_names(root)
    edges: list[Edge] = []
    for name, path in modules.items():
        edges += _edges_of(name, path, modules, package, type_only)
    return edges


def _edges_of(
    name: str, path: Path, modules: dict[str, Path], package: str, type_only: bool
) -> list[Edge]:
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: list[Edge] = []

    def target(module: str, alias: str) -> str:
        sub = f"{module}.{alias}"
        return sub if sub in modules else module

    def visit(node: ast.AST, in_function: bool, typing: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                if type_only:
                    for stmt in child.body:
                        visit_one(stmt, in_function, True)
                for stmt in child.orelse:
                    visit_one(stmt, in_function, typing)
            else:
                visit_one(child, in_function, typing)

    def visit_one(node: ast.AST, in_function: bool, typing: bool) -> None:
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
            visit(node, in_function or nested, typing)
            return
        for imported in found:
            if imported in modules and imported.split(".")[0] == package:
                edges.append(Edge(name, imported, node.lineno, in_function, typing))

    visit(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return edges


def _graph(edges: Iterable[Edge]) -> dict[str, dict[str, Edge]]:
    """Each module's first edge to each module it imports."""
    graph: dict[str, dict[str, Edge]] = {}
    for e in edges:
        if e.importer != e.imported:
            graph.setdefault(e.importer, {}).setdefault(e.imported, e)
            graph.setdefault(e.imported, {})
    return graph


def knots(edges: Iterable[Edge]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (each reaches every other), its
    names sorted."""
    return _groups(_graph(edges))


def cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges) for every strongly connected group of two or more modules."""
    graph = _graph(edges)
    return [_one_cycle(graph, set(g), g[0]) for g in _groups(graph)]


def _groups(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph`` with two or more members."""
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
    return groups


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
    assert [describe(c) for c in cycles(import_edges(SRC, "mcpline"))] == []


def test_no_knot_of_more_than_six_modules_even_in_annotations() -> None:
    big = [k for k in knots(import_edges(SRC, "mcpline", type_only=True)) if len(k) > MAX_KNOT]
    assert big == []


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
    typed = import_edges(tmp_path, "pkg", type_only=True)
    assert [(e.importer, e.imported, e.type_only) for e in typed if e.importer == "pkg.c"] == [
        ("pkg.c", "pkg.a", True)
    ]
    assert knots(typed) == [["pkg.a", "pkg.b"]]
