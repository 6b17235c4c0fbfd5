"""The middleware chain around every request and notification: hooks by kind, answering,
refusing and passing on, in both eras, once per request (not once per MRTR re-run), over
stdio (in memory and as a real process) and sockets; and its rules as units."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Server
from mcpline.middleware import Chain, Middleware, MiddlewareContext
from mcpline.middleware._chain import CallNext

from ..proc import FIXTURES, ServerProcess
from .test_legacy import call as legacy_call
from .test_legacy import initialize

SERVER = FIXTURES / "middleware_server.py"


def seen(p: ServerProcess) -> list[str]:
    resp = p.call("seen")
    found: list[str] = resp["result"]["structuredContent"]["result"]
    return found


def text(resp: dict[str, Any]) -> str:
    value: str = resp["result"]["content"][0]["text"]
    return value


@pytest.mark.driver("memory")
def test_hooks_run_by_kind_outermost_first(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    seen(p)
    assert text(p.call("echo", {"text": "hi"})) == "hi"
    resp = p.request("tools/list")
    assert len(resp["result"]["tools"]) > 5
    assert seen(p) == [
        "message tools/call request modern",
        "call_tool echo principal=None same=tools/call",
        "message tools/list request modern",
        f"list_tools {len(resp['result']['tools'])}",
        "message tools/call request modern",
        "call_tool seen principal=None same=tools/call",
    ]


@pytest.mark.driver("memory")
def test_a_middleware_answers_or_refuses_without_the_handler(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(SERVER)
    resp = p.call("answered")
    assert text(resp) == "from middleware"
    assert resp["result"]["resultType"] == "complete"  # added to a middleware's own answer
    resp = p.call("forbidden")
    assert resp["error"] == {
        "code": -32001,
        "message": "Forbidden by middleware",
        "data": {"tool": "forbidden"},
    }


@pytest.mark.driver("memory")
def test_refused_requests_and_notifications_go_through_the_chain(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(SERVER)
    seen(p)
    resp = p.request("no/such/method")
    assert resp["error"]["code"] == -32601
    p.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    assert seen(p) == [
        "message no/such/method request None",
        "message notifications/roots/list_changed notification None",
        "message tools/call request modern",
        "call_tool seen principal=None same=tools/call",
    ]


@pytest.mark.driver("memory")
def test_legacy_session_runs_the_chain_once_per_request_not_per_rerun(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(SERVER)
    initialize(p, {"elicitation": {}})
    asked: list[str] = []

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        asked.append(req["method"])
        return {"result": {"action": "accept", "content": {"value": "Ada"}}}

    resp = legacy_call(p, "tools/call", {"name": "ask"}, answer)
    assert resp["result"]["content"][0]["text"] == "hello Ada after 2 runs"
    assert asked == ["elicitation/create"]
    got = legacy_call(p, "tools/call", {"name": "seen"})["result"]["structuredContent"]["result"]
    assert got == [
        "message initialize request legacy",
        "message notifications/initialized notification None",
        "message tools/call request legacy",
        "call_tool ask principal=None same=tools/call",
        "message tools/call request legacy",
        "call_tool seen principal=None same=tools/call",
    ]


@pytest.mark.driver("memory")
def test_modern_rounds_run_the_chain_once(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    seen(p)
    first = p.call("ask", caps={"elicitation": {}})["result"]
    assert first["resultType"] == "input_required"
    (key,) = first["inputRequests"]
    params = {
        "name": "ask",
        "inputResponses": {key: {"action": "accept", "content": {"value": "Bo"}}},
    }
    if "requestState" in first:
        params["requestState"] = first["requestState"]
    done = p.request("tools/call", params, caps={"elicitation": {}})
    assert text(done).startswith("hello Bo after")
    assert [s for s in seen(p) if s.startswith("call_tool ask")] == [
        "call_tool ask principal=None same=tools/call"
    ]


def test_the_chain_on_a_real_process_keeps_stdout_clean(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(SERVER, env={"MW": "log,timing"})
    assert text(p.call("echo", {"text": "out"})) == "out"
    assert p.call("forbidden")["error"]["code"] == -32001
    p.stop()
    assert "tools/call id=" in p.stderr
    assert "timing tools/call echo" in p.stderr


# --- units ---------------------------------------------------------------------------------


class _Recorder(Middleware):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        self.log.append(f"{self.name} in")
        result = await call_next(mctx)
        self.log.append(f"{self.name} out")
        return result


def test_a_middleware_must_be_async() -> None:
    server = Server("t")

    def sync(mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return None

    with pytest.raises(TypeError, match="async callable"):
        server.add_middleware(sync)
    with pytest.raises(TypeError, match="async callable"):
        server.add_middleware(42)


def test_plans_skip_hooks_not_overridden() -> None:
    log: list[str] = []
    chain = Chain()
    chain.add(_Recorder("a", log))
    plan = chain.plan("tools/call", "request")
    assert len(plan) == 1  # on_request only: on_message and on_call_tool pass by default
    assert chain.plan("notifications/x", "notification") == []


@pytest.mark.driver("memory")
def test_call_next_twice_is_an_internal_error(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    server: Server = p.server  # type: ignore[attr-defined]

    async def twice(mctx: MiddlewareContext, call_next: CallNext) -> Any:
        if mctx.name == "echo":
            await call_next(mctx)
        return await call_next(mctx)

    server.add_middleware(twice)
    resp = p.call("echo", {"text": "x"})
    assert resp["error"]["code"] == -32603
    assert "twice" not in json.dumps(resp)  # the text stays on stderr


def test_a_result_that_is_not_an_object_is_refused() -> None:
    async def main() -> None:
        from mcpline.server.engine import Exchange

        class _Peer:
            name = "unit"
            loop = asyncio.get_running_loop()

        async def handler() -> dict[str, Any]:
            return {}

        async def bad(mctx: MiddlewareContext, call_next: CallNext) -> Any:
            return None

        from mcpline.jsonrpc import Request

        chain = Chain()
        chain.add(bad)
        exchange = Exchange(Request(1, "tools/list", {}), _Peer())  # type: ignore[arg-type]
        coro = handler()
        with pytest.raises(TypeError, match="NoneType"):
            await chain.request(exchange, None, coro)
        assert inspect.getcoroutinestate(coro) == "CORO_CLOSED"  # no "never awaited" warning

    asyncio.run(main())
