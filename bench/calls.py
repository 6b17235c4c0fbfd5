"""Function calls per HTTP request: a deterministic figure of the per-request path, where
timings on a shared machine are noise.

    PYTHONPATH=/path/to/other/src .venv/bin/python bench/calls.py   # that tree's figure
    .venv/bin/python bench/calls.py                                   # this tree's

Serves ``tools/call`` of an ``async def`` echo tool through a `Server`'s ASGI app in this
process (no sockets), 200 times after 20 to warm up, and counts the Python and C function
calls made per request (`sys.setprofile`), in all and in mcpline's own code. Two trees
that give the same counts run the same per-request path.
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
from typing import Any

import mcpline
from mcpline import Server
from mcpline.protocol.meta import modern_meta

server = Server("calls")


@server.tool
async def aecho(text: str) -> str:
    """Return the text unchanged."""
    return text


APP = server.http_app()
META = modern_meta("2026-07-28", {}, {"name": "calls", "version": "0"})
HEADERS = [
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
    (b"host", b"127.0.0.1:8000"),
    (b"mcp-method", b"tools/call"),
    (b"mcp-name", b"aecho"),
    (b"mcp-protocol-version", b"2026-07-28"),
]


async def post(i: int) -> None:
    params = {"name": "aecho", "arguments": {"text": "x"}, "_meta": META}
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": "/mcp",
        "root_path": "",
        "headers": HEADERS,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5555),
    }
    done = asyncio.Event()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body.encode(), "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await APP(scope, receive, send)


async def main() -> None:
    counts: collections.Counter[str] = collections.Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            counts[frame.f_code.co_filename] += 1
        elif event == "c_call":
            counts["C"] += 1

    for i in range(20):
        await post(i)
    n = 200
    sys.setprofile(profile)
    for i in range(n):
        await post(1000 + i)
    sys.setprofile(None)
    own = sum(v for k, v in counts.items() if "/mcpline/" in k)
    total = sum(counts.values()) / n
    print(f"{mcpline.__file__}: {total:.1f} calls per request, {own / n:.1f} in mcpline")


if __name__ == "__main__":
    asyncio.run(main())
