"""Raw helpers for the tasks tests over stdio: requests with or without the extension, and
waiting for a task's status the way the conformance suite does (``tasks/get`` every 200 ms)."""

from __future__ import annotations

import time
from typing import Any

from ..proc import ServerProcess

TASKS = "io.modelcontextprotocol/tasks"
EXT: dict[str, Any] = {"extensions": {TASKS: {}}}
FULL: dict[str, Any] = {"elicitation": {}, "sampling": {}, **EXT}
"""What the suite's task scenarios declare."""
NONE: dict[str, Any] = {}
TERMINAL = ("completed", "failed", "cancelled")
ENVELOPE = ("taskId", "status", "result", "error", "inputRequests")


def result(resp: dict[str, Any]) -> dict[str, Any]:
    assert "result" in resp, resp
    out: dict[str, Any] = resp["result"]
    return out


def error(resp: dict[str, Any]) -> dict[str, Any]:
    assert "error" in resp, resp
    out: dict[str, Any] = resp["error"]
    return out


def call(
    p: ServerProcess,
    tool: str,
    arguments: dict[str, Any] | None = None,
    caps: Any = FULL,
    **kw: Any,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments or {}, **kw}
    return p.request("tools/call", params, caps=caps)


def start(p: ServerProcess, tool: str, arguments: dict[str, Any] | None = None) -> str:
    """Call a task tool; its task id (the call must have become a task)."""
    r = result(call(p, tool, arguments))
    assert r["resultType"] == "task", r
    task_id: str = r["taskId"]
    return task_id


def get(p: ServerProcess, task_id: str, caps: Any = FULL) -> dict[str, Any]:
    return p.request("tasks/get", {"taskId": task_id}, caps=caps)


def wait_status(
    p: ServerProcess, task_id: str, status: str | None = None, timeout: float = 10.0
) -> dict[str, Any]:
    """Poll until ``status`` (or any terminal status); the task as last seen."""
    deadline = time.monotonic() + timeout
    while True:
        task = result(get(p, task_id))
        if task["status"] == status or task["status"] in TERMINAL:
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {task['status']} after {timeout}s")
        time.sleep(0.1)


def update(p: ServerProcess, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    return p.request("tasks/update", {"taskId": task_id, "inputResponses": responses}, caps=FULL)


def cancel(p: ServerProcess, task_id: str) -> dict[str, Any]:
    return p.request("tasks/cancel", {"taskId": task_id}, caps=FULL)


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


# --- over HTTP --------------------------------------------------------------------------------


def http_request(
    server: Any, method: str, params: dict[str, Any], *, token: str | None = None, caps: Any = FULL
) -> dict[str, Any]:
    """One 2026-07-28 request over HTTP (headers mirrored: Mcp-Name is the tool's name or the
    task id); its response message."""
    from ..transports.http_util import check_wire, modern_headers, post, request_body

    name = params.get("taskId") if method.startswith("tasks/") else params.get("name")
    extra = {} if token is None else {"authorization": f"Bearer {token}"}
    headers = modern_headers(method, name, **extra)
    reply = post(server, request_body(1, method, params, caps=caps), headers)
    check_wire(reply, method)
    msg: dict[str, Any] = reply.messages[-1]
    return msg


def http_wait(
    server: Any, task_id: str, status: str | None = None, timeout: float = 15.0, **kw: Any
) -> dict[str, Any]:
    """`wait_status` over HTTP."""
    deadline = time.monotonic() + timeout
    while True:
        task = result(http_request(server, "tasks/get", {"taskId": task_id}, **kw))
        if task["status"] == status or task["status"] in TERMINAL:
            return task
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} still {task['status']} after {timeout}s")
        time.sleep(0.1)
