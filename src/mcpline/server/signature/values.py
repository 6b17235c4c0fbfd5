"""Typed Python values and JSON values: typed values as JSON (and JSON text), and JSON data
converted to a type."""

from __future__ import annotations

from typing import Any

import msgspec

from .annotations import uses_pydantic
from .bounds import ArgumentError
from .pydantic_support import enc_hook, error_text


def to_json(value: Any) -> Any:
    """Typed Python values (dataclasses, enums, structs, pydantic models, …) as plain JSON
    values (object keys as strings, as they go on the wire)."""
    return msgspec.to_builtins(value, str_keys=True, enc_hook=enc_hook)


def dumps_text(value: Any) -> str:
    """Compact JSON text of a JSON value."""
    return msgspec.json.encode(value).decode()


def json_copy(value: Any) -> Any:
    """``value`` as it would come back from JSON (typed values become plain JSON values)."""
    return msgspec.json.decode(msgspec.json.encode(value, enc_hook=enc_hook))


def convert(value: Any, tp: Any) -> Any:
    """JSON data as ``tp`` (pydantic converts to a pydantic type, msgspec to the others);
    `ArgumentError` naming the field when it does not fit."""
    if uses_pydantic(tp):
        import pydantic

        try:
            return pydantic.TypeAdapter(tp).validate_python(value)
        except pydantic.ValidationError as exc:
            raise ArgumentError(error_text(exc)) from None
    try:
        return msgspec.convert(value, tp, strict=False)
    except msgspec.ValidationError as exc:
        raise ArgumentError(str(exc)) from None
