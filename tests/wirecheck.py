"""Validation of every line a server writes against the official MCP JSON schemas.

The schemas are the official 2026-07-28 and 2025-11-25 ones that ship inside the package
(``mcpline/check/schema-*.json``), so the suite needs nothing outside the repository. The
message rules below are written independently of ``mcpline.check.schema`` so that the tests
do not judge the checker's logic with itself.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

from mcpline.check.schema import RESULT_DEFS, TYPED_ERRORS

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

# The tasks extension (SEP-2663) is not in the core schema: its shapes are checked by hand.
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
TASK_STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
DETAIL_FIELDS = ("inputRequests", "result", "error")


def _positive_int(value: Any) -> bool:
    return type(value) is int and value > 0


def task_problems(task: Any, *, detailed: bool) -> list[str]:
    """What is wrong with a ``Task`` (``detailed``: a ``DetailedTask``)."""
    if not isinstance(task, dict):
        return ["a task must be an object"]
    out = []
    if not isinstance(task.get("taskId"), str) or not task["taskId"]:
        out.append("taskId must be a non-empty string")
    status = task.get("status")
    if status not in TASK_STATUSES:
        out.append(f"status {status!r} is not a task status")
    for key in ("createdAt", "lastUpdatedAt"):
        if not isinstance(task.get(key), str) or not ISO_8601.match(task[key]):
            out.append(f"{key} must be an ISO 8601 timestamp, got {task.get(key)!r}")
    if "ttlMs" not in task or not (task["ttlMs"] is None or _positive_int(task["ttlMs"])):
        out.append(f"ttlMs must be a positive integer or null, got {task.get('ttlMs')!r}")
    if "pollIntervalMs" in task and not _positive_int(task["pollIntervalMs"]):
        out.append(f"pollIntervalMs must be a positive integer, got {task['pollIntervalMs']!r}")
    if "statusMessage" in task and not isinstance(task["statusMessage"], str):
        out.append("statusMessage must be a string")
    for legacy in ("ttl", "pollInterval", "requestState", "task"):
        if legacy in task:
            out.append(f"{legacy!r} is not a field of a task")
    wanted = {"input_required": "inputRequests", "completed": "result", "failed": "error"}
    for key in DETAIL_FIELDS:
        if key in task and (not detailed or wanted.get(str(status)) != key):
            out.append(f"{key!r} does not belong on this task (status {status!r})")
    if detailed and status in wanted and wanted[str(status)] not in task:
        out.append(f"a {status} task must carry {wanted[str(status)]!r}")
    if detailed and status == "input_required":
        reqs = task.get("inputRequests")
        if not isinstance(reqs, dict) or not reqs:
            out.append("inputRequests must be a non-empty object")
        else:
            for key, req in reqs.items():
                if not isinstance(req, dict) or not isinstance(req.get("method"), str):
                    out.append(f"inputRequests[{key!r}] must be an object with a method")
    if detailed and status == "completed":
        out += [f"result: {p}" for p in problems(MODERN, "CallToolResult", task.get("result"))]
    if detailed and status == "failed":
        err = task.get("error")
        if not isinstance(err, dict) or type(err.get("code")) is not int:
            out.append("error must be a JSON-RPC error object with an integer code")
        elif not isinstance(err.get("message"), str):
            out.append("error.message must be a string")
    return out


def _task_result_problems(method: str, result: Any) -> list[str]:
    if not isinstance(result, dict):
        return ["a result must be an object"]
    if result.get("resultType") != "complete":
        return [f"{method} result must have resultType 'complete'"]
    if method == "tasks/get":
        return task_problems(
            {k: v for k, v in result.items() if k not in ("resultType", "_meta")}, detailed=True
        )
    extra = [k for k in result if k not in ("resultType", "_meta")]
    return [f"{method} is an empty acknowledgement, but carries {extra}"] if extra else []


@cache
def _defs(version: str) -> tuple[str, dict[str, Any]]:
    text = resources.files("mcpline.check").joinpath(f"schema-{version}.json").read_text("utf-8")
    doc = json.loads(text)
    key = "$defs" if "$defs" in doc else "definitions"
    return key, doc[key]


@cache
def validator(version: str, name: str) -> Any:
    key, defs = _defs(version)
    if name not in defs:
        raise KeyError(f"{name} is not defined in the {version} schema")
    return jsonschema_rs.validator_for({key: defs, "$ref": f"#/{key}/{name}"})


def problems(version: str, name: str, value: Any) -> list[str]:
    v = validator(version, name)
    return [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in v.iter_errors(value)]


def check_message(msg: Any, *, method: str | None = None, version: str = MODERN) -> list[str]:
    """Schema problems of one server→client message (empty list when valid).

    ``method`` is the request's method when ``msg`` answers one, so the result can be checked
    against its specific type.
    """
    out = problems(version, "JSONRPCMessage", msg)
    if out:
        return out
    if not isinstance(msg, dict):
        return ["not an object"]
    if "method" in msg and "id" not in msg:
        if version == MODERN and msg["method"] == "notifications/tasks":
            params = msg.get("params")
            if not isinstance(params, dict) or not isinstance(params.get("_meta"), dict):
                return ["notifications/tasks needs params with _meta (the subscription id)"]
            task = {k: v for k, v in params.items() if k != "_meta"}
            return task_problems(task, detailed=True)
        return problems(version, "ServerNotification", msg)
    if "error" in msg:
        name = TYPED_ERRORS.get(msg["error"].get("code")) if version == MODERN else None
        return problems(version, name, msg) if name else []
    if "result" in msg and method:
        result = msg["result"]
        if (
            version == MODERN
            and isinstance(result, dict)
            and result.get("resultType") == "input_required"
        ):
            return problems(version, "InputRequiredResult", result)
        if version == MODERN and isinstance(result, dict) and result.get("resultType") == "task":
            if method != "tools/call":
                return [f"{method} may not be answered with a task"]
            task = {k: v for k, v in result.items() if k not in ("resultType", "_meta")}
            return task_problems(task, detailed=False)
        if version == MODERN and method in TASK_METHODS:
            return _task_result_problems(method, result)
        name = RESULT_DEFS.get(method)
        if name is None:
            return []
        if name == "EmptyResult" and version == LEGACY and result != {}:
            return [f"{method} result must be exactly {{}} in a legacy session, got {result!r}"]
        if name == "InitializeResult" and version == MODERN:
            return []
        return problems(version, name, result)
    if "method" in msg and "id" in msg:
        return (
            problems(version, "ServerRequest", msg)
            if version == LEGACY
            else ["a modern server sent a request"]
        )
    return []
