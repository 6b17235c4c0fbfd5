"""Issue 22, M4: request bodies in flight share one budget (``--max-body-total``).

Slow uploaders that never finish their bodies each hold what they declared; past the budget a
POST is refused with 503 and ``Retry-After`` before its body is read, while a small request
still fits and is served, and the bytes come back when an uploader goes away.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Iterator

import pytest

from ..proc import MODERN
from ..transports.http_util import (
    MCPLINE,
    TEST_SERVER,
    HttpServer,
    call,
    raw_request,
    request_body,
    status_of,
)

MiB = 1024 * 1024
BODY = 3 * MiB
TOTAL = 8 * MiB


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def start_upload(srv: HttpServer, size: int) -> socket.socket:
    """A POST that declares ``size`` bytes and sends all but the last one (or less, when the
    server refuses it before reading and closes the connection)."""
    s = socket.create_connection((srv.host, srv.port), timeout=30)
    with contextlib.suppress(OSError):
        s.sendall(head(srv, size) + b" " * (size - 1))
    return s


def head(srv: HttpServer, size: int) -> bytes:
    """The head of a modern POST that declares ``size`` bytes of body."""
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Mcp-Method: tools/list\r\nMCP-Protocol-Version: {MODERN}\r\n"
        f"Content-Length: {size}\r\n\r\n"
    ).encode()


def upload(srv: HttpServer, request_id: int, wait: float = 5) -> bytes:
    """A ``tools/list`` padded to `BODY` bytes: the server's answer, whether it refuses the
    request before its body (then the body is never sent) or reads and serves it. ``wait`` is
    how long an early refusal is waited for before the body is sent."""
    body = request_body(request_id, "tools/list") + b" " * BODY
    with socket.create_connection((srv.host, srv.port), timeout=30) as s:
        s.sendall(head(srv, len(body)))
        if not select.select([s], [], [], wait)[0]:  # no early refusal: the body is wanted
            with contextlib.suppress(OSError):
                s.sendall(body)
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and status_of(b"".join(chunks)) == 200:
                    break
    return b"".join(chunks)


@pytest.fixture
def srv() -> Iterator[HttpServer]:
    server = HttpServer(
        [MCPLINE, "run", str(TEST_SERVER), "--http", "127.0.0.1:0", "--max-body-total", str(TOTAL)]
    )
    yield server
    server.stop()


@pytest.mark.linux_only(reason="reads the server's RSS from /proc")
def test_slow_uploads_hold_no_more_than_the_budget(srv: HttpServer) -> None:
    small = call(srv, 1, "tools/list")
    assert small.status == 200
    before = rss(srv.proc.pid)
    held = [start_upload(srv, BODY) for _ in range(2)]  # 6 of 8 MiB held
    try:
        # Each upload is under way once the server has answered anything sent after it.
        assert call(srv, 2, "tools/list").status == 200
        refused = upload(srv, 3)
        assert status_of(refused) == 503 and b"\r\nretry-after: 1\r\n" in refused.lower()
        assert b"max_body_total_bytes" in refused
        flood = [start_upload(srv, BODY) for _ in range(40)]  # 120 MiB offered
        try:
            assert call(srv, 4, "tools/list").status == 200  # a small request still fits
            grown = rss(srv.proc.pid) - before
            assert grown < 64 * MiB, f"the server grew {grown / MiB:.0f} MiB"
        finally:
            for s in flood:
                s.close()
    finally:
        for s in held:
            s.close()
    # The held bytes come back once the uploaders are gone (the server sees the close).
    deadline = time.monotonic() + 30
    while True:
        again = status_of(upload(srv, 5, wait=0.2))
        if again == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert again == 200, again


@pytest.mark.parametrize("digits", [19, 40, 5000])
def test_an_absurd_content_length_is_refused_unread(srv: HttpServer, digits: int) -> None:
    """Refused by the HTTP parser (400) or as too large (413); never a 500."""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {'9' * digits}\r\n\r\n{{}}"
    ).encode()
    assert status_of(raw_request(srv, head)) in (400, 413)
    assert call(srv, 1, "tools/list").status == 200
    assert "Traceback" not in srv.stderr
