"""Validation of server messages against the official MCP JSON schemas shipped with mcpline.

The package carries copies of the 2026-07-28 schema (modern) and the 2025-11-25 schema (for
the legacy ``initialize`` session), so ``mcpline check`` needs nothing outside the package.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

from ..spec import (
    COMPLETE,
    DISCOVER,
    INITIALIZE,
    LEGACY_VERSIONS,
    LISTEN,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN,
    MRTR_METHODS,
    PING,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    SET_LEVEL,
    SUBSCRIBE,
    TOOLS_CALL,
    TOOLS_LIST,
    UNSUBSCRIBE,
    UNSUPPORTED_PROTOCOL_VERSION,
)

LEGACY = LEGACY_VERSIONS[0]
"""The legacy revision whose schema ships here (what the checker's legacy session speaks)."""

RESULT_DEFS = {
    DISCOVER: "DiscoverResult",
    TOOLS_LIST: "ListToolsResult",
    TOOLS_CALL: "CallToolResult",
    RESOURCES_LIST: "ListResourcesResult",
    RESOURCES_TEMPLATES_LIST: "ListResourceTemplatesResult",
    RESOURCES_READ: "ReadResourceResult",
    PROMPTS_LIST: "ListPromptsResult",
    PROMPTS_GET: "GetPromptResult",
    COMPLETE: "CompleteResult",
    LISTEN: "SubscriptionsListenResult",
    INITIALIZE: "InitializeResult",
    PING: "EmptyResult",
    SET_LEVEL: "EmptyResult",
    SUBSCRIBE: "EmptyResult",
    UNSUBSCRIBE: "EmptyResult",
}
TYPED_ERRORS = {
    MISSING_REQUIRED_CLIENT_CAPABILITY: "MissingRequiredClientCapabilityError",
    UNSUPPORTED_PROTOCOL_VERSION: "UnsupportedProtocolVersionError",
}


@cache
def _defs(version: str) -> tuple[str, dict[str, Any]]:
    text = resources.files(__package__).joinpath(f"schema-{version}.json").read_text("utf-8")
    doc = json.loads(text)
    key = "$defs" if "$defs" in doc else "definitions"
    return key, doc[key]


@cache
def validator(version: str, name: str) -> Any:
    """A compiled validator for one definition of the given schema revision."""
    key, defs = _defs(version)
    if name not in defs:
        raise KeyError(f"{name} is not defined in the {version} schema")
    return jsonschema_rs.validator_for({key: defs, "$ref": f"#/{key}/{name}"})


def problems(version: str, name: str, value: Any) -> list[str]:
    """Schema violations of ``value`` against definition ``name`` (empty when valid)."""
    v = validator(version, name)
    if v.is_valid(value):
        return []
    out = []
    for err in v.iter_errors(value):
        path = "/".join(map(str, err.instance_path)) or "(root)"
        out.append(f"{name} at {path}: {err.message[:200]}")
        if len(out) >= 3:
            break
    return out


def message_problems(msg: Any, *, method: str | None = None, version: str = MODERN) -> list[str]:
    """Schema problems of one server-to-client message.

    ``method`` is the method of the request ``msg`` answers, if known, so that a result is
    checked against its specific type; ``version`` picks the schema (legacy inside an
    ``initialize`` session).
    """
    out = problems(version, "JSONRPCMessage", msg)
    if out:
        return out
    if "method" in msg and "id" not in msg:
        return problems(version, "ServerNotification", msg)
    if "method" in msg:
        if version == MODERN:
            return ["a 2026-07-28 server sent a JSON-RPC request"]
        return problems(version, "ServerRequest", msg)
    if "error" in msg:
        name = TYPED_ERRORS.get(msg["error"].get("code")) if version == MODERN else None
        return problems(version, name, msg) if name else []
    result = msg.get("result")
    if method is None or not isinstance(result, dict):
        return []
    if version == MODERN and result.get("resultType") == "input_required":
        if method not in MRTR_METHODS:
            return [f"resultType input_required is not allowed on {method}"]
        return problems(version, "InputRequiredResult", result)
    name = RESULT_DEFS.get(method)
    if name is None or (name == "InitializeResult" and version == MODERN):
        return []
    if name not in _defs(version)[1]:
        return []  # e.g. server/discover answered to a request without modern _meta
    if name == "EmptyResult" and version == LEGACY and result != {}:
        return [f"{method} result must be exactly {{}} in a legacy session"]
    return problems(version, name, result)
