"""`mcpline check` spells the protocol's names and codes through `mcpline.spec`, not copies."""

from __future__ import annotations

import ast
from pathlib import Path

from mcpline import spec
from mcpline.check.groups.errors import LEGACY_ONLY_PROBES

from .util import REPO

CHECK = REPO / "src" / "mcpline" / "check"
NAMES = {v: k for k, v in vars(spec).items() if k.isupper() and isinstance(v, str)}
"""Method and notification names, ``_meta`` keys and revisions, by value."""
CODES = {v: k for k, v in vars(spec).items() if k.isupper() and type(v) is int and v <= -32000}
"""JSON-RPC and MCP error codes (the -32xxx range), by value; -1 (`spec.USER_REJECTED`) is
too common a literal to tell apart."""


def _literals(path: Path) -> list[tuple[int, str]]:
    """(line, constant) for every literal in ``path`` that copies a `mcpline.spec` name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
            found.append((node.lineno, f"{node.value!r} (spec.{NAMES[node.value]})"))
        elif (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
            and -node.operand.value in CODES
        ):
            found.append(
                (node.lineno, f"-{node.operand.value} (spec.{CODES[-node.operand.value]})")
            )
    return found


def test_no_copies_of_spec_names_or_codes() -> None:
    copies = [
        f"{p.relative_to(CHECK)}:{line}: {what}"
        for p in sorted(CHECK.rglob("*.py"))
        for line, what in _literals(p)
    ]
    assert copies == []


def test_every_legacy_only_method_is_probed_once() -> None:
    assert sorted(LEGACY_ONLY_PROBES) == sorted(spec.LEGACY_ONLY_METHODS)
