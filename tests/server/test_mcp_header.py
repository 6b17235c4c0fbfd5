"""``x-mcp-header`` at registration: raw schemas are checked against the spec's constraints and
typed tools declare it with ``Annotated[..., McpHeader(...)]``."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from mcpline import McpHeader, Server
from mcpline.protocol.headers import HeaderParam


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def s(header: Any = None, type: Any = "string", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type, **more} if type is not None else dict(more)
    if header is not None:
        out["x-mcp-header"] = header
    return out


def register(schema: dict[str, Any]) -> Any:
    server = Server("t")

    def tool(**kw: Any) -> str:
        return "ok"

    return server.add_tool(tool, name="t", description="d", input_schema=schema)


def test_valid_annotations_are_kept_with_their_paths() -> None:
    tool = register(
        obj(
            region=s("Region"),
            n=s("Count", "integer"),
            flag=s("Verbose", "boolean"),
            nested=s(type="object", properties={"deep": s("Deep")}),
            plain=s(),
        )
    )
    assert tool.header_params == (
        HeaderParam("Region", ("region",), "string"),
        HeaderParam("Count", ("n",), "integer"),
        HeaderParam("Verbose", ("flag",), "boolean"),
        HeaderParam("Deep", ("nested", "deep"), "string"),
    )
    assert tool.definition["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        (obj(a=s("")), "non-empty string"),
        (obj(a=s(7)), "non-empty string"),
        (obj(a=s("has space")), "HTTP token"),
        (obj(a=s("has:colon")), "HTTP token"),
        (obj(a=s("Régión")), "HTTP token"),
        (obj(a=s("tab\there")), "HTTP token"),
        (obj(a=s("line\nbreak")), "HTTP token"),
        (obj(a=s("Region\n")), "HTTP token"),  # a trailing newline, once let through
        (obj(a=s("Dup"), b=s("Dup")), "repeats that of property 'a'"),
        (obj(a=s("Dup"), b=s("dUP")), "repeats that of property 'a'"),
        (obj(a=s("N", "number")), '"type" to be one of'),
        (obj(a=s("O", "object")), '"type" to be one of'),
        (obj(a=s("A", "array", items={"type": "string"})), '"type" to be one of'),
        (obj(a=s("Z", "null")), '"type" to be one of'),
        (obj(a=s("U", None, anyOf=[{"type": "string"}, {"type": "null"}])), "default rather"),
        (obj(a=s(type="array", items=s("Item"))), "at /properties/a/items"),
        ({"type": "object", "anyOf": [obj(x=s("X"))]}, "at /anyOf/0/properties/x"),
        ({"type": "object", "if": obj(x=s("X")), "then": {}}, "at /if/properties/x"),
        ({"type": "object", "$defs": {"d": s("D")}, "properties": {}}, "at /$defs/d"),
    ],
)
def test_invalid_annotations_are_refused_naming_tool_property_and_rule(
    schema: dict[str, Any], rule: str
) -> None:
    with pytest.raises(ValueError, match="tool 't'") as info:
        register(schema)
    assert rule in str(info.value)


def test_the_keyword_spelled_as_data_or_as_a_property_name_is_no_annotation() -> None:
    tool = register(
        obj(
            **{"x-mcp-header": s()},
            c=s(type="object", const={"x-mcp-header": "v"}, default={"x-mcp-header": "w"}),
        )
    )
    assert tool.header_params == ()


def test_typed_tools_declare_headers_with_mcp_header() -> None:
    server = Server("t")

    @server.tool
    def route(
        region: Annotated[str, McpHeader("Region"), "where to run"],
        count: Annotated[int, McpHeader("Count")] = 1,
        query: str = "",
    ) -> str:
        """Route a query."""
        return region

    tool = server.tools["route"]
    props = tool.definition["inputSchema"]["properties"]
    assert props["region"] == {
        "type": "string",
        "x-mcp-header": "Region",
        "description": "where to run",
    }
    assert props["count"]["x-mcp-header"] == "Count" and "x-mcp-header" not in props["query"]
    assert [p.name for p in tool.header_params] == ["Region", "Count"]
    assert repr(McpHeader("Region")) == "McpHeader('Region')"


def test_typed_tools_get_the_same_checks() -> None:
    server = Server("t")
    with pytest.raises(ValueError, match="'ratio'.*\"type\" to be one of"):

        @server.tool
        def bad(ratio: Annotated[float, McpHeader("Ratio")]) -> str:
            """Not allowed on numbers."""
            return ""

    with pytest.raises(ValueError, match="default rather than None"):

        @server.tool
        def optional(region: Annotated[str | None, McpHeader("Region")] = None) -> str:
            """Optional values need a default instead."""
            return ""


def test_one_schema_object_under_properties_and_under_items_is_refused() -> None:
    """The same annotated dict reached through ``properties`` and through ``items`` was once
    accepted (the walk remembered objects, not places): each place is judged now."""
    shared = s("S")
    with pytest.raises(ValueError, match="tool 't'.*at /properties/b/items"):
        register(obj(a=shared, b=s(type="array", items=shared)))
