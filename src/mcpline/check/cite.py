"""The citations at the end of check rules, expanded into URLs.

A rule cites what it enforces in a compact form: ``(spec: basic/transports/stdio#shutdown)``
names a page of the MCP 2026-07-28 specification (its path under :data:`SPEC_BASE`) and
optionally a heading anchor; ``JSON-RPC 2.0: error_object`` names an anchor of the JSON-RPC 2.0
specification. References of one kind are separated by ``", "``, kinds by ``"; "``. A rule that
is mcpline's own recommendation starts with ``mcpline rec:`` and cites the spec section it
refines as ``(refines spec: <page>#<anchor>)``.
"""

from __future__ import annotations

import re

SPEC_BASE = "https://modelcontextprotocol.io/specification/2026-07-28"
JSONRPC_BASE = "https://www.jsonrpc.org/specification"
_REF = r"[\w./#-]+"
_CITATION = re.compile(rf"\b(spec|JSON-RPC 2\.0): ({_REF}(?:, {_REF})*)")


def references(rule: str) -> list[str]:
    """The URLs a rule cites, in order, without repeats."""
    urls: list[str] = []
    for kind, refs in _CITATION.findall(rule):
        for ref in refs.split(", "):
            url = f"{SPEC_BASE}/{ref}" if kind == "spec" else f"{JSONRPC_BASE}#{ref}"
            if url not in urls:
                urls.append(url)
    return urls
