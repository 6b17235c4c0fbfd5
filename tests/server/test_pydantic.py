"""pydantic, first-class when installed and never imported for a server that does not use it.

Each form (``Annotated[T, Field(...)]``, a ``Field`` default, a ``BaseModel`` parameter and
return) is checked for its schema, its validation message and its structured output, over a
real pipe; what mcpline cannot honour fails at registration, naming the parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import pytest
from pydantic import BaseModel, Field

from mcpline.server.prompts import make_prompt
from mcpline.server.signature.schema import McpHeader, SchemaError, Validator
from mcpline.server.tools import make_tool

from ..proc import FIXTURES, ServerProcess

Spawn = Callable[..., ServerProcess]
SERVER = FIXTURES / "pydantic_server.py"


@pytest.fixture
def srv(spawn: Spawn) -> ServerProcess:
    return spawn(SERVER)


def tools_by_name(p: ServerProcess) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in p.request("tools/list")["result"]["tools"]}


def result(resp: dict[str, Any]) -> dict[str, Any]:
    assert "result" in resp, resp
    r: dict[str, Any] = resp["result"]
    return r


def error_text(resp: dict[str, Any]) -> str:
    r = result(resp)
    assert r.get("isError") is True, r
    text: str = r["content"][0]["text"]
    return text


# --- Annotated[T, Field(...)] and Field defaults --------------------------------------------


def test_field_constraints_and_descriptions_are_published(srv: ServerProcess) -> None:
    search = tools_by_name(srv)["search"]
    schema = search["inputSchema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert props["query"] == {"type": "string", "minLength": 1, "description": "What to look for"}
    assert props["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
        "default": 10,
        "description": "How many results at most",
    }
    # x: int = Field(1, ge=1, ...): the default, the bound and the description
    assert props["page"] == {
        "type": "integer",
        "minimum": 1,
        "default": 1,
        "description": "Which page",
    }
    assert props["order"]["enum"] == ["newest", "oldest", "best"]  # declaration order
    assert not any("title" in p for p in props.values())  # no invented titles
    # The description stops at the Notes: section.
    assert search["description"] == "Search the catalogue."
    # The schema is what the validator enforces, and it is valid 2020-12.
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)


def test_field_constraints_are_enforced_naming_the_field(srv: ServerProcess) -> None:
    text = error_text(srv.call("search", {"query": "x", "limit": 5000}))
    assert text == (
        "Invalid arguments for tool 'search': /limit: 5000 is greater than the maximum of 1000"
    )
    text = error_text(srv.call("search", {"query": ""}))
    assert "/query:" in text and "shorter than 1 character" in text
    text = error_text(srv.call("search", {"query": "x", "page": 0}))
    assert "/page: 0 is less than the minimum of 1" in text


def test_field_defaults_apply_and_a_dict_return_is_structured(srv: ServerProcess) -> None:
    r = result(srv.call("search", {"query": "owls"}))
    assert r["structuredContent"] == {"query": "owls", "limit": 10, "page": 1, "order": "best"}
    assert tools_by_name(srv)["search"]["outputSchema"]["type"] == "object"


# --- BaseModel parameters and returns --------------------------------------------------------


def test_model_parameter_schema_uses_defs_and_refs(srv: ServerProcess) -> None:
    register = tools_by_name(srv)["register"]
    schema = register["inputSchema"]
    assert schema["properties"]["person"] == {"$ref": "#/$defs/Person"}
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert schema["required"] == ["person"]
    defs = schema["$defs"]
    assert defs["Person"]["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert defs["Address"]["properties"]["number"] == {
        "type": "integer",
        "minimum": 1,
        "description": "House number",
    }
    assert defs["Address"]["description"] == "A postal address."
    # The output schema is the model's, with its own $defs.
    out = register["outputSchema"]
    assert out["type"] == "object" and out["required"] == ["name", "address"]
    assert out["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert set(out["$defs"]) == {"Address"}


def test_model_parameter_is_validated_and_arrives_as_a_model(srv: ServerProcess) -> None:
    person = {"name": "ada lovelace", "address": {"street": "St James's Square", "number": 12}}
    r = result(srv.call("register", {"person": person}))
    assert r["structuredContent"] == {**person, "name": "Ada Lovelace"}
    assert r["content"][0]["type"] == "text"
    bad = {"name": "ada", "address": {"street": "x", "number": 0}}
    assert error_text(srv.call("register", {"person": bad})) == (
        "Invalid arguments for tool 'register': /person/address/number: 0 is less than the "
        "minimum of 1"
    )
    # A pydantic validator the schema cannot express: its message, naming the field.
    blank = {"name": "  ", "address": {"street": "x", "number": 1}}
    assert error_text(srv.call("register", {"person": blank})) == (
        "Invalid arguments for tool 'register': /person/name: Value error, the name is blank"
    )


def test_a_list_of_models_is_wrapped_structured_output(srv: ServerProcess) -> None:
    out = tools_by_name(srv)["residents"]["outputSchema"]
    assert out["required"] == ["result"]
    assert out["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Person"}}
    r = result(srv.call("residents", {"street": "Elm", "count": 2}))
    people = r["structuredContent"]["result"]
    assert [p["address"] for p in people] == [
        {"street": "Elm", "number": 1},
        {"street": "Elm", "number": 2},
    ]
    assert "/count: 9 is greater than the maximum of 5" in error_text(
        srv.call("residents", {"street": "Elm", "count": 9})
    )


# --- prompts and resource templates share the signature code -------------------------------


def test_prompt_arguments_take_field_descriptions_and_bounds(srv: ServerProcess) -> None:
    (letter,) = srv.request("prompts/list")["result"]["prompts"]
    assert letter["arguments"] == [
        {"name": "to", "description": "Whom the letter is for", "required": True},
        {"name": "lines", "required": False},
    ]
    ok = srv.request("prompts/get", {"name": "letter", "arguments": {"to": "Ada", "lines": "2"}})
    assert ok["result"]["messages"][0]["content"]["text"] == "Dear Ada, Hello. Hello."
    bad = srv.request("prompts/get", {"name": "letter", "arguments": {"to": "Ada", "lines": "7"}})
    assert bad["error"]["code"] == -32602
    assert "/lines: Input should be less than or equal to 3" in bad["error"]["message"]


def test_resource_template_with_a_field_bound_and_a_model_value(srv: ServerProcess) -> None:
    r = srv.request("resources/read", {"uri": "house://Elm/4"})
    (entry,) = r["result"]["contents"]
    assert entry["mimeType"] == "application/json"
    assert entry["text"] == '{"street":"Elm","number":4}'
    missing = srv.request("resources/read", {"uri": "house://Elm/0"})
    assert missing["error"]["code"] == -32602
    assert "greater than or equal to 1" in missing["error"]["message"]


# --- in process: every form, and what fails at registration ---------------------------------


class Item(BaseModel):
    sku: str
    qty: int = 1


def test_model_return_registers_and_shapes_structured_content() -> None:
    from mcpline.server.tools import shape_result

    def item() -> Item:
        """An item."""
        return Item(sku="a")

    t = make_tool(item)
    assert t.definition["outputSchema"] == {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "default": 1}},
        "required": ["sku"],
    }
    shaped = shape_result(t, Item(sku="b", qty=3))
    assert shaped["structuredContent"] == {"sku": "b", "qty": 3}
    assert Validator(t.definition["outputSchema"]).errors(shaped["structuredContent"]) == []


def test_msgspec_meta_and_mcp_header_carry_over_into_a_pydantic_signature() -> None:
    def f(
        region: Annotated[str, McpHeader("Region"), Field(max_length=8)],
        n: Annotated[int, msgspec.Meta(ge=2, description="at least two")] = 2,
        item: Item | None = None,
    ) -> str:
        """F."""
        return region

    props = make_tool(f).definition["inputSchema"]["properties"]
    assert props["region"] == {"type": "string", "maxLength": 8, "x-mcp-header": "Region"}
    assert props["n"] == {
        "type": "integer",
        "minimum": 2,
        "default": 2,
        "description": "at least two",
    }


def test_parameters_named_like_basemodel_attributes_work() -> None:
    def f(json: int, schema: str = "s", model_config: int = 0) -> str:
        """F."""
        return schema

    t = make_tool(f)
    assert t.signature is not None
    assert set(t.definition["inputSchema"]["properties"]) == {"json", "schema", "model_config"}

    def g(json: Item, schema: Annotated[str, Field(min_length=1)] = "s") -> str:
        """G (a pydantic signature: fields are aliased, so no name clashes)."""
        return schema

    t = make_tool(g)
    assert t.signature is not None
    kw = t.signature.bind({"json": {"sku": "k"}})
    assert kw == {"json": Item(sku="k"), "schema": "s"}


class Opaque:
    """No JSON Schema describes it."""


class Marker:
    """Annotated metadata nobody understands."""


class Struct(msgspec.Struct):
    n: int


def test_what_cannot_be_honoured_fails_at_registration_naming_the_parameter() -> None:
    def alias(x: int = Field(1, alias="X")) -> str:
        """A."""
        return ""

    def unknown(x: Annotated[int, Marker()]) -> str:
        """U."""
        return ""

    def unknown_with_pydantic(x: Annotated[int, Marker()], y: Item) -> str:
        """U."""
        return ""

    def mixed(item: Item, s: Struct) -> str:
        """M."""
        return ""

    def opaque(o: Opaque) -> str:
        """O."""
        return ""

    cases: list[tuple[Callable[..., Any], str]] = [
        (alias, "parameter 'x': Field(alias=...) cannot be honoured"),
        (unknown, "parameter 'x': the Annotated metadata a Marker object cannot be honoured"),
        (unknown_with_pydantic, "parameter 'x': the Annotated metadata a Marker object"),
        (mixed, "parameter 's': pydantic cannot describe this type"),
        (opaque, "parameter 'o': cannot derive a JSON Schema"),
    ]
    for fn, message in cases:
        with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make_tool(fn)

    def returns_opaque() -> Opaque:
        """R."""
        return Opaque()

    with pytest.raises(ValueError, match="tool 'returns_opaque': the return annotation"):
        make_tool(returns_opaque)

    def returns_marked() -> list[Annotated[int, Marker()]]:
        """R."""
        return []

    with pytest.raises(ValueError, match="the return annotation: the Annotated metadata"):
        make_tool(returns_marked)


def test_prompt_field_default_and_description() -> None:
    def p(topic: str = Field("owls", description="What about")) -> str:
        """P."""
        return topic

    prompt = make_prompt(p)
    assert prompt.definition["arguments"] == [
        {"name": "topic", "description": "What about", "required": False}
    ]


# --- a server that does not use pydantic never imports it -------------------------------------


def test_a_server_without_pydantic_does_not_import_it(spawn: Spawn) -> None:
    """Installed (the test extra has it) but unused: after start-up, listing, calls with
    structured output, argument errors, coercion, a prompt and a resource, the process has
    imported no pydantic module."""
    p = spawn(FIXTURES / "no_pydantic_server.py")
    assert {t["name"] for t in p.request("tools/list")["result"]["tools"]} >= {"move", "stats"}
    moved = result(p.call("move", {"point": {"x": 1}, "by": "2"}))
    assert moved["structuredContent"] == {"x": 3, "y": 0}
    assert "/by: 11 is greater than the maximum of 10" in error_text(
        p.call("move", {"point": {"x": 1}, "by": 11})
    )
    assert result(p.call("stats", {"values": [1, 2, 3]}))["structuredContent"] == {
        "sum": 6.0,
        "mean": 2.0,
    }
    hello = p.request("prompts/get", {"name": "hello", "arguments": {"name": "Ada", "times": "2"}})
    assert hello["result"]["messages"][0]["content"]["text"] == "Hello, Ada! Hello, Ada!"
    read = p.request("resources/read", {"uri": "point://1/2"})
    assert read["result"]["contents"][0]["text"] == '{"x":1,"y":2}'
    loaded = result(p.call("pydantic_modules"))["structuredContent"]
    assert loaded == {"result": []}
