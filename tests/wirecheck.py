"""Validation of every line a server writes against the official MCP JSON schemas.

The schemas are the official 2026-07-28 and 2025-11-25 ones that ship inside the package
(``mcpline/check/schema-*.json``), so the suite needs nothing outside the repository. The
message rules below are written independently of ``mcpline.check.schema`` so that the tests
do not judge the checker's logic with itself.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

from mcpline.check.schema import RESULT_DEFS, TYPED_ERRORS

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


@cache
def _defs(version: str) -> tuple[str, dict[str, Any]]:
    text = resources.files("mcpline.check").joinpath(f"schema-{version}.json").read_text("utf-8")
    doc = json.loads(text)
    key = "$defs" if "$defs" in doc else "definitions"
    return key, doc[key]


@cache
def validator(version: str, name: str) -> Any:
    key, defs = _defs(version)
    if name not in defs:
        raise KeyError(f"{name} is not defined in the {version} schema")
    return jsonschema_rs.validator_for({key: defs, "$ref": f"#/{key}/{name}"})


def problems(version: str, name: str, value: Any) -> list[str]:
    v = validator(version, name)
    return [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in v.iter_errors(value)]


def check_message(msg: Any, *, method: str | None = None, version: str = MODERN) -> list[str]:
    """Schema problems of one server→client message (empty list when valid).

    ``method`` is the request's method when ``msg`` answers one, so the result can be checked
    against its specific type.
    """
    out = problems(version, "JSONRPCMessage", msg)
    if out:
        return out
    if not isinstance(msg, dict):
        return ["not an object"]
    if "method" in msg and "id" not in msg:
        return problems(version, "ServerNotification", msg)
    if "error" in msg:
        name = TYPED_ERRORS.get(msg["error"].get("code")) if version == MODERN else None
        return problems(version, name, msg) if name else []
    if "result" in msg and method:
        result = msg["result"]
        if (
            version == MODERN
            and isinstance(result, dict)
            and result.get("resultType") == "input_required"
        ):
            return problems(version, "InputRequiredResult", result)
        name = RESULT_DEFS.get(method)
        if name is None:
            return []
        if name == "EmptyResult" and version == LEGACY and result != {}:
            return [f"{method} result must be exactly {{}} in a legacy session, got {result!r}"]
        if name == "InitializeResult" and version == MODERN:
            return []
        return problems(version, name, result)
    if "method" in msg and "id" in msg:
        return (
            problems(version, "ServerRequest", msg)
            if version == LEGACY
            else ["a modern server sent a request"]
        )
    return []
