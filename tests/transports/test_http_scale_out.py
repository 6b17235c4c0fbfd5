"""Scale-out over HTTP with a real redis-server: ``mcpline run FILE --http ... --workers 2 --bus
URL`` (two uvicorn workers on one socket) and two replicas (two ``mcpline run --http``
processes on two ports), all real processes.

A ``subscriptions/listen`` held by one process hears the changes made through the other
(``notifications/tools/list_changed`` after a ``tools/call`` that registers a tool, and the
update of a subscribed URI), exactly once; a ``requestState`` sealed by one is accepted by the
other and refused when used again, on either (the shared ledger). Without a bus, the CLI
warns and the other worker's change is not heard.

Uvicorn's workers share one listening socket, so nobody chooses the worker of a connection:
`connect_to` opens connections until one is answered by the wanted pid (the ``pid`` tool),
then keeps using that connection (HTTP keep-alive stays with its worker).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..proc import FIXTURES
from ..redis_server import RedisServer
from .http_util import MCPLINE, HttpServer, Reply, check_wire, modern_headers, parse_events
from .http_util import request_body as body_of
from .http_util import send as send_on

SERVER = str(FIXTURES / "scaleout_server.py")
KEY = {"MCPLINE_STATE_KEY": "one-secret-shared-by-every-process"}
ACK = "notifications/subscriptions/acknowledged"
TOOLS_CHANGED = "notifications/tools/list_changed"
UPDATED = "notifications/resources/updated"
SUB = "io.modelcontextprotocol/subscriptionId"
QUIET = 1.5
"""How long to watch for anything extra (nothing should come)."""
PIN_TIMEOUT = 60.0
"""Generous: on a loaded machine one worker may win many accepts in a row."""
BAD_STATE = -32602


@pytest.fixture(autouse=True)
def _no_bus_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bus comes only from what each test passes."""
    monkeypatch.delenv("MCPLINE_BUS_URL", raising=False)


def spawn(*args: str, env: dict[str, str] | None = None) -> HttpServer:
    """``mcpline run scaleout_server.py --http 127.0.0.1:0 ARGS`` with the shared state key."""
    return HttpServer(
        [MCPLINE, "run", SERVER, "--http", "127.0.0.1:0", *args], env={**KEY, **(env or {})}
    )


def request(
    conn: http.client.HTTPConnection, id: Any, method: str, params: dict[str, Any] | None = None
) -> Reply:
    """A well-formed 2026-07-28 request on ``conn`` (kept alive), headers mirrored."""
    p = params or {}
    name = p.get("name") if method == "tools/call" else None
    caps: dict[str, Any] = {"elicitation": {}}
    reply = send_on(conn, body_of(id, method, p, caps=caps), modern_headers(method, name))
    check_wire(reply, method)
    return reply


def tool(conn: http.client.HTTPConnection, name: str, /, **arguments: Any) -> Any:
    """A tools/call on ``conn``: its structured content (a scalar return unwrapped from its
    ``{"result": ...}``; a ``dict`` return is the object itself), else its text as JSON."""
    reply = request(conn, name, "tools/call", {"name": name, "arguments": arguments})
    assert reply.status == 200, (reply.status, reply.body)
    result = reply.json["result"]
    assert not result.get("isError"), result
    if "structuredContent" in result:
        content = result["structuredContent"]
        return content["result"] if list(content) == ["result"] else content
    return json.loads(result["content"][0]["text"])


def pid_of(conn: http.client.HTTPConnection) -> int:
    answer: int = tool(conn, "pid")
    return answer


def connect_to(server: HttpServer, pid: int | None = None, *, avoid: int | None = None) -> Any:
    """A kept-alive connection answered by worker ``pid`` (or by any worker but ``avoid``):
    new connections until one lands there. Returns (connection, its pid)."""
    deadline = time.monotonic() + PIN_TIMEOUT
    while True:
        conn = server.connection(timeout=15)
        got = pid_of(conn)
        if (pid is None or got == pid) and got != avoid:
            return conn, got
        conn.close()
        assert time.monotonic() < deadline, f"no connection reached pid {pid} (avoiding {avoid})"


def worker_pids(server: HttpServer, n: int = 2) -> set[int]:
    """The pids of the ``n`` workers, seen on new connections."""
    pids: set[int] = set()
    deadline = time.monotonic() + PIN_TIMEOUT
    while len(pids) < n:
        assert time.monotonic() < deadline, f"saw only workers {pids}"
        conn = server.connection(timeout=15)
        pids.add(pid_of(conn))
        conn.close()
    return pids


class Listen:
    """A ``subscriptions/listen`` held open on a connection of its own; a thread reads it."""

    def __init__(self, server: HttpServer, id: Any, pid: int | None = None) -> None:
        self.conn, self.pid = connect_to(server, pid)
        self.id = id
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        notifications = {"toolsListChanged": True, "resourceSubscriptions": ["item://a"]}
        params = {"notifications": notifications}
        self.conn.request(
            "POST",
            server.path,
            body=body_of(id, "subscriptions/listen", params),
            headers=modern_headers("subscriptions/listen"),
        )
        self._sock = self.conn.sock
        resp = self.conn.getresponse()
        assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
        self._events: Iterator[dict[str, Any]] = parse_events(iter(resp.readline, b""))
        threading.Thread(target=self._pump, daemon=True).start()
        ack = self.next(15)
        assert ack["method"] == ACK and ack["params"]["_meta"][SUB] == id, ack

    def _pump(self) -> None:
        try:
            for event in self._events:
                if event.get("data"):
                    self.inbox.put(json.loads(event["data"]))
        except (OSError, ValueError, AttributeError):  # AttributeError: closed meanwhile
            pass

    def next(self, timeout: float) -> dict[str, Any]:
        return self.inbox.get(timeout=timeout)

    def collect(self, until: Callable[[list[dict[str, Any]]], bool], timeout: float = 20) -> Any:
        """Messages until ``until`` holds of them, then whatever comes for `QUIET` seconds."""
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while not until(got):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; got {got}"
            with contextlib.suppress(queue.Empty):
                got.append(self.next(left))
        return got + self.quiet()

    def quiet(self, seconds: float = QUIET) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                got.append(self.next(left))
            except queue.Empty:
                break
        return got

    def close(self) -> None:
        """Hang up (the reading thread holds the response until its socket is shut down)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()


def count(msgs: list[dict[str, Any]], method: str, **params: Any) -> int:
    return sum(
        1
        for m in msgs
        if m.get("method") == method and all(m["params"].get(k) == v for k, v in params.items())
    )


def has(method: str, **params: Any) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda msgs: count(msgs, method, **params) >= 1


def change_elsewhere_is_heard(listen: Listen, other: Callable[[], Any], other_pid: int) -> None:
    """A tool registered and a URI touched through ``other()`` (a fresh connection to the
    process ``other_pid``) reach ``listen`` exactly once each, tagged with its id."""
    conn = other()
    assert tool(conn, "add_tool", name="made_elsewhere") == other_pid
    heard = listen.collect(has(TOOLS_CHANGED))
    assert count(heard, TOOLS_CHANGED) == 1 and len(heard) == 1, heard
    assert heard[0]["params"]["_meta"][SUB] == listen.id

    assert tool(conn, "touch", uri="item://a") == other_pid
    heard = listen.collect(has(UPDATED, uri="item://a"))
    assert count(heard, UPDATED, uri="item://a") == 1 and len(heard) == 1, heard

    assert tool(conn, "touch", uri="item://elsewhere") == other_pid  # nobody subscribed
    assert listen.quiet() == []
    conn.close()


def seal(conn: http.client.HTTPConnection) -> str:
    first = request(conn, 1, "tools/call", {"name": "sealed"})
    result = first.json["result"]
    assert result["resultType"] == "input_required", result
    state: str = result["requestState"]
    return state


def answer(conn: http.client.HTTPConnection, state: str) -> Reply:
    params = {
        "name": "sealed",
        "inputResponses": {"ok": {"action": "accept", "content": {"ok": True}}},
        "requestState": state,
    }
    return request(conn, 2, "tools/call", params)


def state_opens_once_anywhere(
    issuer: Callable[[], http.client.HTTPConnection],
    other: Callable[[], http.client.HTTPConnection],
    issuer_pid: int,
    other_pid: int,
) -> None:
    """A state sealed by the issuer is accepted by the other process, then refused by both."""
    conn = issuer()
    state = seal(conn)
    conn.close()
    conn = other()
    accepted = answer(conn, state)
    conn.close()
    text = accepted.json["result"]["content"][0]["text"]
    assert text == f"issued by {issuer_pid}, verified by {other_pid}", accepted.json
    for conn in (issuer(), other()):  # the issuer never saw it used: only the ledger knows
        refused = answer(conn, state)
        assert refused.status == 400, (refused.status, refused.body)
        assert refused.json["error"]["code"] == BAD_STATE, refused.json
        conn.close()


def test_two_workers_share_changes_and_states_through_redis(redis_server: RedisServer) -> None:
    server = spawn("--workers", "2", "--bus", redis_server.url)
    listen = None
    try:
        assert "2 workers" in server.stderr and "warning" not in server.stderr, server.stderr
        a, b = sorted(worker_pids(server))
        for pid in (a, b):
            conn, _ = connect_to(server, pid)
            shared = tool(conn, "scale_out")
            assert shared == {
                "pid": pid,
                "bus": "RedisBus",
                "ledger": "RedisNonceLedger",
                "connected": True,
                "frozen": True,
            }, shared
            conn.close()
        listen = Listen(server, "on-a", a)
        change_elsewhere_is_heard(listen, lambda: connect_to(server, b)[0], b)
        state_opens_once_anywhere(
            lambda: connect_to(server, a)[0], lambda: connect_to(server, b)[0], a, b
        )
        state_opens_once_anywhere(
            lambda: connect_to(server, b)[0], lambda: connect_to(server, a)[0], b, a
        )
    finally:
        if listen is not None:
            listen.close()
        assert server.stop(30) == 0, server.stderr
    assert server.stdout == b""


def test_two_workers_without_a_bus_warn_and_do_not_share() -> None:
    server = spawn("--workers", "2")
    listen = None
    try:
        warning = [line for line in server.stderr_lines if "warning" in line]
        assert len(warning) == 1, server.stderr
        assert "hears only the changes made on its own worker" in warning[0]
        assert "a requestState can be used once on each worker" in warning[0]
        assert "--bus" in warning[0]
        a, b = sorted(worker_pids(server))
        listen = Listen(server, "alone", a)
        conn, _ = connect_to(server, b)
        assert tool(conn, "add_tool", name="unheard") == b
        assert listen.quiet() == []  # B's change stays on B
        conn.close()
        conn, _ = connect_to(server, a)
        assert tool(conn, "add_tool", name="heard") == a  # A's own change is heard
        assert count(listen.collect(has(TOOLS_CHANGED)), TOOLS_CHANGED) == 1
        conn.close()
    finally:
        if listen is not None:
            listen.close()
        assert server.stop(30) == 0, server.stderr


def test_two_replicas_share_changes_and_states_through_redis(redis_server: RedisServer) -> None:
    one = spawn("--bus", redis_server.url)
    two = spawn(env={"MCPLINE_BUS_URL": redis_server.url})  # the variable does as --bus
    listen = None
    try:
        for replica in (one, two):
            conn = replica.connection()
            shared = tool(conn, "scale_out")
            assert shared["bus"] == "RedisBus" and shared["ledger"] == "RedisNonceLedger"
            assert shared["connected"] is True and shared["frozen"] is True
            conn.close()
        listen = Listen(one, "on-one")
        pid_two = pid_of(conn := two.connection())
        conn.close()
        assert pid_two != listen.pid
        change_elsewhere_is_heard(listen, two.connection, pid_two)
        state_opens_once_anywhere(one.connection, two.connection, listen.pid, pid_two)
        state_opens_once_anywhere(two.connection, one.connection, pid_two, listen.pid)
    finally:
        if listen is not None:
            listen.close()
        assert one.stop(20) == 0, one.stderr
        assert two.stop(20) == 0, two.stderr
    assert one.stdout == b"" and two.stdout == b""
