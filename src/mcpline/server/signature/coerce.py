"""The coercion behind `Validator.coerce`: strings that a schema rejects where it wants a number,
integer, boolean, array, object or null, replaced by the JSON value they spell."""

from __future__ import annotations

from typing import Any

import msgspec

from ...wire import json_type
from .bounds import MAX_SCHEMA_DEPTH

_NO_VALUE: Any = object()
_MISSING_NODE: Any = object()


def _at(node: Any, path: list[Any]) -> Any:
    """The node at ``path`` (keys and indexes) under ``node``, or a sentinel."""
    for seg in path:
        if isinstance(node, dict):
            if seg not in node:
                return _MISSING_NODE
        elif not (isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node)):
            return _MISSING_NODE
        node = node[seg]
    return node


def coerce_strings(value: Any, node: Any, root: dict[str, Any], depth: int) -> Any:
    """``value`` with the strings that ``node`` rejects replaced as `Validator.coerce` says
    (the same object when nothing changed; containers are copied only along changes)."""
    node = _resolve(node, root)
    if not isinstance(node, dict) or depth > MAX_SCHEMA_DEPTH:
        return value
    if isinstance(value, str):
        new = _json_value_for(value, node, root)
        return value if new is _NO_VALUE else new
    kind = json_type(value)
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key) or ():
            if kind in _accepted(branch, root)[0]:
                value = coerce_strings(value, branch, root, depth + 1)
                break
    for branch in node.get("allOf") or ():
        value = coerce_strings(value, branch, root, depth + 1)
    if isinstance(value, dict):
        props = node.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = node.get("additionalProperties")
        changed: dict[str, Any] | None = None
        for k, v in value.items():
            sub = props.get(k, extra)
            if not isinstance(sub, dict):
                continue
            new = coerce_strings(v, sub, root, depth + 1)
            if new is not v:
                changed = changed if changed is not None else dict(value)
                changed[k] = new
        return value if changed is None else changed
    if isinstance(value, list):
        items = node.get("items")
        if not isinstance(items, dict):
            return value
        fixed = [coerce_strings(v, items, root, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(fixed, value, strict=True)) else fixed
    return value


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    """The target of a local ``$ref`` (``#/...``), followed through chains; anything else
    is returned as is."""
    for _ in range(8):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node
        target = _at(root, [p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/")])
        if target is _MISSING_NODE or ref == "#":
            return node
        node = target
    return node


def _accepted(node: Any, root: dict[str, Any], depth: int = 0) -> tuple[set[str], list[Any]]:
    """The JSON types and the enumerated values a (sub)schema accepts, as far as its
    ``type``, ``enum``, ``const``, ``$ref`` and ``anyOf``/``oneOf`` say."""
    node = _resolve(node, root)
    kinds: set[str] = set()
    values: list[Any] = []
    if not isinstance(node, dict) or depth > 8:
        return kinds, values
    t = node.get("type")
    if isinstance(t, str):
        kinds.add(t)
    elif isinstance(t, list):
        kinds.update(x for x in t if isinstance(x, str))
    if isinstance(node.get("enum"), list):
        values.extend(node["enum"])
    if "const" in node:
        values.append(node["const"])
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key) or ():
            k, v = _accepted(branch, root, depth + 1)
            kinds |= k
            values.extend(v)
    return kinds, values


def _json_value_for(text: str, owner: dict[str, Any], root: dict[str, Any]) -> Any:
    """The value ``text`` spells in JSON, if the schema ``owner`` wants such a value and no
    string; else `_NO_VALUE`."""
    kinds, values = _accepted(owner, root)
    if "string" in kinds or any(isinstance(v, str) for v in values):
        return _NO_VALUE
    try:
        value = msgspec.json.decode(text.strip())
    except msgspec.DecodeError:
        return _NO_VALUE
    kind = json_type(value)
    if kind == "string":
        return _NO_VALUE
    if kind in kinds or (kind == "integer" and "number" in kinds):
        return value
    if any(json_type(v) == kind and v == value for v in values):
        return value
    return _NO_VALUE
