"""The conformance suite's ten ``tasks-*`` scenarios, reproduced over stdio.

The suite drives them over Streamable HTTP only (``tests/conformance``); here each
scenario's checks run against ``python examples/servers/everything.py`` on real pipes, with
the suite's requests and answers, and every line the server writes is checked by ``spawn``
(the tasks shapes by `tests.wirecheck`). ``tasks-request-headers`` checks HTTP headers,
which stdio does not have: its dispatch check runs here, its header rules as pure functions.
``tasks-status-notifications`` is skipped by the suite; its checks (``subscriptions/listen``
with ``taskIds``) run here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from mcpline.transports.http.headers import Headers, mirror_problem

from ..proc import EXAMPLES, ServerProcess
from .wire import (
    ENVELOPE,
    EXT,
    FULL,
    NONE,
    TASKS,
    accept,
    call,
    cancel,
    error,
    get,
    result,
    start,
    update,
    wait_status,
)

Spawn = Callable[..., ServerProcess]


@pytest.fixture
def ev(spawn: Spawn) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


# --- tasks-lifecycle ------------------------------------------------------------------------


def test_lifecycle(ev: ServerProcess) -> None:
    sync = result(call(ev, "greet", {"name": "World"}))
    assert sync["resultType"] == "complete" and "taskId" not in sync
    assert sync["content"][0]["text"] == "Hello, World!"

    created = result(call(ev, "slow_compute", {"seconds": 2, "label": "lifecycle-create"}))
    assert created["resultType"] == "task" and "task" not in created
    assert isinstance(created["taskId"], str) and created["status"] == "working"
    assert not {"result", "error", "inputRequests"} & created.keys()
    working = result(get(ev, created["taskId"]))
    assert working["taskId"] == created["taskId"] and working["status"] == "working"
    assert not {"result", "error"} & working.keys()
    done = wait_status(ev, created["taskId"])
    assert done["status"] == "completed" and done["result"]["content"]

    failing = start(ev, "failing_job")
    end = wait_status(ev, failing)
    assert end["status"] == "completed" and end["result"]["isError"] is True

    broken = start(ev, "protocol_error_job")
    end = wait_status(ev, broken)
    assert end["status"] == "failed" and "result" not in end
    assert isinstance(end["error"]["code"], int) and isinstance(end["error"]["message"], str)

    long = start(ev, "slow_compute", {"seconds": 60, "label": "lifecycle-cancel"})
    ack = result(cancel(ev, long))
    assert ack["resultType"] == "complete" and not set(ENVELOPE) & ack.keys()
    assert wait_status(ev, long)["status"] == "cancelled"

    short = start(ev, "slow_compute", {"seconds": 1, "label": "lifecycle-cancel-terminal"})
    assert wait_status(ev, short)["status"] == "completed"
    again = result(cancel(ev, short))
    assert again["resultType"] == "complete" and not set(ENVELOPE) & again.keys()
    assert result(get(ev, short))["status"] == "completed"  # a terminal task never changes


# --- tasks-capability-negotiation ----------------------------------------------------------


def test_capability_negotiation(ev: ServerProcess) -> None:
    caps = result(ev.request("server/discover", caps=NONE))["capabilities"]
    assert caps["extensions"][TASKS] == {} and "tasks" not in caps

    for method, params in (
        ("tasks/get", {"taskId": "gate-test"}),
        ("tasks/update", {"taskId": "gate-test", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "gate-test"}),
    ):
        err = error(ev.request(method, params, caps=NONE))
        assert err["code"] == -32021, (method, err)
        assert err["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}

    sync = result(call(ev, "slow_compute", {"seconds": 0, "label": "no-ext"}, caps=NONE))
    assert sync["resultType"] == "complete" and "taskId" not in sync and sync["content"]

    # the extension declared in this request's _meta alone makes it a task
    opted = result(call(ev, "slow_compute", {"seconds": 1, "label": "meta-opt"}, caps=EXT))
    assert opted["resultType"] == "task" and opted["taskId"] and "task" not in opted
    result(cancel(ev, opted["taskId"]))


# --- tasks-wire-fields ------------------------------------------------------------------------


def test_wire_fields(ev: ServerProcess) -> None:
    created = result(call(ev, "slow_compute", {"seconds": 1, "label": "wire-fields"}))
    assert type(created["ttlMs"]) is int and created["ttlMs"] > 0
    assert type(created["pollIntervalMs"]) is int and created["pollIntervalMs"] > 0
    assert "ttl" not in created and "pollInterval" not in created
    end = wait_status(ev, created["taskId"])
    time.sleep(0.5)  # well inside the TTL: still there
    assert result(get(ev, created["taskId"]))["taskId"] == created["taskId"]
    assert "io.modelcontextprotocol/related-task" not in end["result"].get("_meta", {})


# --- tasks-request-state-removal ------------------------------------------------------------


def test_no_request_state_on_tasks(ev: ServerProcess) -> None:
    created = result(call(ev, "slow_compute", {"seconds": 60, "label": "request-state"}))
    assert "requestState" not in created
    assert "requestState" not in result(get(ev, created["taskId"]))
    result(cancel(ev, created["taskId"]))
    assert "requestState" not in wait_status(ev, created["taskId"])
    asking = start(ev, "confirm_delete", {"filename": "x"})
    assert "requestState" not in wait_status(ev, asking, "input_required")


# --- tasks-mrtr-input -------------------------------------------------------------------------


def test_input_requests_and_updates(ev: ServerProcess) -> None:
    task_id = start(ev, "confirm_delete", {"filename": "mrtr-input.txt"})
    task = wait_status(ev, task_id, "input_required", 5)
    assert task["status"] == "input_required"
    assert task["inputRequests"]["confirm"]["method"] == "elicitation/create"
    result(cancel(ev, task_id))
    assert wait_status(ev, task_id)["status"] == "cancelled"

    task_id = start(ev, "confirm_delete", {"filename": "mrtr-resume.txt"})
    task = wait_status(ev, task_id, "input_required", 5)
    ack = result(update(ev, task_id, {k: accept(confirm=True) for k in task["inputRequests"]}))
    assert ack["resultType"] == "complete" and not set(ENVELOPE) & ack.keys()
    end = wait_status(ev, task_id)
    assert end["status"] == "completed"
    assert end["result"]["content"][0]["text"] == "Deleted mrtr-resume.txt"


def test_partial_fulfilment(ev: ServerProcess) -> None:
    task_id = start(ev, "multi_input")
    task = wait_status(ev, task_id, "input_required", 5)
    first, second = list(task["inputRequests"])
    ack = result(update(ev, task_id, {first: accept(name="partial-1", confirm=True)}))
    assert ack["resultType"] == "complete"
    after = result(get(ev, task_id))  # at once: the update is already visible
    assert after["status"] == "input_required"
    assert list(after["inputRequests"]) == [second]
    result(update(ev, task_id, {second: accept(name="partial-2", confirm=True)}))
    end = wait_status(ev, task_id)
    assert end["status"] == "completed"
    assert end["result"]["content"][0]["text"] == "partial-1: proceeding"


# --- tasks-request-headers --------------------------------------------------------------------


def test_request_headers(ev: ServerProcess) -> None:
    r = result(call(ev, "greet", {"name": "sep-2243"}))
    assert r["resultType"] == "complete" and r["content"][0]["text"] == "Hello, sep-2243!"
    task_id = start(ev, "slow_compute", {"seconds": 60, "label": "headers"})
    got = result(get(ev, task_id))
    assert got["taskId"] == task_id and got["status"]
    result(cancel(ev, task_id))

    def problem(method: str, params: dict[str, Any], **headers: str) -> str | None:
        raw = [(k.encode(), v.encode()) for k, v in headers.items()]
        return mirror_problem(method, params, Headers(raw))

    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        body = {"taskId": task_id}
        assert problem(method, body, **{"mcp-method": method, "mcp-name": task_id}) is None
        wrong = problem(method, body, **{"mcp-method": method, "mcp-name": "other"})
        assert wrong is not None and "params.taskId" in wrong
        missing = problem(method, body, **{"mcp-method": method})
        assert missing is not None and "missing" in missing
    bad = problem("tools/call", {"name": "greet"}, **{"mcp-method": "tasks/get"})
    assert bad is not None and "does not match" in bad


# --- tasks-dispatch-and-envelope ----------------------------------------------------------------


def test_dispatch_and_envelope(ev: ServerProcess) -> None:
    probe = "tasks-conformance-isolation-probe"
    assert error(ev.request("tasks/result", {"taskId": probe}, caps=FULL))["code"] == -32601
    assert error(ev.request("tasks/list", {}, caps=FULL))["code"] == -32601

    created = result(call(ev, "failing_job"))
    assert created["resultType"] == "task" and created["taskId"]

    legacy_hint = result(
        call(ev, "greet", {"name": "legacy-hint"}, task={"ttl": 60_000, "pollInterval": 100})
    )
    assert legacy_hint["resultType"] == "complete" and "taskId" not in legacy_hint

    instant = result(call(ev, "slow_compute", {"seconds": 0, "label": "instant"}))
    assert instant["resultType"] == "task" or "content" in instant

    assert result(call(ev, "greet", {"name": "rt"}))["resultType"] == "complete"
    for_get = start(ev, "slow_compute", {"seconds": 0, "label": "rt-get"})
    wait_status(ev, for_get)
    assert result(get(ev, for_get))["resultType"] == "complete"
    long = start(ev, "slow_compute", {"seconds": 60, "label": "rt-cancel"})
    assert result(cancel(ev, long))["resultType"] == "complete"
    parked = start(ev, "confirm_delete", {"filename": "rt.txt"})
    wait_status(ev, parked, "input_required", 5)
    ignored = result(update(ev, parked, {"unknown-key": {"ignored": True}}))
    assert ignored["resultType"] == "complete"
    assert result(get(ev, parked))["status"] == "input_required"  # unknown keys are ignored
    result(cancel(ev, parked))

    consistent = start(ev, "slow_compute", {"seconds": 60, "label": "consistency"})
    assert result(get(ev, consistent))["taskId"] == consistent  # no wait in between
    result(cancel(ev, consistent))

    unknown = error(get(ev, "tasks-conformance-nonexistent-12345"))
    assert unknown["code"] == -32602 and "not found" in unknown["message"]


# --- tasks-status-notifications -----------------------------------------------------------------


def listen(p: ServerProcess, id: Any, caps: Any = FULL, **notifications: Any) -> dict[str, Any]:
    """Open a listen; its acknowledgement (or the error that refused it)."""
    p.send(
        p.request_msg("subscriptions/listen", {"notifications": notifications}, id=id, caps=caps)
    )
    first = p.read()
    return first


def test_status_notifications(ev: ServerProcess) -> None:
    # Long enough that a loaded machine's listen still finds it working.
    task_id = start(ev, "slow_compute", {"seconds": 3, "label": "notify"})
    ack = listen(ev, "watch", taskIds=[task_id, "nope"])
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}  # unknown ids left out
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 10
    while not any(n["params"]["status"] == "completed" for n in seen):
        msg = ev.read(max(0.1, deadline - time.monotonic()))
        assert msg["method"] == "notifications/tasks", msg  # nothing else on this stream
        assert msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "watch"
        seen.append(msg)
    statuses = [n["params"]["status"] for n in seen]
    assert statuses[0] == "working" and statuses[-1] == "completed"  # state now, then changes
    last = seen[-1]["params"]
    assert last["taskId"] == task_id and last["result"]["content"][0]["text"]
    got = result(get(ev, task_id))
    assert {k: v for k, v in last.items() if k != "_meta"} == {
        k: v for k, v in got.items() if k not in ("_meta", "resultType")
    }  # the notification is what tasks/get says

    asking = start(ev, "confirm_delete", {"filename": "n.txt"})
    listen(ev, "watch-2", taskIds=[asking])
    notes = [ev.read(5)]
    while notes[-1]["params"]["status"] != "input_required":
        notes.append(ev.read(5))
    assert notes[-1]["params"]["inputRequests"]["confirm"]["method"] == "elicitation/create"
    for watch in ("watch", "watch-2"):
        ev.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": watch}}
        )

    refused = listen(ev, "no-ext", caps={"elicitation": {}}, taskIds=[task_id])
    assert refused["id"] == "no-ext" and refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}


# --- tasks-required-task-error -------------------------------------------------------------------


def test_required_task_error(ev: ServerProcess) -> None:
    err = error(call(ev, "failing_job", caps=NONE))
    assert err["code"] == -32021
    assert err["data"]["requiredCapabilities"]["extensions"][TASKS] == {}


# --- tasks-mrtr-composition ----------------------------------------------------------------------


def test_mrtr_then_task(ev: ServerProcess) -> None:
    caps = {"elicitation": {}, **EXT}
    r1 = result(call(ev, "test_tool_with_task", caps=caps))
    assert r1["resultType"] == "input_required" and "taskId" not in r1
    key = next(iter(r1["inputRequests"]))
    retry: dict[str, Any] = {"inputResponses": {key: accept(name="Alice")}}
    if "requestState" in r1:
        retry["requestState"] = r1["requestState"]
    r2 = result(call(ev, "test_tool_with_task", caps=caps, **retry))
    assert r2["resultType"] == "task" and r2["taskId"]
    assert "requestState" not in r2 and "inputRequests" not in r2
    end = wait_status(ev, r2["taskId"])
    assert end["status"] == "completed" and "Alice" in end["result"]["content"][0]["text"]
