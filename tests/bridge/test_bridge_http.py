"""``mcpline bridge --http``: a stdio server behind Streamable HTTP, spoken to by real clients
(mcpline's HTTP client and raw HTTP) over real sockets, the server's processes real too."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from mcpline import Client
from mcpline.errors import RequestTimeout, ServerError
from mcpline.protocol.meta import modern_meta

from ..proc import MODERN
from ..transports.http_util import modern_headers, request_body, send
from .util import BRIDGE_SERVER, bridge_http, connection, path_of, python_server

pytestmark = pytest.mark.timeout(120)

SERVER = python_server(BRIDGE_SERVER)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def events(directory: Path, key: str) -> list[str]:
    path = directory / f"{key}.events"
    return path.read_text().split("\n")[:-1] if path.exists() else []


def wait_events(directory: Path, key: str, wanted: str, timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = events(directory, key)
        if any(line.startswith(wanted) for line in found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {wanted!r} for {key}: {events(directory, key)}")


def test_a_modern_client_gets_the_server_answers_progress_and_logs(tmp_path: Path) -> None:
    env = {"BRIDGE_EVENTS": str(tmp_path)}
    logs: list[dict[str, Any]] = []
    seen: list[tuple[float, float | None, str | None]] = []

    async def main(url: str) -> None:
        async with Client.http(url, era="modern", log_level="info", on_log=logs.append) as c:
            d = await c.discover()
            assert d.era == "modern" and d.server_info["name"] == "bridge-fixture"
            names = {t["name"] for t in await c.list_tools()}
            assert {"wait", "pid", "progress", "chatter", "crash"} <= names
            r = await c.call_tool("echo", {"text": "through"})
            assert r["content"][0]["text"] == "through"
            r = await c.call_tool(
                "progress", {"steps": 3}, on_progress=lambda p, t, m: seen.append((p, t, m))
            )
            assert r["content"][0]["text"] == "progressed"
            r = await c.call_tool("chatter", {"tag": "x-"})
            assert r["content"][0]["text"] == "logged"
            read = await c.read_resource("bridge://note")
            assert read["contents"][0]["text"] == "a note"

    with bridge_http(*SERVER, env=env) as (url, _):
        run(main(url))
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert [entry["level"] for entry in logs] == ["info", "warning", "error"]
    assert all(entry["data"].startswith("x-") for entry in logs)


def _post(url: str, rid: Any, method: str, params: dict[str, Any], **m: Any) -> Any:
    name = params.get("uri") if method == "resources/read" else params.get("name")
    conn = connection(url)
    try:
        return send(
            conn,
            request_body(rid, method, params, **m),
            modern_headers(method, name if isinstance(name, str) else None),
            path=path_of(url),
        )
    finally:
        conn.close()


def test_concurrent_requests_with_the_same_id_never_collide(tmp_path: Path) -> None:
    """Five HTTP clients, all using JSON-RPC id 1, on one server process: each gets its own
    answer (the bridge's ids toward the process are its own)."""
    env = {"BRIDGE_EVENTS": str(tmp_path)}

    async def main(url: str) -> list[Any]:
        jobs = [
            asyncio.to_thread(
                _post,
                url,
                1,
                "tools/call",
                {"name": "wait", "arguments": {"key": f"k{i}", "ms": ms}},
            )
            for i, ms in enumerate((400, 100, 300, 50, 200))
        ]
        return list(await asyncio.gather(*jobs))

    with bridge_http(*SERVER, options=["--pool", "1"], env=env) as (url, _):
        replies = run(main(url))
    for reply, ms in zip(replies, (400, 100, 300, 50, 200), strict=True):
        assert reply.status == 200
        [msg] = reply.messages
        assert msg["id"] == 1
        assert msg["result"]["content"][0]["text"] == f"waited {ms}"
    pids = {line.split()[1] for i in range(5) for line in events(tmp_path, f"k{i}")}
    assert len(pids) == 1


def test_requests_are_spread_over_the_pool(tmp_path: Path) -> None:
    env = {"BRIDGE_EVENTS": str(tmp_path)}

    async def main(url: str) -> None:
        async with Client.http(url) as c:
            await asyncio.gather(
                *(c.call_tool("wait", {"key": f"p{i}", "ms": 400}) for i in range(9))
            )

    with bridge_http(*SERVER, options=["--pool", "3"], env=env) as (url, proc):
        run(main(url))
        children = {p.pid for p in proc.descendants() if "bridge_server" in " ".join(p.cmdline())}
    pids = {int(line.split()[1]) for i in range(9) for line in events(tmp_path, f"p{i}")}
    assert len(pids) == 3 and pids <= children


def test_closing_the_stream_cancels_the_request_in_the_server(tmp_path: Path) -> None:
    """A client that gives up closes its stream; the server process gets
    notifications/cancelled for the id the bridge used, and its handler is cancelled."""
    env = {"BRIDGE_EVENTS": str(tmp_path)}

    async def main(url: str) -> None:
        async with Client.http(url) as c:
            with pytest.raises(RequestTimeout):
                await c.call_tool("wait", {"key": "gone", "ms": 20000}, timeout=0.5)
            r = await c.call_tool("echo", {"text": "still here"})
            assert r["content"][0]["text"] == "still here"

    with bridge_http(*SERVER, options=["--pool", "1"], env=env) as (url, _):
        run(main(url))
        found = wait_events(tmp_path, "gone", "cancelled")
    assert [line.split()[0] for line in found] == ["started", "cancelled"]


def test_a_listen_hears_a_change_made_through_another_process(tmp_path: Path) -> None:
    """The listen is held by one process of the pool, the change made in another: the bridge
    tells the listen anyway, under the client's own listen id."""
    conn_holder: list[Any] = []

    def listen(url: str) -> list[dict[str, Any]]:
        conn = connection(url, timeout=20)
        conn_holder.append(conn)
        body = request_body(
            "L-1", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        conn.request(
            "POST", path_of(url), body=body, headers=modern_headers("subscriptions/listen")
        )
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
        out: list[dict[str, Any]] = []
        for raw in iter(resp.readline, b""):
            line = raw.decode().strip()
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
                if out[-1].get("method") == "notifications/tools/list_changed":
                    break
        return out

    async def main(url: str) -> list[dict[str, Any]]:
        task = asyncio.ensure_future(asyncio.to_thread(listen, url))
        await asyncio.sleep(0.5)
        for _ in range(4):  # whichever process each bump reaches, the listen hears of it
            reply = await asyncio.to_thread(
                _post, url, 9, "tools/call", {"name": "bump", "arguments": {}}
            )
            assert reply.messages[0]["result"]["content"][0]["text"] == "bumped"
        got: list[dict[str, Any]] = await asyncio.wait_for(task, 20)
        return got

    with bridge_http(*SERVER, options=["--pool", "2"]) as (url, _):
        try:
            got = run(main(url))
        finally:
            for conn in conn_holder:
                conn.close()
    assert got[0]["method"] == "notifications/subscriptions/acknowledged"
    assert got[0]["params"]["notifications"] == {"toolsListChanged": True}
    assert got[-1]["method"] == "notifications/tools/list_changed"
    for msg in got:
        assert msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L-1"


def test_legacy_sessions_get_a_process_each_and_their_requests_for_input() -> None:
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    async def main(url: str, proc: Any) -> None:
        before = {p.pid for p in proc.descendants()}
        async with (
            Client.http(url, era="legacy", on_elicit=elicit) as a,
            Client.http(url, era="legacy") as b,
        ):
            assert (await a.discover()).era == "legacy"
            pa = (await a.call_tool("pid", {}))["structuredContent"]["result"]
            pb = (await b.call_tool("pid", {}))["structuredContent"]["result"]
            assert pa != pb and not {pa, pb} & before
            r = await a.call_tool("ask_name", {})
            assert r["content"][0]["text"] == "hello Ada"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and {pa, pb} & {p.pid for p in proc.descendants()}:
            await asyncio.sleep(0.05)
        assert not {pa, pb} & {p.pid for p in proc.descendants()}  # DELETE ended them

    with bridge_http(*SERVER) as (url, proc):
        run(main(url, proc))
    assert asked == ["Your name?"]


def test_a_modern_client_gets_input_required_and_its_retry_completes() -> None:
    async def main(url: str) -> None:
        async def elicit(params: dict[str, Any]) -> dict[str, Any]:
            return {"action": "accept", "content": {"name": "Grace"}}

        async with Client.http(url, on_elicit=elicit) as c:
            r = await c.call_tool("ask_name", {})
            assert r["content"][0]["text"] == "hello Grace"

    with bridge_http(*SERVER, options=["--pool", "2"]) as (url, _):
        run(main(url))


def test_origin_host_token_and_body_limits_are_the_http_servers(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token-for-the-bridge\n")
    body = request_body(1, "server/discover", {})
    headers = modern_headers("server/discover")
    with bridge_http(
        *SERVER, options=["--bearer-token-file", str(token), "--max-body-bytes", "2000"]
    ) as (url, _):
        conn = connection(url)
        try:
            assert send(conn, body, headers, path=path_of(url)).status == 401
            auth = {**headers, "Authorization": "Bearer s3cret-token-for-the-bridge"}
            assert send(conn, body, auth, path=path_of(url)).status == 200
            evil = {**auth, "Origin": "http://evil.example"}
            assert send(conn, body, evil, path=path_of(url)).status == 403
            assert (
                send(conn, body, {**auth, "Host": "evil.example"}, path=path_of(url)).status == 421
            )
            big = request_body(2, "tools/call", {"name": "echo", "arguments": {"text": "x" * 5000}})
            named = {**auth, **modern_headers("tools/call", "echo")}
            assert send(conn, big, named, path=path_of(url)).status == 413
        finally:
            conn.close()


def test_mirrored_headers_are_checked_against_the_servers_tools() -> None:
    """The bridge listed the tools at start: a wrong ``Mcp-Param-Region`` is -32020 before the
    request reaches the server (which, over stdio, never sees headers)."""
    params = {"name": "routed", "arguments": {"region": "eu", "query": "q"}}
    body = request_body(5, "tools/call", params)
    with bridge_http(*SERVER) as (url, _):
        conn = connection(url)
        try:
            good = {**modern_headers("tools/call", "routed"), "Mcp-Param-Region": "eu"}
            reply = send(conn, body, good, path=path_of(url))
            assert reply.status == 200
            assert reply.messages[0]["result"]["content"][0]["text"] == "eu q"
            bad = {**modern_headers("tools/call", "routed"), "Mcp-Param-Region": "us"}
            reply = send(conn, body, bad, path=path_of(url))
            assert reply.status == 400 and reply.messages[0]["error"]["code"] == -32020
            missing = modern_headers("tools/call", "routed")
            assert send(conn, body, missing, path=path_of(url)).status == 400
        finally:
            conn.close()


def test_meta_is_checked_by_the_bridge_in_the_bindings_order() -> None:
    with bridge_http(*SERVER) as (url, _):
        reply = _post(url, 1, "server/discover", {"_meta": {}})
        assert reply.status == 400 and reply.messages[0]["error"]["code"] == -32602
        conn = connection(url)
        try:
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "server/discover",
                    "params": {"_meta": modern_meta("1999-01-01", {})},
                }
            ).encode()
            headers = {**modern_headers("server/discover"), "MCP-Protocol-Version": "1999-01-01"}
            reply = send(conn, body, headers, path=path_of(url))
            assert reply.status == 400
            error = reply.messages[0]["error"]
            assert error["code"] == -32022 and error["data"]["supported"] == [MODERN]
        finally:
            conn.close()


def test_an_unknown_tool_is_the_servers_own_error() -> None:
    async def main(url: str) -> None:
        async with Client.http(url) as c:
            with pytest.raises(ServerError) as info:
                await c.call_tool("nope", {})
            assert info.value.code == -32602 and "nope" in info.value.message

    with bridge_http(*SERVER) as (url, _):
        run(main(url))


def test_legacy_clients_of_a_modern_only_server_are_translated_onto_the_pool() -> None:
    """``--legacy translate``: no process per session; the bridge answers initialize from
    server/discover and each legacy request goes to the pool as a stateless one."""
    from .util import FIXTURES

    async def main(url: str, proc: Any) -> None:
        before = {p.pid for p in proc.descendants()}
        async with Client.http(url, era="legacy") as c:
            d = await c.discover()
            assert d.era == "legacy" and d.server_info["name"] == "modern-only"
            r = await c.call_tool("echo", {"text": "hi"})
            assert r["content"][0]["text"] == "hi" and "resultType" not in r
            assert {p.pid for p in proc.descendants()} == before

    target = python_server(FIXTURES / "modern_only_server.py")
    with bridge_http(*target, options=["--legacy", "translate"]) as (url, proc):
        run(main(url, proc))
