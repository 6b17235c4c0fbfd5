"""The ASGI application called in process: lifespan with and without lifespan events, mounting
under a prefix, scopes without a bound address, CORS preflight, options, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from mcpline import Context, Server
from mcpline.transports.http import HttpApp

from ..proc import meta

ACCEPT = b"application/json, text/event-stream"


def make_server(**kw: Any) -> Server:
    server = Server("asgi", **kw)

    @server.tool
    def hello(ctx: Context) -> str:
        """Say what the lifespan hook yielded."""
        return f"hello {ctx.lifespan}"

    return server


def modern(method: str, id: Any = 1, params: dict[str, Any] | None = None) -> bytes:
    p = dict(params or {})
    p["_meta"] = meta()
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": p}).encode()


class Exchange:
    """One in-process HTTP exchange: what the app sent back."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""
        self.done = asyncio.Event()
        self.chunk = asyncio.Event()

    @property
    def json(self) -> Any:
        return json.loads(self.body)


async def request(
    app: HttpApp,
    method: str = "POST",
    path: str = "/mcp",
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    server: tuple[str, int] | None = ("127.0.0.1", 8000),
    root_path: str = "",
    hold: asyncio.Event | None = None,
    on_send: Callable[[dict[str, Any]], None] | None = None,
    stall: asyncio.Event | None = None,
) -> Exchange:
    """Call the app once; ``hold`` keeps the connection open until set (then disconnects);
    ``on_send`` sees each message the app sends, as it is sent; ``stall`` holds every body
    write until set (a client that does not read)."""
    h = {"content-type": "application/json", "accept": ACCEPT.decode(), "host": "127.0.0.1:8000"}
    if method == "POST" and "mcp-method" not in (headers or {}):
        try:
            parsed = json.loads(body)
            h["mcp-method"] = parsed.get("method", "")
            h["mcp-protocol-version"] = "2026-07-28"
        except (ValueError, AttributeError):
            pass
    h.update(headers or {})
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "path": root_path + path,
        "root_path": root_path,
        "headers": [(k.encode(), v.encode()) for k, v in h.items()],
        "server": server,
        "client": ("127.0.0.1", 5555),
    }
    out = Exchange()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if hold is not None:
            await hold.wait()
        else:
            await out.done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if on_send is not None:
            on_send(message)
        if stall is not None and message["type"] == "http.response.body":
            await stall.wait()
        if message["type"] == "http.response.start":
            out.status = message["status"]
            out.headers = dict(message.get("headers", []))
        else:
            out.body += message.get("body", b"")
            out.chunk.set()
            if not message.get("more_body", False):
                out.done.set()

    await app(scope, receive, send)
    return out


@contextlib.asynccontextmanager
async def lifespan(app: HttpApp) -> AsyncIterator[None]:
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return await queue.get()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    task = asyncio.ensure_future(app({"type": "lifespan"}, receive, send))
    await queue.put({"type": "lifespan.startup"})
    while "lifespan.startup.complete" not in sent:
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        await queue.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(task, 10)
        assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def hooked_server(log: list[str]) -> Server:
    @contextlib.asynccontextmanager
    async def hook(server: Server) -> AsyncIterator[str]:
        log.append("enter")
        yield "from the hook"
        log.append("exit")

    return make_server(lifespan=hook)


def test_lifespan_events_enter_and_leave_the_servers_hook() -> None:
    log: list[str] = []
    app = hooked_server(log).http_app()

    async def go() -> None:
        async with lifespan(app):
            r = await request(
                app,
                body=modern("tools/call", params={"name": "hello"}),
                headers={"mcp-name": "hello"},
            )
            assert r.json["result"]["content"][0]["text"] == "hello from the hook"
        assert log == ["enter", "exit"]

    run(go())


def test_without_lifespan_events_the_first_request_starts_the_server() -> None:
    log: list[str] = []
    app = hooked_server(log).http_app()

    async def go() -> None:
        r = await request(
            app, body=modern("tools/call", params={"name": "hello"}), headers={"mcp-name": "hello"}
        )
        assert r.json["result"]["content"][0]["text"] == "hello from the hook"
        assert log == ["enter"]
        await app.shutdown()
        assert log == ["enter", "exit"]

    run(go())


def test_a_mounted_app_sees_paths_below_its_mount() -> None:
    app = make_server().http_app("/")

    async def go() -> None:
        r = await request(app, path="/", root_path="/api/mcp", body=modern("tools/list"))
        assert r.status == 200 and r.json["result"]["tools"]
        r = await request(app, path="/other", root_path="/api/mcp", body=modern("tools/list"))
        assert r.status == 404
        await app.shutdown()

    run(go())


def test_a_scope_without_a_bound_address_checks_no_host() -> None:
    app = make_server().http_app()

    async def go() -> None:
        r = await request(app, body=modern("tools/list"), headers={"host": "anything"}, server=None)
        assert r.status == 200
        r = await request(app, body=modern("tools/list"), headers={"host": "anything"})
        assert r.status == 421
        await app.shutdown()

    run(go())


def test_cors_preflight() -> None:
    app = make_server().http_app(allowed_origins=["http://localhost:6274"])

    async def go() -> None:
        r = await request(
            app,
            "OPTIONS",
            headers={
                "origin": "http://localhost:6274",
                "access-control-request-headers": "content-type, mcp-method",
            },
        )
        assert r.status == 204
        assert r.headers[b"access-control-allow-origin"] == b"http://localhost:6274"
        assert r.headers[b"access-control-allow-headers"] == b"content-type, mcp-method"
        assert b"POST" in r.headers[b"access-control-allow-methods"]
        r = await request(app, "OPTIONS", headers={"origin": "http://evil.example.com"})
        assert r.status == 403
        r = await request(
            app, body=modern("tools/list"), headers={"origin": "http://localhost:6274"}
        )
        assert r.status == 200
        assert r.headers[b"access-control-allow-origin"] == b"http://localhost:6274"
        await app.shutdown()

    run(go())


def test_websockets_are_closed() -> None:
    app = make_server().http_app()
    sent: list[dict[str, Any]] = []

    async def go() -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "websocket.connect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app({"type": "websocket", "path": "/mcp"}, receive, send)

    run(go())
    assert sent == [{"type": "websocket.close", "code": 1003}]


def test_a_modern_only_server_refuses_sessions() -> None:
    app = make_server(legacy=False).http_app()

    async def go() -> None:
        init = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
        ).encode()
        r = await request(app, body=init, headers={"mcp-protocol-version": "2025-11-25"})
        assert r.status == 400 and r.json["error"]["code"] == -32602
        r = await request(app, "GET", headers={"mcp-session-id": "x"})
        assert r.status == 405 and r.headers[b"allow"] == b"POST"
        await app.shutdown()

    run(go())


def test_a_verifier_that_raises_refuses_and_a_sync_one_works() -> None:
    def verify(token: str) -> str | None:
        if token == "boom":
            raise RuntimeError("verifier down")
        return "carol" if token == "ok" else None

    app = make_server().http_app(verify_token=verify)

    async def go() -> None:
        r = await request(app, body=modern("tools/list"), headers={"authorization": "Bearer boom"})
        assert r.status == 401 and r.headers[b"www-authenticate"] == b'Bearer error="invalid_token"'
        r = await request(app, body=modern("tools/list"), headers={"authorization": "Bearer ok"})
        assert r.status == 200
        await app.shutdown()

    run(go())


def test_shutdown_answers_open_listens_with_their_completion() -> None:
    app = make_server().http_app(keepalive=None)

    async def go() -> None:
        hold = asyncio.Event()
        body = modern("subscriptions/listen", 9, {"notifications": {"toolsListChanged": True}})
        task = asyncio.ensure_future(request(app, body=body, hold=hold))
        while not app.posts:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        await app.shutdown()
        out = await asyncio.wait_for(task, 5)
        hold.set()
        frames = [
            json.loads(line[6:])
            for line in out.body.decode().splitlines()
            if line.startswith("data: ")
        ]
        assert frames[0]["method"] == "notifications/subscriptions/acknowledged"
        assert frames[-1]["id"] == 9
        result = frames[-1]["result"]
        assert result["resultType"] == "complete"
        assert result["_meta"]["io.modelcontextprotocol/subscriptionId"] == 9
        assert not app.posts and not app.server.runtime.engine.peers

    run(go())


def inline_echo() -> Server:
    server = Server("asgi")

    @server.tool(inline=True)
    def echo(text: str) -> str:
        """Return the text."""
        return text

    return server


@pytest.mark.parametrize("total", [1 << 20, 10])
def test_a_reply_given_at_once_is_counted_in_the_budget_until_written(total: int) -> None:
    # With room, the reply is written straight from the peer; without (a 10-byte budget),
    # it goes through an outbox, where a small reply always fits. Both count it while it is
    # written and give it back after.
    app = inline_echo().http_app(max_outbound_total_bytes=total)
    held: list[int] = []

    def seen(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            held.append(app.outbound.held)

    async def go() -> Exchange:
        body = modern("tools/call", 3, {"name": "echo", "arguments": {"text": "hi"}})
        return await request(app, body=body, headers={"mcp-name": "echo"}, on_send=seen)

    out = run(go())
    assert out.status == 200 and out.json["result"]["content"][0]["text"] == "hi"
    assert held == [len(out.body)]
    assert app.outbound.held == 0 and not app.outbound.outboxes
    assert not app.posts and not app.server.runtime.engine.peers


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": "mcp"}, "path must start"),
        ({"max_body_bytes": 0}, "max_body_bytes"),
        ({"max_body_bytes": 100, "max_body_total_bytes": 99}, "max_body_total_bytes"),
        ({"body_timeout": 0}, "positive"),
        ({"resource_metadata": {"resource": "x"}}, "resource_metadata"),
        ({"no_such_option": 1}, "no_such_option"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        make_server().http_app(**options)


def test_a_post_runs_its_handler_in_the_requests_own_task() -> None:
    server = Server("asgi")
    seen: list[asyncio.Task[Any] | None] = []

    @server.tool
    async def where() -> str:
        """Say nothing; note the task it runs in (after a real wait)."""
        await asyncio.sleep(0.001)
        seen.append(asyncio.current_task())
        return "here"

    app = server.http_app()

    async def go() -> tuple[Exchange, asyncio.Task[Any]]:
        body = modern("tools/call", 1, {"name": "where", "arguments": {}})
        task = asyncio.ensure_future(request(app, body=body, headers={"mcp-name": "where"}))
        return await asyncio.wait_for(task, 10), task

    out, task = run(go())
    assert out.status == 200 and out.json["result"]["content"][0]["text"] == "here"
    assert seen == [task]


def test_notifications_stream_while_the_handler_runs() -> None:
    # The tool waits for the client to have been sent its first notification: a response
    # written only once the handler ended would never get there.
    server = Server("asgi")
    streamed = asyncio.Event()

    @server.tool
    async def waits(ctx: Context) -> str:
        """Report progress, then wait until the client was sent it."""
        ctx.report_progress(1, 2)
        await streamed.wait()
        return "after"

    app = server.http_app()

    def seen(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and b"notifications/progress" in message.get(
            "body", b""
        ):
            streamed.set()

    async def go() -> Exchange:
        params = {"name": "waits", "arguments": {}}
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {**params, "_meta": {**meta(), "progressToken": "p"}},
            }
        ).encode()
        call = request(app, body=body, headers={"mcp-name": "waits"}, on_send=seen)
        return await asyncio.wait_for(call, 10)

    out = run(go())
    assert out.status == 200 and out.headers[b"content-type"] == b"text/event-stream"
    frames = [json.loads(x[6:]) for x in out.body.decode().splitlines() if x.startswith("data: ")]
    assert [f.get("method", "reply") for f in frames] == ["notifications/progress", "reply"]
    assert frames[-1]["result"]["content"][0]["text"] == "after"
    assert not app.posts and app.outbound.held == 0


MARK: contextvars.ContextVar[str | None] = contextvars.ContextVar("mark", default=None)


@pytest.mark.parametrize("tool", ["at_once", "after_a_wait"])
def test_what_a_handler_sets_in_context_variables_stays_its_own(tool: str) -> None:
    # The handler runs in the request's task, in a context of its own: what it sets is not
    # seen by whoever called the app (a framework's middleware, say) once it returns.
    server = Server("asgi")

    @server.tool(inline=True)
    def at_once() -> str:
        """Set the variable on the event loop."""
        MARK.set("at_once")
        return str(MARK.get())

    @server.tool
    async def after_a_wait() -> str:
        """Set the variable, wait, and read it back."""
        MARK.set("after_a_wait")
        await asyncio.sleep(0.001)
        return str(MARK.get())

    app = server.http_app()

    async def go() -> tuple[Exchange, str | None]:
        body = modern("tools/call", 1, {"name": tool, "arguments": {}})
        out = await request(app, body=body, headers={"mcp-name": tool})
        return out, MARK.get()

    out, seen_after = run(go())
    assert out.json["result"]["content"][0]["text"] == tool  # the handler saw its own value
    assert seen_after is None


def test_a_request_still_running_past_the_shutdown_grace_gets_a_503() -> None:
    server = Server("asgi", shutdown_grace=0.05)
    never = asyncio.Event()

    @server.tool
    async def stuck() -> str:
        """Wait for what never comes."""
        await never.wait()
        return "never"

    app = server.http_app()

    async def go() -> Exchange:
        body = modern("tools/call", 5, {"name": "stuck", "arguments": {}})
        call = asyncio.ensure_future(request(app, body=body, headers={"mcp-name": "stuck"}))
        while not app.posts:
            await asyncio.sleep(0.01)
        await app.shutdown()
        return await asyncio.wait_for(call, 10)

    out = run(go())
    assert out.status == 503
    assert out.json["id"] == 5 and "not completed" in out.json["error"]["message"]
    assert not app.posts and app.outbound.held == 0


def test_a_reply_past_an_outbound_budget_already_overdrawn_is_a_500() -> None:
    # The first reply (70 KiB, past the 1,500-byte budget, still sent: one reply may pass
    # it) goes to a client that reads nothing, so its bytes stay held; the second finds the
    # budget overdrawn and cannot be sent: a 500 naming the limits.
    server = Server("asgi")

    @server.tool(inline=True)
    def big() -> str:
        """A reply larger than the budget."""
        return "x" * 70_000

    app = server.http_app(max_outbound_total_bytes=1500)
    body = modern("tools/call", 6, {"name": "big", "arguments": {}})

    async def go() -> tuple[int, Exchange]:
        stalled = asyncio.Event()
        first = asyncio.ensure_future(
            request(app, body=body, headers={"mcp-name": "big"}, stall=stalled)
        )
        while app.outbound.held < 70_000:
            await asyncio.sleep(0.01)
        held = app.outbound.held
        second = await asyncio.wait_for(request(app, body=body, headers={"mcp-name": "big"}), 10)
        stalled.set()
        await asyncio.wait_for(first, 10)
        return held, second

    held, second = run(go())
    assert held > 70_000
    assert second.status == 500 and "outgrew" in second.json["error"]["message"]
    assert app.outbound.held == 0
