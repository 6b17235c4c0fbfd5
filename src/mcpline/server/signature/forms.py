"""Elicitation forms: the flat ``requestedSchema`` that `Context.elicit` sends for a type or a
list of choices, and how the accepted content becomes the value asked for."""

from __future__ import annotations

import enum
import functools
import typing
from collections.abc import Callable
from typing import Any

import msgspec

from .annotations import (
    choices,
    has_fields,
    is_class,
    is_pydantic,
    keep_declared_order,
    uses_pydantic,
)
from .pydantic_support import output_schema
from .values import convert

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_FORM_TYPES = frozenset({"string", "number", "integer", "boolean"})
Convert = Callable[[dict[str, Any]], Any]


def elicitation_form(spec: Any) -> tuple[dict[str, Any], Convert]:
    """The ``requestedSchema`` for `Context.elicit` and how accepted content becomes its
    ``data``, for a type, a list of choices or ``None`` (`mcpline.elicit` serves mappings);
    `TypeError` for what no form can ask."""
    if spec is None:
        return {"type": "object", "properties": {}}, lambda content: None
    if isinstance(spec, (list, tuple)):
        if not spec or not all(isinstance(c, str) for c in spec):
            raise TypeError("a list of choices for ctx.elicit must hold strings")
        prop = {"type": "string", "enum": list(spec)}
        return _one_field(prop), lambda content: content["value"]
    try:
        hash(spec)
    except TypeError:
        return _typed_form.__wrapped__(spec)
    return _typed_form(spec)


def _one_field(prop: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": prop}, "required": ["value"]}


@functools.lru_cache(maxsize=256)
def _typed_form(tp: Any) -> tuple[dict[str, Any], Convert]:
    if (
        tp in _SCALARS
        or typing.get_origin(tp) is typing.Literal
        or (is_class(tp) and issubclass(tp, enum.Enum))
    ):
        (prop,), components = _schemas_of(tp)
        prop = _flat_property("value", _inline(prop, components))
        return _one_field(prop), lambda content: convert(content["value"], tp)
    if not (is_class(tp) and (has_fields(tp) or is_pydantic(tp))):
        raise TypeError(
            f"ctx.elicit cannot ask for {tp!r}: give str, int, float, bool, a Literal or Enum, "
            "a dataclass, TypedDict, msgspec.Struct or pydantic model, a list of choices, or "
            "a requestedSchema"
        )
    (ref,), components = _schemas_of(tp)
    root = _inline(ref, components)
    props = {name: _flat_property(name, p) for name, p in root.get("properties", {}).items()}
    form: dict[str, Any] = {"type": "object", "properties": props}
    if root.get("required"):
        form["required"] = list(root["required"])
    if root.get("description"):
        form["description"] = root["description"]
    keep_declared_order(form, choices([tp]))
    return form, lambda content: convert(content, tp)


def _schemas_of(tp: Any) -> tuple[tuple[dict[str, Any]], dict[str, Any]]:
    if uses_pydantic(tp):
        schema, components = output_schema(tp, "validation")  # what the user fills in
        return (schema,), components
    (schema,), components = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    keep_declared_order(components, choices([tp]))
    keep_declared_order(schema, choices([tp]))
    return (schema,), dict(components)


def _inline(node: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """``node`` with ``$ref``s into ``components`` replaced by their targets (no titles)."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(components.get(ref[len("#/$defs/") :], {}))
        target.pop("title", None)
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**target, **rest}, components)
    out = dict(node)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _inline(v, components) for k, v in out["properties"].items()}
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [_inline(b, components) for b in out[key]]
    if isinstance(out.get("items"), dict):
        out["items"] = _inline(out["items"], components)
    return out


def _flat_property(name: str, prop: dict[str, Any]) -> dict[str, Any]:
    """One field of an elicitation form (an optional field loses its ``null``), or
    `TypeError` for a field no form can hold."""
    alts = prop.get("anyOf")
    if isinstance(alts, list):
        kept = [a for a in alts if a != {"type": "null"}]
        if len(kept) == 1:
            prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **kept[0]}
    values = prop.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        prop.setdefault("type", "string")
    kind = prop.get("type")
    items = prop.get("items")
    if kind in _FORM_TYPES or (
        kind == "array" and isinstance(items, dict) and isinstance(items.get("enum"), list)
    ):
        return {k: v for k, v in prop.items() if k != "default" or v is not None}
    raise TypeError(
        f"ctx.elicit: field {name!r} is not a string, number, integer, boolean or choice "
        "(an elicitation form is flat)"
    )
