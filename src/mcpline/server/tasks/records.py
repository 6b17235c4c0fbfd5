"""What a task is bound to and how its record reads as JSON: the parts of
`mcpline.server.tasks.manager` its siblings share."""

from __future__ import annotations

import datetime
import secrets
from typing import Any

from ...protocol.capabilities import accepts_tasks
from ...spec import INTERNAL_ERROR, TASKS_EXTENSION
from .store import TaskRecord


def required_extension() -> dict[str, Any]:
    return {"extensions": {TASKS_EXTENSION: {}}}


def new_task_id() -> str:
    """192 random bits, URL- and header-safe."""
    return secrets.token_urlsafe(24)


def iso(ms: int) -> str:
    """ISO 8601 in UTC with milliseconds: ``2026-07-28T10:30:00.000Z``."""
    when = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_json(rec: TaskRecord, *, detailed: bool) -> dict[str, Any]:
    """The ``Task`` fields of a record; ``detailed`` adds what its status carries
    (``inputRequests``, ``result`` or ``error``): a ``DetailedTask``."""
    out: dict[str, Any] = {"taskId": rec.id, "status": rec.status}
    if rec.message is not None:
        out["statusMessage"] = rec.message
    out["createdAt"] = iso(rec.created)
    out["lastUpdatedAt"] = iso(rec.updated)
    out["ttlMs"] = rec.ttl
    out["pollIntervalMs"] = rec.poll
    if detailed:
        if rec.status == "input_required":
            out["inputRequests"] = rec.requests
        elif rec.status == "completed":
            out["result"] = rec.result if rec.result is not None else {"content": []}
        elif rec.status == "failed":
            out["error"] = rec.error or {"code": INTERNAL_ERROR, "message": "Internal error"}
    return out


STOPPED = {
    "code": INTERNAL_ERROR,
    "message": "Internal error: the server stopped before the task finished",
}


ENDED: dict[str, Any] = {
    "arguments": {},
    "answers": {},
    "state": None,
    "asked": [],
    "caps": {},
    "client": None,
    "requests": {},
}
"""The fields a task that ended no longer needs (it never runs again), emptied: what it
keeps until its TTL ends is its status, message and result or error."""


def failed(error: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record that ``failed`` with ``error``."""
    return {
        **ENDED,
        "status": "failed",
        "error": error,
        "message": str(error.get("message", "failed")),
        "result": None,
    }


__all__ = [
    "ENDED",
    "STOPPED",
    "accepts_tasks",
    "failed",
    "iso",
    "new_task_id",
    "required_extension",
    "task_json",
]
