"""A 2026-07-28 POST leaves no reference cycle behind, answered with JSON or as an event
stream (whose disconnection a task watched): what it allocated is freed by reference
counting when it ends, so a busy server does not run the cycle collector over its requests
(whose cost grows with the requests in flight); and a served process collects its youngest
generation less often than CPython's default."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from typing import Any

import pytest

from mcpline import Context, InputRequired, Server, elicit
from mcpline.errors import InvalidParams
from mcpline.transports.http import HttpApp, serve

from ..proc import MODERN, meta


def make_app() -> HttpApp:
    server = Server("cycles")

    @server.tool
    def echo(text: str) -> str:
        """Return the text (a plain function)."""
        return text

    @server.tool
    async def aecho(text: str) -> str:
        """Return the text (a coroutine function)."""
        await asyncio.sleep(0)
        return text

    @server.tool(inline=False)
    def fails(text: str) -> str:
        """Raise (on a worker thread): the call is answered with an ``isError`` result."""
        raise ValueError(text)

    @server.tool(inline=True)
    def fails_here(text: str) -> str:
        """Raise on the event loop: an ``isError`` result."""
        raise ValueError(text)

    @server.tool(inline=True)
    def refuses(text: str) -> str:
        """Raise a protocol error on the event loop: the request's error response."""
        raise InvalidParams(f"Invalid params: {text}")

    @server.tool(inline=True)
    def asks(text: str, ctx: Context) -> str:
        """Ask for input on the event loop (MRTR): an ``InputRequiredResult``."""
        answer = ctx.ask("who", elicit(text, {"name": str}))
        return str(answer)

    @server.tool(inline=True)
    def returns_a_question(text: str) -> Any:
        """Return (not raise) a request for input, on the event loop."""
        return InputRequired({"who": elicit(text, {"name": str})})

    @server.tool(inline=False)
    def returns_a_question_on_a_thread(text: str) -> Any:
        """Return (not raise) a request for input, on a worker thread."""
        return InputRequired({"who": elicit(text, {"name": str})})

    @server.tool
    async def progress(text: str, ctx: Context) -> str:
        """Report progress first, so that the response is an event stream."""
        await ctx.report_progress(1, 2)
        return text

    return server.http_app()


async def post(app: HttpApp, id: int, tool: str) -> int:
    """One ``tools/call`` through the app in process; the response's status."""
    m = meta({"elicitation": {}})
    if tool == "progress":
        m["progressToken"] = f"p{id}"
    params = {"name": tool, "arguments": {"text": "x"}, "_meta": m}
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"host", b"127.0.0.1:8000"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", tool.encode()),
        (b"mcp-protocol-version", MODERN.encode()),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": "/mcp",
        "root_path": "",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5555),
    }
    messages = [{"type": "http.request", "body": body.encode(), "more_body": False}]
    status = 0
    ended = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if not messages:
            await ended.wait()  # the client stays until the response ends
            return {"type": "http.disconnect"}
        return messages.pop()

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif not message.get("more_body"):
            ended.set()

    await app(scope, receive, send)
    return status


@pytest.mark.parametrize(
    ("tool", "status"),
    [
        ("echo", 200),
        ("aecho", 200),
        ("progress", 200),
        ("fails", 200),
        ("no-such-tool", 400),
        ("fails_here", 200),
        ("refuses", 400),
        ("asks", 200),
        ("returns_a_question", 200),
        ("returns_a_question_on_a_thread", 200),
    ],
)
def test_a_request_leaves_nothing_for_the_cycle_collector(tool: str, status: int) -> None:
    """A tool that raises, and a call that fails in its handler (an unknown tool), on a
    worker thread or on the event loop, or that asks for input: the exception must not tie
    the failing frames, and the request they hold, into a cycle."""

    async def main() -> tuple[list[int], int]:
        app = make_app()
        await app.startup()
        try:
            for i in range(50):  # warm up: first-use caches and lazy imports
                await post(app, i, tool)
            gc.collect()
            gc.disable()
            try:
                statuses = [await post(app, 100 + i, tool) for i in range(50)]
                left = gc.collect()
            finally:
                gc.enable()
            return statuses, left
        finally:
            await app.shutdown()

    # pytest keeps the log records (with their exceptions) the failing tool logs: keep none
    quiet = logging.getLogger("mcpline.server")
    quiet.disabled = True
    try:
        statuses, left = asyncio.run(main())
    finally:
        quiet.disabled = False
    assert statuses == [status] * 50
    assert left == 0


def test_a_served_process_collects_young_objects_less_often_unless_the_program_chose() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(serve.DEFAULT_YOUNG_THRESHOLD, *before[1:])
        serve.young_collections()
        assert gc.get_threshold() == (serve.YOUNG_THRESHOLD, *before[1:])
        gc.set_threshold(123, *before[1:])  # the program's own choice
        serve.young_collections()
        assert gc.get_threshold()[0] == 123
    finally:
        gc.set_threshold(*before)
