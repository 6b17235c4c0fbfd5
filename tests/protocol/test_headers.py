"""The Streamable HTTP header rules (mcpline.protocol.headers): the Base64 sentinel, Mcp-Name
and the x-mcp-header constraints, with the spec's own examples."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcpline.protocol.headers import (
    HeaderParam,
    InvalidHeaderAnnotation,
    decode_value,
    encode_value,
    header_params,
    is_plain,
    name_header,
    param_headers,
)


def schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("a\tb", "=?base64?YQli?="),
        ("\r\n", "=?base64?DQo=?="),
    ],
)
def test_values_are_sent_plain_or_as_the_sentinel(value: str, header: str) -> None:
    assert encode_value(value) == header
    assert decode_value(header) == value
    assert is_plain(value) == (header == value)


@pytest.mark.parametrize("bad", ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?ww==?="])
def test_a_malformed_sentinel_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        decode_value(bad)


def test_literals_that_only_look_like_the_sentinel_are_themselves() -> None:
    assert decode_value("SGVsbG8=") == "SGVsbG8="
    assert decode_value("=?base64?SGVsbG8=") == "=?base64?SGVsbG8="
    assert decode_value("  tool  ") == "tool"


def test_mcp_name_mirrors_the_name_or_uri_of_three_methods() -> None:
    assert name_header("tools/call", {"name": "my-hyphenated-tool"}) == "my-hyphenated-tool"
    assert name_header("prompts/get", {"name": "ünï"}) == encode_value("ünï")
    uri = "file:///path/to/file%20name.txt"
    assert name_header("resources/read", {"uri": uri}) == uri
    assert name_header("tools/list", {"name": "x"}) is None


def test_annotated_parameters_become_headers_with_their_types() -> None:
    params = header_params(
        schema(
            region={"type": "string", "x-mcp-header": "Region"},
            priority={"type": "integer", "x-mcp-header": "Priority"},
            verbose={"type": "boolean", "x-mcp-header": "Verbose"},
            query={"type": "string"},
            nested={
                "type": "object",
                "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
            },
        )
    )
    assert [p.header for p in params] == [
        "Mcp-Param-Region",
        "Mcp-Param-Priority",
        "Mcp-Param-Verbose",
        "Mcp-Param-Zone",
    ]
    assert params[3] == HeaderParam("Zone", ("nested", "zone"), "string")
    headers = param_headers(
        params,
        {"region": "Hello, 世界", "priority": 42, "verbose": False, "nested": {"zone": "a"}},
    )
    assert headers == {
        "Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Verbose": "false",
        "Mcp-Param-Zone": "a",
    }
    # Absent and null values send no header.
    assert param_headers(params, {"region": None, "verbose": True}) == {"Mcp-Param-Verbose": "true"}
    with pytest.raises(ValueError):
        param_headers(params, {"priority": 2**53})


@pytest.mark.parametrize(
    ("props", "why"),
    [
        ({"a": {"type": "string", "x-mcp-header": ""}}, "empty"),
        ({"a": {"type": "object", "x-mcp-header": "A"}}, "type 'object'"),
        ({"a": {"type": "array", "x-mcp-header": "A"}}, "type 'array'"),
        ({"a": {"type": "null", "x-mcp-header": "A"}}, "type 'null'"),
        ({"a": {"type": "number", "x-mcp-header": "A"}}, "type 'number'"),
        (
            {
                "a": {"type": "string", "x-mcp-header": "Dup"},
                "b": {"type": "string", "x-mcp-header": "Dup"},
            },
            "repeats",
        ),
        (
            {
                "a": {"type": "string", "x-mcp-header": "Dup"},
                "b": {"type": "string", "x-mcp-header": "DUP"},
            },
            "case-insensitively",
        ),
        ({"a": {"type": "string", "x-mcp-header": "My Header"}}, "not an HTTP token"),
        ({"a": {"type": "string", "x-mcp-header": "My:Header"}}, "not an HTTP token"),
        ({"a": {"type": "string", "x-mcp-header": "Réseau"}}, "not an HTTP token"),
        ({"a": {"type": "string", "x-mcp-header": "A\tB"}}, "not an HTTP token"),
        (
            {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}},
            "not reachable",
        ),
        ({"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}, "not reachable"),
    ],
)
def test_invalid_annotations_are_named_with_their_reason(props: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidHeaderAnnotation, match=why):
        header_params(schema(**props))


def test_an_annotation_under_defs_is_invalid_but_a_property_named_like_it_is_not() -> None:
    with pytest.raises(InvalidHeaderAnnotation, match="not reachable"):
        header_params({**schema(), "$defs": {"x": {"type": "string", "x-mcp-header": "X"}}})
    assert header_params(schema(**{"x-mcp-header": {"type": "string"}})) == ()
    assert header_params(None) == ()


@pytest.mark.parametrize("names", ["$defs", "definitions", "patternProperties", "dependentSchemas"])
def test_a_definition_named_like_the_keyword_is_no_annotation(names: str) -> None:
    """Keys of a map of names to schemas are names (once refused as an unreachable
    annotation); an annotation inside such a schema is still refused."""
    annotated = schema(a={"type": "string", "x-mcp-header": "A"})
    named = {**annotated, names: {"x-mcp-header": {"type": "string"}}}
    assert header_params(named) == (HeaderParam("A", ("a",), "string"),)
    inside = {**annotated, names: {"d": {"type": "string", "x-mcp-header": "D"}}}
    with pytest.raises(InvalidHeaderAnnotation, match=f"at /{re.escape(names)}/d"):
        header_params(inside)
