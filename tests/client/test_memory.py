"""`Client.memory(server)`: the real client and the real engine, wired without a process."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcpline import Client, Context, RequestTimeout, Server, ServerError, ToolError, elicit
from mcpline.server.connection import Connection

pytest_plugins = ["mcpline.testing"]


def calculator() -> Server:
    server = Server("calc", version="1.0.0")

    @server.tool(annotations={"read_only": True})
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool()
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        if b == 0:
            raise ToolError("b must be non-zero")
        return a / b

    @server.tool()
    async def nap(ms: int, ctx: Context) -> str:
        """Sleep, reporting progress."""
        ctx.report_progress(1, 2)
        await asyncio.sleep(ms / 1000)
        return "rested"

    @server.tool()
    def greet(ctx: Context) -> str:
        """Greet whoever answers."""
        answer = ctx.ask("who", elicit("Your name?", {"name": str}))
        return f"Hello, {answer['content']['name']}!"

    @server.resource("memo://note")
    def note() -> str:
        """A note."""
        return "remember"

    return server


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_discover_list_call_and_a_tool_error_in_memory() -> None:
    async def main() -> None:
        async with Client.memory(calculator(), timeout=5) as client:
            info = await client.discover()
            assert info.era == "modern" and info.server_info["name"] == "calc"
            assert [t["name"] for t in await client.list_tools()] == [
                "add",
                "divide",
                "nap",
                "greet",
            ]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result["structuredContent"] == {"result": 5}
            failed = await client.call_tool("divide", {"a": 1, "b": 0})
            assert failed["isError"] and "non-zero" in failed["content"][0]["text"]
            read = await client.read_resource("memo://note")
            assert read["contents"][0]["text"] == "remember"
            with pytest.raises(ServerError) as err:
                await client.call_tool("nope", {})
            assert err.value.code == -32602

    run(main())


def test_mrtr_rounds_and_progress_go_through_the_client_callbacks() -> None:
    async def main() -> None:
        progress: list[float] = []
        client = Client.memory(
            calculator(),
            timeout=5,
            on_elicit=lambda p: {"action": "accept", "content": {"name": "Ada"}},
        )
        async with client:
            assert (await client.call_tool("greet"))["content"][0]["text"] == "Hello, Ada!"
            await client.call_tool(
                "nap", {"ms": 1}, on_progress=lambda v, total, msg: progress.append(v)
            )
        assert progress == [1]

    run(main())


def test_the_legacy_era_in_memory_asks_with_real_requests() -> None:
    async def main() -> None:
        received: list[bytes] = []
        client = Client.memory(
            calculator(),
            era="legacy",
            timeout=5,
            on_elicit=lambda p: {"action": "accept", "content": {"name": "Bo"}},
            trace=lambda direction, line: received.append(line) if direction == "recv" else None,
        )
        async with client:
            assert (await client.discover()).era == "legacy"
            assert (await client.call_tool("greet"))["content"][0]["text"] == "Hello, Bo!"
        asked = [json.loads(line) for line in received if b"elicitation/create" in line]
        assert [m["method"] for m in asked] == ["elicitation/create"] and "id" in asked[0]

    run(main())


def test_calls_run_side_by_side_and_a_timeout_cancels_on_the_server() -> None:
    async def main() -> None:
        server = calculator()
        async with Client.memory(server, timeout=5) as client:
            started = asyncio.get_running_loop().time()
            results = await asyncio.gather(
                *(client.call_tool("nap", {"ms": 300}) for _ in range(20))
            )
            assert all(r["content"][0]["text"] == "rested" for r in results)
            assert asyncio.get_running_loop().time() - started < 5  # not 20 × 300 ms (6 s)
            with pytest.raises(RequestTimeout):
                await client.call_tool("nap", {"ms": 5000}, timeout=0.2)
            [peer] = server.runtime.engine.peers
            assert isinstance(peer, Connection)
            await asyncio.sleep(0.05)
            assert not peer.inflight  # the cancellation reached the engine
        assert not server.runtime.engine.peers  # closing ended the server's connection

    run(main())


def test_two_clients_share_one_server_and_one_lifespan() -> None:
    entered: list[str] = []

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(server: Server) -> Any:
        entered.append("in")
        yield {"db": "ready"}
        entered.append("out")

    server = Server("shared", lifespan=lifespan)

    @server.tool()
    def db(ctx: Context) -> str:
        """The lifespan's value."""
        return str(ctx.lifespan["db"])

    async def main() -> None:
        async with Client.memory(server) as a, Client.memory(server) as b:
            assert (await a.call_tool("db"))["content"][0]["text"] == "ready"
            assert (await b.call_tool("db"))["content"][0]["text"] == "ready"
        assert entered == ["in", "out"]

    run(main())


@pytest.fixture
def mcp_server() -> Server:
    return calculator()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_pytest_fixture_serves_the_users_server(mcp_client: Client) -> None:
    assert (await mcp_client.call_tool("add", {"a": 1, "b": 1}))["structuredContent"] == {
        "result": 2
    }
