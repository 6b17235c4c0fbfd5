"""Small real HTTP/1.1 servers for the HTTP client tests, on free loopback ports in the test's
own event loop: each request goes to a handler that writes whatever bytes the test wants
(well-behaved MCP answers, HTML, broken streams, redirect loops, an OAuth server...)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


Handler = Callable[[Request, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class FakeServer:
    handler: Handler
    requests: list[Request] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Request(method, target, headers, body)
                self.requests.append(request)
                await self.handler(request, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()


@contextlib.asynccontextmanager
async def fake_server(handler: Handler) -> AsyncIterator[FakeServer]:
    fake = FakeServer(handler)
    server = await asyncio.start_server(fake._serve, "127.0.0.1", 0)
    fake.port = server.sockets[0].getsockname()[1]
    try:
        yield fake
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


def respond(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes = b"",
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> None:
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(
        f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n".encode()
        + body
    )


def respond_json(writer: asyncio.StreamWriter, obj: Any, status: int = 200, **kw: Any) -> None:
    respond(writer, status, json.dumps(obj).encode(), **kw)


def start_events(writer: asyncio.StreamWriter, headers: dict[str, str] | None = None) -> None:
    """The head of an SSE response whose body ends when the connection closes."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
        + extra.encode()
        + b"\r\n"
    )


def discover_result(rid: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}},
        },
    }


def result(rid: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **value}}


def answer_empty(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
    """Answer ``server/discover``, and anything else with no content and no tools."""
    if msg["method"] == "server/discover":
        respond_json(writer, discover_result(msg["id"]))
    else:
        respond_json(writer, result(msg["id"], {"content": [], "tools": []}))


def authorization_server_metadata(base: str, auth_method: str, **extra: Any) -> dict[str, Any]:
    """An authorization server at ``base`` (its endpoints under it: ``/authorize``, ``/token``,
    ``/register``) for the code flow with PKCE S256, clients authenticating by
    ``auth_method``; ``extra`` fields after."""
    return {
        "issuer": base,
        "authorization_endpoint": base + "/authorize",
        "token_endpoint": base + "/token",
        "registration_endpoint": base + "/register",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": [auth_method],
        **extra,
    }
