"""examples/ported_testing_demo.py, FastMCP's testing_demo server ported to mcpline.

FastMCP's own suite for it (examples/testing_demo/tests/test_server.py in its repository) is
rewritten here for mcpline's pytest plugin, as docs/testing.md shows: ``mcp_client`` serves
the example in memory. Every tool, resource, template and prompt is exercised, with the
error paths (bad tool arguments, a bad prompt argument, a URI that fits no template) and the
structured output of the numeric tools. One test runs the file over real stdio.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Client, Server, ServerError

from ..memory import load_server
from ..proc import EXAMPLES, ServerProcess

pytest_plugins = ["mcpline.testing"]

DEMO = EXAMPLES / "ported_testing_demo.py"
INVALID_PARAMS = -32602


@pytest.fixture
def mcp_server() -> Server:
    """The example's ``server``, from a fresh import of the file for each test."""
    return load_server(DEMO)[0]


def text_of(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def prompt_text(result: dict[str, Any]) -> str:
    (message,) = result["messages"]
    assert message["role"] == "user" and message["content"]["type"] == "text"
    return str(message["content"]["text"])


# Tools


@pytest.mark.anyio
async def test_add_returns_structured_output(mcp_client: Client) -> None:
    result = await mcp_client.call_tool("add", {"a": 2, "b": 3})
    assert not result.get("isError")
    assert result["structuredContent"] == {"result": 5}  # FastMCP: result.data == 5
    assert text_of(result) == '{"result":5}'


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("a", "b", "expected"), [(0, 0, 0), (1, 1, 2), (-1, 1, 0), (100, 200, 300)]
)
async def test_add_parametrized(mcp_client: Client, a: int, b: int, expected: int) -> None:
    result = await mcp_client.call_tool("add", {"a": a, "b": b})
    assert result["structuredContent"] == {"result": expected}


@pytest.mark.anyio
async def test_greet_is_text_only(mcp_client: Client) -> None:
    default = await mcp_client.call_tool("greet", {"name": "Alice"})
    assert text_of(default) == "Hello, Alice!"
    # A -> str tool has no outputSchema in mcpline (FastMCP wraps it as {"result": ...}).
    assert "structuredContent" not in default
    custom = await mcp_client.call_tool("greet", {"name": "Bob", "greeting": "Hi"})
    assert text_of(custom) == "Hi, Bob!"
    assert re.fullmatch(
        r"Hello, \w+!", text_of(await mcp_client.call_tool("greet", {"name": "Eve"}))
    )


@pytest.mark.anyio
async def test_async_multiply(mcp_client: Client) -> None:
    result = await mcp_client.call_tool("async_multiply", {"x": 3.5, "y": 2.0})
    assert result["structuredContent"] == {"result": 7.0}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"a": "two", "b": 3},
            'Invalid arguments for tool \'add\': /a: "two" is not of type "integer"',
        ),
        (
            {"a": 2.5, "b": 3},
            "Invalid arguments for tool 'add': /a: 2.5 is not of type \"integer\"",
        ),
        ({"a": 2}, "Invalid arguments for tool 'add': arguments: \"b\" is a required property"),
    ],
)
async def test_bad_arguments_are_an_error_result_naming_the_field(
    mcp_client: Client, arguments: dict[str, Any], message: str
) -> None:
    result = await mcp_client.call_tool("add", arguments)
    assert result["isError"] is True and "structuredContent" not in result
    assert text_of(result) == message


@pytest.mark.anyio
async def test_json_text_for_a_number_is_read_as_the_number(mcp_client: Client) -> None:
    result = await mcp_client.call_tool("add", {"a": "2", "b": 3})
    assert result["structuredContent"] == {"result": 5}


@pytest.mark.anyio
async def test_an_unknown_tool_is_a_protocol_error(mcp_client: Client) -> None:
    with pytest.raises(ServerError) as caught:
        await mcp_client.call_tool("subtract", {"a": 1, "b": 2})
    assert caught.value.code == INVALID_PARAMS


@pytest.mark.anyio
async def test_tool_schemas(mcp_client: Client) -> None:
    tools = {t["name"]: t for t in await mcp_client.list_tools()}
    assert list(tools) == ["add", "greet", "async_multiply"]
    add = tools["add"]
    assert add["description"] == "Add two numbers together."
    assert add["inputSchema"] == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert add["outputSchema"]["properties"] == {"result": {"type": "integer"}}
    assert add["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert tools["greet"]["inputSchema"]["properties"]["greeting"] == {
        "type": "string",
        "default": "Hello",
    }
    assert tools["greet"]["inputSchema"]["required"] == ["name"]
    assert "outputSchema" not in tools["greet"]
    assert tools["async_multiply"]["outputSchema"]["properties"] == {"result": {"type": "number"}}


# Resources


@pytest.mark.anyio
async def test_resources_and_templates_are_listed(mcp_client: Client) -> None:
    assert await mcp_client.list_resources() == [
        {
            "uri": "demo://info",
            "name": "server_info",
            "description": "Information about this server.",
            "mimeType": "text/plain",
        }
    ]
    assert await mcp_client.list_resource_templates() == [
        {
            "uriTemplate": "demo://greeting/{name}",
            "name": "greeting_resource",
            "description": "A personalized greeting.",
            "mimeType": "text/plain",
        }
    ]


@pytest.mark.anyio
async def test_server_info_resource(mcp_client: Client) -> None:
    result = await mcp_client.read_resource("demo://info")
    assert result["contents"] == [
        {
            "uri": "demo://info",
            "mimeType": "text/plain",
            "text": "This is the mcpline port of FastMCP's Testing Demo server",
        }
    ]


@pytest.mark.anyio
async def test_greeting_resource_template(mcp_client: Client) -> None:
    (content,) = (await mcp_client.read_resource("demo://greeting/Charlie"))["contents"]
    assert content == {
        "uri": "demo://greeting/Charlie",
        "mimeType": "text/plain",
        "text": "Welcome to mcpline, Charlie!",
    }
    (spaced,) = (await mcp_client.read_resource("demo://greeting/Charlie%20Brown"))["contents"]
    assert spaced["text"] == "Welcome to mcpline, Charlie Brown!"  # pct-decoded


@pytest.mark.anyio
@pytest.mark.parametrize("uri", ["demo://greeting/a/b", "demo://greeting/a%2Fb", "demo://nothing"])
async def test_a_uri_that_fits_nothing_is_resource_not_found(mcp_client: Client, uri: str) -> None:
    with pytest.raises(ServerError) as caught:
        await mcp_client.read_resource(uri)
    assert caught.value.code == INVALID_PARAMS and caught.value.data == {"uri": uri}


# Prompts


@pytest.mark.anyio
async def test_prompts_are_listed_by_the_names_the_decorator_gave(mcp_client: Client) -> None:
    prompts = await mcp_client.list_prompts()
    assert [p["name"] for p in prompts] == ["hello", "explain"]
    assert prompts[0]["arguments"] == [
        {"name": "name", "description": "Who to greet", "required": False}
    ]
    assert [(a["name"], a["required"]) for a in prompts[1]["arguments"]] == [
        ("topic", True),
        ("detail_level", False),
    ]


@pytest.mark.anyio
async def test_hello_prompt(mcp_client: Client) -> None:
    assert prompt_text(await mcp_client.get_prompt("hello")) == (
        "Say hello to World in a friendly way."
    )
    assert prompt_text(await mcp_client.get_prompt("hello", {"name": "Dave"})) == (
        "Say hello to Dave in a friendly way."
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("level", "text"),
    [
        ("simple", "Explain MCP in simple terms for beginners."),
        ("medium", "Explain MCP with moderate technical detail."),
        ("detailed", "Provide a detailed, technical explanation of MCP."),
        (None, "Explain MCP with moderate technical detail."),
    ],
)
async def test_explain_prompt_levels(mcp_client: Client, level: str | None, text: str) -> None:
    arguments = {"topic": "MCP"} if level is None else {"topic": "MCP", "detail_level": level}
    assert prompt_text(await mcp_client.get_prompt("explain", arguments)) == text


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"topic": "MCP", "detail_level": "rude"}, "detail_level"),
        ({"detail_level": "simple"}, "missing required argument 'topic'"),
        ({"topic": "MCP", "tone": "dry"}, "tone"),
    ],
)
async def test_bad_prompt_arguments_are_invalid_params(
    mcp_client: Client, arguments: dict[str, str], fragment: str
) -> None:
    with pytest.raises(ServerError) as caught:
        await mcp_client.get_prompt("explain", arguments)
    assert caught.value.code == INVALID_PARAMS
    assert fragment in str(caught.value)


@pytest.mark.anyio
async def test_the_detail_level_completes_itself(mcp_client: Client) -> None:
    ref = {"type": "ref/prompt", "name": "explain"}
    every = await mcp_client.complete(ref, {"name": "detail_level", "value": ""})
    assert every["completion"]["values"] == ["simple", "medium", "detailed"]
    some = await mcp_client.complete(ref, {"name": "detail_level", "value": "d"})
    assert some["completion"]["values"] == ["detailed"]


# Both eras, and the file itself


@pytest.mark.anyio
async def test_a_legacy_client_sees_the_same_server(mcp_server: Server) -> None:
    async with Client.memory(mcp_server, era="legacy", timeout=10) as client:
        assert (await client.discover()).era == "legacy"
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"result": 5}
        assert prompt_text(await client.get_prompt("hello")).startswith("Say hello to World")


def test_the_file_serves_over_stdio(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(DEMO)
    info = p.request("server/discover")["result"]
    assert info["capabilities"].keys() >= {"tools", "resources", "prompts", "completions"}
    assert p.call("add", {"a": 40, "b": 2})["result"]["structuredContent"] == {"result": 42}
    read = p.request("resources/read", {"uri": "demo://greeting/Ada"})["result"]
    assert read["contents"][0]["text"] == "Welcome to mcpline, Ada!"
    got = p.request("prompts/get", {"name": "explain", "arguments": {"topic": "stdio"}})
    assert prompt_text(got["result"]) == "Explain stdio with moderate technical detail."
    p.close_stdin()
    assert p.wait() == 0
