"""Issue 22, M4: request bodies in flight share one budget (``--max-body-total``).

Slow uploaders that never finish their bodies each hold what they declared; past the budget a
POST is refused with 503 and ``Retry-After`` before its body is read, while a small request
still fits and is served, and the bytes come back when an uploader goes away.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import pytest

from ..transports.http_util import (
    MCPLINE,
    TEST_SERVER,
    HttpServer,
    call,
    modern_headers,
    post,
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
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {size}\r\n\r\n"
    ).encode()
    with contextlib.suppress(OSError):
        s.sendall(head + b" " * (size - 1))
    return s


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
        refused = post(
            srv, request_body(3, "tools/list") + b" " * BODY, modern_headers("tools/list")
        )
        assert refused.status == 503 and refused.headers["retry-after"] == "1"
        assert "max_body_total_bytes" in refused.json["error"]["message"]
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
        again = post(srv, request_body(5, "tools/list") + b" " * BODY, modern_headers("tools/list"))
        if again.status != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert again.status == 200, again.status


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
