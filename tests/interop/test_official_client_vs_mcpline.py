"""The official `mcp` 2.3.0 client (its stdio transport, unchanged) against our server.

mcp 2.3.0 speaks 2026-07-28 over stdio: `Client` probes `server/discover` in its default
``mode="auto"``, and `ClientSession` can `discover()` explicitly.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ..proc import EXAMPLES, FIXTURES

QUICKSTART = StdioServerParameters(command=sys.executable, args=[str(EXAMPLES / "quickstart.py")])


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_stdio_client_and_client_session() -> None:
    async def main() -> None:
        async with stdio_client(QUICKSTART) as (read, write), ClientSession(read, write) as s:
            discovered = await s.discover()
            assert "2026-07-28" in discovered.supported_versions
            assert discovered.capabilities.tools is not None
            tools = await s.list_tools()
            assert sorted(t.name for t in tools.tools) == ["add", "divide"]
            add = await s.call_tool("add", {"a": 2, "b": 3})
            assert not add.is_error and add.structured_content == {"result": 5.0}
            div = await s.call_tool("divide", {"a": 1, "b": 0})
            assert div.is_error and "zero" in div.content[0].text  # type: ignore[union-attr]

    run(main())


def test_high_level_client_auto_mode_stays_modern() -> None:
    async def main() -> None:
        async with Client(QUICKSTART) as c:
            assert c.protocol_version == "2026-07-28"
            assert c.server_info is not None and c.server_info.name == "calculator"
            tools = await c.list_tools()
            assert {t.name for t in tools.tools} == {"add", "divide"}
            r = await c.call_tool("divide", {"a": 9, "b": 3})
            assert r.structured_content == {"result": 3.0}

    run(main())


def test_official_client_progress_and_concurrency() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(FIXTURES / "core_server.py")])
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def main() -> None:
        async with Client(params) as c:
            r = await c.call_tool("progress", {"steps": 4}, progress_callback=on_progress)
            assert r.content[0].text == "done"  # type: ignore[union-attr]
            results = await asyncio.gather(*(c.call_tool("sleep", {"ms": 300}) for _ in range(10)))
            assert all(x.content[0].text == "slept 300" for x in results)  # type: ignore[union-attr]

    run(main())
    assert seen == [1, 2, 3, 4]
