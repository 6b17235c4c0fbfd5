"""Validation of every line a server writes against the official MCP JSON schemas.

The schemas are found in ``$MCPLINE_SCHEMA_DIR`` or in ``../shared/spec`` beside the
repository. In CI (``CI`` set) a missing schema is an error, never a skip.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

from mcpline.check.schema import RESULT_DEFS, TYPED_ERRORS

REPO = Path(__file__).resolve().parent.parent
MODERN = "2026-07-28"
LEGACY = "2025-11-25"



class SchemaMissing(RuntimeError):
    pass


def schema_dir() -> Path | None:
    env = os.environ.get("MCPLINE_SCHEMA_DIR")
    candidates = [Path(env)] if env else []
    candidates += [REPO.parent / "shared" / "spec", REPO / "shared" / "spec"]
    for c in candidates:
        if (c / f"schema-{MODERN}.json").is_file():
            return c
    return None


@cache
def _defs(version: str) -> tuple[str, dict[str, Any]]:
    d = schema_dir()
    if d is None:
        raise SchemaMissing(
            "official MCP schemas not found: "
            "set MCPLINE_SCHEMA_DIR or place shared/spec beside the repo"
        )
    doc = json.loads((d / f"schema-{version}.json").read_text())
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
