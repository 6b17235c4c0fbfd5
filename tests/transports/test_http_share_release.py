"""A request gives its share back as soon as it is answered, against a real ``mcpline run
--http`` server: a client at its ``--max-requests-per-client`` that pipelines its next
request behind one that ran past `WATCH_AFTER` (so a task watched for its disconnection) is
served, not refused 429 (uvicorn starts the next request as the response is written)."""

from __future__ import annotations

import socket
import time

from mcpline.transports.http.modern import WATCH_AFTER

from .http_util import MCPLINE, TEST_SERVER, HttpServer, modern_headers, request_body


def post(id: int, name: str, arguments: dict[str, object]) -> bytes:
    body = request_body(id, "tools/call", {"name": name, "arguments": arguments})
    lines = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in modern_headers("tools/call", name).items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def statuses(s: socket.socket, count: int, timeout: float = 30) -> list[int]:
    """The statuses of the next ``count`` responses (each with a Content-Length)."""
    got = b""
    found: list[int] = []
    deadline = time.monotonic() + timeout
    while len(found) < count and time.monotonic() < deadline:
        head, sep, rest = got.partition(b"\r\n\r\n")
        if sep:
            fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
            length = int(fields.get(b"content-length", b"0"))
            if len(rest) >= length:
                found.append(int(head.split(b" ", 2)[1]))
                got = rest[length:]
                continue
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    return found


def test_a_pipelined_request_is_not_refused_for_the_share_of_the_one_before() -> None:
    server = HttpServer(
        [
            MCPLINE,
            "run",
            str(TEST_SERVER),
            "--http",
            "127.0.0.1:0",
            "--max-requests-per-client",
            "1",
        ]
    )
    try:
        ms = int(WATCH_AFTER * 1000) * 4
        with socket.create_connection((server.host, server.port), timeout=30) as s:
            for round in range(3):
                slow = post(2 * round, "wait", {"key": f"slow{round}", "ms": ms})
                quick = post(2 * round + 1, "events", {"key": "none"})
                s.sendall(slow + quick)
                assert statuses(s, 2) == [200, 200]
    finally:
        server.stop()
    assert "Traceback" not in server.stderr
