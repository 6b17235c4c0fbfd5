"""The HTTP floor of `bench/http_server.py`: a bare ASGI app on the uvicorn mcpline serves
with (httptools, uvicorn's default loop, no access log, no server header, the same keep-alive
timeout and listening socket), doing the least an MCP server must do per request: read the
body, decode the JSON, and answer ``tools/call`` of ``echo``/``aecho`` (the ``text`` back)
and ``sleep`` (after ``ms`` milliseconds) with a JSON result. No validation, no headers read,
no threads; ``subscriptions/listen`` and anything else is a 404.

    python asgi_floor_server.py PORT
"""

import asyncio
import socket
import sys
from typing import Any

import msgspec
import uvicorn

decode = msgspec.json.Decoder().decode
encode = msgspec.json.Encoder().encode

JSON = (b"content-type", b"application/json")
NOT_FOUND = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}'


def text_result(rid: Any, text: str) -> bytes:
    result = {"content": [{"type": "text", "text": text}], "resultType": "complete"}
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """One request: the whole body, decoded; one JSON answer."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    msg = decode(b"".join(chunks))
    status, body = 404, NOT_FOUND
    if msg.get("method") == "tools/call":
        params = msg["params"]
        args = params.get("arguments") or {}
        if params["name"] == "sleep":
            await asyncio.sleep(args["ms"] / 1000)
            status, body = 200, text_result(msg["id"], f"slept {args['ms']} ms")
        else:
            status, body = 200, text_result(msg["id"], args["text"])
    headers = [JSON, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    # As mcpline binds: a socket that says TCP, so that asyncio turns Nagle off.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1])))
    sock.listen(2048)
    config = uvicorn.Config(
        app,
        http="httptools",
        lifespan="off",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=5,
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
