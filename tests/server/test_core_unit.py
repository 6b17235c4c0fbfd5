"""The core without a process: cursors, routing decisions and the connection engine driven
through its sans-I/O entry points (bytes in, bytes out)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcpline import Server
from mcpline.errors import JsonRpcError
from mcpline.server.connection import Connection
from mcpline.server.methods import decode_cursor, encode_cursor

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def test_cursor_round_trip_and_rejections() -> None:
    c = encode_cursor("tools", 100)
    assert decode_cursor("tools", c, 250) == 100
    for bad in (
        c + "A",
        c + "==",
        "",
        "!!!",
        encode_cursor("prompts", 100),
        encode_cursor("tools", 0),
        encode_cursor("tools", 300),
    ):
        with pytest.raises(JsonRpcError) as info:
            decode_cursor("tools", bad, 250)
        assert info.value.code == -32602
    with pytest.raises(JsonRpcError):
        decode_cursor("tools", 5, 250)


def test_paginate_covers_everything_once() -> None:
    s = Server("p", page_size=7)
    items = list(range(23))
    seen: list[int] = []
    params: dict[str, Any] = {}
    while True:
        page, nxt = s._dispatch.paginate("tools", items, params)
        seen += page
        if nxt is None:
            break
        params = {"cursor": nxt}
    assert seen == items


def make_server(limit: int) -> Server:
    s = Server("unit", max_in_flight=limit)

    @s.tool()
    async def wait(ms: int) -> str:
        """Wait."""
        await asyncio.sleep(ms / 1000)
        return f"waited {ms}"

    return s


def call(id: Any, ms: int) -> bytes:
    return (
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": id,
                "method": "tools/call",
                "params": {"_meta": META, "name": "wait", "arguments": {"ms": ms}},
            }
        ).encode()
        + b"\n"
    )


def test_in_flight_limit_queues_in_order_and_pauses_reading() -> None:
    async def main() -> None:
        server = make_server(2)
        out: list[dict[str, Any]] = []
        events: list[str] = []
        async with server.runtime.services.running():
            conn = Connection(
                server,
                lambda b: out.extend(json.loads(x) for x in b.splitlines()),
                pause_reading=lambda: events.append("pause"),
                resume_reading=lambda: events.append("resume"),
            )
            # One chunk with five requests and a cancel for the fourth (still queued).
            cancel = (
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": 3},
                    }
                ).encode()
                + b"\n"
            )
            conn.data_received(b"".join(call(i, 30) for i in range(5)) + cancel)
            assert len(conn.inflight) == 2 and events == ["pause"]
            for _ in range(100):
                if len(out) == 4:
                    break
                await asyncio.sleep(0.02)
            assert sorted(m["id"] for m in out) == [0, 1, 2, 4]
            assert [m["id"] for m in out][:2] == [0, 1]
            assert events == ["pause", "resume"]
            await conn.close(0)

    asyncio.run(main())


def test_output_backpressure_pauses_reading() -> None:
    async def main() -> None:
        server = make_server(100)
        out: list[bytes] = []
        events: list[str] = []
        async with server.runtime.services.running():
            conn = Connection(
                server,
                lambda b: out.extend(b.splitlines()),
                pause_reading=lambda: events.append("pause"),
                resume_reading=lambda: events.append("resume"),
            )
            conn.pause_writing()
            conn.data_received(call("a", 1) + call("b", 1))
            await asyncio.sleep(0.05)
            assert out == [] and events == ["pause"]  # nothing started while paused
            conn.resume_writing()
            for _ in range(100):
                if len(out) == 2:
                    break
                await asyncio.sleep(0.01)
            assert len(out) == 2 and events == ["pause", "resume"]
            await conn.close(0)

    asyncio.run(main())


def test_close_cancels_after_grace_and_drops_queued() -> None:
    async def main() -> None:
        server = make_server(1)
        out: list[bytes] = []
        async with server.runtime.services.running():
            conn = Connection(server, out.append)
            conn.data_received(call("slow", 5000) + call("queued", 1))
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            await conn.close(0.1)
            assert loop.time() - t0 < 3.0  # the 0.1 s grace, not the 5 s tool
            assert out == [] and not conn.inflight

    asyncio.run(main())


def test_write_failure_begins_shutdown_quietly() -> None:
    async def main() -> None:
        server = make_server(4)

        def broken(_: bytes) -> None:
            raise BrokenPipeError

        async with server.runtime.services.running():
            conn = Connection(server, broken)
            conn.data_received(b"not json\n")
            assert conn.write_failed and conn.closing.is_set()
            await conn.close(0)

    asyncio.run(main())
