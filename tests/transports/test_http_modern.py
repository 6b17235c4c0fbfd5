"""The 2026-07-28 HTTP binding against a real uvicorn process: each bad input gets the status
and JSON-RPC error the binding names, streams behave, and a client that leaves cancels."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ..proc import MODERN
from .http_util import (
    ACCEPT,
    HttpServer,
    Reply,
    body_of,
    call,
    check_wire,
    modern_headers,
    parse_events,
    post,
    raw_request,
    request_body,
    spawn_server,
    status_of,
)

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
SUB = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture(scope="module")
def srv() -> Iterator[HttpServer]:
    server = spawn_server("--keepalive", "0.3", "--max-body", "65536", "--body-timeout", "1")
    yield server
    assert server.stop() == 0, server.stderr
    assert server.stdout == b"", server.stdout[:500]
    assert "Traceback" not in server.stderr, server.stderr


def error_of(reply: Reply, status: int, code: int, id: Any = "absent") -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body[:300])
    assert reply.headers["content-type"] == "application/json"
    body = reply.json
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == code, body
    if id == "absent":
        assert "id" not in body, body
    else:
        assert body["id"] == id, body
    return dict(body["error"])


def text_of(reply: Reply) -> str:
    result = reply.messages[-1]["result"]
    return str(result["content"][0]["text"])


# --- the happy path ------------------------------------------------------------------------------


def test_a_request_without_notifications_is_answered_with_json(srv: HttpServer) -> None:
    r = call(srv, 1, "server/discover")
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in r.headers
    assert r.json["result"]["supportedVersions"] == [MODERN]
    r = call(
        srv,
        "two",
        "tools/call",
        {"name": "routed", "arguments": {"region": "eu"}},
        headers={"Mcp-Param-Region": "eu"},
    )
    assert text_of(r) == "eu 1 False "


def test_progress_streams_sse_events_then_the_result(srv: HttpServer) -> None:
    r = call(
        srv, 7, "tools/call", {"name": "progress", "arguments": {"steps": 3}}, progressToken="tok"
    )
    assert r.status == 200 and r.headers["content-type"] == "text/event-stream"
    assert r.headers["x-accel-buffering"] == "no" and "content-length" not in r.headers
    kinds = [m.get("method", "reply") for m in r.messages]
    assert kinds == ["notifications/progress"] * 3 + ["reply"]
    assert [m["params"]["progress"] for m in r.messages[:3]] == [1, 2, 3]
    assert all("id" not in e for e in r.events) and r.messages[-1]["id"] == 7


def test_log_messages_follow_the_requests_log_level(srv: HttpServer) -> None:
    quiet = call(srv, 1, "tools/call", {"name": "chatter"})
    assert quiet.headers["content-type"] == "application/json"  # no logLevel: nothing sent
    loud = call(
        srv,
        2,
        "tools/call",
        {"name": "chatter"},
        None,
        **{"io.modelcontextprotocol/logLevel": "warning"},
    )
    levels = [m["params"]["level"] for m in loud.messages if m.get("method")]
    assert levels == ["warning", "error"]


def test_session_ids_and_last_event_ids_are_ignored_on_modern_requests(srv: HttpServer) -> None:
    r = call(srv, 3, "tools/list", headers={"Mcp-Session-Id": "abc", "Last-Event-ID": "1.2"})
    assert r.status == 200 and "mcp-session-id" not in r.headers
    assert r.json["result"]["tools"]


def test_notifications_get_202_and_no_body(srv: HttpServer) -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/whatever"}).encode()
    r = post(srv, body, modern_headers("notifications/whatever"))
    assert r.status == 202 and r.body == b""


# --- malformed bodies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "id"),
    [
        (b"{not json", -32700, "absent"),
        (b"", -32700, "absent"),
        (b"\xff\xfe{}", -32700, "absent"),
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600, "absent"),
        (b'"just a string"', -32600, "absent"),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600, "absent"),
        (b'{"jsonrpc":"1.0","id":5,"method":"tools/list"}', -32600, 5),
        (b'{"jsonrpc":"2.0","id":6,"method":7}', -32600, 6),
        (b'{"jsonrpc":"2.0","method":7}', -32600, "absent"),
        (b'{"jsonrpc":"2.0","id":8,"result":{}}', -32600, "absent"),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":'
            + b"[" * 5000
            + b"]" * 5000
            + b"}",
            -32700,
            9,
        ),
    ],
)
def test_malformed_bodies_are_400_with_the_jsonrpc_error(
    srv: HttpServer, body: bytes, code: int, id: Any
) -> None:
    error_of(post(srv, body, modern_headers("tools/list")), 400, code, id)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Type": "text/plain"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ({"Accept": "application/json"}, 406),
        ({"Accept": "text/event-stream"}, 406),
        ({"Accept": "text/html"}, 406),
    ],
)
def test_wrong_media_types(srv: HttpServer, headers: dict[str, str], status: int) -> None:
    h = modern_headers("tools/list")
    h.update(headers)
    error_of(post(srv, request_body(1, "tools/list"), h), status, -32600)


def test_missing_content_type_and_accept(srv: HttpServer) -> None:
    h = modern_headers("tools/list")
    del h["Content-Type"]
    error_of(post(srv, request_body(1, "tools/list"), h), 415, -32600)
    h = modern_headers("tools/list")
    del h["Accept"]
    error_of(post(srv, request_body(1, "tools/list"), h), 406, -32600)


# --- version and _meta ---------------------------------------------------------------------------


def test_unsupported_version_in_both_header_and_body_is_32022(srv: HttpServer) -> None:
    h = modern_headers("server/discover", **{"MCP-Protocol-Version": "v999.0.0"})
    r = post(srv, request_body(301, "server/discover", None, **{PV: "v999.0.0"}), h)
    err = error_of(r, 400, -32022, 301)
    assert err["data"] == {"supported": [MODERN], "requested": "v999.0.0"}


def test_header_body_mismatch_comes_before_the_version_check(srv: HttpServer) -> None:
    r = post(
        srv,
        request_body(302, "server/discover", None, **{PV: "v999.0.0"}),
        modern_headers("server/discover"),
    )
    assert "MCP-Protocol-Version" in error_of(r, 400, -32020, 302)["message"]


def test_modern_meta_without_the_version_header_is_a_header_mismatch(srv: HttpServer) -> None:
    h = modern_headers("tools/list")
    del h["MCP-Protocol-Version"]
    r = post(srv, request_body(4, "tools/list"), h)
    assert "missing" in error_of(r, 400, -32020, 4)["message"]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": {CC: {}}},
        {"_meta": {PV: MODERN}},
    ],
)
def test_missing_meta_fields_are_32602_and_400(srv: HttpServer, params: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 10, "method": "server/discover", "params": params})
    error_of(post(srv, body.encode(), modern_headers("server/discover")), 400, -32602, 10)


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"]
)
def test_methods_the_modern_era_lacks_are_404_32601(srv: HttpServer, method: str) -> None:
    r = post(srv, request_body(11, method, {"level": "info", "uri": "x"}), modern_headers(method))
    error_of(r, 404, -32601, 11)


def test_missing_capability_is_400_32021(srv: HttpServer) -> None:
    r = call(srv, 12, "tools/call", {"name": "ask_name"}, caps={})
    # ask_name needs elicitation, which the request did not declare
    assert r.status == 400 and r.json["error"]["code"] == -32021


# --- mirrored headers ----------------------------------------------------------------------------


def routed_call(id: int, args: dict[str, Any], **headers: str) -> tuple[bytes, dict[str, str]]:
    h = modern_headers("tools/call", "routed")
    h.update({k.replace("_", "-"): v for k, v in headers.items()})
    return request_body(id, "tools/call", {"name": "routed", "arguments": args}), h


@pytest.mark.parametrize(
    ("args", "headers", "ok"),
    [
        ({"region": "us"}, {"Mcp-Param-Region": "us"}, True),
        ({"region": "us"}, {"mcp-param-region": "  us\t"}, True),
        ({"region": "Hello, 世界"}, {"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, True),
        ({"region": "us", "count": 5}, {"Mcp-Param-Region": "us", "Mcp-Param-Count": "5.0"}, True),
        (
            {"region": "us", "verbose": True},
            {"Mcp-Param-Region": "us", "Mcp-Param-Verbose": "true"},
            True,
        ),
        ({"region": "us", "count": None}, {"Mcp-Param-Region": "us"}, True),
        ({"region": "us"}, {}, False),
        ({"region": "us"}, {"Mcp-Param-Region": "eu"}, False),
        ({"region": "us"}, {"Mcp-Param-Region": "US"}, False),
        ({"region": "us"}, {"Mcp-Param-Region": "=?base64?dXM?="}, False),
        ({"region": "us"}, {"Mcp-Param-Region": "us", "Mcp-Param-Count": "1"}, False),
        ({"region": "us", "count": 5}, {"Mcp-Param-Region": "us", "Mcp-Param-Count": "6"}, False),
    ],
)
def test_mcp_param_headers_are_checked_against_the_arguments(
    srv: HttpServer, args: dict[str, Any], headers: dict[str, str], ok: bool
) -> None:
    body, h = routed_call(20, args)
    h.update(headers)
    r = post(srv, body, h)
    if ok:
        assert r.status == 200 and "result" in r.json, r.body
        check_wire(r, "tools/call")
    else:
        error_of(r, 400, -32020, 20)


@pytest.mark.parametrize(
    ("change", "ok"),
    [
        ({"Mcp-Method": None}, False),
        ({"Mcp-Method": "prompts/list"}, False),
        ({"Mcp-Method": "TOOLS/CALL"}, False),
        ({"Mcp-Name": None}, False),
        ({"Mcp-Name": "wrong_tool_name"}, False),
        ({"Mcp-Name": "  routed  "}, True),
        ({"Mcp-Name": "=?base64?cm91dGVk?="}, True),
        ({"Mcp-Name": "=?base64?cm91dGVk=?="}, False),
        ({"MCP-METHOD": "tools/call", "Mcp-Method": None}, True),
    ],
)
def test_standard_headers(srv: HttpServer, change: dict[str, str | None], ok: bool) -> None:
    body, h = routed_call(21, {"region": "us"}, Mcp_Param_Region="us")
    for k, v in change.items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    r = post(srv, body, h)
    if ok:
        assert r.status == 200 and "result" in r.json, r.body
    else:
        error_of(r, 400, -32020, 21)


def test_resources_read_mirrors_its_uri(srv: HttpServer) -> None:
    body = request_body(22, "resources/read", {"uri": "test://nothing"})
    error_of(post(srv, body, modern_headers("resources/read", "test://other")), 400, -32020, 22)


# --- GET, DELETE and other methods ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_without_a_session_are_405(srv: HttpServer, method: str) -> None:
    for headers in (
        {"Accept": "text/event-stream"},
        {
            "Accept": "text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Session-Id": "whatever",
        },
    ):
        r = post(srv, b"", headers, method=method)
        assert r.status == 405 and r.headers["allow"] in ("GET, POST, DELETE", "POST"), r
        assert r.json["error"]["code"] == -32600


def test_other_methods_are_405(srv: HttpServer) -> None:
    r = post(srv, b"{}", modern_headers("tools/list"), method="PUT")
    assert r.status == 405 and "POST" in r.headers["allow"]


def test_other_paths_are_404(srv: HttpServer) -> None:
    conn = srv.connection()
    conn.request(
        "POST",
        "/elsewhere",
        body=request_body(1, "tools/list"),
        headers=modern_headers("tools/list"),
    )
    assert conn.getresponse().status == 404


# --- origins, hosts and sizes --------------------------------------------------------------------


def test_a_foreign_origin_is_403_with_an_id_less_jsonrpc_error(srv: HttpServer) -> None:
    h = modern_headers("tools/list", Origin="http://evil.example.com")
    error_of(post(srv, request_body(1, "tools/list"), h), 403, -32600)
    h = modern_headers("tools/list", Origin=f"http://localhost:{srv.port + 1}")
    error_of(post(srv, request_body(1, "tools/list"), h), 403, -32600)


def test_the_endpoints_own_origin_is_served_with_cors_headers(srv: HttpServer) -> None:
    origin = f"http://127.0.0.1:{srv.port}"
    r = post(srv, request_body(1, "tools/list"), modern_headers("tools/list", Origin=origin))
    assert r.status == 200 and r.headers["access-control-allow-origin"] == origin
    assert "mcp-session-id" in r.headers["access-control-expose-headers"]


def test_dns_rebinding_host_is_refused(srv: HttpServer) -> None:
    h = modern_headers("tools/list", Host="evil.example.com")
    r = post(srv, request_body(1, "tools/list"), h)
    assert r.status == 421 and r.json["error"]["code"] == -32600
    for host in (f"localhost:{srv.port}", f"127.0.0.1:{srv.port}"):
        assert (
            post(srv, request_body(1, "tools/list"), modern_headers("tools/list", Host=host)).status
            == 200
        )


def test_an_oversized_body_is_413(srv: HttpServer) -> None:
    big = request_body(1, "tools/list", {"pad": "x" * 70_000})
    error_of(post(srv, big, modern_headers("tools/list")), 413, -32600)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"x" * 40_000
    data = head + (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 2 + b"0\r\n\r\n"
    raw = raw_request(srv, data)
    assert status_of(raw) == 413, raw[:200]


def test_oversized_headers_are_431(srv: HttpServer) -> None:
    h = modern_headers("tools/list", X_Padding="p" * 20_000)
    error_of(post(srv, request_body(1, "tools/list"), h), 431, -32600)


def test_a_slow_body_is_408(srv: HttpServer) -> None:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nContent-Length: 500\r\n\r\n"
    ).encode()
    started = time.monotonic()
    raw = raw_request(srv, head + b'{"jsonrpc":', timeout=10)
    assert status_of(raw) == 408, raw[:300]
    assert json.loads(body_of(raw))["error"]["code"] == -32600
    assert 0.8 < time.monotonic() - started < 8


# --- listen streams, cancellation ----------------------------------------------------------------


def open_stream(srv: HttpServer, body: bytes, headers: dict[str, str]) -> tuple[Any, Any]:
    conn = srv.connection(timeout=10)
    conn.request("POST", "/mcp", body=body, headers=headers)
    resp = conn.getresponse()
    return conn, resp


def test_listen_acknowledges_notifies_tagged_and_keeps_alive(srv: HttpServer) -> None:
    body = request_body(40, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    conn, resp = open_stream(srv, body, modern_headers("subscriptions/listen"))
    assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
    assert resp.getheader("x-accel-buffering") == "no"
    events = parse_events(iter(resp.readline, b""))
    first = next(events)
    ack = json.loads(first["data"])
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"][SUB] == 40
    assert next(events) == {"comment": "keep-alive"}  # 0.3 s of silence
    call(srv, 41, "tools/call", {"name": "bump"})
    note = next(e for e in events if "data" in e)
    changed = json.loads(note["data"])
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"][SUB] == 40
    conn.close()


def test_a_listen_refused_by_its_handler_is_a_json_error(srv: HttpServer) -> None:
    body = request_body(42, "subscriptions/listen", {"notifications": "not an object"})
    error_of(post(srv, body, modern_headers("subscriptions/listen")), 400, -32602, 42)


def wait_for_events(srv: HttpServer, key: str, want: list[str], timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    got: list[str] = []
    while time.monotonic() < deadline:
        r = call(srv, 1, "tools/call", {"name": "events", "arguments": {"key": key}})
        got = r.json["result"]["structuredContent"]["result"]
        if got == want:
            return got
        time.sleep(0.05)
    return got


@pytest.mark.parametrize("streaming", [False, True])
def test_a_client_that_leaves_cancels_its_request(srv: HttpServer, streaming: bool) -> None:
    key = f"drop-{streaming}"
    extra = {"progressToken": "t"} if streaming else {}
    body = request_body(
        50, "tools/call", {"name": "wait", "arguments": {"key": key, "ms": 30000}}, **extra
    )
    with socket.create_connection((srv.host, srv.port)) as s:
        headers = modern_headers(
            "tools/call", "wait", Host=f"127.0.0.1:{srv.port}", Content_Length=str(len(body))
        )
        s.sendall(
            b"POST /mcp HTTP/1.1\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
            + b"\r\n"
            + body
        )
        assert wait_for_events(srv, key, ["started"]) == ["started"]
    assert wait_for_events(srv, key, ["started", "cancelled"]) == ["started", "cancelled"]


def test_ten_thousand_bad_requests_leave_tasks_and_memory_flat(srv: HttpServer) -> None:
    def stats() -> dict[str, int]:
        r = call(srv, 1, "tools/call", {"name": "stats"})
        return dict(r.json["result"]["structuredContent"])

    bad: list[tuple[bytes, dict[str, str]]] = [
        (b"{broken", modern_headers("tools/list")),
        (request_body(1, "tools/list"), modern_headers("prompts/list")),
        (request_body(1, "nope"), modern_headers("nope")),
        (request_body(1, "tools/list"), {**modern_headers("tools/list"), "Accept": "text/html"}),
        (request_body(1, "tools/list", None, **{PV: "v9"}), modern_headers("tools/list")),
        (request_body(1, "tools/list"), {**modern_headers("tools/list"), "Origin": "http://x"}),
        (b'{"jsonrpc":"2.0","method":"notifications/x"}', modern_headers("x")),
        (
            request_body(1, "tools/call", {"name": "routed", "arguments": {"region": "a"}}),
            modern_headers("tools/call", "routed"),
        ),
    ]
    for body, headers in bad * 10:  # warm up
        post(srv, body, headers)
    before = stats()
    conn = srv.connection()
    statuses: set[int] = set()
    for i in range(10_000):
        body, headers = bad[i % len(bad)]
        conn.request("POST", "/mcp", body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        statuses.add(resp.status)
        if resp.getheader("connection") == "close":
            conn.close()
            conn = srv.connection()
    conn.close()
    assert statuses == {400, 403, 404, 406, 202}
    after = stats()
    assert after["tasks"] <= before["tasks"] + 2, (before, after)
    assert after["rss"] < before["rss"] + 20 * 1024 * 1024, (before, after)
