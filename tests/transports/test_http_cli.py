"""``mcpline run FILE --http HOST:PORT [--workers N]`` as real processes: binding, clean stdout,
shutdown that completes open listens, the worker rule for ``MCPLINE_STATE_KEY``, usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from mcpline.transports.http.serve import exposure_warning

from ..proc import EXAMPLES
from .http_util import (
    MCPLINE,
    TEST_SERVER,
    HttpServer,
    call,
    free_port,
    modern_headers,
    parse_events,
    request_body,
)

EVERYTHING = str(EXAMPLES / "servers" / "everything.py")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCPLINE, "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def test_a_bare_port_binds_loopback_and_stdout_stays_clean() -> None:
    port = free_port()
    server = HttpServer([MCPLINE, "run", EVERYTHING, "--http", str(port)])
    try:
        assert server.url == f"http://127.0.0.1:{port}/mcp"
        r = call(server, 1, "tools/call", {"name": "test_simple_text"})
        assert r.json["result"]["content"][0]["text"].startswith("This is a simple text")
        r = call(server, 2, "tools/call", {"name": "stray_print", "arguments": {"text": "oops"}})
        assert r.status == 200
    finally:
        assert server.stop() == 0
    assert server.stdout == b""
    assert "oops" in server.stderr  # print() of a handler lands on stderr


def test_sigterm_completes_open_listens_then_exits_zero() -> None:
    server = HttpServer([MCPLINE, "run", str(TEST_SERVER), "--http", "127.0.0.1:0"])
    conn = server.connection(timeout=10)
    body = request_body(5, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    conn.request("POST", "/mcp", body=body, headers=modern_headers("subscriptions/listen"))
    resp = conn.getresponse()
    events = parse_events(iter(resp.readline, b""))
    assert json.loads(next(events)["data"])["method"] == "notifications/subscriptions/acknowledged"
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    rest = [json.loads(e["data"]) for e in events if e.get("data")]
    assert rest == [
        {
            "jsonrpc": "2.0",
            "id": 5,
            "result": {
                "_meta": {
                    "io.modelcontextprotocol/subscriptionId": 5,
                    "io.modelcontextprotocol/serverInfo": {
                        "name": "http-test-server",
                        "version": "1.0.0",
                    },
                },
                "resultType": "complete",
            },
        }
    ]
    assert server.proc.wait(30) == 0
    assert time.monotonic() - started < 30  # it ended by itself (the listens' answers above)
    conn.close()


def test_several_workers_need_the_state_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MCPLINE_STATE_KEY"}
    proc = subprocess.run(
        [MCPLINE, "run", EVERYTHING, "--http", "127.0.0.1:0", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "MCPLINE_STATE_KEY" in lines[0], proc.stderr
    assert proc.stdout == ""


def test_workers_share_the_socket_and_verify_each_others_state() -> None:
    server = HttpServer(
        [MCPLINE, "run", str(TEST_SERVER), "--http", "127.0.0.1:0", "--workers", "2"],
        env={"MCPLINE_STATE_KEY": "a-shared-secret-for-the-test-workers"},
    )
    try:
        assert "2 workers" in server.stderr
        pids: set[int] = set()
        deadline = time.monotonic() + 30
        while len(pids) < 2 and time.monotonic() < deadline:
            r = call(server, 1, "tools/call", {"name": "pid"})
            if r.status == 200:
                pids.add(r.json["result"]["structuredContent"]["result"])
        assert len(pids) == 2, pids
        for _ in range(6):  # each round on a new connection: any worker may take it
            first = call(server, 1, "tools/call", {"name": "sealed"}, caps={"elicitation": {}})
            state = first.json["result"]["requestState"]
            answer = {"ok": {"action": "accept", "content": {"ok": True}}}
            second = call(
                server,
                2,
                "tools/call",
                {
                    "name": "sealed",
                    "inputResponses": answer,
                    "requestState": state,
                },
                caps={"elicitation": {}},
            )
            assert second.json["result"]["content"][0]["text"] == "state verified", second.json
    finally:
        server.stop(20)
    assert server.stdout == b""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "127.0.0.1:0", "--listen", "tcp:127.0.0.1:0"], "exclude each other"),
        (["--http", "127.0.0.1:0", "--no-auth"], "--no-auth: not for http (only for tcp)"),
        (["--workers", "2"], "--workers: not for stdio (only for http)"),
        (["--http", "127.0.0.1:99999"], "the port must be"),
        (["--http", "nohost:"], "the port must be"),
        (["--http", "127.0.0.1:0", "--workers", "0"], "at least 1"),
    ],
)
def test_usage_errors_are_one_line_and_status_2(args: list[str], message: str) -> None:
    proc = run_cli(EVERYTHING, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and proc.stderr.count("\n") <= 2, proc.stderr


def test_a_port_in_use_is_refused() -> None:
    server = HttpServer([MCPLINE, "run", EVERYTHING, "--http", "127.0.0.1:0"])
    try:
        proc = run_cli(EVERYTHING, "--http", f"127.0.0.1:{server.port}")
        assert proc.returncode == 2 and "cannot listen" in proc.stderr
    finally:
        server.stop()


def test_server_run_takes_an_http_url() -> None:
    folder = str(EXAMPLES / "servers")
    script = (
        f"import sys; sys.path.insert(0, {folder!r})\n"
        "from everything import server\n"
        "server.run('http://127.0.0.1:0/rpc')\n"
    )
    server = HttpServer([sys.executable, "-c", script])
    try:
        assert server.path == "/rpc"
        conn = server.connection()
        body: Any = request_body(1, "tools/list")
        conn.request("POST", "/rpc", body=body, headers=modern_headers("tools/list"))
        assert conn.getresponse().status == 200
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("192.0.2.7", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("localhost", False),
    ],
)
def test_a_bind_beyond_loopback_is_named_in_a_warning(host: str, warned: bool) -> None:
    assert (exposure_warning(host) is not None) is warned
