"""OpenTelemetry traces (the ``otel`` extra: ``pip install 'mcpline[otel]'``).

`TracingMiddleware` starts a span per request (``SpanKind.SERVER``), named after the method
and its target (``tools/call add``), with the MCP attributes: ``mcp.method.name``,
``mcp.protocol.version``, ``jsonrpc.request.id``, ``gen_ai.tool.name`` (and
``gen_ai.operation.name`` ``execute_tool``), ``gen_ai.prompt.name``, ``mcp.resource.uri``,
``mcpline.era``, ``mcpline.result.type`` and, on an error, ``error.type`` and
``rpc.jsonrpc.error_code``. Its parent is the W3C trace context the client sent: the
``traceparent``/``tracestate`` keys of the request's ``_meta``, else the HTTP request's
headers of the same names. `inject_meta` writes the current context into a request's
``_meta``; `ClientTracingMiddleware` does it for a `mcpline.Client`, in a span of its own.

Only this module imports OpenTelemetry; nothing else in mcpline does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context as OtelContext
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .._version import __version__
from ..errors import JsonRpcError, ServerError
from ..middleware._chain import CallNext, Middleware, MiddlewareContext
from ..middleware.client import ClientCall, ClientCallNext
from ..middleware.logs import outcome
from ..spec import PROMPTS_GET, RESOURCES_READ, TOOLS_CALL

TRACE_KEYS = ("traceparent", "tracestate")
"""The W3C trace context keys read from and written to ``_meta`` and HTTP headers."""


def carrier(mctx: MiddlewareContext) -> dict[str, str]:
    """The trace context the client sent: ``_meta``'s keys, else the HTTP headers'."""
    meta = mctx.params.get("_meta")
    found: dict[str, str] = {}
    if type(meta) is dict:
        found = {k: meta[k] for k in TRACE_KEYS if type(meta.get(k)) is str}
    if "traceparent" not in found:
        headers = mctx.headers
        if headers is not None:
            found = {k: headers[k] for k in TRACE_KEYS if k in headers}
    return found


def parent_of(mctx: MiddlewareContext) -> OtelContext | None:
    """The context a request's span continues (None: a new trace)."""
    found = carrier(mctx)
    return propagate.extract(found) if "traceparent" in found else None


def inject_meta(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the current trace context in its ``_meta`` (a copy; unchanged when
    no span is active)."""
    out: dict[str, str] = {}
    propagate.inject(out)
    if "traceparent" not in out:
        return params
    meta = params.get("_meta")
    merged = {**(meta if isinstance(meta, Mapping) else {}), **out}
    return {**params, "_meta": merged}


def attributes(mctx: MiddlewareContext) -> dict[str, Any]:
    """The MCP attributes of a request's span known before it runs."""
    attrs: dict[str, Any] = {"mcp.method.name": mctx.method}
    if mctx.request_id is not None:
        attrs["jsonrpc.request.id"] = str(mctx.request_id)
    ctx = mctx.context
    if ctx is not None and ctx.meta is not None:
        attrs["mcp.protocol.version"] = ctx.meta.protocol_version
    if mctx.era is not None:
        attrs["mcpline.era"] = mctx.era
    if mctx.method == TOOLS_CALL and mctx.name is not None:
        attrs["gen_ai.tool.name"] = mctx.name
        attrs["gen_ai.operation.name"] = "execute_tool"
    elif mctx.method == PROMPTS_GET and mctx.name is not None:
        attrs["gen_ai.prompt.name"] = mctx.name
    elif mctx.method == RESOURCES_READ and mctx.uri is not None:
        attrs["mcp.resource.uri"] = mctx.uri
    if mctx.task is not None:
        attrs["mcpline.task.id"] = str(mctx.task)
    return attrs


class ClientTracingMiddleware:
    """For a `mcpline.Client` (``Client(middleware=[ClientTracingMiddleware()])``): a span
    per request (``SpanKind.CLIENT``, named as the server's), with its trace context written
    into the request's ``_meta``, so that the server's span is its child. A request the
    server refuses ends its span with status ``ERROR`` and ``rpc.jsonrpc.error_code``."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("mcpline", __version__, tracer_provider=tracer_provider)

    async def __call__(self, call: ClientCall, call_next: ClientCallNext) -> dict[str, Any]:
        target = call.name if call.name is not None else call.params.get("uri")
        name = call.method if not isinstance(target, str) else f"{call.method} {target}"
        attrs: dict[str, Any] = {"mcp.method.name": call.method}
        if call.method == TOOLS_CALL and call.name is not None:
            attrs["gen_ai.tool.name"] = call.name
            attrs["gen_ai.operation.name"] = "execute_tool"
        with self.tracer.start_as_current_span(
            name,
            kind=SpanKind.CLIENT,
            attributes=attrs,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            call.params = inject_meta(call.params)
            try:
                result = await call_next(call)
            except ServerError as exc:
                span.set_attribute("rpc.jsonrpc.error_code", exc.code)
                span.set_attribute("error.type", str(exc.code))
                span.set_status(Status(StatusCode.ERROR))
                raise
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR))
                raise
            if result.get("isError") is True:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            return result


class TracingMiddleware(Middleware):
    """A span per request (see the module); ``tracer_provider`` defaults to the global one.
    Put it first (outermost) so that the other middleware run inside its span.

    ``forward=True`` writes the span's own context into the request's ``_meta`` before
    passing it on, for a server that forwards requests (``mcpline bridge``): the upstream
    server's span is then this span's child rather than its sibling."""

    every_round = True

    def __init__(
        self, tracer_provider: TracerProvider | None = None, *, forward: bool = False
    ) -> None:
        self.tracer = trace.get_tracer("mcpline", __version__, tracer_provider=tracer_provider)
        self.forward = forward

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        target = mctx.name if mctx.name is not None else mctx.uri
        name = mctx.method if target is None else f"{mctx.method} {target}"
        with self.tracer.start_as_current_span(
            name,
            context=parent_of(mctx),
            kind=SpanKind.SERVER,
            attributes=attributes(mctx),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            if self.forward and "_meta" in mctx.params:
                mctx.params["_meta"] = inject_meta(mctx.params)["_meta"]
            try:
                result = await call_next(mctx)
            except BaseException as exc:
                how, code = outcome(mctx, None, exc)
                span.set_attribute("mcpline.result.type", how)
                if code is not None:
                    span.set_attribute("rpc.jsonrpc.error_code", code)
                    span.set_attribute(
                        "error.type", str(code) if isinstance(exc, JsonRpcError) else "internal"
                    )
                    span.set_status(Status(StatusCode.ERROR))
                raise
            how, _ = outcome(mctx, result, None)
            span.set_attribute("mcpline.result.type", how)
            if how == "tool_error":
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            return result


__all__ = [
    "ClientTracingMiddleware",
    "TRACE_KEYS",
    "TracingMiddleware",
    "attributes",
    "carrier",
    "inject_meta",
    "parent_of",
]
