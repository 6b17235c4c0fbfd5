"""Issue 22, M3: what the server holds for readers that do not read, against a real
``mcpline run --http`` server on loopback. Clients ask for large answers and never read
them: the bytes waiting for them share one budget (``--max-outbound-total``), and a
connection whose reader takes nothing for ``--write-timeout`` seconds is aborted (its request
cancelled, its bytes freed), while a client that reads is served throughout."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..transports.http_util import MCPLINE, HttpServer, call, request_body
from .test_http_connections import closed_by_server
from .test_http_shares import modern

MiB = 1024 * 1024

BLOB_SERVER = """
from mcpline import Server

server = Server("blob")


@server.tool
async def blob(size: int) -> str:
    \"\"\"``size`` bytes of text.\"\"\"
    return "x" * size


@server.tool
def ping() -> str:
    \"\"\"A small answer.\"\"\"
    return "pong"
"""


@pytest.fixture
def blob_server(tmp_path: Path) -> Iterator[tuple[Path, list[HttpServer]]]:
    path = tmp_path / "blob_server.py"
    path.write_text(BLOB_SERVER, encoding="utf-8")
    servers: list[HttpServer] = []
    yield path, servers
    for server in servers:
        server.stop()


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmHWM"].split()[0]) * 1024


def stall(server: HttpServer, i: int, size: int) -> socket.socket:
    """Ask for ``size`` bytes and read nothing (a small receive buffer, so the server's
    writes back up at once)."""
    body = request_body(i, "tools/call", {"name": "blob", "arguments": {"size": size}})
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect((server.host, server.port))
    head = ["POST /mcp HTTP/1.1", f"Host: {server.host}:{server.port}"]
    head += [f"{k}: {v}" for k, v in modern("tools/call", "blob").items()]
    head.append(f"Content-Length: {len(body)}")
    s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    return s


@pytest.mark.linux_only(reason="reads the server's peak RSS from /proc")
def test_readers_that_never_read_hold_at_most_the_outbound_budget(
    blob_server: tuple[Path, list[HttpServer]],
) -> None:
    path, servers = blob_server
    flags = ["--max-outbound-total", str(32 * MiB), "--write-timeout", "3"]
    server = HttpServer([MCPLINE, "run", str(path), "--http", "127.0.0.1:0", *flags])
    servers.append(server)
    stalled: list[socket.socket] = []
    try:
        for i in range(40):  # 40 x 8 MiB asked for, none read: 320 MiB without the budget
            stalled.append(stall(server, i, 8 * MiB))
            assert (
                call(server, 1000 + i, "tools/call", {"name": "ping", "arguments": {}}).status
                == 200
            )
        peak = peak_rss(server.proc.pid)
        # 310 MiB without the budget (each stalled answer held); 133 MiB measured with it.
        assert peak < 220 * MiB, f"peak RSS {peak / MiB:.0f} MiB"
        deadline = time.monotonic() + 60  # the write deadline ends every stalled connection
        while not all(closed_by_server(s) for s in stalled):
            assert time.monotonic() < deadline, "a stalled connection was never closed"
            time.sleep(0.2)
        assert call(server, 2000, "tools/call", {"name": "ping", "arguments": {}}).status == 200
    finally:
        for s in stalled:
            with contextlib.suppress(OSError):
                s.close()
    assert "Traceback" not in server.stderr
