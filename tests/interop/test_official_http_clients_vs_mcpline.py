"""The official `mcp` 2.3.0 client and FastMCP 4.1.6's client, over Streamable HTTP, against
mcpline's HTTP server (a real `uvicorn` process on a free loopback port), in both eras: the
modern one their probe finds (``mode="auto"``) and the legacy one forced (``mode="legacy"``:
``initialize``, a session, elicitation as a real request on the POST's stream)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ..proc import FIXTURES
from .http_servers import serve

HTTP_PEER = str(FIXTURES / "http_peer.py")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve((sys.executable, HTTP_PEER, "mcpline")) as found:
        yield found


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 90))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_official_sdk_client(url: str, mode: str) -> None:
    from mcp import Client
    from mcp_types import ElicitResult

    async def on_elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def main() -> None:
        async with Client(url, mode=mode, elicitation_callback=on_elicit) as c:
            assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            assert c.server_info is not None and c.server_info.name == "mcpline-peer"
            tools = await c.list_tools()
            assert {t.name for t in tools.tools} == {"add", "greet"}
            r = await c.call_tool("add", {"a": 2, "b": 3})
            assert not r.is_error and r.structured_content == {"result": 5}
            greeted = await c.call_tool("greet", {})
            assert greeted.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
            read = await c.read_resource("mem://motd")
            assert read.contents[0].text == "Have a nice day"  # type: ignore[union-attr]
            prompt = await c.get_prompt("review", {"code": "x = 1"})
            assert "x = 1" in prompt.messages[0].content.text  # type: ignore[union-attr]
            many = await asyncio.gather(*(c.call_tool("add", {"a": i, "b": 1}) for i in range(50)))
            assert [m.structured_content for m in many] == [{"result": i + 1} for i in range(50)]

    run(main())


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_fastmcp_client(url: str, mode: str) -> None:
    from fastmcp import Client

    async def on_elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"name": "Ada"}

    async def main() -> None:
        async with Client(url, mode=mode, elicitation_handler=on_elicit) as c:
            tools = await c.list_tools()
            assert {t.name for t in tools} == {"add", "greet"}
            r = await c.call_tool("add", {"a": 4, "b": 5})
            assert r.structured_content == {"result": 9}
            greeted = await c.call_tool("greet", {})
            assert greeted.content[0].text == "Hello, Ada!"
            read = await c.read_resource("mem://motd")
            assert read[0].text == "Have a nice day"

    run(main())
