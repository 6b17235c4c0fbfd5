"""A form elicitation's ``requestedSchema`` as fields to ask one by one.

The spec allows flat properties of these shapes: strings (``format`` date, date-time, email,
uri; ``minLength``/``maxLength``), numbers and integers (``minimum``/``maximum``), booleans,
single-select enums (``enum``, with legacy ``enumNames``, or ``oneOf`` of ``const``/``title``)
and multi-select enums (``type: array`` whose ``items`` have ``enum`` or ``anyOf`` of
``const``/``title``; ``minItems``/``maxItems``). Each may have a ``title``, ``description``
and ``default``; ``required`` lists the fields that must be given. A typed answer is parsed to
its type and checked against its property schema (JSON Schema, formats included): a bad one
is re-asked.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

_INT = re.compile(r"[+-]?\d+")
_YES = {"y", "yes", "true", "1"}
_NO = {"n", "no", "false", "0"}


class BadValue(ValueError):
    """A typed answer that does not fit its field (the message says why)."""


@dataclass
class Field:
    """One property of a form: how to show it and how to read what the user types."""

    key: str
    schema: dict[str, Any]
    required: bool
    kind: str
    """string, integer, number, boolean, choice (one of options), choices (several), list
    (free strings, comma-separated) or json (any other type: read as JSON, else as text)."""
    options: list[tuple[str, str]] = field(default_factory=list)
    """(value, label) of each choice."""

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    @property
    def has_default(self) -> bool:
        return "default" in self.schema

    def label(self) -> str:
        title = self.schema.get("title")
        return f"{title} [{self.key}]" if isinstance(title, str) and title else self.key

    def hint(self) -> str:
        """What the field takes: ``integer, 0 to 150, optional, default 30``."""
        s = self.schema
        parts: list[str] = []
        if self.kind == "choice":
            parts.append(f"choose 1-{len(self.options)}")
        elif self.kind == "choices":
            parts.append(f"choose any of 1-{len(self.options)}, separated by commas")
        elif self.kind == "boolean":
            parts.append("yes/no")
        elif self.kind == "list":
            parts.append("texts separated by commas")
        elif self.kind == "json":
            parts.append("JSON")
        else:
            fmt = s.get("format")
            parts.append(f"text, {fmt}" if self.kind == "string" and fmt else self.kind)
        low = s.get("minimum", s.get("minLength", s.get("minItems")))
        high = s.get("maximum", s.get("maxLength", s.get("maxItems")))
        unit = " characters" if self.kind == "string" else ""
        if low is not None and high is not None:
            parts.append(f"{low} to {high}{unit}")
        elif low is not None:
            parts.append(f"at least {low}{unit}")
        elif high is not None:
            parts.append(f"at most {high}{unit}")
        parts.append("required" if self.required else "optional")
        if self.has_default:
            parts.append(f"default {self.show(self.default)}")
        return ", ".join(parts)

    def show(self, value: Any) -> str:
        """A value as the user would type it."""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)

    def parse(self, text: str) -> Any:
        """What the user typed (not empty) as a value of this field; `BadValue` if it is
        not one."""
        text = text.strip()
        if self.kind == "integer":
            if not _INT.fullmatch(text):
                raise BadValue(f"{text!r} is not an integer")
            return int(text)
        if self.kind == "number":
            return parse_number(text)
        if self.kind == "boolean":
            if text.lower() in _YES:
                return True
            if text.lower() in _NO:
                return False
            raise BadValue(f"{text!r} is not yes or no")
        if self.kind == "choice":
            return self._choose(text)
        if self.kind == "choices":
            return [self._choose(part) for part in re.split(r"\s*,\s*", text) if part]
        if self.kind == "list":
            return [part for part in re.split(r"\s*,\s*", text) if part]
        if self.kind == "json":
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text

    def _choose(self, text: str) -> str:
        if _INT.fullmatch(text) and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1][0]
        for value, label in self.options:
            if text == value or text.casefold() == label.casefold():
                return value
        raise BadValue(f"{text!r} is not one of the choices (type its number)")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` breaks the property schema (None when it fits or cannot be told)."""
        return schema_problem(self.schema, value)


def schema_problem(schema: Any, value: Any) -> str | None:
    """Why ``value`` breaks ``schema`` (JSON Schema, formats included): its first error;
    None when it fits or the schema does not compile (then the server will judge)."""
    try:
        import jsonschema_rs

        errors = list(jsonschema_rs.validator_for(schema, validate_formats=True).iter_errors(value))
    except Exception:
        return None
    return errors[0].message if errors else None


def parse_number(text: str) -> int | float:
    """A finite number; an integer when it is written as one."""
    if _INT.fullmatch(text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        raise BadValue(f"{text!r} is not a number") from None
    if not math.isfinite(number):
        raise BadValue(f"{text!r} is not a finite number")
    return number


def options_of(schema: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The choices of a single-select enum schema (or of a multi-select's ``items``)."""
    one_of = schema.get("oneOf", schema.get("anyOf"))
    if isinstance(one_of, list) and one_of and all(isinstance(o, dict) for o in one_of):
        return [(str(o.get("const")), str(o.get("title", o.get("const")))) for o in one_of]
    enum = schema.get("enum")
    if isinstance(enum, list):
        names = schema.get("enumNames")
        if isinstance(names, list) and len(names) == len(enum):
            return [(str(v), str(n)) for v, n in zip(enum, names, strict=True)]
        return [(str(v), str(v)) for v in enum]
    return None


def fields(requested: Any) -> list[Field]:
    """The fields of a ``requestedSchema``, in its order."""
    if not isinstance(requested, dict) or not isinstance(requested.get("properties"), dict):
        return []
    required = requested.get("required")
    needed = set(required) if isinstance(required, list) else set()
    out = []
    for key, schema in requested["properties"].items():
        schema = schema if isinstance(schema, dict) else {}
        kind = schema.get("type")
        options: list[tuple[str, str]] | None = None
        if kind == "array":
            items = schema.get("items")
            options = options_of(items) if isinstance(items, dict) else None
            kind = "choices" if options else "list"
        else:
            options = options_of(schema)
            if options:
                kind = "choice"
        if kind is None:
            kind = "string"
        elif kind not in ("string", "integer", "number", "boolean", "choice", "choices", "list"):
            kind = "json"
        out.append(Field(str(key), schema, key in needed, str(kind), options or []))
    return out


def answer_shape(params: dict[str, Any]) -> str:
    """For a form whose only field is ``value`` (a question for one value: ``ctx.elicit(msg,
    int)``), the ``--input`` answer it takes: `` (its answer is {"value": …})``; else ``""``."""
    if params.get("mode") == "url":
        return ""
    if [f.key for f in fields(params.get("requestedSchema"))] != ["value"]:
        return ""
    return ' (its answer is {"value": …})'


def summary(params: dict[str, Any]) -> str:
    """An elicitation in a few words: its message and its fields (or its URL)."""
    message = json.dumps(str(params.get("message", "")), ensure_ascii=False)
    if params.get("mode") == "url":
        return f"URL elicitation {message} ({params.get('url', '?')})"
    names = [f.key for f in fields(params.get("requestedSchema"))]
    return f"elicitation {message} (fields: {', '.join(names) or 'none'})"


__all__ = [
    "BadValue",
    "Field",
    "answer_shape",
    "fields",
    "options_of",
    "parse_number",
    "summary",
]
