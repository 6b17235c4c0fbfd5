"""JSON Schema (2020-12) for tools: derived from type hints, checked, and validated against.

Schemas come from `msgspec` (type hints → JSON Schema 2020-12, and validated dicts →
typed values). Validation uses `jsonschema_rs`, compiled once per schema, with every
network `$ref` refused and the schema's size and depth bounded.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import msgspec

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


class McpHeader:
    """Mirror a tool parameter into the HTTP header ``Mcp-Param-{name}``:
    ``region: Annotated[str, McpHeader("Region")]`` (``str``, ``int`` or ``bool`` only).

    It becomes the parameter's ``x-mcp-header`` annotation; HTTP clients then send the value
    in that header too, for intermediaries that route on it, and the server checks that both
    agree. Never mark secrets: headers are visible to every intermediary.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"McpHeader({self.name!r})"


def _dialect_class(schema: dict[str, Any]) -> str:
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
        _dialect_class(schema)


def _refuse_retrieval(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} is not fetched (network references are disabled)")


class Validator:
    """A compiled validator for one schema; built on first use."""

    __slots__ = ("schema", "_compiled")

    def __init__(self, schema: dict[str, Any] | bool) -> None:
        self.schema = schema
        self._compiled: Any = None

    def _compile(self) -> Any:
        import jsonschema_rs

        schema = self.schema
        cls_name = "Draft202012Validator" if isinstance(schema, bool) else _dialect_class(schema)
        cls = getattr(jsonschema_rs, cls_name)
        try:
            self._compiled = cls(schema, retriever=_refuse_retrieval, validate_formats=False)
        except jsonschema_rs.ValidationError as exc:
            raise SchemaError(f"invalid schema: {str(exc).splitlines()[0]}") from None
        return self._compiled

    def compile(self) -> None:
        """Build now (raises `SchemaError` for an invalid schema)."""
        if self._compiled is None:
            self._compile()

    def errors(self, instance: Any) -> list[str]:
        """Human-readable violations, at most `MAX_REPORTED_ERRORS`; empty when valid."""
        compiled = self._compiled or self._compile()
        if compiled.is_valid(instance):
            return []
        out = []
        for err in compiled.iter_errors(instance):
            path = "/".join(str(p) for p in err.instance_path)
            out.append(f"{'/' + path if path else 'arguments'}: {err.message}")
            if len(out) >= MAX_REPORTED_ERRORS:
                break
        return out


# --- type hints → schema ------------------------------------------------------------------

_ARG_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def split_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """Summary text and per-argument descriptions from a Google-style docstring."""
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _ARG_SECTION.match(lines[i]):
        summary.append(lines[i])
        i += 1
    current: str | None = None
    indent: int | None = None
    for line in lines[i + 1 :]:
        if not line.strip():
            current = None
            continue
        lead = len(line) - len(line.lstrip())
        if indent is None:
            indent = lead
        if lead == 0:
            break
        m = _ARG_LINE.match(line)
        if m and lead == indent:
            current = m.group(1).lstrip("*")
            args[current] = m.group(3).strip()
        elif current:
            args[current] = (args[current] + " " + line.strip()).strip()
    text = "\n".join(summary).strip()
    return (text or None), args


def _annotate(tp: Any, description: str | None) -> Any:
    """Turn ``Annotated[T, "text"]`` into msgspec metadata and attach a docstring description."""
    extras: list[Any] = []
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        for m in meta:
            if isinstance(m, str):
                extras.append(msgspec.Meta(description=m))
            elif isinstance(m, msgspec.Meta):
                extras.append(m)
            elif isinstance(m, McpHeader):
                extras.append(msgspec.Meta(extra_json_schema={"x-mcp-header": m.name}))
        tp = base
        if any(m.description for m in extras if isinstance(m, msgspec.Meta)):
            description = None
    if description:
        extras.append(msgspec.Meta(description=description))
    if extras:
        args = (tp, *extras)
        return typing.Annotated[args]  # same as Annotated[tp, *extras], valid on 3.10
    return tp


class Signature:
    """How a function's parameters map to a tool's ``arguments``."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        skip: Callable[[Any], bool],
        arg_docs: dict[str, str],
    ) -> None:
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise SchemaError(f"cannot resolve type hints of {name}: {exc}") from exc
        fields: list[Any] = []
        self.context_param: str | None = None
        self.var_kw = False
        self.names: list[str] = []
        for pname, p in sig.parameters.items():
            hint = hints.get(pname, Any)
            if skip(hint):
                self.context_param = pname
                continue
            if p.kind is p.VAR_KEYWORD:
                self.var_kw = True
                continue
            if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
                raise SchemaError(f"{name}: parameter {pname!r} cannot be passed by name")
            tp = _annotate(hint, arg_docs.get(pname))
            if p.default is inspect.Parameter.empty:
                fields.append((pname, tp))
            else:
                fields.append((pname, tp, p.default))
            self.names.append(pname)
        struct_name = re.sub(r"\W", "_", name) + "Arguments"
        self.struct: Any = msgspec.defstruct(
            struct_name, fields, kw_only=True, forbid_unknown_fields=not self.var_kw
        )
        try:
            (_,), components = msgspec.json.schema_components(
                [self.struct], ref_template="#/$defs/{name}"
            )
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"{name}: cannot derive a JSON Schema: {exc}") from exc
        root = dict(components.pop(struct_name))
        root.pop("title", None)
        root["type"] = "object"
        root.setdefault("properties", {})
        if not root.get("required"):
            root.pop("required", None)
        if not self.var_kw:
            root["additionalProperties"] = False
        if components:
            root["$defs"] = components
        self.schema: dict[str, Any] = root

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Typed keyword arguments from validated JSON arguments."""
        if not self.var_kw:
            value = msgspec.convert(arguments, self.struct, strict=False)
            return {n: getattr(value, n) for n in self.names}
        known = {k: v for k, v in arguments.items() if k in self.names}
        value = msgspec.convert(known, self.struct, strict=False)
        out = {n: getattr(value, n) for n in self.names}
        out.update((k, v) for k, v in arguments.items() if k not in self.names)
        return out


def output_schema_for(tp: Any) -> tuple[dict[str, Any], bool]:
    """The ``outputSchema`` for a return type, and whether values are wrapped in ``{"result": …}``.

    Non-object return types are wrapped so the schema is an object at its root, which
    every client era accepts.
    """
    (schema,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if ref and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/") :]
        target = components.get(name, {})
        if target.get("type") == "object":
            root = dict(components.pop(name))
            root.pop("title", None)
            if components:
                root["$defs"] = components
            return root, False
    if isinstance(schema, dict) and schema.get("type") == "object":
        root = dict(schema)
        if components:
            root["$defs"] = components
        return root, False
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if components:
        wrapped["$defs"] = components
    return wrapped, True


def to_json(value: Any) -> Any:
    """Typed Python values (dataclasses, enums, structs, …) as plain JSON values (object
    keys as strings, as they go on the wire)."""
    return msgspec.to_builtins(value, str_keys=True)


def dumps_text(value: Any) -> str:
    """Compact JSON text of a JSON value."""
    return msgspec.json.encode(value).decode()


__all__ = [
    "check_bounds",
    "check_schema",
    "check_tool_input_schema",
    "DIALECTS",
    "dumps_text",
    "MAX_REPORTED_ERRORS",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "McpHeader",
    "output_schema_for",
    "SchemaError",
    "Signature",
    "split_docstring",
    "to_json",
    "Validator",
]
