"""The HTTP transport against real local HTTP servers that the tests script byte by byte:
the binding's headers, SSE framing, cancellation by closing a stream, the era probe, legacy
sessions, and servers that misbehave (each must end in a clear ClientError in time, with
bounded memory)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import tracemalloc
from typing import Any

import pytest

from mcpline.client import (
    Client,
    ClientError,
    ConnectionLost,
    ProtocolError,
    RequestTimeout,
)
from mcpline.client.http import CrossOriginRedirect, HttpServer, next_hop

from .http_fakes import (
    Request,
    discover_result,
    fake_server,
    respond,
    respond_json,
    result,
    start_events,
)
from .util import run

TOOLS = [
    {
        "name": "regional",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "query": {"type": "string"},
            },
        },
    },
    {
        "name": "broken",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number", "x-mcp-header": "A"}},
        },
    },
]


def modern(
    tools: list[dict[str, Any]] | None = None,
    on_call: Any = None,
) -> Any:
    """A modern server: discover, tools/list and tools/call (``on_call`` decides)."""

    async def handler(req: Request, w: asyncio.StreamWriter) -> None:
        if req.method != "POST":
            respond(w, 405)
            return
        msg = req.json()
        method, rid = msg["method"], msg.get("id")
        if method == "server/discover":
            respond_json(w, discover_result(rid))
        elif method == "tools/list":
            respond_json(
                w, result(rid, {"tools": tools or TOOLS, "ttlMs": 0, "cacheScope": "private"})
            )
        elif method == "tools/call" and on_call is not None:
            await on_call(req, msg, w)
        else:
            respond_json(w, result(rid, {"content": []}))

    return handler


def test_modern_requests_carry_the_binding_headers(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with fake_server(modern()) as srv:
            async with Client.http(srv.url + "/mcp", headers={"X-Api-Key": "k"}) as c:
                d = await c.discover()
                assert d.era == "modern" and d.server_info["name"] == "fake"
                with caplog.at_level(logging.WARNING, "mcpline.client"):
                    tools = await c.list_tools()
                assert [t["name"] for t in tools] == ["regional"]
                assert "'broken' left out" in caplog.text and "'number'" in caplog.text
                await c.call_tool("regional", {"region": "Hello, 世界", "count": 3, "query": "q"})
            call = srv.requests[-1]
            assert call.headers["mcp-protocol-version"] == "2026-07-28"
            assert call.headers["mcp-method"] == "tools/call"
            assert call.headers["mcp-name"] == "regional"
            assert call.headers["mcp-param-region"] == "=?base64?SGVsbG8sIOS4lueVjA==?="
            assert call.headers["mcp-param-count"] == "3"
            assert "mcp-param-query" not in call.headers
            assert call.headers["x-api-key"] == "k"
            assert call.headers["accept"] == "application/json, text/event-stream"
            assert {r.method for r in srv.requests} == {"POST"}  # no GET or DELETE on modern

    run(main())


def test_a_header_mismatch_lists_the_tools_again_and_retries_once() -> None:
    calls: list[dict[str, str]] = []

    async def on_call(req: Request, msg: dict[str, Any], w: asyncio.StreamWriter) -> None:
        calls.append(req.headers)
        if len(calls) == 1:
            err = {"code": -32020, "message": "Header mismatch: Mcp-Param-Region"}
            respond_json(w, {"jsonrpc": "2.0", "id": msg["id"], "error": err}, status=400)
        else:
            respond_json(w, result(msg["id"], {"content": [{"type": "text", "text": "ok"}]}))

    async def main() -> None:
        async with fake_server(modern(on_call=on_call)) as srv, Client.http(srv.url) as c:
            r = await c.call_tool("regional", {"region": "eu"})
            assert r["content"][0]["text"] == "ok"
            assert "mcp-param-region" not in calls[0]  # not listed yet: no header known
            assert calls[1]["mcp-param-region"] == "eu"
            assert [m.json()["method"] for m in srv.requests].count("tools/list") == 1

    run(main())


def test_sse_answers_with_comments_progress_and_multi_line_data() -> None:
    async def on_call(req: Request, msg: dict[str, Any], w: asyncio.StreamWriter) -> None:
        token = msg["params"]["_meta"]["progressToken"]
        start_events(w)
        w.write(b": keep-alive\r\n\r\n")
        for p in (1, 2):
            note = (
                b'{"jsonrpc":"2.0","method":"notifications/progress","params":'
                b'{"progressToken":'
                + str(token).encode()
                + b',"progress":'
                + str(p).encode()
                + b"}}"
            )
            w.write(b"event: message\r\ndata: " + note + b"\r\n\r\n")
            await w.drain()
        rid = str(msg["id"]).encode()
        w.write(b'data: {"jsonrpc":"2.0",\ndata: "id":' + rid + b",\n")
        w.write(b'data: "result":{"resultType":"complete","content":[]}}\n\n')
        await w.drain()
        w.close()

    async def main() -> None:
        seen: list[float] = []
        async with fake_server(modern(on_call=on_call)) as srv, Client.http(srv.url) as c:
            r = await c.call_tool("x", {}, on_progress=lambda p, t, m: seen.append(p))
            assert r == {"resultType": "complete", "content": []}
            assert seen == [1, 2]

    run(main())


def test_a_cancelled_modern_request_closes_its_stream_and_posts_nothing() -> None:
    async def main() -> None:
        gone = asyncio.Event()

        async def on_call(req: Request, msg: dict[str, Any], w: asyncio.StreamWriter) -> None:
            start_events(w)
            await w.drain()
            try:
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    w.write(b": still working\n\n")
                    await w.drain()
            except ConnectionError:
                gone.set()

        async with fake_server(modern(on_call=on_call)) as srv, Client.http(srv.url) as c:
            await c.discover()
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow", {}, timeout=0.3)
            await asyncio.wait_for(gone.wait(), 5)
            methods = [r.json()["method"] for r in srv.requests]
            assert "notifications/cancelled" not in methods

    run(main())


def test_the_probe_retries_a_supported_version_and_falls_back_on_other_400s() -> None:
    async def main() -> None:
        seen: list[str] = []

        async def picky(req: Request, w: asyncio.StreamWriter) -> None:
            msg = req.json()
            seen.append(req.headers.get("mcp-protocol-version", "-"))
            if len(seen) == 1:
                err = {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": "x"},
                }
                respond_json(w, {"jsonrpc": "2.0", "id": msg["id"], "error": err}, status=400)
            else:
                respond_json(w, discover_result(msg["id"]))

        async with fake_server(picky) as srv, Client.http(srv.url) as c:
            assert (await c.discover()).era == "modern"
            assert seen == ["2026-07-28", "2026-07-28"]

        async def legacy(req: Request, w: asyncio.StreamWriter) -> None:
            if req.method == "DELETE":
                respond(w, 200)
                return
            if req.method == "GET":
                respond(w, 405)
                return
            msg = req.json()
            if msg.get("method") == "initialize":
                body = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "old", "version": "1"},
                }
                respond_json(
                    w,
                    {"jsonrpc": "2.0", "id": msg["id"], "result": body},
                    headers={"Mcp-Session-Id": "sess-1"},
                )
            elif "mcp-session-id" not in req.headers:
                respond(w, 400, b"<html>Bad Request: Missing session ID</html>", "text/html")
            elif "id" not in msg:
                respond(w, 202)
            else:
                respond_json(w, {"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}})

        async with fake_server(legacy) as srv:
            async with Client.http(srv.url) as c:
                d = await c.discover()
                assert d.era == "legacy" and d.server_info["name"] == "old"
                assert await c.list_tools() == []
            later = [r for r in srv.requests if r.headers.get("mcp-session-id") == "sess-1"]
            assert {r.method for r in later} >= {"POST", "DELETE"}
            assert all(r.headers.get("mcp-protocol-version") == "2025-11-25" for r in later)

    run(main())


def test_a_legacy_session_the_server_forgot_is_started_again() -> None:
    async def main() -> None:
        sessions: list[str] = []

        async def forgetful(req: Request, w: asyncio.StreamWriter) -> None:
            if req.method in ("GET", "DELETE"):
                respond(w, 405)
                return
            msg = req.json()
            if msg.get("method") == "initialize":
                sessions.append(f"s{len(sessions) + 1}")
                body = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
                respond_json(
                    w,
                    {"jsonrpc": "2.0", "id": msg["id"], "result": {**body, "serverInfo": {}}},
                    headers={"Mcp-Session-Id": sessions[-1]},
                )
            elif "id" not in msg:
                respond(w, 202)
            elif req.headers.get("mcp-session-id") != sessions[-1] or len(sessions) == 1:
                if len(sessions) == 1:
                    sessions.append("expired")
                respond_json(
                    w,
                    {
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "error": {"code": -32600, "message": "Session not found"},
                    },
                    status=404,
                )
            else:
                respond_json(w, {"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}})

        async with fake_server(forgetful) as srv, Client.http(srv.url, era="legacy") as c:
            assert await c.list_tools() == []  # idempotent: sent again in a new session
            inits = [r for r in srv.requests if r.body and r.json().get("method") == "initialize"]
            assert len(inits) == 2
            lists = [r for r in srv.requests if r.body and r.json().get("method") == "tools/list"]
            # the version initialize agreed on, which the HTTP channel holds, on each request
            assert [r.headers.get("mcp-protocol-version") for r in lists] == ["2025-11-25"] * 2

    run(main())


# --- servers that misbehave ------------------------------------------------------------------


def failing(handler: Any, *, timeout: float = 5.0, **kw: Any) -> ClientError:
    """Run one call against ``handler``; return the ClientError it ended in (in time)."""

    async def main() -> ClientError:
        async with fake_server(handler) as srv:
            c = Client.http(srv.url, era="modern", timeout=timeout, max_restarts=1, **kw)
            async with c:
                started = time.monotonic()
                with pytest.raises(ClientError) as ei:
                    await c.call_tool("x", {})
                assert time.monotonic() - started < timeout + 10  # in time, not a hang
                return ei.value

    return run(main(), timeout=timeout * 4 + 10)


def test_an_html_answer_is_a_protocol_error() -> None:
    async def html(req: Request, w: asyncio.StreamWriter) -> None:
        respond(w, 200, b"<html><body>Welcome to our portal</body></html>", "text/html")

    err = failing(html)
    assert isinstance(err, ProtocolError) and "'text/html'" in str(err)


def test_a_truncated_event_stream_fails_the_request() -> None:
    async def on_call(req: Request, msg: dict[str, Any], w: asyncio.StreamWriter) -> None:
        start_events(w)
        w.write(b'data: {"jsonrpc":"2.0","id":' + str(msg["id"]).encode() + b',"res')
        await w.drain()
        w.close()

    err = failing(modern(on_call=on_call))
    assert isinstance(err, ConnectionLost) and "before answering" in str(err)


def test_a_500_is_a_server_error_naming_the_status() -> None:
    async def broken(req: Request, w: asyncio.StreamWriter) -> None:
        respond(w, 500, b"Internal Server Error", "text/plain")

    err = failing(broken)
    assert "HTTP 500" in str(err)


def test_a_redirect_loop_is_stopped() -> None:
    async def loop(req: Request, w: asyncio.StreamWriter) -> None:
        respond(w, 307, headers={"Location": req.target})

    err = failing(loop)
    assert isinstance(err, ProtocolError) and "redirect" in str(err)


def test_an_oversized_event_fails_the_request_with_bounded_memory() -> None:
    limit = 256 * 1024

    async def on_call(req: Request, msg: dict[str, Any], w: asyncio.StreamWriter) -> None:
        start_events(w)
        w.write(b'data: {"jsonrpc":"2.0","id":' + str(msg["id"]).encode() + b',"result":"')
        chunk = b"x" * 65536
        try:
            for _ in range(2000):  # 128 MiB if nobody stopped reading
                w.write(chunk)
                await w.drain()
        except ConnectionError:
            pass

    tracemalloc.start()
    try:
        err = failing(modern(on_call=on_call), max_line_bytes=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(err, ProtocolError) and "line limit" in str(err)
    assert peak < 32 * 1024 * 1024, peak


def test_header_values_that_could_inject_are_refused() -> None:
    with pytest.raises(ValueError):
        HttpServer("http://127.0.0.1:1/mcp", {"X-A": "1\r\nX-Injected: 2"})
    with pytest.raises(ValueError):
        HttpServer("ftp://example.com/mcp")
    assert "secret" not in repr(HttpServer("http://u:secret@127.0.0.1:1/mcp?k=secret"))


def test_a_listen_stream_survives_the_server_closing_it() -> None:
    async def handler(req: Request, w: asyncio.StreamWriter) -> None:
        msg = req.json()
        rid = msg["id"]
        if msg["method"] == "server/discover":
            respond_json(w, discover_result(rid))
            return
        assert msg["method"] == "subscriptions/listen"
        assert req.headers["mcp-method"] == "subscriptions/listen"
        start_events(w)
        meta = {"io.modelcontextprotocol/subscriptionId": rid}
        for method, params in (
            (
                "notifications/subscriptions/acknowledged",
                {"notifications": {"toolsListChanged": True}},
            ),
            ("notifications/tools/list_changed", {}),
        ):
            note = {"jsonrpc": "2.0", "method": method, "params": {**params, "_meta": meta}}
            w.write(b"data: " + json.dumps(note).encode() + b"\n\n")
            await w.drain()
        w.close()  # no result: the stream was lost, not ended

    async def main() -> None:
        async with fake_server(handler) as srv, Client.http(srv.url) as c:
            got = []
            async with c.listen(prompts=False, resources=False) as listener:
                async for note in listener:
                    got.append(note.method)
                    if len(got) == 4:
                        break
            assert (
                got
                == [
                    "notifications/subscriptions/acknowledged",
                    "notifications/tools/list_changed",
                ]
                * 2
            )
            assert listener.establishments >= 2

    run(main())


# --- redirects ----------------------------------------------------------------------------


def test_a_same_origin_redirect_keeps_the_headers_and_the_body() -> None:
    async def main() -> None:
        inner = modern()

        async def moved(req: Request, w: asyncio.StreamWriter) -> None:
            if req.path == "/old":
                respond(w, 307, headers={"Location": "/mcp"})
            else:
                await inner(req, w)

        async with fake_server(moved) as srv:
            async with Client.http(srv.url + "/old", headers={"X-Api-Key": "k"}) as c:
                await c.call_tool("regional", {"region": "r", "count": 1, "query": "q"})
            followed = [r for r in srv.requests if r.path == "/mcp"]
            assert followed and all(r.headers["x-api-key"] == "k" for r in followed)
            assert followed[-1].json()["method"] == "tools/call"

    run(main())


@pytest.mark.parametrize("status", [307, 308, 302, 303])
def test_a_redirect_to_another_origin_is_refused_and_it_receives_nothing(status: int) -> None:
    async def main() -> None:
        async with fake_server(modern()) as elsewhere:

            async def away(req: Request, w: asyncio.StreamWriter) -> None:
                respond(w, status, headers={"Location": elsewhere.url + "/mcp"})

            async with (
                fake_server(away) as srv,
                Client.http(
                    srv.url + "/mcp", headers={"X-Api-Key": "k"}, era="modern", max_restarts=0
                ) as c,
            ):
                with pytest.raises(ProtocolError) as err:
                    await c.call_tool("regional", {"query": "secret"})
            assert elsewhere.requests == []
            assert "another origin" in str(err.value) and elsewhere.url in str(err.value)
            assert "follow_cross_origin_redirects" in str(err.value)

    run(main())


def test_allowed_cross_origin_redirects_carry_no_user_header_and_no_body() -> None:
    async def main() -> None:
        async with fake_server(modern()) as elsewhere:
            home = modern()

            async def away(req: Request, w: asyncio.StreamWriter) -> None:
                method = req.json()["method"]
                if method in ("server/discover", "tools/list"):
                    await home(req, w)
                    return
                status = 303 if method == "prompts/list" else 307
                respond(w, status, headers={"Location": elsewhere.url + "/mcp"})

            async with (
                fake_server(away) as srv,
                Client.http(
                    srv.url + "/mcp",
                    headers={"X-Api-Key": "k"},
                    era="modern",
                    max_restarts=0,
                    follow_cross_origin_redirects=True,
                ) as c,
            ):
                with pytest.raises(ClientError):
                    await c.list_prompts()  # 303: a GET, which the fake answers 405
                with pytest.raises(ProtocolError) as err:
                    await c.call_tool("regional", {"query": "secret"})  # 307: body
            assert "its body would go there" in str(err.value)
            assert [r.method for r in elsewhere.requests] == ["GET"]
            got = elsewhere.requests[0]
            assert got.body == b"" and "x-api-key" not in got.headers
            assert not any(h.startswith("mcp-") for h in got.headers)

    run(main())


@pytest.mark.parametrize(
    ("verb", "status", "location", "hop"),
    [
        ("POST", 307, "/v2/mcp", ("POST", "http://h:8000/v2/mcp", True, True)),
        ("POST", 308, "http://H:8000/mcp2", ("POST", "http://H:8000/mcp2", True, True)),
        ("POST", 303, "/other", ("GET", "http://h:8000/other", False, True)),
        ("POST", 302, "/other", ("GET", "http://h:8000/other", False, True)),
        ("GET", 301, "x", ("GET", "http://h:8000/x", False, True)),
    ],
)
def test_next_hop_within_the_origin(
    verb: str, status: int, location: str, hop: tuple[object, ...]
) -> None:
    got = next_hop(
        "http://h:8000/mcp", verb, "http://h:8000/mcp", status, location, cross_origin=False
    )
    assert (got.verb, got.url, got.body, got.same_origin) == hop


def test_next_hop_default_ports_are_the_same_origin() -> None:
    hop = next_hop(
        "https://h/mcp", "POST", "https://h/mcp", 307, "https://h:443/m", cross_origin=False
    )
    assert hop.same_origin and hop.body


@pytest.mark.parametrize(
    "location", ["http://h:8001/mcp", "https://h:8000/mcp", "http://evil/mcp", "//evil:8000/x"]
)
def test_next_hop_refuses_another_origin(location: str) -> None:
    with pytest.raises(CrossOriginRedirect, match="another origin"):
        next_hop("http://h:8000/mcp", "GET", "http://h:8000/mcp", 302, location, cross_origin=False)
    with pytest.raises(CrossOriginRedirect, match="its body would go there"):
        next_hop("http://h:8000/mcp", "POST", "http://h:8000/mcp", 307, location, cross_origin=True)
    hop = next_hop(
        "http://h:8000/mcp", "POST", "http://h:8000/mcp", 303, location, cross_origin=True
    )
    assert not hop.same_origin and not hop.body and hop.verb == "GET"
