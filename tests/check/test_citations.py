"""Every check rule cites the official MCP 2026-07-28 specification or JSON-RPC 2.0, and only
sections that exist; nothing cites a document outside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from mcpline.check.cite import JSONRPC_BASE, SPEC_BASE, references

from .util import REPO

# Pages and heading anchors verified against the specification source:
# modelcontextprotocol/modelcontextprotocol, docs/specification/2026-07-28/ (PAGE.mdx or
# PAGE/index.mdx; an anchor is its heading lowercased, spaces → "-", punctuation dropped).
SPEC_SECTIONS: dict[str, frozenset[str]] = {
    page: frozenset(anchors.split())
    for page, anchors in {
        "basic/authorization": "",
        "basic/authorization/security-considerations": "confused-deputy-problem "
        "open-redirection client-id-metadata-document-security",
        "basic/authorization/client-registration": "client-id-metadata-documents "
        "dynamic-client-registration",
        "basic/index": "messages requests responses result-responses error-responses "
        "error-codes notifications message-patterns statelessness auth schema "
        "json-schema-usage general-fields meta icons",
        "basic/transports": "messages request-metadata cancellation custom-transports "
        "backward-compatibility",
        "basic/transports/stdio": "sending-messages receiving-messages request-metadata "
        "cancellation shutdown unexpected-termination backward-compatibility",
        "basic/versioning": "terminology protocol-version-negotiation extension-negotiation "
        "backward-compatibility-with-initialization-based-versions compatibility-matrix",
        "basic/patterns/cancellation": "cancellation-flow transport-specific-cancellation "
        "timeouts behavior-requirements timing-considerations implementation-notes "
        "error-handling",
        "basic/patterns/progress": "progress-flow behavior-requirements implementation-notes",
        "changelog": "major-changes minor-changes deprecated",
        "schema": "inputresponses inputrequiredresult jsonrpcrequest jsonrpcerrorresponse",
        "server/discover": "request response when-to-call data-types discoverresult",
        "server/tools": "capabilities protocol-messages listing-tools calling-tools tool "
        "tool-names tool-result stateful-tools error-handling security-considerations",
        "server/resources": "capabilities listing-resources reading-resources "
        "resource-templates error-handling security-considerations",
        "server/prompts": "capabilities listing-prompts getting-a-prompt error-handling",
        "server/utilities/caching": "cacheable-results cache-key cacheable-model "
        "time-to-live-ttl-field cache-scope-field",
        "server/utilities/completion": "capabilities error-handling",
        "server/utilities/logging": "capabilities log-levels per-request-log-level error-handling",
        "server/utilities/pagination": "pagination-model implementation-guidelines error-handling",
    }.items()
}
JSONRPC_ANCHORS = frozenset({"request_object", "notification", "response_object", "error_object"})
SPEC_URL = re.compile(re.escape(SPEC_BASE) + r"/[\w./#-]+")
PRIVATE = re.compile(r"\u00a7|conformance-fixture|mcp-2026-07-28-digest|spec digest|\bdigest \(")


def unverified(url: str) -> str | None:
    """Why ``url`` is not a verified section, or None when it is one."""
    if url.startswith(JSONRPC_BASE + "#"):
        anchor = url.removeprefix(JSONRPC_BASE + "#")
        return None if anchor in JSONRPC_ANCHORS else f"unknown JSON-RPC 2.0 anchor {anchor!r}"
    if not url.startswith(SPEC_BASE + "/"):
        return f"not a specification URL: {url}"
    page, _, anchor = url.removeprefix(SPEC_BASE + "/").partition("#")
    if page not in SPEC_SECTIONS:
        return f"page {page!r} is not a verified page of the 2026-07-28 specification"
    if anchor and anchor not in SPEC_SECTIONS[page]:
        return f"{page}#{anchor}: no such verified heading"
    return None


def test_unverified_rejects_what_does_not_exist() -> None:
    assert unverified(f"{SPEC_BASE}/basic/transports/stdio#shutdown") is None
    assert unverified(f"{JSONRPC_BASE}#error_object") is None
    assert unverified(f"{SPEC_BASE}/basic/lifecycle") is not None
    assert unverified(f"{SPEC_BASE}/basic/transports#stdio") is not None
    assert unverified(f"{JSONRPC_BASE}#errors") is not None
    assert references("x (spec: basic/index#meta, server/tools; JSON-RPC 2.0: error_object)") == [
        f"{SPEC_BASE}/basic/index#meta",
        f"{SPEC_BASE}/server/tools",
        f"{JSONRPC_BASE}#error_object",
    ]


def test_every_rule_of_a_real_run_cites_verified_sections(
    everything_check: tuple[int, dict[str, Any]],
) -> None:
    _, report = everything_check
    assert len(report["checks"]) > 50
    for check in report["checks"]:
        rule = check["rule"]
        assert "digest" not in rule.lower() and not PRIVATE.search(rule), (check["id"], rule)
        assert check["refs"] == references(rule) != [], (check["id"], rule)
        assert [p for u in check["refs"] if (p := unverified(u))] == [], (check["id"], rule)


def _texts(path: Path) -> list[str]:
    """A Markdown file whole; a Python file as its string constants (joined as Python joins
    adjacent literals, so a rule split over several lines is one text)."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return [source]
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_sources_and_docs_cite_only_verified_sections() -> None:
    files = [
        *sorted((REPO / "src" / "mcpline").rglob("*.py")),
        *sorted((REPO / "docs").glob("*.md")),
        REPO / "README.md",
    ]
    problems, cited = [], 0
    for path in files:
        for text in _texts(path):
            urls = references(text) + SPEC_URL.findall(text)
            cited += len(urls)
            problems += [f"{path.name}: {p}" for u in urls if (p := unverified(u))]
    assert problems == []
    assert cited > 100


def test_nothing_cites_a_document_outside_the_repository() -> None:
    roots = ("src", "docs", "examples", "tests", "bench")
    files = [p for r in roots for p in (REPO / r).rglob("*") if p.suffix in (".py", ".md")]
    files = [p for p in files if p != Path(__file__)] + [REPO / "README.md"]
    hits = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PRIVATE.search(line):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert hits == [], "\n".join(hits)


def _rule_literals(path: Path) -> list[tuple[int, str]]:
    """String constants given as a rule: the third argument of ``add``, the second of
    ``expect``, or assigned to ``rule``, ``*_rule`` or ``env``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        value: ast.expr | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            position = {"add": 2, "expect": 1}.get(node.func.attr)
            if position is not None and len(node.args) > position:
                value = node.args[position]
                line = node.lineno
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and (t.id == "env" or t.id.endswith("rule"))
            for t in node.targets
        ):
            value = node.value
            line = node.lineno
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            found.append((line, value.value))
    return found


def test_every_rule_in_the_source_cites_something() -> None:
    checks = REPO / "src" / "mcpline" / "check"
    rules = [
        (f"{p.relative_to(checks)}:{n}", r)
        for p in sorted(checks.rglob("*.py"))
        for n, r in _rule_literals(p)
    ]
    assert len(rules) >= 50
    assert [where for where, rule in rules if not references(rule)] == []
