"""A client script: start examples/quickstart.py, discover it, list its tools and call them.

    python examples/client.py

``Client.stdio`` starts the server at the first request and stops it when the ``async with``
block ends (stdin closed, then SIGTERM, then SIGKILL if it must). The script prints one JSON
object per line on stdout, each with a ``step``: ``discover``, one ``tool`` per tool, one
``call`` per call (a tool's failure is a result with ``isError``, not an exception).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcpline import Client

QUICKSTART = Path(__file__).with_name("quickstart.py")


def emit(step: str, **fields: Any) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


def text_of(result: dict[str, Any]) -> str:
    """The text blocks of a CallToolResult, joined."""
    return " ".join(c["text"] for c in result.get("content", []) if c.get("type") == "text")


async def main() -> None:
    async with Client.stdio(sys.executable, [str(QUICKSTART)], timeout=30) as client:
        found = await client.discover()
        emit(
            "discover",
            era=found.era,
            protocolVersion=found.protocol_version,
            server=found.server_info,
            capabilities=sorted(found.capabilities),
        )
        for tool in await client.list_tools():
            params = list(tool["inputSchema"].get("properties", {}))
            emit("tool", name=tool["name"], arguments=params, description=tool.get("description"))
        for name, arguments in (("add", {"a": 2, "b": 3}), ("divide", {"a": 1, "b": 0})):
            result = await client.call_tool(name, arguments)
            emit(
                "call",
                tool=name,
                arguments=arguments,
                isError=bool(result.get("isError")),
                value=(result.get("structuredContent") or {}).get("result"),
                text=text_of(result),
            )


if __name__ == "__main__":
    asyncio.run(main())
