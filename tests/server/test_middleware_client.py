"""The client's middleware chain: a span per request whose context reaches a real stdio
server through ``_meta`` (the server's span is its child), retries, logging, answering
without sending, and what is not a client middleware."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpline import Client, Server
from mcpline.errors import JsonRpcError, ServerError
from mcpline.middleware import MiddlewareContext
from mcpline.middleware._chain import CallNext
from mcpline.middleware.client import (
    ClientCall,
    ClientCallNext,
    LoggingClientMiddleware,
    RetryMiddleware,
)
from mcpline.observability.otel import ClientTracingMiddleware

from ..proc import FIXTURES

SERVER = FIXTURES / "middleware_server.py"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_client_spans_are_the_parents_of_the_server_spans_over_stdio() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    async def main() -> list[dict[str, Any]]:
        client = Client.stdio(
            sys.executable,
            [str(SERVER)],
            env={"MW": "trace"},
            middleware=[ClientTracingMiddleware(provider)],
        )
        async with client:
            await client.call_tool("echo", {"text": "x"})
            with pytest.raises(ServerError):
                await client.call_tool("forbidden")
            found = await client.call_tool("spans")
        spans: list[dict[str, Any]] = json.loads(found["content"][0]["text"])
        return spans

    server_spans = run(main())
    mine = {s.name: s for s in exporter.get_finished_spans()}
    echo = mine["tools/call echo"]
    assert echo.kind.name == "CLIENT"
    assert echo.attributes is not None and echo.attributes["gen_ai.tool.name"] == "echo"
    served = next(s for s in server_spans if s["name"] == "tools/call echo")
    assert served["trace_id"] == f"{echo.context.trace_id:032x}"
    assert served["parent_id"] == f"{echo.context.span_id:016x}"
    refused = mine["tools/call forbidden"]
    assert refused.status.status_code.name == "ERROR"
    assert refused.attributes is not None
    assert refused.attributes["rpc.jsonrpc.error_code"] == -32001


def flaky_server(failures: int) -> tuple[Server, list[str]]:
    seen: list[str] = []

    async def fail_first(mctx: MiddlewareContext, call_next: CallNext) -> Any:
        seen.append(mctx.method)
        if mctx.method in ("tools/list", "tools/call") and seen.count(mctx.method) <= failures:
            raise JsonRpcError(-32000, "try again")
        return await call_next(mctx)

    server = Server("flaky", middleware=[fail_first])

    @server.tool
    def hello() -> str:
        """Say hello."""
        return "hello"

    return server, seen


def test_retry_sends_an_idempotent_request_again() -> None:
    server, seen = flaky_server(2)

    async def main() -> dict[str, Any]:
        retry = RetryMiddleware(3, backoff=0.001, codes={-32000})
        async with Client.memory(server, middleware=[retry]) as client:
            listed = await client.request("tools/list")
            with pytest.raises(ServerError):
                await client.call_tool("hello")  # not idempotent: not retried
            return listed

    assert [t["name"] for t in run(main())["tools"]] == ["hello"]
    assert seen.count("tools/list") == 3 and seen.count("tools/call") == 1


def test_retry_gives_up_after_its_attempts() -> None:
    server, seen = flaky_server(5)

    async def main() -> None:
        retry = RetryMiddleware(2, backoff=0.001, codes={-32000})
        async with Client.memory(server, middleware=[retry]) as client:
            with pytest.raises(ServerError):
                await client.request("tools/list")

    run(main())
    assert seen.count("tools/list") == 2
    with pytest.raises(ValueError):
        RetryMiddleware(0)


def test_logging_and_answering_without_sending() -> None:
    server, seen = flaky_server(0)
    out = io.StringIO()

    async def cached(call: ClientCall, call_next: ClientCallNext) -> dict[str, Any]:
        if call.method == "tools/list" and call.params.get("cursor") == "mine":
            return {"tools": []}
        return await call_next(call)

    async def main() -> None:
        chain = [LoggingClientMiddleware(json=True, stream=out), cached]
        async with Client.memory(server, middleware=chain) as client:
            assert await client.request("tools/list", {"cursor": "mine"}) == {"tools": []}
            await client.call_tool("hello")

    run(main())
    assert "tools/list" not in seen  # answered by the middleware
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["method"], r["outcome"]) for r in records][-2:] == [
        ("tools/list", "ok"),
        ("tools/call", "ok"),
    ]


def test_what_is_not_a_client_middleware() -> None:
    def sync(call: ClientCall, call_next: ClientCallNext) -> Any:
        return None

    with pytest.raises(TypeError, match="async callable"):
        Client.memory(Server("s"), middleware=[sync])
    with pytest.raises(ValueError, match="stdout"):
        LoggingClientMiddleware(stream=sys.stdout)
