"""Tasks that outlive a process, and tasks shared by processes, with real processes only.

SQLite (stdio servers on one file): a task waiting for input and a finished one survive a
restart (the waiting one is then answered and completed by the new process); a task still
working when its server stops is failed by that server; one whose process is killed is failed
once its lease lapses; two live processes share the file (one cancels what the other runs).

Redis (two ``mcpline run tests/fixtures/tasks_server.py --http`` replicas on two ports, one
redis-server, one ``MCPLINE_STATE_KEY``): a task started on one replica is polled, completed,
updated (its body then runs again on the other replica) and cancelled through the other; a
listen on one hears of a task running on the other; a killed replica's task becomes failed.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess
from ..redis_server import RedisServer
from ..transports.http_util import ACCEPT, MCPLINE, HttpServer, free_port, request_body
from .wire import (
    FULL,
    accept,
    call,
    cancel,
    get,
    http_request,
    http_wait,
    result,
    start,
    update,
    wait_status,
)

Spawn = Callable[..., ServerProcess]
SERVER = FIXTURES / "tasks_server.py"
LEASE = "1"
"""Seconds of a worker's lease in these tests (a dead worker is noticed within about that)."""


def pid_of(p: ServerProcess) -> int:
    return int(result(call(p, "pid"))["structuredContent"]["result"])


def wait_file(path: Path, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- SQLite -----------------------------------------------------------------------------------


@pytest.fixture
def sqlite_env(tmp_path: Path) -> dict[str, str]:
    marks = tmp_path / "marks"
    marks.mkdir()
    return {
        "MCPLINE_TASK_STORE": f"sqlite:{tmp_path / 'tasks.db'}",
        "MCPLINE_TASK_LEASE": LEASE,
        "TASKS_TEST_MARKS": str(marks),
    }


def test_sqlite_tasks_survive_a_restart(spawn: Spawn, sqlite_env: dict[str, str]) -> None:
    first = spawn(SERVER, env=sqlite_env)
    asking = start(first, "ask", {"question": "Still there?"})
    waiting = wait_status(first, asking, "input_required")
    done = start(first, "slow", {"seconds": 0.1, "label": "before"})
    finished = wait_status(first, done)
    assert finished["status"] == "completed"
    first_pid = pid_of(first)
    first.stop()

    second = spawn(SERVER, env=sqlite_env)
    assert pid_of(second) != first_pid
    assert result(get(second, asking)) == {**waiting, "_meta": result(get(second, asking))["_meta"]}
    again = result(get(second, done))
    assert again["status"] == "completed" and again["result"] == finished["result"]
    result(update(second, asking, {"answer": accept(answer="yes")}))
    end = wait_status(second, asking)
    assert end["status"] == "completed"
    assert end["result"]["content"][0]["text"] == f"yes (pid {pid_of(second)})"  # re-run here


def test_sqlite_a_working_task_fails_when_its_server_stops(
    spawn: Spawn, sqlite_env: dict[str, str]
) -> None:
    first = spawn(SERVER, env=sqlite_env)
    task_id = start(first, "slow", {"seconds": 60, "label": "stopped"})
    first.stop()
    second = spawn(SERVER, env=sqlite_env)
    end = result(get(second, task_id))
    assert end["status"] == "failed"
    assert end["error"] == {
        "code": -32603,
        "message": "Internal error: the server stopped before the task finished",
    }


def test_sqlite_a_killed_workers_task_becomes_failed(
    spawn: Spawn, sqlite_env: dict[str, str]
) -> None:
    worker = spawn(SERVER, env=sqlite_env)
    task_id = start(worker, "slow", {"seconds": 60, "label": "killed"})
    other = spawn(SERVER, env=sqlite_env)
    assert result(get(other, task_id))["status"] == "working"  # its worker renews the lease
    time.sleep(1.5)
    assert result(get(other, task_id))["status"] == "working"
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait(10)
    end = wait_status(other, task_id, timeout=10)
    assert end["status"] == "failed"
    assert "stopped before it finished (its lease lapsed)" in end["error"]["message"]
    assert end["statusMessage"] == end["error"]["message"]


def test_sqlite_processes_share_the_file(spawn: Spawn, sqlite_env: dict[str, str]) -> None:
    a = spawn(SERVER, env=sqlite_env)
    b = spawn(SERVER, env=sqlite_env)
    task_id = start(a, "slow", {"seconds": 60, "label": "shared"})
    result(cancel(b, task_id))  # b does not run it: a learns of it when it renews its lease
    assert wait_status(b, task_id, timeout=10)["status"] == "cancelled"
    assert wait_file(Path(sqlite_env["TASKS_TEST_MARKS"]) / "cancelled-shared")
    quick = start(b, "slow", {"seconds": 0.2, "label": "quick"})
    end = wait_status(a, quick)
    assert end["result"]["content"][0]["text"] == f"quick done by {pid_of(b)}"


# --- Redis, two HTTP replicas ------------------------------------------------------------------


@pytest.fixture
def replicas(redis_server: RedisServer, tmp_path: Path) -> Iterator[tuple[HttpServer, HttpServer]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {
        "MCPLINE_TASK_STORE": redis_server.url,
        "MCPLINE_TASK_LEASE": LEASE,
        "MCPLINE_STATE_KEY": secrets.token_hex(32),
        "TASKS_TEST_MARKS": str(marks),
    }
    started: list[HttpServer] = []
    try:
        for _ in range(2):
            argv = [MCPLINE, "run", str(SERVER), "--http", f"127.0.0.1:{free_port()}"]
            started.append(HttpServer(argv, env))
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()


def http_pid(server: HttpServer) -> int:
    r = result(http_request(server, "tools/call", {"name": "pid", "arguments": {}}))
    return int(r["structuredContent"]["result"])


def test_redis_a_task_started_on_one_replica_completes_through_the_other(
    replicas: tuple[HttpServer, HttpServer],
) -> None:
    a, b = replicas
    assert http_pid(a) != http_pid(b)
    created = result(
        http_request(a, "tools/call", {"name": "slow", "arguments": {"seconds": 3, "label": "r"}})
    )
    assert created["resultType"] == "task"
    assert (
        result(http_request(b, "tasks/get", {"taskId": created["taskId"]}))["status"] == "working"
    )
    end = http_wait(b, created["taskId"])
    assert end["status"] == "completed"
    assert end["result"]["content"][0]["text"] == f"r done by {http_pid(a)}"


def test_redis_an_update_through_the_other_replica_runs_the_tool_there(
    replicas: tuple[HttpServer, HttpServer],
) -> None:
    a, b = replicas
    created = result(http_request(a, "tools/call", {"name": "ask", "arguments": {}}))
    waiting = http_wait(b, created["taskId"], "input_required")
    assert list(waiting["inputRequests"]) == ["answer"]
    ack = http_request(
        b,
        "tasks/update",
        {"taskId": created["taskId"], "inputResponses": {"answer": accept(answer="via b")}},
    )
    assert result(ack) == {"resultType": "complete", "_meta": result(ack)["_meta"]}
    end = http_wait(a, created["taskId"])
    assert end["result"]["content"][0]["text"] == f"via b (pid {http_pid(b)})"


def test_redis_a_cancel_through_the_other_replica_reaches_the_body(
    replicas: tuple[HttpServer, HttpServer], tmp_path: Path
) -> None:
    a, b = replicas
    created = result(
        http_request(a, "tools/call", {"name": "slow", "arguments": {"seconds": 60, "label": "x"}})
    )
    result(http_request(b, "tasks/cancel", {"taskId": created["taskId"]}))
    end = http_wait(b, created["taskId"])
    assert end["status"] == "cancelled"
    assert wait_file(tmp_path / "marks" / "cancelled-x")  # a's body saw the cancellation


def test_redis_a_killed_replicas_task_becomes_failed(
    replicas: tuple[HttpServer, HttpServer],
) -> None:
    a, b = replicas
    created = result(
        http_request(a, "tools/call", {"name": "slow", "arguments": {"seconds": 60, "label": "k"}})
    )
    time.sleep(1.5)  # longer than the lease: a renews it
    assert (
        result(http_request(b, "tasks/get", {"taskId": created["taskId"]}))["status"] == "working"
    )
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(10)
    end = http_wait(b, created["taskId"])
    assert end["status"] == "failed" and "lease lapsed" in end["error"]["message"]


def listen_events(
    server: HttpServer, task_ids: list[str], until: str, timeout: float = 15.0
) -> list[dict[str, Any]]:
    """Open a listen for ``task_ids`` on ``server``; the notifications it sends until one says
    ``until`` (then the stream is closed)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    params = {"notifications": {"taskIds": task_ids}}
    body = request_body("listen", "subscriptions/listen", params, caps=FULL)
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
    }
    conn.request("POST", server.path, body=body, headers=headers)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type", "").startswith("text/event-stream")
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            line = resp.readline()
            if not line:
                break
            if line.startswith(b"data:"):
                msg = json.loads(line[5:])
                seen.append(msg)
                if msg.get("method") == "notifications/tasks" and msg["params"]["status"] == until:
                    break
    finally:
        with contextlib.suppress(Exception):
            conn.close()
    return seen


def test_redis_a_listen_on_one_replica_hears_of_a_task_on_the_other(
    replicas: tuple[HttpServer, HttpServer],
) -> None:
    a, b = replicas
    created = result(
        http_request(a, "tools/call", {"name": "slow", "arguments": {"seconds": 3, "label": "n"}})
    )
    seen = listen_events(b, [created["taskId"]], "completed")
    assert seen[0]["method"] == "notifications/subscriptions/acknowledged"
    assert seen[0]["params"]["notifications"]["taskIds"] == [created["taskId"]]
    tasks = [m["params"] for m in seen[1:]]
    assert all(m["method"] == "notifications/tasks" for m in seen[1:])
    assert tasks[0]["status"] == "working" and tasks[-1]["status"] == "completed"
    assert tasks[-1]["result"]["content"][0]["text"] == f"n done by {http_pid(a)}"
