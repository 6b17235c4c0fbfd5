"""What a JSON Schema must be for mcpline to use it: the size, depth and dialect bounds, their
checks, and the two errors of the schema layer (`SchemaError`, `ArgumentError`)."""

from __future__ import annotations

from typing import Any

MAX_SCHEMA_DEPTH = 64
MAX_SCHEMA_NODES = 10_000
MAX_REPORTED_ERRORS = 5

DIALECTS = {
    "https://json-schema.org/draft/2020-12/schema": "Draft202012Validator",
    "https://json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "http://json-schema.org/draft-07/schema": "Draft7Validator",
    "http://json-schema.org/draft-06/schema": "Draft6Validator",
    "http://json-schema.org/draft-04/schema": "Draft4Validator",
}


class SchemaError(ValueError):
    """A schema that cannot be used: wrong root, unknown dialect, too large or invalid."""


class ArgumentError(ValueError):
    """Arguments that fit the schema but not the function's types (a pydantic validator,
    a conversion): the message names each field."""


def dialect_class(schema: dict[str, Any]) -> str:
    """The `jsonschema_rs` validator class for a schema's ``$schema`` (2020-12 without one)."""
    uri = schema.get("$schema")
    if uri is None:
        return "Draft202012Validator"
    if not isinstance(uri, str):
        raise SchemaError("$schema must be a string")
    cls = DIALECTS.get(uri.rstrip("#"))
    if cls is None:
        raise SchemaError(
            f"unsupported JSON Schema dialect {uri!r}; supported: {', '.join(DIALECTS)}"
        )
    return cls


def check_bounds(schema: Any) -> None:
    """Reject schemas deeper than `MAX_SCHEMA_DEPTH` or with more than `MAX_SCHEMA_NODES` nodes."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise SchemaError(f"schema has more than {MAX_SCHEMA_NODES} nodes")
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"schema is nested deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def check_tool_input_schema(schema: Any) -> None:
    """An ``inputSchema`` must be a bounded JSON Schema object with root ``type: "object"``."""
    if not isinstance(schema, dict):
        raise SchemaError("inputSchema must be a JSON object")
    if schema.get("type") != "object":
        raise SchemaError('inputSchema must have "type": "object" at its root')
    check_schema(schema)


def check_schema(schema: Any) -> None:
    """Bounds and dialect only; full meta-validation happens when the validator is built."""
    if not isinstance(schema, (dict, bool)):
        raise SchemaError("a JSON Schema must be an object or a boolean")
    check_bounds(schema)
    if isinstance(schema, dict):
        dialect_class(schema)
