"""The bench server of `mcpline_server.py` with its MCP request handling taken out, for
`bench/layers.py`. Every request still passes mcpline's transport front, then gets the
reply the floor makes (the echo result, built and encoded): no ``_meta`` check, no peer or
exchange, no engine, no tool call.

- Over HTTP (``mcpline run mcpline_front_server.py --http``) the front is the HTTP app up
  to the JSON-RPC parse: routing, the Host/Origin screen, admission and per-client shares,
  the body's limits and budget, the headers (`asgi_floor_server.py` is the floor).
- Over stdio (``python mcpline_front_server.py``) it is the connection's framing, parse
  and coalesced writes (`bare_server.py` is the floor).

A diagnostic, not a server to use: it answers every request as an ``echo``.
"""

from typing import Any

import mcpline_server

from mcpline.jsonrpc import Request
from mcpline.server.connection import Connection
from mcpline.transports.http import modern, respond
from mcpline.transports.http.app import HttpApp
from mcpline.transports.http.headers import Headers
from mcpline.wire import encode


def floor_reply(request: Request) -> bytes:
    """What the floor does once it has the decoded message: the echo result, encoded."""
    text = request.params["arguments"]["text"] if request.method == "tools/call" else ""
    result = {"content": [{"type": "text", "text": text}], "resultType": "complete"}
    return encode({"jsonrpc": "2.0", "id": request.id, "result": result})


async def serve_post(
    app: HttpApp,
    request: Request,
    headers: Headers,
    principal: Any,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.Headers,
) -> None:
    """In place of `modern.serve`: the floor's reply to a 2026-07-28 POST."""
    await respond.json(send, 200, floor_reply(request), extra)


def handle_request(self: Connection, req: Request) -> None:
    """In place of `Connection.handle_request`: the floor's reply, written as replies are."""
    self.write(floor_reply(req))


app = mcpline_server.app
modern.serve = serve_post  # both are looked up per request
Connection.handle_request = handle_request  # type: ignore[method-assign]

if __name__ == "__main__":
    app.run()
