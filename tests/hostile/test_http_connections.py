"""Hostile clients against the connections and bodies of a real ``mcpline run --http`` server
on 127.0.0.1 (docs/security.md, "The HTTP server: connections and bodies"): a flood of large
bodies, silent and slow connections, a full connection table, file descriptor exhaustion, an
oversized ``Last-Event-ID``, a verifier that raises with the token in its message, and the
warning of a bind on every interface. Each attack asserts its bound, then that a legitimate
client is served."""

from __future__ import annotations

import contextlib
import json
import select
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from ..transports.http_util import (
    MCPLINE,
    TEST_SERVER,
    HttpServer,
    call,
    modern_headers,
    post,
    request_body,
    status_of,
)
from ..wirecheck import LEGACY

MiB = 1024 * 1024
LIMIT_NOFILE = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); os.execv(sys.argv[2], sys.argv[2:])"
)
"""Run argv[2:] with the open-file limit argv[1]."""


def mcpline_http(*flags: str, nofile: int | None = None) -> HttpServer:
    argv = [MCPLINE, "run", str(TEST_SERVER), "--http", "127.0.0.1:0", *flags]
    if nofile is not None:
        argv = [sys.executable, "-c", LIMIT_NOFILE, str(nofile), *argv]
    return HttpServer(argv)


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return {k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


def served(server: HttpServer, within: float = 10.0) -> float:
    """Seconds until a legitimate tools/call is answered 200 (retrying refusals)."""
    started = time.monotonic()
    while True:
        try:
            reply = call(server, 99, "tools/call", {"name": "events", "arguments": {"key": "k"}})
            if reply.status == 200:
                return time.monotonic() - started
        except OSError:
            pass
        assert time.monotonic() - started < within, "a legitimate client was not served"
        time.sleep(0.2)


def head(server: HttpServer, length: int) -> bytes:
    headers = modern_headers("tools/call", "events")
    lines = [f"POST {server.path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_all(sock: socket.socket, timeout: float) -> bytes:
    """What the server sends until it closes (or resets, or ``timeout`` passes)."""
    sock.settimeout(timeout)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except OSError:
        pass
    return b"".join(chunks)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (anything it sent first is read and dropped)."""
    sock.setblocking(False)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.linux_only(reason="reads the server's peak RSS from /proc")
def test_a_flood_of_large_bodies_stays_within_the_body_budget(
    stopped: list[HttpServer],
) -> None:
    server = mcpline_http()  # the defaults: 4 MiB bodies, 64 MiB of them in flight
    stopped.append(server)
    base = request_body(1, "tools/call", {"name": "events", "arguments": {"key": ""}})
    pad = 4 * MiB - 1 - len(base)
    body = base.replace(b'"key": ""', b'"key": "' + b"x" * pad + b'"')
    assert len(body) == 4 * MiB - 1
    outcomes: list[bytes] = []
    lock = threading.Lock()

    def client() -> None:
        with socket.create_connection((server.host, server.port), timeout=20) as s:
            s.sendall(head(server, len(body)))
            # A refused request is answered before its body is read: wait for that answer,
            # and send the body only when none comes (the request was admitted).
            if not select.select([s], [], [], 5)[0]:
                with contextlib.suppress(OSError):
                    s.sendall(body)
            got = read_all(s, 20)
        with lock:
            outcomes.append(got)

    threads = [threading.Thread(target=client) for _ in range(150)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(25)
    peak = memory(server.proc.pid)["VmHWM"]
    statuses = [status_of(raw) for raw in outcomes]
    refused = [raw for raw in outcomes if status_of(raw) == 503]
    assert len(outcomes) == 150
    assert refused, statuses
    assert all(b"\r\nretry-after: 1\r\n" in raw.lower() for raw in refused)
    assert b"max_body_total_bytes" in refused[0]
    assert statuses.count(200) >= 1  # admitted bodies are served
    assert set(statuses) <= {200, 503}, statuses
    assert peak < 250 * MiB, f"peak RSS {peak / MiB:.0f} MiB"  # 515 MiB before the budget
    assert served(server) < 10
    assert "Traceback" not in server.stderr


def test_silent_and_slow_connections_are_closed_and_a_client_is_served(
    stopped: list[HttpServer],
) -> None:
    server = mcpline_http("--header-timeout", "2", "--idle-timeout", "2")
    stopped.append(server)
    address = (server.host, server.port)
    silent = [socket.create_connection(address) for _ in range(150)]
    slow = [socket.create_connection(address) for _ in range(150)]
    for s in slow:
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finishes its head
    idle = socket.create_connection(address)  # one whole request, then silence
    idle.sendall(head(server, 2) + b"{}")
    trickle = socket.create_connection(address)  # a header byte every 0.2 s
    stop = threading.Event()

    def drip() -> None:
        for byte in b"POST /mcp HTTP/1.1\r\nX-Slow: " + b"a" * 500:
            if stop.wait(0.2):
                return
            try:
                trickle.send(bytes([byte]))
            except OSError:
                return

    dripper = threading.Thread(target=drip)
    dripper.start()
    try:
        answers = {id(s): b"" for s in slow}
        deadline = time.monotonic() + 20
        pending = [*silent, *slow, idle, trickle]
        while pending and time.monotonic() < deadline:
            readable = select.select(pending, [], [], 0.5)[0]
            for s in readable:
                if s in slow and not answers[id(s)]:
                    s.settimeout(1)
                    answers[id(s)] = s.recv(200, socket.MSG_PEEK)
                if closed_by_server(s):
                    pending.remove(s)
        assert not pending, f"{len(pending)} connections still open after 20 s"
        assert all(status_of(a) == 408 for a in answers.values())
        assert served(server) < 10
    finally:
        stop.set()
        dripper.join()
        for s in [*silent, *slow, idle, trickle]:
            s.close()
    assert "Traceback" not in server.stderr


def test_an_endless_head_gets_431_and_a_close(stopped: list[HttpServer]) -> None:
    server = mcpline_http()
    stopped.append(server)
    with socket.create_connection((server.host, server.port)) as s:
        with contextlib.suppress(OSError):
            s.sendall(b"POST /mcp HTTP/1.1\r\nX-Endless: " + b"a" * 1_000_000)
        answer = read_all(s, 10)
    assert status_of(answer) == 431, answer[:200]
    assert b"65536" in answer
    assert served(server) < 10


def test_the_trickled_body_of_an_answered_request_is_not_waited_for(
    stopped: list[HttpServer],
) -> None:
    server = mcpline_http("--idle-timeout", "1", "--header-timeout", "2")
    stopped.append(server)
    with socket.create_connection((server.host, server.port)) as s:
        # Not the endpoint: answered 404 at once; then a body trickles in, never ending, and
        # keeps the connection from ever being idle.
        s.sendall(b"POST /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        s.sendall(b"Content-Length: 1000000000\r\n\r\n")
        answer, started = b"", time.monotonic()
        closed = False
        while not closed and time.monotonic() - started < 10:
            with contextlib.suppress(OSError):
                s.send(b"x")
            if select.select([s], [], [], 0.2)[0]:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    chunk = b""
                answer += chunk
                closed = not chunk
        assert closed, "the connection was kept open for a body nobody reads"
        assert status_of(answer) == 404
    assert served(server) < 10


def test_a_full_connection_table_answers_503_then_serves_again(
    stopped: list[HttpServer],
) -> None:
    server = mcpline_http("--max-connections", "20", "--header-timeout", "30")
    stopped.append(server)
    address = (server.host, server.port)
    held = [socket.create_connection(address) for _ in range(20)]
    try:
        with socket.create_connection(address) as extra:
            answer = read_all(extra, 10)  # written on accept, before any request
        assert status_of(answer) == 503, answer[:200]
        assert b"\r\nretry-after: 1\r\n" in answer.lower()
        assert b"max_connections" in answer
    finally:
        for s in held:
            s.close()
    assert served(server) < 10


@pytest.mark.posix_only(reason="sets the server's RLIMIT_NOFILE")
def test_out_of_file_descriptors_logs_a_line_per_interval_without_tracebacks(
    stopped: list[HttpServer],
) -> None:
    # A connection limit above what the open-file limit allows: accept() itself fails.
    server = mcpline_http("--max-connections", "10000", "--header-timeout", "3", nofile=128)
    stopped.append(server)
    before = len(server.stderr.encode())
    address = (server.host, server.port)
    flood = [socket.create_connection(address) for _ in range(400)]
    try:
        time.sleep(6)  # accept() fails on and off: the deadline frees descriptors every 3 s
        logged = server.stderr.encode()[before:]
    finally:
        for s in flood:
            s.close()
    assert b"cannot accept connections" in logged
    assert b"Traceback" not in logged
    assert len(logged) < 4096, logged[:2000]  # 40 MB in 11 s before
    assert served(server) < 10


def test_an_oversized_last_event_id_is_a_400(stopped: list[HttpServer]) -> None:
    server = mcpline_http()
    stopped.append(server)
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    }
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    reply = post(server, init.encode(), hdrs)
    assert reply.status == 200
    session = reply.headers["mcp-session-id"]
    for last in ("9" * 5000 + ".1", "1." + "9" * 5000, "1" * 19 + ".0"):
        got = post(
            server,
            b"",
            {
                "Accept": "text/event-stream",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": LEGACY,
                "Last-Event-ID": last,
            },
            method="GET",
        )
        assert got.status == 400, got
        assert "Last-Event-ID" in got.json["error"]["message"]
    assert "Traceback" not in server.stderr


def test_a_raising_verifier_never_logs_the_presented_token(stopped: list[HttpServer]) -> None:
    server = HttpServer([sys.executable, str(TEST_SERVER), "--auth", "--auth-raises"])
    stopped.append(server)
    presented = "presented-credential-4f1c9a"
    reply = call(server, 1, "tools/list", headers={"Authorization": f"Bearer {presented}"})
    assert reply.status == 401
    ok = call(server, 2, "tools/list", headers={"Authorization": "Bearer secret-token"})
    assert ok.status == 200
    server.stop()
    assert "verify_token raised KeyError" in server.stderr
    assert presented not in server.stderr


def test_a_loopback_bind_gives_no_warning(stopped: list[HttpServer]) -> None:
    server = mcpline_http()
    stopped.append(server)
    assert "warning" not in server.stderr


@pytest.mark.linux_only(reason="binds every interface inside a new network namespace")
def test_a_bind_on_every_interface_warns_once(stopped: list[HttpServer]) -> None:
    unshare = shutil.which("unshare")
    if unshare is None or not _namespaces_work(unshare):
        pytest.skip("no unshare -rn here: 0.0.0.0 is bound only inside a namespace of its own")
    # In a new network namespace, 0.0.0.0 reaches nothing but that namespace's loopback.
    argv = [unshare, "-rn", MCPLINE, "run", str(TEST_SERVER), "--http", "0.0.0.0:0"]
    server = HttpServer(argv)
    stopped.append(server)
    warnings = [line for line in server.stderr_lines if "warning" in line]
    assert len(warnings) == 1, server.stderr
    assert "every interface" in warnings[0] and "docs/security.md" in warnings[0]


def _namespaces_work(unshare: str) -> bool:
    done = subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=10)
    return done.returncode == 0
