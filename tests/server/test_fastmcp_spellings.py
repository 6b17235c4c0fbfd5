"""FastMCP's spellings on `Context` and `Server.run`: accepted where they mean the same,
refused with the mcpline way in the message where they do not (issue 27, item 2)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from mcpline import Client, Context, Server
from mcpline.server.server import run_address

from ..transports.http_util import HttpServer


def run(work: Awaitable[Any]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(work, 60)

    return asyncio.run(bounded())


def logging_server() -> Server:
    server = Server("spell")

    @server.tool()
    async def fastmcp_log(ctx: Context) -> str:
        """A tool."""
        await ctx.log("plain")
        await ctx.log("warned", level="warning")
        await ctx.log("named", level="error", logger_name="lg", extra={"k": 1})
        await ctx.log(message="kw", level="debug")
        await ctx.info("info", logger_name="lg2")
        ctx.log("notice", "mcpline order")
        return "ok"

    return server


def test_fastmcp_log_spellings_send_what_they_mean() -> None:
    logs: list[dict[str, Any]] = []

    async def main() -> Any:
        async with Client.memory(logging_server(), log_level="debug", on_log=logs.append) as c:
            return await c.call_tool("fastmcp_log", {})

    result = run(main())
    assert result["content"][0]["text"] == "ok"
    assert logs == [
        {"level": "info", "logger": "spell", "data": "plain"},
        {"level": "warning", "logger": "spell", "data": "warned"},
        {"level": "error", "logger": "lg", "data": {"msg": "named", "extra": {"k": 1}}},
        {"level": "debug", "logger": "spell", "data": "kw"},
        {"level": "info", "logger": "lg2", "data": "info"},
        {"level": "notice", "logger": "spell", "data": "mcpline order"},
    ]


def refusing_server() -> Server:
    server = Server("refuse")

    @server.tool()
    def misuse(what: str, ctx: Context) -> str:
        """A tool."""
        if what == "read_resource":
            ctx.read_resource("x://y")  # type: ignore[attr-defined]
        elif what == "set_state":
            ctx.set_state("k", 1)  # type: ignore[attr-defined]
        elif what == "get_state":
            ctx.get_state("k")  # type: ignore[attr-defined]
        elif what == "log_order":
            ctx.log("text", "info")
        elif what == "log_twice":
            ctx.log("text", "info", level="info")
        elif what == "nothing":
            ctx.no_such_thing  # type: ignore[attr-defined]  # noqa: B018
        return "not refused"

    return server


@pytest.mark.parametrize(
    ("what", "words"),
    [
        ("read_resource", ["no read_resource()", "@server.resource directly"]),
        ("set_state", ["no set_state()", "ctx.remember(key, fn)", "ctx.lifespan"]),
        ("get_state", ["no get_state()", "keeps no session"]),
        ("log_order", ["unknown log level 'text'", "ctx.log('info', data)"]),
        ("log_twice", ["got 'level' twice"]),
        ("nothing", ["has no attribute 'no_such_thing'"]),
    ],
)
def test_fastmcp_only_spellings_are_refused_with_the_mcpline_way(
    what: str, words: list[str]
) -> None:
    async def main() -> Any:
        async with Client.memory(refusing_server()) as c:
            return await c.call_tool("misuse", {"what": what})

    result = run(main())
    assert result.get("isError") is True, result
    text = result["content"][0]["text"]
    for word in words:
        assert word in text, text


@contextlib.asynccontextmanager
async def db_lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
    yield {"db": "connected"}


def test_lifespan_context_is_the_lifespan_value_or_an_empty_dict() -> None:
    for lifespan, expected in ((db_lifespan, "connected"), (None, "absent")):
        server = Server("life", lifespan=lifespan)

        @server.tool()
        def db(ctx: Context) -> str:
            """A tool."""
            value: str = ctx.lifespan_context.get("db", "absent")
            return value

        async def main(server: Server = server) -> Any:
            async with Client.memory(server) as c:
                return await c.call_tool("db", {})

        result = run(main())
        assert result["content"][0]["text"] == expected


def eliciting_server() -> Server:
    server = Server("ask")

    @server.tool()
    async def age(ctx: Context) -> str:
        """A tool."""
        answer = await ctx.elicit("How old?", response_type=int)
        return f"{answer.action}:{answer.data!r}"

    @server.tool()
    async def pick(ctx: Context) -> str:
        """A tool."""
        answer = await ctx.elicit("Which?", response_type=["red", "blue"])
        return f"{answer.action}:{answer.data!r}"

    @server.tool()
    async def titled(ctx: Context) -> str:
        """A tool."""
        await ctx.elicit("Which?", response_type={"r": {"title": "Red"}})
        return "not refused"

    @server.tool()
    async def both(ctx: Context) -> str:
        """A tool."""
        await ctx.elicit("Which?", int, response_type=int)
        return "not refused"

    return server


def test_elicit_response_type_means_schema() -> None:
    asked: list[dict[str, Any]] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["requestedSchema"])
        props = params["requestedSchema"]["properties"]
        value = 42 if props["value"].get("type") == "integer" else "blue"
        return {"action": "accept", "content": {"value": value}}

    async def main() -> list[Any]:
        async with Client.memory(eliciting_server(), on_elicit=on_elicit) as c:
            return [await c.call_tool(n, {}) for n in ("age", "pick", "titled", "both")]

    age, pick, titled, both = run(main())
    assert age["content"][0]["text"] == "accept:42"
    assert pick["content"][0]["text"] == "accept:'blue'"
    assert asked[0]["properties"]["value"]["type"] == "integer"
    assert asked[1]["properties"]["value"]["enum"] == ["red", "blue"]
    assert titled["isError"] is True
    assert "Enum or Literal" in titled["content"][0]["text"]
    assert both["isError"] is True
    assert "not both" in both["content"][0]["text"]


@pytest.mark.parametrize(
    ("transport", "options", "address"),
    [
        ("http", {}, "http://127.0.0.1:8000/mcp"),
        ("streamable-http", {"host": "0.0.0.0", "port": 9}, "http://0.0.0.0:9/mcp"),
        ("http", {"host": "::1", "port": 0, "path": "api"}, "http://[::1]:0/api"),
        ("stdio", {}, "stdio"),
        ("tcp:127.0.0.1:5", {}, "tcp:127.0.0.1:5"),
        ("http://127.0.0.1:1/x", {}, "http://127.0.0.1:1/x"),
    ],
)
def test_run_accepts_fastmcp_http_spellings(
    transport: str, options: dict[str, Any], address: str
) -> None:
    assert run_address(transport, **options) == address


@pytest.mark.parametrize(
    ("transport", "options", "words"),
    [
        ("sse", {}, ["HTTP+SSE transport of 2024-11-05", "server.run('http', host="]),
        ("sse", {"host": "127.0.0.1", "port": 1}, ["transport='sse'"]),
        ("stdio", {"port": 1}, ["run('stdio') takes no host=, port= or path="]),
        ("http://127.0.0.1:1", {"host": "h"}, ["server.run('http://HOST:PORT/mcp')"]),
    ],
)
def test_run_refuses_what_mcpline_does_not_serve(
    transport: str, options: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(ValueError) as caught:
        Server("s").run(transport, **options)
    for word in words:
        assert word in str(caught.value)


FASTMCP_RUN = """
from mcpline import Server

server = Server("fastmcp-run")


@server.tool()
def hello() -> str:
    \"\"\"Say hello.\"\"\"
    return "hello over http"


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=0)
"""


def test_fastmcp_run_call_serves_streamable_http(tmp_path: Path) -> None:
    script = tmp_path / "fastmcp_run.py"
    script.write_text(FASTMCP_RUN)
    srv = HttpServer([sys.executable, str(script)])
    try:
        assert srv.url.startswith("http://127.0.0.1:") and srv.url.endswith("/mcp")

        async def main() -> Any:
            async with Client.http(srv.url) as c:
                return await c.call_tool("hello", {})

        assert run(main())["content"][0]["text"] == "hello over http"
    finally:
        assert srv.stop() == 0


def test_path_wildcard_is_refused_at_registration_naming_plus_path() -> None:
    server = Server("docs")
    with pytest.raises(ValueError) as caught:

        @server.resource("docs://{path*}")
        def doc(path: str) -> str:
            """A document."""
            return path

    assert "'docs://{+path}'" in str(caught.value)
    assert "docs/resources.md" in str(caught.value)
    assert server.resources == {}


def test_plus_path_matches_what_fastmcp_meant_and_keeps_the_uri() -> None:
    server = Server("docs")

    @server.resource("docs://{+path}")
    def doc(path: str) -> str:
        """A document."""
        return f"read {path}"

    @server.resource("list://{parts*}")
    def parts(parts: list[str]) -> str:
        """An exploded list variable is still RFC 6570's and allowed."""
        return "|".join(parts)

    async def main() -> list[Any]:
        async with Client.memory(server) as c:
            return [
                await c.read_resource("docs://guide/intro/setup.md"),
                await c.read_resource("list://a,b"),
            ]

    doc_read, list_read = run(main())
    assert doc_read["contents"] == [
        {
            "uri": "docs://guide/intro/setup.md",
            "mimeType": "text/plain",
            "text": "read guide/intro/setup.md",
        }
    ]
    assert list_read["contents"][0]["text"] == "a|b"
