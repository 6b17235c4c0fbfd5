"""``-> dict`` is structured output, ``-> ContentBlock`` is content, and arguments a client
sent as JSON text (``"5"`` for an integer) are read as the value unless the tool is strict."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal

import msgspec
import pytest

from mcpline import Client, ContentBlock, Server, image, text
from mcpline.server.signature.schema import Validator, split_docstring
from mcpline.server.tools import make_tool, shape_result

PNG = b"\x89PNG\r\n\x1a\n"


def test_dict_returns_are_objects_with_structured_content() -> None:
    def plain() -> dict:  # type: ignore[type-arg]
        """Plain dict."""
        return {"a": 1}

    def any_values() -> dict[str, Any]:
        """dict[str, Any]."""
        return {"a": [1, "b"]}

    def ints() -> dict[str, int]:
        """dict[str, int]."""
        return {"a": 1}

    for fn, schema in (
        (plain, {"type": "object"}),
        (any_values, {"type": "object"}),
        (ints, {"type": "object", "additionalProperties": {"type": "integer"}}),
    ):
        t = make_tool(fn)
        assert t.definition["outputSchema"] == schema, fn
        out = shape_result(t, fn())
        assert out["structuredContent"] == fn()
        assert out["content"] == [text(msgspec.json.encode(fn()).decode())]
    bad = shape_result(make_tool(ints), {"a": "one"})
    assert bad["isError"] is True and "structuredContent" not in bad


def test_content_block_returns_stay_content() -> None:
    def picture() -> ContentBlock:
        """A picture."""
        return image(PNG, "image/png")

    def pictures() -> list[ContentBlock]:
        """Pictures."""
        return [text("two:"), image(PNG, "image/png")]

    def blocks() -> list[dict[str, Any]]:
        """Blocks, the old spelling."""
        return [text("x")]

    for fn in (picture, pictures, blocks):
        t = make_tool(fn)
        assert "outputSchema" not in t.definition, fn
        assert "structuredContent" not in shape_result(t, fn())
    assert shape_result(make_tool(picture), picture())["content"][0]["type"] == "image"


def test_a_dict_tool_returning_a_content_block_says_what_to_write() -> None:
    def old_style() -> dict[str, Any]:
        """Returns an image but is annotated as data."""
        return image(PNG, "image/png")

    out = shape_result(make_tool(old_style), old_style())
    assert out["isError"] is True and "structuredContent" not in out
    assert "annotate it -> ContentBlock" in out["content"][0]["text"]
    # Data that merely has a "type" key is data.
    t = make_tool(old_style)
    assert shape_result(t, {"type": "image", "size": 3})["structuredContent"] == {
        "type": "image",
        "size": 3,
    }


class Color(Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Box:
    width: int
    tall: bool = False


def typed(
    n: int,
    x: float = 0.0,
    flag: bool = False,
    maybe: int | None = None,
    level: Literal[3, 1, 2] = 1,
    color: Color = Color.RED,
    box: Box | None = None,
    ids: list[int] | None = None,
    name: str = "",
    tag: Annotated[str, msgspec.Meta(pattern="^[a-z]+$")] = "a",
) -> str:
    """Typed."""
    return f"{n} {x} {flag} {maybe} {level} {color} {box} {ids} {name!r} {tag}"


def test_coercion_reads_json_text_where_the_schema_wants_another_type() -> None:
    v = Validator(make_tool(typed).definition["inputSchema"])
    sent = {
        "n": "5",
        "x": "2.5",
        "flag": "true",
        "maybe": "7",
        "level": "2",
        "box": {"width": "3", "tall": "false"},
        "ids": ["1", 2, " 3 "],
        "name": "42",
    }
    fixed = v.coerce(sent)
    assert fixed == {
        "n": 5,
        "x": 2.5,
        "flag": True,
        "maybe": 7,
        "level": 2,
        "box": {"width": 3, "tall": False},
        "ids": [1, 2, 3],
        "name": "42",  # a string parameter is never touched
    }
    assert sent["n"] == "5" and sent["box"] == {"width": "3", "tall": "false"}  # not mutated
    assert v.errors(fixed) == []
    assert v.coerce({"n": 5}) is None  # nothing to do
    # Never a guess: not JSON, the wrong JSON type, or a value the schema still refuses.
    for bad in ({"n": "five"}, {"n": "5.5"}, {"n": "[5]"}, {"n": 1, "level": "4"}):
        fixed = v.coerce(bad)
        assert fixed is None or v.errors(fixed), bad
    # A string property keeps its strings; a pattern failure is not "fixed".
    assert v.coerce({"n": 1, "tag": "123"}) is None
    assert v.coerce({"n": 1, "box": '{"width": 2}'}) == {"n": 1, "box": {"width": 2}}


def call(server: Server, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with Client.memory(server, timeout=5) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(main())


def test_coercion_is_the_default_and_strict_turns_it_off() -> None:
    server = Server("coerce")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool(strict=True)
    def add_strict(a: int, b: int) -> int:
        """Add, strictly."""
        return a + b

    assert call(server, "add", {"a": "2", "b": 3})["structuredContent"] == {"result": 5}
    refused = call(server, "add_strict", {"a": "2", "b": 3})
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        'Invalid arguments for tool \'add_strict\': /a: "2" is not of type "integer"'
    )
    # Where coercion does not apply, the schema's complaint is what the client reads.
    still_bad = call(server, "add", {"a": "two", "b": 3})
    assert still_bad["content"][0]["text"] == (
        'Invalid arguments for tool \'add\': /a: "two" is not of type "integer"'
    )
    # The published schema is the contract either way.
    assert make_tool(add).definition["inputSchema"]["properties"]["a"] == {"type": "integer"}

    everywhere = Server("strict", strict_arguments=True)
    everywhere.tool()(add)
    assert call(everywhere, "add", {"a": "2", "b": 3})["isError"] is True
    everywhere.tool(name="lenient", strict=False)(add)
    assert call(everywhere, "lenient", {"a": "2", "b": 3})["structuredContent"] == {"result": 5}


@pytest.mark.parametrize(
    ("doc", "description", "args"),
    [
        ("Summary only.", "Summary only.", {}),
        (
            """Search.

            Use it to find books by title or author.

            Args:
                q: the query

            Notes:
                Implementation detail for maintainers.
            """,
            "Search.\n\nUse it to find books by title or author.",
            {"q": "the query"},
        ),
        (
            """Delete a file.

            Raises:
                OSError: when it cannot

            Args:
                path: which file
                    (relative to the root)
            """,
            "Delete a file.",
            {"path": "which file (relative to the root)"},
        ),
        ("Do it.\n\nReturns:\n    nothing", "Do it.", {}),
    ],
)
def test_description_stops_at_the_first_section(
    doc: str, description: str, args: dict[str, str]
) -> None:
    assert split_docstring(doc) == (description, args)


def test_literal_and_enum_choices_keep_declaration_order() -> None:
    props = make_tool(typed).definition["inputSchema"]
    assert props["properties"]["level"]["enum"] == [3, 1, 2]
    assert props["$defs"]["Color"]["enum"] == ["red", "green"]
