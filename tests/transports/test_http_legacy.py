"""Legacy (2025-11-25) Streamable HTTP sessions on the same endpoint, against a real uvicorn
process: the handshake, requests for input on the POST stream answered by POST, cancellation
by notification, the GET stream, resumption with Last-Event-ID, DELETE, expiry and bounds."""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcpline.transports.http.legacy import EVENT_ID_DIGITS, parse_event_id

from .. import wirecheck
from .http_util import (
    ACCEPT,
    HttpServer,
    Reply,
    call,
    parse_events,
    post,
    spawn_server,
)

LEGACY = "2025-11-25"


@pytest.fixture(scope="module")
def srv() -> Iterator[HttpServer]:
    server = spawn_server("--keepalive", "5")
    yield server
    assert server.stop() == 0, server.stderr
    assert "Traceback" not in server.stderr, server.stderr


def rpc(id: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def note(method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def headers(session: str | None = None, version: str | None = LEGACY) -> dict[str, str]:
    h = {"Content-Type": "application/json", "Accept": ACCEPT}
    if version is not None:
        h["MCP-Protocol-Version"] = version
    if session is not None:
        h["Mcp-Session-Id"] = session
    return h


def check(reply: Reply, method: str | None) -> None:
    for msg in reply.messages:
        assert not wirecheck.check_message(msg, method=method, version=LEGACY), msg


def initialize(srv: HttpServer, caps: dict[str, Any] | None = None) -> tuple[str, Reply]:
    params = {
        "protocolVersion": LEGACY,
        "capabilities": caps if caps is not None else {"elicitation": {}},
        "clientInfo": {"name": "legacy-test", "version": "1"},
    }
    r = post(srv, rpc(0, "initialize", params), headers(version=None))
    assert r.status == 200, r
    check(r, "initialize")
    session = r.headers["mcp-session-id"]
    assert post(srv, note("notifications/initialized"), headers(session)).status == 202
    return session, r


def request(srv: HttpServer, session: str, id: Any, method: str, params: Any = None) -> Reply:
    r = post(srv, rpc(id, method, params), headers(session))
    check(r, method)
    return r


def result_of(reply: Reply, id: Any) -> Any:
    [msg] = [m for m in reply.messages if m.get("id") == id and "method" not in m]
    return msg.get("result", msg.get("error"))


def test_initialize_mints_a_visible_ascii_session_and_primes_the_stream(srv: HttpServer) -> None:
    session, r = initialize(srv)
    assert re.fullmatch(r"[\x21-\x7e]{32,}", session)
    assert r.headers["content-type"] == "text/event-stream"
    assert r.headers["x-accel-buffering"] == "no"
    priming, *rest = r.events
    assert priming["id"].endswith(".0") and priming["data"] == "" and int(priming["retry"]) > 0
    result = result_of(r, 0)
    assert result["protocolVersion"] == LEGACY and "resultType" not in result
    assert all(e["id"].startswith(priming["id"].split(".")[0] + ".") for e in rest)
    other, _ = initialize(srv)
    assert other != session


def test_ping_and_set_level_are_exactly_empty(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    assert result_of(request(srv, session, 1, "ping"), 1) == {}
    assert result_of(request(srv, session, 2, "logging/setLevel", {"level": "debug"}), 2) == {}


def test_requests_need_their_session(srv: HttpServer) -> None:
    r = post(srv, rpc(1, "tools/list"), headers())
    assert r.status == 400 and "Mcp-Session-Id" in r.json["error"]["message"]
    assert r.json["id"] == 1
    r = post(srv, rpc(2, "tools/list"), headers("no-such-session"))
    assert r.status == 404 and r.json["error"]["code"] == -32600
    assert "sticky routing" in r.json["error"]["message"]
    for method in ("GET", "DELETE"):
        h = {"Accept": "text/event-stream", "Mcp-Session-Id": "no-such-session"}
        assert post(srv, b"", h, method=method).status == 404


def test_delete_ends_the_session(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    assert result_of(request(srv, session, 1, "tools/list"), 1)["tools"]
    r = post(srv, b"", {"Mcp-Session-Id": session}, method="DELETE")
    assert r.status == 204
    assert post(srv, rpc(2, "tools/list"), headers(session)).status == 404
    assert post(srv, b"", {"Mcp-Session-Id": session}, method="DELETE").status == 404


def test_a_second_initialize_on_a_session_is_refused(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "x"}}
    r = post(srv, rpc(9, "initialize", params), headers(session))
    assert result_of(r, 9)["code"] == -32600


def test_a_refused_initialize_mints_no_session(srv: HttpServer) -> None:
    r = post(srv, rpc(1, "initialize", {"protocolVersion": 7}), headers(version=None))
    assert r.status == 200 and r.json["error"]["code"] == -32602
    assert "mcp-session-id" not in r.headers


def test_input_requests_travel_on_the_post_stream_and_answers_come_by_post(
    srv: HttpServer,
) -> None:
    session, _ = initialize(srv)
    conn = srv.connection()
    conn.request(
        "POST", "/mcp", body=rpc(5, "tools/call", {"name": "ask_name"}), headers=headers(session)
    )
    resp = conn.getresponse()
    assert resp.status == 200
    events = parse_events(iter(resp.readline, b""))
    assert next(events)["data"] == ""  # priming
    asked = json.loads(next(events)["data"])
    assert asked["method"] == "elicitation/create" and "id" in asked
    assert not wirecheck.check_message(asked, version=LEGACY)
    answer = {
        "jsonrpc": "2.0",
        "id": asked["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}},
    }
    r = post(srv, json.dumps(answer).encode(), headers(session))
    assert r.status == 202 and r.body == b""
    final = json.loads(next(events)["data"])
    assert final["id"] == 5 and final["result"]["content"][0]["text"] == "hello Ada"
    assert list(events) == []  # the stream ends after the result
    conn.close()


def wait_events(srv: HttpServer, key: str, want: list[str]) -> list[str]:
    got: list[str] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r = call(srv, 1, "tools/call", {"name": "events", "arguments": {"key": key}})
        got = r.json["result"]["structuredContent"]["result"]
        if got == want:
            break
        time.sleep(0.05)
    return got


def test_notifications_cancelled_cancels_and_a_disconnect_does_not(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    conn = srv.connection()
    conn.request(
        "POST",
        "/mcp",
        body=rpc(
            7, "tools/call", {"name": "wait", "arguments": {"key": "legacy-cancel", "ms": 30000}}
        ),
        headers=headers(session),
    )
    resp = conn.getresponse()
    assert wait_events(srv, "legacy-cancel", ["started"]) == ["started"]
    cancel = note("notifications/cancelled", {"requestId": 7, "reason": "test"})
    assert post(srv, cancel, headers(session)).status == 202
    assert wait_events(srv, "legacy-cancel", ["started", "cancelled"]) == ["started", "cancelled"]
    rest = [e for e in parse_events(iter(resp.readline, b"")) if e.get("data")]
    assert rest == []  # ended without a result
    conn.close()

    conn = srv.connection()
    conn.request(
        "POST",
        "/mcp",
        body=rpc(8, "tools/call", {"name": "wait", "arguments": {"key": "legacy-drop", "ms": 300}}),
        headers=headers(session),
    )
    resp = conn.getresponse()
    priming = next(parse_events(iter(resp.readline, b"")))
    conn.close()  # gone, not cancelled: the result waits for a resumption
    assert wait_events(srv, "legacy-drop", ["started", "finished"]) == ["started", "finished"]
    r = post(
        srv,
        None,
        {
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": LEGACY,
            "Last-Event-ID": priming["id"],
        },
        method="GET",
    )
    assert r.status == 200 and result_of(r, 8)["content"][0]["text"] == "done"


def test_a_server_closed_stream_is_resumed_with_last_event_id(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    r = post(
        srv,
        rpc(3, "tools/call", {"name": "interrupted", "_meta": {"progressToken": 1}}),
        headers(session),
    )
    assert r.status == 200
    assert [m.get("method") for m in r.messages] == ["notifications/progress"]  # no result
    last = r.events[-1]["id"]
    get_headers = {
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": LEGACY,
        "Last-Event-ID": last,
    }
    resumed = post(srv, None, get_headers, method="GET")
    assert resumed.status == 200 and resumed.headers["content-type"] == "text/event-stream"
    assert result_of(resumed, 3)["content"][0]["text"] == "after the break"
    assert all(e["id"] > last for e in resumed.events)
    again = post(srv, None, {**get_headers, "Last-Event-ID": "99.0"}, method="GET")
    assert again.status == 400
    for bad in ("9" * 5000, "1." + "9" * 5000, "x.1", "1", "-1.0"):
        refused = post(srv, None, {**get_headers, "Last-Event-ID": bad}, method="GET")
        assert refused.status == 400, bad
        assert refused.json["error"]["code"] == -32600
    assert "Traceback" not in srv.stderr


def test_a_last_event_id_is_parsed_within_bounds() -> None:
    assert parse_event_id("3.17") == (3, 17)
    assert parse_event_id(" 3.0 ") == (3, 0)
    assert parse_event_id("9" * EVENT_ID_DIGITS + ".1") == (int("9" * EVENT_ID_DIGITS), 1)
    for bad in (
        "9" * (EVENT_ID_DIGITS + 1) + ".1",
        "1." + "9" * 5000,
        "",
        ".",
        "1.",
        "a.b",
        "\u0661.0",
    ):
        assert parse_event_id(bad) is None, bad


def test_the_get_stream_carries_session_notifications(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    conn = srv.connection()
    conn.request(
        "GET",
        "/mcp",
        headers={
            "Accept": "text/event-stream",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": LEGACY,
        },
    )
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
    second = post(
        srv, None, {"Accept": "text/event-stream", "Mcp-Session-Id": session}, method="GET"
    )
    assert second.status == 409
    assert (
        post(
            srv, None, {"Accept": "application/json", "Mcp-Session-Id": session}, method="GET"
        ).status
        == 406
    )
    call(srv, 1, "tools/call", {"name": "bump"})  # a modern request changes the list
    event = next(e for e in parse_events(iter(resp.readline, b"")) if e.get("data"))
    changed = json.loads(event["data"])
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert post(srv, b"", {"Mcp-Session-Id": session}, method="DELETE").status == 204
    assert resp.readline() == b""  # ended with the session
    conn.close()


def test_a_duplicate_id_in_flight_is_refused(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    conn = srv.connection()
    body = rpc(11, "tools/call", {"name": "wait", "arguments": {"key": "dup", "ms": 500}})
    conn.request("POST", "/mcp", body=body, headers=headers(session))
    resp = conn.getresponse()
    assert wait_events(srv, "dup", ["started"]) == ["started"]
    r = post(srv, body, headers(session))
    assert r.status == 400 and r.json["error"]["code"] == -32600 and "id" not in r.json
    resp.read()
    conn.close()


def test_modern_requests_are_served_beside_sessions(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    r = call(srv, 1, "tools/list", headers={"Mcp-Session-Id": session})
    assert r.status == 200 and r.json["result"]["resultType"] == "complete"


def test_idle_sessions_expire() -> None:
    server = spawn_server("--idle", "0.4")
    try:
        first, _ = initialize(server)
        deadline = time.monotonic() + 60
        while post(server, rpc(1, "ping"), headers(first)).status == 200:
            assert time.monotonic() < deadline, "the idle session never expired"
            time.sleep(1.0)  # longer than the idle timeout: the ping does not keep it alive
        assert post(server, rpc(1, "ping"), headers(first)).status == 404
    finally:
        assert server.stop() == 0


def test_a_client_at_its_share_gives_up_its_own_least_recently_used_session() -> None:
    server = spawn_server("--option", "max_sessions_per_client=2")
    try:
        a, _ = initialize(server)
        b, _ = initialize(server)
        assert post(server, rpc(1, "ping"), headers(a)).status == 200
        c, _ = initialize(server)  # a third of the same client: b, its least recently used, goes
        assert post(server, rpc(1, "ping"), headers(b)).status == 404
        assert post(server, rpc(1, "ping"), headers(a)).status == 200
        assert post(server, rpc(1, "ping"), headers(c)).status == 200
    finally:
        assert server.stop() == 0


def test_sessions_belong_to_the_token_that_opened_them() -> None:
    server = spawn_server("--auth")
    try:
        params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "x"}}
        alice = {**headers(version=None), "Authorization": "Bearer secret-token"}
        r = post(server, rpc(0, "initialize", params), alice)
        session = r.headers["mcp-session-id"]
        bob = {**headers(session), "Authorization": "Bearer other-token"}
        r = post(server, rpc(1, "ping"), bob)
        assert r.status == 403
        r = post(server, rpc(1, "ping"), {**bob, "Authorization": "Bearer secret-token"})
        assert r.status == 200
    finally:
        assert server.stop() == 0


def test_legacy_connection_reuse_after_stream_ends(srv: HttpServer) -> None:
    session, _ = initialize(srv)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    for i in range(5):
        conn.request("POST", "/mcp", body=rpc(i, "ping"), headers=headers(session))
        resp = conn.getresponse()
        events = list(parse_events(iter(resp.readline, b"")))
        assert json.loads(events[-1]["data"])["result"] == {}
    conn.close()
