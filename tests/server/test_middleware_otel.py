"""OpenTelemetry through the middleware chain, exported by the SDK's in-memory exporter in
the server process: a trace started by a client continues into the server's span over a
real stdio process (``_meta``), a real HTTP server (headers) and ``mcpline bridge``; the
span carries the MCP attributes, errors included."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import propagate
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span

from mcpline.observability.otel import inject_meta

from ..proc import FIXTURES, ServerProcess
from ..transports.http_util import MCPLINE, HttpServer, call

SERVER = FIXTURES / "middleware_server.py"
BRIDGE = FIXTURES / "middleware_bridge.py"
TRACER = TracerProvider().get_tracer("host")


def context_of(span: Span) -> tuple[str, str]:
    ctx = span.get_span_context()
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def carrier() -> dict[str, str]:
    out: dict[str, str] = {}
    propagate.inject(out)
    return out


def spans_of(found: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(found["result"]["content"][0]["text"])
    return out


def by_name(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(s for s in spans if s["name"] == name)


def test_a_client_trace_continues_into_the_server_span_over_stdio(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(SERVER, env={"MW": "trace"})
    with TRACER.start_as_current_span("host") as host:
        sent = carrier()
        assert p.call("echo", {"text": "hi"}, **sent)["result"]["content"][0]["text"] == "hi"
        assert "error" in p.call("forbidden", None, **sent)
    trace_id, span_id = context_of(host)
    spans = spans_of(p.call("spans"))
    echo = by_name(spans, "tools/call echo")
    assert (echo["trace_id"], echo["parent_id"]) == (trace_id, span_id)
    assert echo["kind"] == "SERVER" and echo["status"] == "UNSET"
    attrs = echo["attributes"]
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "echo"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["mcpline.era"] == "modern"
    assert attrs["mcpline.result.type"] == "ok"
    assert attrs["mcp.protocol.version"] == "2026-07-28"
    refused = by_name(spans, "tools/call forbidden")
    assert refused["status"] == "ERROR"
    assert refused["attributes"]["rpc.jsonrpc.error_code"] == -32001
    untraced = by_name(spans_of(p.call("spans")), "tools/call spans")
    assert untraced["parent_id"] is None and untraced["trace_id"] != trace_id  # a new trace


@pytest.fixture
def traced_http() -> Iterator[HttpServer]:
    server = HttpServer([MCPLINE, "run", str(SERVER), "--http", "127.0.0.1:0"], {"MW": "trace"})
    try:
        yield server
    finally:
        assert server.stop() == 0


def test_over_http_the_traceparent_header_is_the_parent(traced_http: HttpServer) -> None:
    with TRACER.start_as_current_span("host") as host:
        headers = carrier()
        r = call(
            traced_http, 1, "tools/call", {"name": "boom", "arguments": {"secret": "s"}}, headers
        )
    assert r.json["result"]["isError"] is True
    trace_id, span_id = context_of(host)
    spans = spans_of(call(traced_http, 2, "tools/call", {"name": "spans"}).json)
    boom = by_name(spans, "tools/call boom")
    assert (boom["trace_id"], boom["parent_id"]) == (trace_id, span_id)
    assert boom["attributes"]["mcpline.result.type"] == "tool_error"
    assert boom["attributes"]["error.type"] == "tool_error"


def test_a_trace_continues_through_the_bridge_into_the_tool_span(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(BRIDGE, env={"MW": "trace"})  # the bridged child traces
    with TRACER.start_as_current_span("host") as host:
        p.call("echo", {"text": "via bridge"}, **carrier())
    trace_id, span_id = context_of(host)
    deadline = time.monotonic() + 30
    while True:
        spans = spans_of(p.call("spans"))
        if any(s["name"] == "tools/call echo" for s in spans) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    echo = by_name(spans, "tools/call echo")
    assert echo["trace_id"] == trace_id
    assert echo["parent_id"] == span_id


def test_a_forwarding_bridge_span_sits_between_the_host_and_the_tool(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(BRIDGE, env={"MW": "trace", "BRIDGE_TRACE": "1"})
    with TRACER.start_as_current_span("host") as host:
        p.call("echo", {"text": "via bridge"}, **carrier())
    trace_id, host_id = context_of(host)
    deadline = time.monotonic() + 30
    while True:
        spans = spans_of(p.call("spans"))
        bridged = [
            json.loads(line.removeprefix("span "))
            for line in p.stderr.splitlines()
            if line.startswith("span ")
        ]
        found = any(s["name"] == "tools/call echo" for s in spans)
        if (found and any(b["name"] == "tools/call echo" for b in bridged)) or (
            time.monotonic() > deadline
        ):
            break
        time.sleep(0.05)
    hop = next(b for b in bridged if b["name"] == "tools/call echo")
    assert hop["context"]["trace_id"] == "0x" + trace_id
    assert hop["parent_id"] == "0x" + host_id
    assert hop["kind"] == "SpanKind.SERVER"
    tool = by_name(spans, "tools/call echo")
    assert tool["trace_id"] == trace_id
    assert "0x" + tool["parent_id"] == hop["context"]["span_id"]  # the bridge's span


def test_inject_meta_writes_the_current_context() -> None:
    assert inject_meta({"name": "x"}) == {"name": "x"}  # no span: nothing added
    with TRACER.start_as_current_span("host") as host:
        params = inject_meta({"name": "x", "_meta": {"progressToken": 1}})
    trace_id, span_id = context_of(host)
    assert params["_meta"]["progressToken"] == 1
    assert params["_meta"]["traceparent"].startswith(f"00-{trace_id}-{span_id}-")
