"""The pure parts of the CLI's input handling: form fields from a ``requestedSchema`` and
``KEY=VALUE`` typing (the processes that use them are tested in test_cli_input/commands)."""

from __future__ import annotations

import pytest

from mcpline.cli.arguments import tool_arguments, types_of
from mcpline.cli.form import BadValue, fields
from mcpline.cli.options import UsageError


def test_every_field_shape_gets_its_kind() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "e": {"type": "string", "enum": ["a", "b"]},
            "t": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
            "l": {"type": "string", "enum": ["a"], "enumNames": ["Ay"]},
            "m": {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            "mt": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
            "free": {"type": "array", "items": {"type": "string"}},
            "odd": {"type": "object"},
            "untyped": {},
        },
        "required": ["s"],
    }
    kinds = {f.key: f.kind for f in fields(schema)}
    assert kinds == {
        "s": "string",
        "i": "integer",
        "n": "number",
        "b": "boolean",
        "e": "choice",
        "t": "choice",
        "l": "choice",
        "m": "choices",
        "mt": "choices",
        "free": "list",
        "odd": "json",
        "untyped": "string",
    }
    by_key = {f.key: f for f in fields(schema)}
    assert [f.required for f in fields(schema)][:2] == [True, False]
    assert by_key["l"].options == [("a", "Ay")]
    assert by_key["free"].parse("x, y") == ["x", "y"]
    assert by_key["odd"].parse('{"k": 1}') == {"k": 1}
    assert by_key["n"].parse("2") == 2 and by_key["n"].parse("2.5") == 2.5
    assert by_key["b"].parse("YES") is True
    with pytest.raises(BadValue):
        by_key["n"].parse("nan")


def test_fields_of_no_form_are_none() -> None:
    assert fields(None) == [] and fields({"type": "object"}) == []


def test_types_of_unions_and_enums() -> None:
    assert types_of({"type": ["string", "null", "integer"]}) == ["null", "integer", "string"]
    assert types_of({"anyOf": [{"type": "number"}, {"type": "null"}]}) == ["null", "number"]
    assert types_of({"enum": [1, 2]}) == ["integer"]
    assert types_of({"const": True}) == ["boolean"]


def test_a_key_outside_an_open_schema_is_a_string() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert tool_arguments({}, ["a=1", "b=2"], schema, "t") == {"a": 1, "b": "2"}
    with pytest.raises(UsageError, match="has no argument 'b'"):
        tool_arguments({}, ["b=2"], {**schema, "additionalProperties": False}, "t")
