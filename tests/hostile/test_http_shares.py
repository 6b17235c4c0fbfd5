"""Issue 22, M6 and M7: one client cannot take what the others need, against a real
``mcpline run --http`` server on loopback. A client is its principal, else its address: the
attacker speaks from 127.0.0.1, the victims from other loopback addresses (127.0.0.2, …).

* requests and listens in progress have a share per client (429 past it) inside the server's
  total (503), so a client holding every listen it can still leaves room for the others;
* a flood of legacy ``initialize`` never ends another client's session in use or recently
  used: a client at its share gives up its own oldest idle session, a full server refuses
  newcomers (503 with ``Retry-After``).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import subprocess
import time

from ..proc import MODERN
from ..transports.http_util import (
    MCPLINE,
    TEST_SERVER,
    HttpServer,
    request_body,
    status_of,
)
from ..wirecheck import LEGACY

ATTACKER = "127.0.0.1"


def victim(n: int) -> str:
    return f"127.0.0.{n + 1}"


def serve(stopped: list[HttpServer], *flags: str) -> HttpServer:
    server = HttpServer([MCPLINE, "run", str(TEST_SERVER), "--http", "127.0.0.1:0", *flags])
    stopped.append(server)
    return server


def send(server: HttpServer, source: str, body: bytes, headers: dict[str, str]) -> socket.socket:
    """A POST from ``source``, on a connection of its own, left for the caller to read."""
    s = socket.create_connection((server.host, server.port), timeout=30, source_address=(source, 0))
    lines = ["POST /mcp HTTP/1.1", f"Host: {server.host}:{server.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return s


def modern(method: str, name: str | None = None) -> dict[str, str]:
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        h["Mcp-Name"] = name
    return h


def head_of(s: socket.socket, timeout: float = 30) -> bytes:
    """The bytes of the response's head (or what came before ``timeout`` or a close)."""
    got = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in got and time.monotonic() < deadline:
        if not select.select([s], [], [], 0.5)[0]:
            continue
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def answered(s: socket.socket) -> bool:
    return bool(select.select([s], [], [], 0)[0])


def served_call(server: HttpServer, source: str, i: int) -> int:
    """The status of a quick ``tools/call`` from ``source``."""
    body = request_body(i, "tools/call", {"name": "events", "arguments": {"key": "x"}})
    with contextlib.closing(send(server, source, body, modern("tools/call", "events"))) as s:
        return status_of(head_of(s))


def listen_body(i: int) -> bytes:
    return request_body(i, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})


def test_one_client_holding_every_listen_it_can_leaves_room_for_the_others(
    stopped: list[HttpServer],
) -> None:
    """200 listens from one address (the review's attack held all 1,024 request slots): 32
    are opened, the rest get 429 at once, and other clients still listen and call."""
    server = serve(stopped)
    held: list[socket.socket] = []
    try:
        for i in range(200):
            held.append(send(server, ATTACKER, listen_body(i), modern("subscriptions/listen")))
        heads = [head_of(s) for s in held]
        statuses = [status_of(h) for h in heads]
        assert statuses.count(200) == 32 and statuses.count(429) == 168, statuses
        refused = heads[statuses.index(429)].lower()
        assert b"retry-after: 1" in refused
        for n in range(1, 4):  # three other clients: a listen and a call each
            other = send(server, victim(n), listen_body(1000 + n), modern("subscriptions/listen"))
            held.append(other)
            assert status_of(head_of(other)) == 200
            assert served_call(server, victim(n), 2000 + n) == 200
        assert served_call(server, ATTACKER, 3000) == 200  # calls fit beside its listens
    finally:
        for s in held:
            s.close()
    assert "Traceback" not in server.stderr


def test_one_client_flooding_calls_gets_its_share_and_the_others_are_served(
    stopped: list[HttpServer],
) -> None:
    """150 calls that take a minute, from one address: 128 run, 22 get 429; other clients'
    calls are served meanwhile; once the first client's calls end it is served again."""
    server = serve(stopped)
    held: list[socket.socket] = []
    try:
        for i in range(150):
            body = request_body(
                i, "tools/call", {"name": "wait", "arguments": {"key": "w", "ms": 60_000}}
            )
            held.append(send(server, ATTACKER, body, modern("tools/call", "wait")))
        deadline = time.monotonic() + 60
        while sum(answered(s) for s in held) < 22 and time.monotonic() < deadline:
            time.sleep(0.1)
        refused = [s for s in held if answered(s)]
        assert len(refused) == 22
        assert all(status_of(head_of(s)) == 429 for s in refused)
        for n in range(1, 4):
            assert served_call(server, victim(n), 100 + n) == 200
        assert served_call(server, ATTACKER, 200) == 429  # still at its share
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 60  # the closed calls are cancelled and give their share back
    while served_call(server, ATTACKER, 300) != 200:
        assert time.monotonic() < deadline, "the share never came back"
        time.sleep(0.2)


def initialize(server: HttpServer, source: str) -> tuple[int, str | None, bytes]:
    """A legacy ``initialize`` from ``source``: its status, session id and raw head."""
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "x"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with contextlib.closing(send(server, source, body.encode(), headers)) as s:
        head = head_of(s)
    sid = None
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"mcp-session-id:"):
            sid = line.split(b":", 1)[1].strip().decode()
    return status_of(head), sid, head


def ping(server: HttpServer, source: str, sid: str) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LEGACY,
        "Mcp-Session-Id": sid,
    }
    with contextlib.closing(send(server, source, body, headers)) as s:
        return status_of(head_of(s))


def test_an_initialize_flood_never_ends_a_session_in_use(stopped: list[HttpServer]) -> None:
    """The review's attack: 1,500 unauthenticated ``initialize`` evicted a victim's session.
    Now the flooding client only ever gives up its own sessions."""
    server = serve(stopped)
    status, sid, _ = initialize(server, victim(1))
    assert status == 200 and sid is not None
    statuses: list[int] = []
    for _ in range(300):
        statuses.append(initialize(server, ATTACKER)[0])
    assert set(statuses) == {200}  # each ends one of its own 16: the flood serves only itself
    assert ping(server, victim(1), sid) == 200
    assert "Traceback" not in server.stderr


def test_a_full_server_refuses_newcomers_and_keeps_recent_sessions(
    stopped: list[HttpServer],
) -> None:
    server = serve(stopped, "--max-sessions", "6", "--max-sessions-per-client", "2")
    status, mine, _ = initialize(server, victim(1))
    assert status == 200 and mine is not None
    for n in range(2, 5):  # five more sessions from other clients: the server is full
        for _ in range(2 if n < 4 else 1):
            assert initialize(server, victim(n))[0] == 200
    status, sid, head = initialize(server, victim(9))
    assert status == 503 and sid is None
    assert b"retry-after: 1" in head.lower()
    status, _, head = initialize(server, victim(2))  # a client at its share: its own goes
    assert status == 200
    assert ping(server, victim(1), mine) == 200
    assert "Traceback" not in server.stderr


def test_the_share_flags_are_checked() -> None:
    flags = ["--http", "127.0.0.1:0", "--max-listens-per-client", "0"]
    done = subprocess.run(
        [MCPLINE, "run", str(TEST_SERVER), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--max-listens-per-client must be positive" in done.stderr
