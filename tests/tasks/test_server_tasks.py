"""The server side of tasks over real stdio (and HTTP for principals): bad task ids, expiry,
cancellation of async and sync bodies, task handles (`mcpline.Task`), progress as the status
message, the re-run rule with state, input validation on ``tasks/update``, and legacy
sessions, which never see a task. Every line written is schema-checked by ``spawn``."""

from __future__ import annotations

import queue
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess
from ..server.test_legacy import exchange, initialize, legacy_request
from ..transports.http_util import HttpServer
from .wire import (
    EXT,
    FULL,
    accept,
    call,
    cancel,
    error,
    get,
    http_request,
    result,
    start,
    update,
    wait_status,
)

Spawn = Callable[..., ServerProcess]
SERVER = FIXTURES / "tasks_server.py"


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    found = tmp_path / "marks"
    found.mkdir()
    return found


@pytest.fixture
def srv(spawn: Spawn, marks: Path) -> ServerProcess:
    return spawn(SERVER, env={"TASKS_TEST_MARKS": str(marks)})


def wait_for(path: Path, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# --- bad task ids --------------------------------------------------------------------------------

BY_ID: tuple[tuple[str, dict[str, Any]], ...] = (
    ("tasks/get", {}),
    ("tasks/update", {"inputResponses": {}}),
    ("tasks/cancel", {}),
)
"""The methods that name a task by id, with the other params each needs."""


def test_unknown_and_malformed_task_ids(srv: ServerProcess) -> None:
    for method, extra in BY_ID:
        err = error(srv.request(method, {"taskId": "no-such-task", **extra}, caps=FULL))
        assert err["code"] == -32602 and err["message"].endswith("Task not found"), err
        assert error(srv.request(method, {"taskId": 7, **extra}, caps=FULL))["code"] == -32602
        assert error(srv.request(method, extra, caps=FULL))["code"] == -32602
    task_id = start(srv, "ask")
    bad = error(srv.request("tasks/update", {"taskId": task_id, "inputResponses": []}, caps=FULL))
    assert bad["code"] == -32602


def test_an_expired_task_is_refused(spawn: Spawn) -> None:
    p = spawn(SERVER, env={"TASKS_TEST_TTL_MS": "3000"})
    created = result(call(p, "slow", {"seconds": 0}))
    answered = time.monotonic()  # the task was created before this: it expires by +3 s
    assert created["ttlMs"] == 3000
    wait_status(p, created["taskId"])  # a busy machine still polls within 3 s
    time.sleep(max(0.0, answered + 3.0 + 0.3 - time.monotonic()))
    err = error(get(p, created["taskId"]))
    assert err["code"] == -32602
    assert err["message"] in (
        "Failed to retrieve task: Task has expired",
        "Failed to retrieve task: Task not found",
    )
    assert error(cancel(p, created["taskId"]))["code"] == -32602


# --- cancellation reaches the body ---------------------------------------------------------------


def test_cancel_reaches_an_async_body(srv: ServerProcess, marks: Path) -> None:
    task_id = start(srv, "slow", {"seconds": 60, "label": "a"})
    result(cancel(srv, task_id))
    assert wait_status(srv, task_id)["status"] == "cancelled"
    assert wait_for(marks / "cancelled-a")


def test_cancel_reaches_a_sync_body_as_ctx_cancelled(srv: ServerProcess, marks: Path) -> None:
    task_id = start(srv, "spin", {"seconds": 60, "label": "s"})
    time.sleep(0.2)
    result(cancel(srv, task_id))
    assert wait_status(srv, task_id)["status"] == "cancelled"
    assert wait_for(marks / "cancelled-s")


def test_cancel_of_a_waiting_task_is_immediate(srv: ServerProcess) -> None:
    task_id = start(srv, "ask")
    wait_status(srv, task_id, "input_required")
    result(cancel(srv, task_id))
    task = result(get(srv, task_id))
    assert task["status"] == "cancelled" and "inputRequests" not in task
    assert (
        result(update(srv, task_id, {"answer": accept(answer="late")}))["resultType"] == "complete"
    )
    assert result(get(srv, task_id))["status"] == "cancelled"


# --- task handles --------------------------------------------------------------------------------


def test_a_tool_body_can_return_a_task_handle(srv: ServerProcess, marks: Path) -> None:
    created = result(call(srv, "job", {"seconds": 0.3, "label": "j"}))
    assert created["resultType"] == "task" and created["statusMessage"] == "job j queued"
    assert created["ttlMs"] == 120_000
    end = wait_status(srv, created["taskId"])
    assert end["status"] == "completed"
    assert end["result"]["content"][0]["text"] == "job j finished"

    other = start(srv, "job", {"seconds": 60, "label": "k"})
    result(cancel(srv, other))
    assert wait_status(srv, other)["status"] == "cancelled"
    assert wait_for(marks / "job-cancelled-k")  # on_cancel ran: the external job is told

    blocking = start(srv, "blocking_job", {"seconds": 0.2})
    end = wait_status(srv, blocking)
    assert end["status"] == "completed" and '"waited"' in end["result"]["content"][0]["text"]

    sync = result(call(srv, "job", {"seconds": 0.1, "label": "plain"}, caps={}))
    assert sync["resultType"] == "complete"  # no extension: the job's result, at once
    assert sync["content"][0]["text"] == "job plain finished"


# --- what a task body can do ---------------------------------------------------------------------


def test_progress_becomes_the_status_message(srv: ServerProcess) -> None:
    msg = srv.request_msg(
        "tools/call",
        {"name": "progress", "arguments": {"steps": 3, "pause": 0.8}},  # polls see a step
        caps=FULL,
        progressToken=5,
    )
    srv.send(msg)
    resp, before = srv.read_until(msg["id"])
    assert before == []  # no notifications/progress for a task
    task_id = resp["result"]["taskId"]
    messages = set()
    while True:
        task = result(get(srv, task_id))
        if task["status"] == "completed":
            break
        messages.add(task.get("statusMessage"))
        time.sleep(0.05)
    assert {"step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"} & messages
    assert task["result"]["content"][0]["text"] == "all steps done"
    with pytest.raises(queue.Empty):  # nothing else was written meanwhile
        srv.read(0.3)


def test_the_body_runs_again_with_every_answer_and_its_state(srv: ServerProcess) -> None:
    task_id = start(srv, "two_rounds")
    first = wait_status(srv, task_id, "input_required")
    assert list(first["inputRequests"]) == ["first"]
    result(update(srv, task_id, {"first": accept(value="a")}))
    second = wait_status(srv, task_id, "input_required")
    while list(second["inputRequests"]) != ["second"]:
        second = wait_status(srv, task_id, "input_required")
    result(update(srv, task_id, {"first": accept(value="ignored"), "second": accept(value="b")}))
    end = wait_status(srv, task_id)
    assert end["status"] == "completed" and end["result"]["content"][0]["text"] == "a+b"


def test_asking_again_for_an_answered_key_fails_the_task(srv: ServerProcess) -> None:
    task_id = start(srv, "repeat_question")
    wait_status(srv, task_id, "input_required")
    result(update(srv, task_id, {"q": accept(x="1")}))
    end = wait_status(srv, task_id)
    assert end["status"] == "failed" and "asked again" in end["error"]["message"]


def test_an_input_the_client_cannot_give_fails_the_task(srv: ServerProcess) -> None:
    task_id = start(srv, "needs_sampling")  # FULL declares sampling: it waits
    assert wait_status(srv, task_id, "input_required")["status"] == "input_required"
    created = result(call(srv, "needs_sampling", caps={"elicitation": {}, **EXT}))
    end = wait_status(srv, created["taskId"])
    assert end["status"] == "failed" and end["error"]["code"] == -32021


def test_a_wrong_answer_is_refused_and_the_task_keeps_waiting(srv: ServerProcess) -> None:
    task_id = start(srv, "ask")
    wait_status(srv, task_id, "input_required")
    wrong = error(update(srv, task_id, {"answer": {"action": "maybe"}}))
    assert wrong["code"] == -32602 and wrong["data"]["inputKey"] == "answer"
    off_schema = error(update(srv, task_id, {"answer": accept(other="x")}))
    assert off_schema["code"] == -32602 and "requested schema" in off_schema["message"]
    assert result(get(srv, task_id))["status"] == "input_required"
    result(update(srv, task_id, {"answer": accept(answer="fine")}))
    assert wait_status(srv, task_id)["result"]["content"][0]["text"].startswith("fine (pid ")


def test_invalid_arguments_are_answered_at_once(srv: ServerProcess) -> None:
    r = result(call(srv, "slow", {"seconds": "soon"}))
    assert r["resultType"] == "complete" and r["isError"] is True and "taskId" not in r


# --- legacy sessions -----------------------------------------------------------------------------


def legacy_call(p: ServerProcess, method: str, params: dict[str, Any]) -> dict[str, Any]:
    resp, _, _ = exchange(p, legacy_request(p, method, params))
    return resp


def test_a_legacy_session_never_sees_a_task(spawn: Spawn) -> None:
    p = spawn(SERVER)
    initialize(p, {"extensions": {"io.modelcontextprotocol/tasks": {}}})
    r = legacy_call(p, "tools/call", {"name": "slow", "arguments": {"seconds": 0.1}})
    assert r["result"]["content"][0]["text"].startswith("slow done by ")
    assert "taskId" not in r["result"]
    r = legacy_call(p, "tools/call", {"name": "whoami", "arguments": {}})  # required: still runs
    assert r["result"]["content"][0]["text"] == "principal=None"
    r = legacy_call(p, "tools/call", {"name": "job", "arguments": {"seconds": 0.1}})
    assert r["result"]["content"][0]["text"] == "job job finished"
    assert legacy_call(p, "tasks/get", {"taskId": "x"})["error"]["code"] == -32601


# --- principals over HTTP ------------------------------------------------------------------------


@pytest.fixture
def http_auth() -> Iterator[HttpServer]:
    from ..transports.http_util import free_port

    server = HttpServer([sys.executable, str(SERVER), "--http", str(free_port()), "--auth"])
    try:
        yield server
    finally:
        server.stop()


def http_call(
    server: HttpServer, method: str, params: dict[str, Any], token: str
) -> dict[str, Any]:
    return http_request(server, method, params, token=token)


def test_tasks_are_bound_to_their_principal(http_auth: HttpServer) -> None:
    created = http_call(http_auth, "tools/call", {"name": "whoami", "arguments": {}}, "alice-token")
    task_id = created["result"]["taskId"]
    deadline = time.monotonic() + 10
    while True:
        mine = http_call(http_auth, "tasks/get", {"taskId": task_id}, "alice-token")["result"]
        if mine["status"] == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert mine["result"]["content"][0]["text"] == "principal=alice"

    unknown = http_call(http_auth, "tasks/get", {"taskId": "no-such-task"}, "bob-token")["error"]
    for method, extra in BY_ID:
        foreign = http_call(http_auth, method, {"taskId": task_id, **extra}, "bob-token")["error"]
        gone = http_call(http_auth, method, {"taskId": "no-such-task", **extra}, "bob-token")
        assert foreign == gone["error"], (method, foreign)  # a foreign id is an unknown id
    assert unknown["code"] == -32602
    again = http_call(http_auth, "tasks/get", {"taskId": task_id}, "alice-token")["result"]
    assert again["status"] == "completed"


def test_a_task_running_past_its_ttl_is_stopped(spawn: Spawn, marks: Path) -> None:
    env = {"TASKS_TEST_TTL_MS": "400", "MCPLINE_TASK_LEASE": "0.6", "TASKS_TEST_MARKS": str(marks)}
    p = spawn(SERVER, env=env)
    task_id = start(p, "slow", {"seconds": 60, "label": "expiring"})
    assert wait_for(marks / "cancelled-expiring")  # the body is stopped once the task expired
    assert error(get(p, task_id))["code"] == -32602


def test_task_options_are_checked_at_registration() -> None:
    from mcpline import Server

    server = Server("options")
    with pytest.raises(ValueError):
        server.add_tool(lambda: "x", name="bad", description="d", task="sometimes")
    assert "extensions" not in server.capabilities()
    server.add_tool(lambda: "x", name="ok", description="d", task="required")
    assert server.capabilities()["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    server.remove_tool("ok")
    assert "extensions" not in server.capabilities()
    for bad in ({"task_ttl_ms": 0}, {"task_poll_interval_ms": 0}):
        with pytest.raises(ValueError):
            Server("bad", **bad)  # type: ignore[arg-type]
    assert "extensions" in Server("store", task_store="memory").capabilities()
