"""The HTTP floor: the least a modern Streamable HTTP server can do (asyncio streams, HTTP/1.1
keep-alive, JSON answers to ``server/discover`` and ``tools/call`` echoing ``text``), so that
the client is the bottleneck. Prints ``listening on http://127.0.0.1:PORT/mcp``."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
}

ECHO = {
    "name": "aecho",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(verb: bytes, body: bytes) -> tuple[bytes, bytes]:
    """(status line, JSON body) for one request."""
    if verb != b"POST":
        return b"405 Method Not Allowed", b""
    msg = json.loads(body)
    if "id" not in msg:
        return b"202 Accepted", b""
    if msg["method"] == "server/discover":
        result: dict[str, Any] = DISCOVER
    elif msg["method"] == "tools/list":
        result = {"resultType": "complete", "tools": [ECHO], "ttlMs": 60000, "cacheScope": "public"}
    elif msg["method"] == "tools/call":
        text = msg["params"]["arguments"]["text"]
        result = {"resultType": "complete", "content": [{"type": "text", "text": text}]}
    else:
        error = {"code": -32601, "message": f"Method not found: {msg['method']}"}
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": error}
        return b"404 Not Found", json.dumps(reply).encode()
    return b"200 OK", json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            status, body = answer(head.split(b" ", 1)[0], await reader.readexactly(length))
            writer.write(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
