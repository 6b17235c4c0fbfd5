"""Real HTTP for the transport tests: a server process, raw requests, SSE reading, schema checks."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import wirecheck
from ..proc import MODERN, meta

HERE = Path(__file__).resolve().parent
TEST_SERVER = HERE / "http_server.py"
MCPLINE = str(Path(sys.executable).parent / "mcpline")
ACCEPT = "application/json, text/event-stream"
READY = re.compile(r"listening on (http://\S+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class HttpServer:
    """A server process speaking HTTP; its URL comes from the ready line on stderr."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, timeout: float = 30):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,
        )
        self.stderr_lines: list[str] = []
        self.stdout = b""
        found = threading.Event()
        self.url = ""

        def pump() -> None:
            assert self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace")
                self.stderr_lines.append(line)
                m = READY.search(line)
                if m and not found.is_set():
                    self.url = m[1]
                    found.set()
            found.set()

        def pump_out() -> None:
            assert self.proc.stdout is not None
            self.stdout = self.proc.stdout.read()

        threading.Thread(target=pump, daemon=True).start()
        threading.Thread(target=pump_out, daemon=True).start()
        found.wait(timeout)
        if not self.url:
            self.stop()
            raise RuntimeError(f"no ready line from {argv}:\n{self.stderr}")
        parts = urlsplit(self.url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for_stderr(self, text: str, timeout: float = 30) -> str:
        """All of stderr once ``text`` has appeared in it (read by a thread: a line the server
        wrote before answering may not have been read yet when the answer arrives)."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{text!r} not on the server's stderr:\n{self.stderr}")
            time.sleep(0.02)
        return self.stderr

    def stop(self, timeout: float = 10) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(5)

    def connection(self, timeout: float = 10) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


def spawn_server(*args: str, env: dict[str, str] | None = None) -> HttpServer:
    return HttpServer([sys.executable, str(TEST_SERVER), *args], env)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    events: list[dict[str, Any]] = field(default_factory=list)
    """For an SSE reply: its events (``id``, ``event``, ``data``, ``retry``) in order."""

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def messages(self) -> list[Any]:
        """The JSON-RPC messages of the reply (one for JSON, each data event's for SSE)."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            return [json.loads(e["data"]) for e in self.events if e.get("data")]
        return [self.json] if self.body else []


def modern_headers(method: str | None, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    headers["MCP-Protocol-Version"] = MODERN
    if method is not None:
        headers["Mcp-Method"] = method
    if name is not None:
        headers["Mcp-Name"] = name
    headers.update({k.replace("_", "-"): v for k, v in extra.items()})
    return headers


def request_body(id: Any, method: str, params: dict[str, Any] | None = None, **m: Any) -> bytes:
    p = dict(params or {})
    p.setdefault("_meta", meta(m.pop("caps", None), **m))
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": p}).encode()


def parse_events(lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """SSE events from raw lines (comments are yielded as ``{"comment": text}``)."""
    current: dict[str, Any] = {}
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if current:
                yield current
            current = {}
            continue
        if line.startswith(":"):
            yield {"comment": line[1:].strip()}
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "data" and "data" in current:
            current["data"] += "\n" + value
        else:
            current[key] = value
    if current:
        yield current


def send(
    conn: http.client.HTTPConnection,
    body: bytes | None,
    headers: dict[str, str],
    *,
    method: str = "POST",
    path: str = "/mcp",
) -> Reply:
    """One request on ``conn``; an SSE reply is read to its end."""
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    hdrs = {k.lower(): v for k, v in resp.getheaders()}
    if hdrs.get("content-type", "").startswith("text/event-stream"):
        events = [e for e in parse_events(iter(resp.readline, b"")) if "comment" not in e]
        return Reply(resp.status, hdrs, b"", events)
    return Reply(resp.status, hdrs, resp.read())


def post(
    server: HttpServer, body: bytes | None, headers: dict[str, str], *, method: str = "POST"
) -> Reply:
    conn = server.connection()
    try:
        return send(conn, body, headers, method=method, path=server.path)
    finally:
        conn.close()


def call(
    server: HttpServer,
    id: Any,
    method: str,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    **m: Any,
) -> Reply:
    """A well-formed 2026-07-28 request, headers mirrored."""
    p = params or {}
    name = p.get("uri") if method == "resources/read" else p.get("name")
    hdrs = modern_headers(method, name if isinstance(name, str) else None)
    hdrs.update(headers or {})
    reply = post(server, request_body(id, method, p, **m), hdrs)
    check_wire(reply, method)
    return reply


def check_wire(reply: Reply, method: str | None, version: str = MODERN) -> None:
    """Every JSON-RPC message of the reply is valid for its revision's schema."""
    for msg in reply.messages:
        problems = wirecheck.check_message(msg, method=method, version=version)
        assert not problems, (problems, msg)


def raw_request(server: HttpServer, data: bytes, timeout: float = 10) -> bytes:
    """Send ``data`` on a fresh socket; the server's bytes until it closes (or the timeout)."""
    with socket.create_connection((server.host, server.port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else 0


def body_of(raw: bytes) -> bytes:
    return raw.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in raw else b""
