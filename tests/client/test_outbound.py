"""What the client writes to a server that does not read it is bounded: past
``max_outbound_bytes`` the connection fails with an error naming the limit (over a socket and
over HTTP; stdio: tests/hostile/test_client.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import Client, ConnectionLost
from mcpline.client.session import Session

from .http_fakes import Request, fake_server, respond, respond_json, start_events
from .util import run

LIMIT = 1024 * 1024
PINGS = b"".join(b'{"jsonrpc":"2.0","id":"p%d","method":"ping"}\n' % n for n in range(2000))


def test_the_rule_fails_the_session_once_and_names_the_limit() -> None:
    async def main() -> None:
        session = Session(lambda m, p: None, _never, label="srv", max_outbound_bytes=100)
        session.check_outbound(99)
        with pytest.raises(ConnectionLost) as err:
            session.check_outbound(100)
        assert "max_outbound_bytes=100" in str(err.value) and not err.value.retriable
        assert session.closed and session.close_reason is err.value

    run(main())


async def _never(method: str, params: Any) -> Any:
    raise AssertionError("not called")


def _legacy_result(rid: Any) -> bytes:
    body = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "flood", "version": "1"},
    }
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": body}).encode() + b"\n"


@pytest.fixture
def flood_socket() -> Iterator[str]:
    """A Unix socket server: answers initialize, then at the client's first request stops
    reading and writes ping requests until the client goes away."""
    d = tempfile.mkdtemp(prefix="mcpl-")
    path = str(Path(d) / "f.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(30)

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn, conn.makefile("rb") as f:
            for line in f:
                msg = json.loads(line)
                if msg.get("method") == "initialize":
                    conn.sendall(_legacy_result(msg["id"]))
                elif "id" in msg and "method" in msg:
                    break
            conn.settimeout(30)
            try:
                for _ in range(10_000):
                    conn.sendall(PINGS)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"unix:{path}"
    listener.close()
    thread.join(30)


@pytest.mark.posix_only(reason="a Unix socket")
def test_a_socket_server_that_floods_and_never_reads(flood_socket: str) -> None:
    async def main() -> None:
        async with Client.connect(
            flood_socket, era="legacy", max_outbound_bytes=LIMIT, max_restarts=0
        ) as c:
            with pytest.raises(ConnectionLost) as err:
                await c.call_tool("add", {}, timeout=30)
        assert f"max_outbound_bytes={LIMIT}" in str(err.value)

    run(main())


def test_an_http_server_that_floods_and_never_accepts_the_answers() -> None:
    posted = 0

    async def legacy(req: Request, w: asyncio.StreamWriter) -> None:
        nonlocal posted
        if req.method in ("GET", "DELETE"):
            respond(w, 405)
            return
        msg = req.json()
        if msg.get("method") == "initialize":
            respond_json(w, json.loads(_legacy_result(msg["id"])), headers={"Mcp-Session-Id": "s"})
        elif "method" not in msg:  # an answer to a ping: never accepted
            posted += 1
            await asyncio.sleep(60)
        elif "id" not in msg:
            respond(w, 202)
        else:  # the call: a stream of pings that never ends
            start_events(w)
            for n in range(100_000):
                w.write(b'data: {"jsonrpc":"2.0","id":%d,"method":"ping"}\n\n' % n)
                if n % 100 == 0:
                    await w.drain()

    async def main() -> None:
        async with fake_server(legacy) as srv:
            async with Client.http(
                srv.url, era="legacy", max_outbound_bytes=LIMIT, max_restarts=0
            ) as c:
                with pytest.raises(ConnectionLost) as err:
                    await c.call_tool("add", {}, timeout=30)
            assert f"max_outbound_bytes={LIMIT}" in str(err.value)

    run(main())
    assert posted <= 64  # the pool's connections; the rest waited in the client


ECHO_SERVER = """
import time
from mcpline import Server
server = Server("slow-echo")

@server.tool(description="The length of text.")
def size(text: str) -> int:
    time.sleep(0.01)
    return len(text)

if __name__ == "__main__":
    server.run()
"""


def test_the_clients_own_requests_wait_rather_than_fail(tmp_path: Path) -> None:
    """Large concurrent requests to a server that reads them slowly are paced by the pipe,
    not cut by the bound (which is for what the client writes without waiting)."""
    import sys

    script = tmp_path / "echo.py"
    script.write_text(ECHO_SERVER)
    text = "x" * 200_000

    async def main() -> list[Any]:
        async with Client.stdio(sys.executable, [str(script)], max_outbound_bytes=64 * 1024) as c:
            calls = [c.call_tool("size", {"text": text}, timeout=30) for _ in range(20)]
            results: list[Any] = await asyncio.gather(*calls)
            return results

    results = run(main())
    assert [r["structuredContent"]["result"] for r in results] == [200_000] * 20
