"""A command's arguments: ``--args JSON`` and ``KEY=VALUE`` words, typed by a tool's
``inputSchema``.

The schema's type of KEY decides what VALUE is: ``string`` as typed; ``integer`` and
``number`` (``1``, ``-2``, ``2.5``); ``boolean`` (``true``/``false``); ``null`` (``null``);
``object`` (a JSON object); ``array`` by repetition (``tag=a tag=b``, each item typed by
``items``) or as one JSON array (``tag='["a","b"]'``). Several types (``["integer",
"null"]``, ``anyOf``) take the first that fits; a key the schema does not type is a string.
KEY=VALUE words are applied over ``--args``. A key that is not a parameter of a tool that
takes no others, a value that does not fit its type, or a non-array key given twice is a
usage error naming the key. Prompt arguments are all strings: a value of ``--args`` that is
not one is sent as its JSON text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from ..wire import json_type
from .options import UsageError
from .suggest import did_you_mean

_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_ORDER = ("null", "boolean", "integer", "number", "object", "array", "string")
"""The order in which a value is tried against several types: the strictest first."""


def json_object(text: str, what: str) -> dict[str, Any]:
    """``--args``: a JSON object."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--args is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--args must be a JSON object ({what})")
    return value


def split_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """``KEY=VALUE`` words as (key, value) pairs (split at the first ``=``)."""
    pairs = []
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(f"expected KEY=VALUE, got {word!r}")
        pairs.append((key, value))
    return pairs


def prompt_arguments(base: dict[str, Any], words: Sequence[str]) -> dict[str, str]:
    """``get``'s arguments, all strings as prompt arguments are: ``--args`` (a value that is
    not a string as its JSON text: ``3``, ``true``, ``["a"]``) with each KEY=VALUE over it."""
    out = {
        key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for key, value in base.items()
    }
    seen: set[str] = set()
    for key, value in split_pairs(words):
        if key in seen:
            raise UsageError(f"argument {key!r} is given twice")
        seen.add(key)
        out[key] = value
    return out


def types_of(schema: Any) -> list[str]:
    """The JSON types a property schema allows (``type``, ``anyOf``/``oneOf``, ``enum``)."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        found = [kind]
    elif isinstance(kind, list):
        found = [k for k in kind if isinstance(k, str)]
    else:
        found = []
        for branch in schema.get("anyOf") or schema.get("oneOf") or []:
            found += types_of(branch)
        values = schema.get("enum", [schema["const"]] if "const" in schema else [])
        for v in values if isinstance(values, list) else []:
            found.append(json_type(v))
    return sorted(set(found), key=lambda t: _ORDER.index(t) if t in _ORDER else len(_ORDER))


def _items(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return {}
    if isinstance(schema.get("items"), dict):
        return schema["items"]
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(branch, dict) and "array" in types_of(branch):
            return _items(branch)
    return {}


def convert(text: str, kind: str) -> Any:
    """``text`` as a value of JSON type ``kind``; ValueError if it is not one."""
    if kind == "string":
        return text
    if kind == "integer":
        if _INT.fullmatch(text):
            return int(text)
    elif kind == "number":
        if _NUMBER.fullmatch(text):
            number = float(text)
            if math.isfinite(number):
                return int(text) if _INT.fullmatch(text) else number
    elif kind == "boolean":
        if text in ("true", "false"):
            return text == "true"
    elif kind == "null":
        if text == "null":
            return None
    elif kind in ("object", "array"):
        try:
            value = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(value, dict if kind == "object" else list):
                return value
    else:
        return text  # a type this command does not know: the server will judge
    raise ValueError(kind)


def _expects(types: Sequence[str]) -> str:
    names = {
        "integer": "an integer",
        "object": "a JSON object",
        "array": "a JSON array",
        "boolean": "a boolean (true or false)",
        "null": "null",
    }
    ordered = [t for t in types if t != "null"] + [t for t in types if t == "null"]
    return " or ".join(names.get(t, f"a {t}") for t in ordered)


def typed(key: str, text: str, schema: Any, *, item: bool = False) -> Any:
    """One VALUE as the first of the property's types it fits (a string if untyped)."""
    types = types_of(schema) or ["string"]
    for kind in types:
        try:
            return convert(text, kind)
        except ValueError:
            continue
    what = f"each item of argument {key!r}" if item else f"argument {key!r}"
    raise UsageError(f"{what} expects {_expects(types)}, got {text!r}")


def tool_arguments(
    base: dict[str, Any], words: Sequence[str], schema: Any, tool: str
) -> dict[str, Any]:
    """``call``'s arguments: ``--args`` with each KEY=VALUE, typed by ``schema``, over it."""
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    assert isinstance(props, dict)
    grouped: dict[str, list[str]] = {}
    for key, value in split_pairs(words):
        grouped.setdefault(key, []).append(value)
    out = dict(base)
    for key, values in grouped.items():
        prop = props.get(key)
        if prop is None and schema.get("additionalProperties") is False:
            takes = ", ".join(props) or "no arguments"
            hint = did_you_mean(key, props)
            raise UsageError(f"tool {tool!r} has no argument {key!r}{hint} (it takes {takes})")
        types = types_of(prop)
        if "array" in types:
            out[key] = _array(key, values, prop)
        elif len(values) > 1:
            raise UsageError(f"argument {key!r} is given twice (only an array may repeat)")
        else:
            out[key] = typed(key, values[0], prop)
    return out


def _array(key: str, values: list[str], schema: Any) -> Any:
    """An array argument: the repetitions, each a typed item or a JSON array of items."""
    if values == ["null"] and "null" in types_of(schema):
        return None
    items = _items(schema)
    out: list[Any] = []
    for text in values:
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                out += parsed
                continue
        out.append(typed(key, text, items, item=True))
    return out


__all__ = ["json_object", "prompt_arguments", "split_pairs", "tool_arguments", "typed", "types_of"]
