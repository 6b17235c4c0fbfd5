"""JSON Schema (2020-12) for tools: derived from type hints, checked, and validated against.

Schemas come from `msgspec` (type hints → JSON Schema 2020-12, and validated dicts →
typed values), or from pydantic for a signature that uses it (a ``BaseModel``,
``pydantic.Field``, any other pydantic type or metadata; pydantic is imported only then).
Validation uses `jsonschema_rs`, compiled once per schema, with every network `$ref`
refused and the schema's size and depth bounded.

What an annotation says is honoured or refused when the function is registered: metadata
mcpline does not understand is a `SchemaError` naming the parameter, never ignored.

This module is the face of `mcpline.server.signature`: `Validator`, `Signature` and
`output_schema_for` live here, the rest in its sibling modules by topic (``bounds``: bounds,
dialects and errors; ``coerce``: JSON-text arguments; ``annotations``: what a type hint
says; ``pydantic_support``; ``values``: typed values as JSON; ``forms``: elicitation forms;
``docstrings``).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec.structs import asdict

from ..depends import Dependency
from .annotations import (
    McpHeader,
    Translate,
    choices,
    keep_declared_order,
    prepare,
    pydantic_loaded,
    rebuild,
    uses_pydantic,
)
from .bounds import (
    DIALECTS,
    MAX_REPORTED_ERRORS,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    ArgumentError,
    SchemaError,
    check_bounds,
    check_schema,
    check_tool_input_schema,
    dialect_class,
)
from .coerce import coerce_strings
from .docstrings import split_docstring
from .forms import Convert as Convert
from .forms import elicitation_form
from .pydantic_support import arguments_model, bind_arguments, output_schema
from .values import convert, dumps_text, json_copy, to_json


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
        cls_name = "Draft202012Validator" if isinstance(schema, bool) else dialect_class(schema)
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

    def coerce(self, instance: Any) -> Any | None:
        """A copy of ``instance`` in which each string the schema rejects, where it wants a
        number, integer, boolean, array, object or null and the string is the JSON text of
        such a value (``"5"``, ``"2.5"``, ``"true"``, ``"[1, 2]"``), is replaced by that value;
        ``None`` when no string qualifies. ``instance`` is never changed."""
        root = self.schema
        if not isinstance(root, dict):
            return None
        out = coerce_strings(instance, root, root, 0)
        return None if out is instance else out


class Signature:
    """How a function's parameters map to a tool's ``arguments``.

    msgspec derives the schema and converts the arguments, unless a parameter uses pydantic
    (a model, ``Field``, a pydantic type or metadata), in which case pydantic does both for
    the whole signature.
    """

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
        self.context_param: str | None = None
        self.var_kw = False
        self.names: list[str] = []
        params: list[tuple[str, Any, Any]] = []
        for pname, p in sig.parameters.items():
            hint = hints.get(pname, Any)
            if skip(hint):
                self.context_param = pname
                continue
            if isinstance(p.default, Dependency):  # filled by the framework, not the client
                continue
            if p.kind is p.VAR_KEYWORD:
                self.var_kw = True
                continue
            if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
                raise SchemaError(f"{name}: parameter {pname!r} cannot be passed by name")
            params.append((pname, hint, p.default))
            self.names.append(pname)
        self._model: Any = None
        """The pydantic model of the arguments (``None``: msgspec converts them)."""
        self.struct: Any = None
        if any(uses_pydantic(hint, default) for _, hint, default in params):
            root = self._with_pydantic(name, params, arg_docs)
        else:
            try:
                root = self._with_msgspec(name, params, arg_docs)
            except SchemaError as exc:
                if not pydantic_loaded():
                    raise
                # e.g. a dataclass holding a pydantic model: pydantic may know it
                try:
                    root = self._with_pydantic(name, params, arg_docs)
                except SchemaError:
                    raise exc from None
        keep_declared_order(root, choices([hint for _, hint, _ in params]))
        out: dict[str, Any] = {"type": "object", "properties": root.pop("properties", {})}
        required = root.pop("required", None)
        if required:
            out["required"] = required
        root.pop("additionalProperties", None)
        if not self.var_kw:
            out["additionalProperties"] = False
        defs = root.pop("$defs", None)
        for key in ("title", "type"):
            root.pop(key, None)
        out.update(root)  # anything else the engine said (a description, …)
        if defs:
            out["$defs"] = defs
        self.schema: dict[str, Any] = out

    # --- msgspec --------------------------------------------------------------------------

    def _with_msgspec(
        self, name: str, params: list[tuple[str, Any, Any]], arg_docs: dict[str, str]
    ) -> dict[str, Any]:
        fields: list[Any] = []
        for pname, hint, default in params:
            tr = Translate(f"{name}: parameter {pname!r}", pydantic=False)
            tp = prepare(hint, tr, arg_docs.get(pname), default)
            fields.append(
                (pname, tp) if default is inspect.Parameter.empty else (pname, tp, default)
            )
        struct_name = re.sub(r"\W", "_", name) + "Arguments"
        try:
            self.struct = msgspec.defstruct(
                struct_name, fields, kw_only=True, forbid_unknown_fields=not self.var_kw
            )
            (_,), components = msgspec.json.schema_components(
                [self.struct], ref_template="#/$defs/{name}"
            )
        except (TypeError, ValueError) as exc:
            raise SchemaError(_culprit(name, fields, exc)) from exc
        root = dict(components.pop(struct_name))
        if components:
            root["$defs"] = components
        return root

    # --- pydantic -------------------------------------------------------------------------

    def _with_pydantic(
        self, name: str, params: list[tuple[str, Any, Any]], arg_docs: dict[str, str]
    ) -> dict[str, Any]:
        self._model, root = arguments_model(name, params, arg_docs, var_kw=self.var_kw)
        self.struct = None
        return root

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Typed keyword arguments from validated JSON arguments (`ArgumentError`,
        `msgspec.ValidationError` or `TypeError` when they do not convert)."""
        if self._model is not None:
            return bind_arguments(self._model, self.names, self.var_kw, arguments)
        # msgspec, inline: this is every plain tool's hot path
        if not self.var_kw:
            return asdict(msgspec.convert(arguments, self.struct, strict=False))
        known = {k: v for k, v in arguments.items() if k in self.names}
        out = asdict(msgspec.convert(known, self.struct, strict=False))
        out.update((k, v) for k, v in arguments.items() if k not in self.names)
        return out


def _reason(exc: BaseException) -> str:
    """The telling line of a library's error message (msgspec puts it last)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _culprit(name: str, fields: list[Any], exc: Exception) -> str:
    """msgspec failed on a whole signature: say which parameter, and what to write."""
    for field in fields:
        pname, tp = field[0], field[1]
        try:
            msgspec.json.schema(tp)
            if len(field) > 2:
                msgspec.json.schema(msgspec.defstruct("_", [field]))
        except (TypeError, ValueError) as inner:
            return (
                f"{name}: parameter {pname!r}: cannot derive a JSON Schema ({_reason(inner)}); use "
                "JSON types (str, int, float, bool, None, list, dict), Literal, Enum, "
                "dataclasses, TypedDict, msgspec.Struct, datetime/UUID/Decimal, or pydantic "
                "models with pydantic installed"
            )
    return f"{name}: cannot derive a JSON Schema: {_reason(exc)}"


def output_schema_for(tp: Any) -> tuple[dict[str, Any], bool]:
    """The ``outputSchema`` for a return type, and whether values are wrapped in ``{"result": …}``.

    Non-object return types are wrapped so the schema is an object at its root, which
    every client era accepts. A pydantic return type is described by pydantic (in
    serialization mode, as the value is sent); `SchemaError` for a type neither describes.
    """
    pydantic = uses_pydantic(tp)
    tr = Translate("the return annotation", pydantic=pydantic)
    try:
        described = rebuild(tp, tr.nested)
    except TypeError as exc:
        raise tr.fail(f"the type {tp!r}", str(exc)) from None
    if pydantic:
        schema, components = output_schema(described)
    else:
        try:
            (schema,), components = msgspec.json.schema_components(
                [described], ref_template="#/$defs/{name}"
            )
        except (TypeError, ValueError) as exc:
            raise SchemaError(
                f"the return annotation {tp!r} has no JSON Schema ({_reason(exc)})"
            ) from exc
    components = dict(components)
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if ref and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/") :]
        target = components.get(name, {})
        if target.get("type") == "object":
            root = dict(components.pop(name))
            root.pop("title", None)
            if components:
                root["$defs"] = components
            keep_declared_order(root, choices([tp]))
            return root, False
    if isinstance(schema, dict) and schema.get("type") == "object":
        root = dict(schema)
        root.pop("title", None)
        if components:
            root["$defs"] = components
        keep_declared_order(root, choices([tp]))
        return root, False
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if components:
        wrapped["$defs"] = components
    keep_declared_order(wrapped, choices([tp]))
    return wrapped, True


__all__ = [
    "ArgumentError",
    "convert",
    "elicitation_form",
    "json_copy",
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
