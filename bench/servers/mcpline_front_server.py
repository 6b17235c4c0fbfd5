"""The bench server of `mcpline_server.py` with its MCP handling replaced, for
`bench/layers.py`. Every request still passes mcpline's transport front; what answers it then
depends on ``$MCPLINE_LAYER``:

- ``front`` (the default): the floor's own reply (the echo result, built and encoded), so
  the server costs what the front costs;
- ``steps``: the steps a correct answer cannot skip, in one straight line, with no engine,
  exchange, peer or `Context`: the ``_meta`` check (over HTTP, with the
  ``MCP-Protocol-Version`` and mirrored headers), finding the tool, validating and binding
  its arguments, the call (timed against the inline budget; an ``async def`` tool's
  coroutine is stepped once, with no task), the result's shape with ``resultType`` and
  serverInfo, the encode. A lower bound on what mcpline's MCP handling can cost.

Over HTTP (``mcpline run mcpline_front_server.py --http``) the front is the HTTP app up to the
JSON-RPC parse: routing, the Host/Origin screen, admission and per-client shares, the body's
limits and budget, the headers (`asgi_floor_server.py` is the floor). Over stdio
(``python mcpline_front_server.py``) it is the connection's framing, parse and coalesced
writes (`bare_server.py` is the floor).

A diagnostic, not a server to use: it answers only ``tools/call`` and skips every other
rule of the engine (cancellation, in-flight limits, duplicate ids, errors as replies).
"""

import os
from collections.abc import Callable
from typing import Any

import mcpline_server

from mcpline.jsonrpc import Request
from mcpline.protocol.meta import validate_request_meta
from mcpline.server._userfn import overran, thread_usage
from mcpline.server.connection import Connection
from mcpline.server.tools import outcome, prepare_call
from mcpline.transports.http import modern, respond
from mcpline.transports.http.app import HttpApp
from mcpline.transports.http.headers import PROTOCOL_VERSION, Headers, mirror_problem
from mcpline.wire import encode

app = mcpline_server.app
LAYER = os.environ.get("MCPLINE_LAYER", "front")
if LAYER not in ("front", "steps"):
    raise SystemExit(f"MCPLINE_LAYER must be front or steps, not {LAYER!r}")
STEPS = LAYER == "steps"
VERSIONS = app.options.versions
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "bench-mcpline", "version": "0"}}


def floor_reply(request: Request) -> bytes:
    """What the floor does once it has the decoded message: the echo result, encoded."""
    text = request.params["arguments"]["text"] if request.method == "tools/call" else ""
    result = {"content": [{"type": "text", "text": text}], "resultType": "complete"}
    return encode({"jsonrpc": "2.0", "id": request.id, "result": result})


def steps_reply(request: Request, check_version: Callable[[str], None] | None = None) -> bytes:
    """The required steps of a ``tools/call``, in one straight line (see the docstring)."""
    params = request.params
    validate_request_meta(params, VERSIONS, check_version)
    tool = app.registry.tools[params["name"]]
    kwargs, refused = prepare_call(tool, params.get("arguments", {}))
    if kwargs is None:
        assert refused is not None
        result = refused
    else:
        before = thread_usage()
        value = tool.body.fn(**kwargs)
        overran(before)
        if tool.body.is_async:
            try:
                value.send(None)
            except StopIteration as done:
                value = done.value
        result = outcome(tool, value)
    result.setdefault("resultType", "complete")
    result["_meta"] = SERVER_INFO
    return encode({"jsonrpc": "2.0", "id": request.id, "result": result})


def checked_steps_reply(request: Request, headers: Headers, http_app: HttpApp) -> bytes:
    """`steps_reply` with the header checks of a 2026-07-28 POST."""

    def check_version(version: str) -> None:
        if headers.one(PROTOCOL_VERSION) != version:
            raise ValueError("MCP-Protocol-Version header mismatch")

    params = request.params
    mirrored = http_app.header_params(params["name"])
    problem = mirror_problem(request.method, params, headers, mirrored)
    if problem is not None:
        raise ValueError(problem)
    return steps_reply(request, check_version)


async def serve_post(
    app: HttpApp,
    request: Request,
    headers: Headers,
    principal: Any,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.Headers,
) -> None:
    """In place of `modern.serve`: the floor's reply, or the required steps', to a POST."""
    if STEPS and request.method == "tools/call":
        reply = checked_steps_reply(request, headers, app)
    else:
        reply = floor_reply(request)
    await respond.json(send, 200, reply, extra)


def handle_request(self: Connection, req: Request) -> None:
    """In place of `Connection.handle_request`: the reply, written as replies are."""
    self.write(steps_reply(req) if STEPS and req.method == "tools/call" else floor_reply(req))


modern.serve = serve_post  # both are looked up per request
Connection.handle_request = handle_request  # type: ignore[method-assign]

if __name__ == "__main__":
    app.run()
