"""Schemas from type hints, bounded validation without network, tool registration rules,
result shaping and content helpers — all in-process, no server."""

from __future__ import annotations

import enum
import socket
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from mcpline import (
    ToolError,
    ToolResult,
    audio,
    embedded_blob,
    embedded_text,
    image,
    resource_link,
    text,
)
from mcpline.server.signature import schema as S
from mcpline.server.tools import check_name, make_tool, shape_result


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


@dataclass
class Address:
    street: str
    number: int = 1


class Options(TypedDict):
    verbose: bool
    depth: int


def rich(
    name: Annotated[str, "who to greet"],
    times: int = 2,
    mood: Mood = Mood.HAPPY,
    style: Literal["plain", "fancy"] = "plain",
    nickname: Optional[str] = None,  # noqa: UP045 (Optional on purpose)
    tags: list[str] | None = None,
    scores: dict[str, float] | None = None,
    address: Address | None = None,
    options: Options | None = None,
) -> str:
    """Greet someone.

    Longer text that is part of the description.

    Args:
        name: ignored, the Annotated description wins
        times: how many times
            to greet (continued line)
        mood: the mood
    """
    return name * times


def test_schema_from_type_hints() -> None:
    tool = make_tool(rich)
    d = tool.definition
    assert d["description"] == "Greet someone.\n\nLonger text that is part of the description."
    s = d["inputSchema"]
    assert s["type"] == "object" and s["additionalProperties"] is False
    assert s["required"] == ["name"]
    p = s["properties"]
    assert p["name"] == {"type": "string", "description": "who to greet"}
    assert p["times"]["type"] == "integer" and p["times"]["default"] == 2
    assert p["times"]["description"] == "how many times to greet (continued line)"
    assert p["mood"]["default"] == "happy" and p["mood"]["description"] == "the mood"
    assert p["style"]["enum"] == ["plain", "fancy"]  # declaration order, not sorted
    assert {"type": "null"} in p["nickname"]["anyOf"]
    assert {"type": "array", "items": {"type": "string"}} in p["tags"]["anyOf"]
    assert {"type": "object", "additionalProperties": {"type": "number"}} in p["scores"]["anyOf"]
    assert set(s["$defs"]) >= {"Mood", "Address", "Options"}
    assert s["$defs"]["Address"]["required"] == ["street"]
    assert s["$defs"]["Options"]["required"] == ["depth", "verbose"]
    assert "outputSchema" not in d  # str returns are plain content
    # The derived schema is valid 2020-12 and the validator enforces it.
    assert tool.validator.errors({"name": "a"}) == []
    assert tool.validator.errors({"name": "a", "mood": "angry"})
    assert tool.validator.errors({"name": "a", "address": {"number": 2}})
    assert tool.validator.errors({"name": "a", "extra": 1})


def test_bind_converts_to_python_types() -> None:
    tool = make_tool(rich)
    assert tool.signature is not None
    kw = tool.signature.bind(
        {
            "name": "x",
            "mood": "sad",
            "address": {"street": "Main"},
            "options": {"verbose": True, "depth": 3},
        }
    )
    assert kw["mood"] is Mood.SAD and kw["address"] == Address("Main", 1)
    assert kw["options"] == {"verbose": True, "depth": 3} and kw["times"] == 2


def test_no_argument_tool_schema() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    assert make_tool(ping).definition["inputSchema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_kwargs_tool_accepts_extra_arguments() -> None:
    def anything(a: int, **rest: Any) -> str:
        """Anything goes."""
        return "ok"

    tool = make_tool(anything)
    assert "additionalProperties" not in tool.definition["inputSchema"]
    assert tool.signature is not None
    assert tool.signature.bind({"a": 1, "z": 2}) == {"a": 1, "z": 2}


@pytest.mark.parametrize(
    "name",
    ["a", "get_weather", "ns.tool-1", "A" * 128, "x_y.z-0"],
)
def test_valid_names(name: str) -> None:
    check_name(name)


@pytest.mark.parametrize(
    "name", ["", "A" * 129, "has space", "comma,name", "slash/name", "émoji", "tab\t", None]
)
def test_invalid_names(name: Any) -> None:
    with pytest.raises(ValueError):
        check_name(name)


def test_registration_rules() -> None:
    def nodoc(a: int) -> int:
        return a

    with pytest.raises(ValueError, match="description"):
        make_tool(nodoc)
    make_tool(nodoc, description="given explicitly")
    with pytest.raises(ValueError, match="invalid tool name"):
        make_tool(nodoc, name="bad name", description="x")

    def pos(a: int, /) -> int:
        """Positional only."""
        return a

    with pytest.raises(ValueError):
        make_tool(pos)


RAW = {
    "type": "object",
    "properties": {"q": {"$ref": "#/$defs/query"}},
    "required": ["q"],
    "$defs": {"query": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"}},
    "if": {"properties": {"q": {"const": "admin"}}},
    "then": {"required": ["q", "token"]},
}


def test_raw_schema_tool_is_passed_through_and_validated() -> None:
    def search(q: str, token: str = "") -> str:
        """Search."""
        return q

    tool = make_tool(search, input_schema=RAW)
    assert tool.definition["inputSchema"] is RAW
    assert tool.validator.errors({"q": "abc"}) == []
    assert tool.validator.errors({"q": "a"})  # minLength via local $ref
    assert tool.validator.errors({"q": "ABC"})  # pattern
    assert tool.validator.errors({"q": "admin"})  # if/then
    assert tool.validator.errors({"q": "admin", "token": "t"}) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "array"},
        {"properties": {}},
        {"type": "object", "$schema": "http://example.com/my-dialect"},
        {"type": "object", "properties": {"a": {"type": "no-such-type"}}},
        {"type": "object", "properties": 5},
    ],
)
def test_bad_raw_schemas_refused_at_registration(bad: dict[str, Any]) -> None:
    def f(a: int = 0) -> str:
        """F."""
        return ""

    with pytest.raises(ValueError):
        make_tool(f, input_schema=bad)


def test_dialects_other_than_2020_12() -> None:
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "exclusiveMaximum": 5}},
    }
    v = S.Validator(draft7)
    assert v.errors({"n": 4}) == [] and v.errors({"n": 5})
    # A boolean exclusiveMaximum means something only in draft-04 (2020-12 refuses it), so
    # this fails unless $schema picks the dialect.
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 5, "exclusiveMaximum": True}},
    }
    v4 = S.Validator(draft4)
    assert v4.errors({"n": 4}) == [] and v4.errors({"n": 5})
    with pytest.raises(S.SchemaError):
        S.Validator({"type": "object", "properties": draft4["properties"]}).compile()


def test_network_ref_is_never_fetched() -> None:
    """A $ref to a loopback port we listen on: the schema is refused and nothing connects."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        schema = {
            "type": "object",
            "properties": {
                "a": {"$ref": f"http://127.0.0.1:{port}/schema.json"},
                "b": {"$ref": f"http://localhost:{port}/other.json#/defs/x"},
            },
        }

        def f(a: Any = None, b: Any = None) -> str:
            """F."""
            return ""

        with pytest.raises(ValueError, match="network references are disabled|not fetched"):
            make_tool(f, input_schema=schema)
        with pytest.raises(S.SchemaError):
            S.Validator({"$ref": f"http://127.0.0.1:{port}/x"}).errors({})
        with pytest.raises(S.SchemaError):
            S.Validator(
                {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$id": f"http://127.0.0.1:{port}/root",
                    "$ref": "sibling.json",
                }
            ).errors({})
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_schema_bounds() -> None:
    deep: dict[str, Any] = {"type": "object"}
    node = deep
    for _ in range(S.MAX_SCHEMA_DEPTH):
        child: dict[str, Any] = {"type": "object"}
        node["properties"] = {"x": child}
        node = child
    with pytest.raises(S.SchemaError, match="deeper"):
        S.check_schema(deep)
    wide = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(S.MAX_SCHEMA_NODES)},
    }
    with pytest.raises(S.SchemaError, match="nodes"):
        S.check_schema(wide)


def test_error_messages_are_bounded() -> None:
    v = S.Validator(
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(20)}}
    )
    errs = v.errors({f"p{i}": i for i in range(20)})
    assert len(errs) == S.MAX_REPORTED_ERRORS and all(e.startswith("/p") for e in errs)


# --- structured output and result shaping -------------------------------------------------


def test_structured_output_from_typed_returns() -> None:
    def count() -> int:
        """Count."""
        return 3

    def where() -> Address:
        """Where."""
        return Address("Elm", 5)

    def opts() -> Options:
        """Options."""
        return {"verbose": False, "depth": 1}

    t = make_tool(count)
    assert t.definition["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert shape_result(t, 3) == {
        "content": [text('{"result":3}')],
        "structuredContent": {"result": 3},
    }
    t = make_tool(where)
    assert t.definition["outputSchema"]["required"] == ["street"]
    assert shape_result(t, Address("Elm", 5))["structuredContent"] == {"street": "Elm", "number": 5}
    t = make_tool(opts)
    out = shape_result(t, {"verbose": False, "depth": 1})
    assert S.Validator(t.definition["outputSchema"]).errors(out["structuredContent"]) == []
    assert make_tool(count, structured_output=False).definition.get("outputSchema") is None


def test_explicit_output_schema_is_enforced() -> None:
    def stats() -> dict[str, Any]:
        """Stats."""
        return {"n": 1}

    t = make_tool(
        stats,
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    )
    assert shape_result(t, {"n": 2})["structuredContent"] == {"n": 2}
    bad = shape_result(t, {"n": "two"})
    assert bad["isError"] is True and "outputSchema" in bad["content"][0]["text"]


def test_typed_return_that_breaks_its_derived_output_schema_is_a_tool_error() -> None:
    # The outputSchema advertised from the return annotation is a promise: a value that
    # breaks it must not go out as structuredContent.
    def count() -> int:
        """Count."""
        return 3

    def where() -> Address:
        """Where."""
        return Address("Elm", 5)

    t = make_tool(count)
    for wrong in ("three", None, [3]):
        bad = shape_result(t, wrong)
        assert bad["isError"] is True and "structuredContent" not in bad
        assert "outputSchema" in bad["content"][0]["text"]
    assert shape_result(t, 3)["structuredContent"] == {"result": 3}
    t = make_tool(where)
    bad = shape_result(t, {"number": 5})  # no street
    assert bad["isError"] is True and "structuredContent" not in bad
    assert shape_result(t, Address("Elm", 5))["structuredContent"]["street"] == "Elm"

    def by_id() -> dict[int, str]:
        """Integer keys become the JSON object's string keys before validation."""
        return {1: "a"}

    assert shape_result(make_tool(by_id), {1: "a"})["structuredContent"] == {"1": "a"}


def test_plain_results() -> None:
    def f() -> Any:
        """F."""

    t = make_tool(f)
    assert shape_result(t, None) == {"content": []}
    assert shape_result(t, "hi") == {"content": [text("hi")]}
    assert shape_result(t, image(b"\x89PNG", "image/png")) == {
        "content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]
    }
    assert shape_result(t, ["a", text("b")]) == {"content": [text("a"), text("b")]}
    assert shape_result(t, {"k": [1, 2]}) == {"content": [text('{"k":[1,2]}')]}
    tr = ToolResult([text("x")], structured_content={"a": 1}, is_error=True, meta={"m": 1})
    assert shape_result(t, tr) == {
        "content": [text("x")],
        "structuredContent": {"a": 1},
        "isError": True,
        "_meta": {"m": 1},
    }


def test_content_helpers() -> None:
    assert text("t", annotations={"audience": ["user"]}) == {
        "type": "text",
        "text": "t",
        "annotations": {"audience": ["user"]},
    }
    assert audio("AAAA", "audio/wav") == {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
    assert resource_link("file:///a", "a", mime_type="text/plain", size=3) == {
        "type": "resource_link",
        "uri": "file:///a",
        "name": "a",
        "mimeType": "text/plain",
        "size": 3,
    }
    assert embedded_text("file:///a", "hello") == {
        "type": "resource",
        "resource": {"uri": "file:///a", "text": "hello", "mimeType": "text/plain"},
    }
    assert embedded_blob("file:///b", b"\x00\x01", "application/octet-stream")["resource"] == {
        "uri": "file:///b",
        "blob": "AAE=",
        "mimeType": "application/octet-stream",
    }
    assert str(ToolError("m")) == "m"


def test_annotations_and_icons() -> None:
    def f() -> str:
        """F."""
        return ""

    t = make_tool(
        f,
        title="Nice F",
        annotations={"read_only": True, "open_world": False, "destructiveHint": False},
        icons=[{"src": "data:image/png;base64,AAAA", "mimeType": "image/png"}],
        meta={"com.example/x": 1},
    )
    d = t.definition
    assert d["title"] == "Nice F"
    assert d["annotations"] == {
        "readOnlyHint": True,
        "openWorldHint": False,
        "destructiveHint": False,
    }
    assert d["icons"][0]["src"].startswith("data:") and d["_meta"] == {"com.example/x": 1}
