"""`Task` (``mcpline.Task``), what a tool body returns to answer with a task, and the
shaping of its work's value into a ``CallToolResult``."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...errors import JsonRpcError, ToolError
from ..mrtr import InputRequired
from ..tools import Deferred, Tool, error_result, failure_result, shape_result

log = logging.getLogger("mcpline.server")

_UNSET: Any = object()
"""``Task(ttl_ms=...)`` not given: the server's ``task_ttl_ms`` applies."""


class Task(Deferred):
    """Return (or raise) from a tool body to answer with a task whose result is ``work``'s.

    ``work`` is a coroutine (or any awaitable), an ``async def`` function, or a plain function
    (run on a worker thread, for blocking job APIs); its value is shaped like the tool's
    return value (a `ToolError` or any other exception becomes an ``isError`` result, a
    `JsonRpcError` makes the task ``failed``). ``on_cancel`` (sync or async) is called when a
    client cancels the task, e.g. to cancel the external job. ``status_message``, ``ttl_ms``
    (None: no limit) and ``poll_interval_ms`` override the server's. A client without the
    tasks extension, and a legacy session, get the work's result as a normal call.

    The work lives in this process: if the process dies, the task becomes ``failed``.
    """

    def __init__(
        self,
        work: Awaitable[Any] | Callable[[], Any],
        *,
        status_message: str | None = None,
        ttl_ms: int | None = _UNSET,
        poll_interval_ms: int | None = None,
        on_cancel: Callable[[], Any] | None = None,
    ) -> None:
        if not (inspect.isawaitable(work) or callable(work)):
            raise TypeError("work must be an awaitable or a function")
        if ttl_ms is not _UNSET and ttl_ms is not None and ttl_ms < 1:
            raise ValueError("ttl_ms must be positive (or None for no limit)")
        if poll_interval_ms is not None and poll_interval_ms < 1:
            raise ValueError("poll_interval_ms must be positive")
        super().__init__("a task handle")
        self.work = work
        self.status_message = status_message
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.on_cancel = on_cancel

    async def result(self, submit: Callable[[Callable[[], Any]], Awaitable[Any]]) -> Any:
        """Run the work (once) and return its value."""
        work, self.work = self.work, _spent
        if inspect.isawaitable(work):
            return await work
        if inspect.iscoroutinefunction(work):
            return await work()
        value = await submit(work)
        return (await value) if inspect.isawaitable(value) else value

    def discard(self) -> None:
        """Close the work unrun (a coroutine would warn that it was never awaited)."""
        work, self.work = self.work, _spent
        if inspect.iscoroutine(work):
            work.close()


def _spent() -> Any:
    raise RuntimeError("a Task's work runs once")


async def shaped(
    tool: Tool, handle: Task, submit: Callable[[Callable[[], Any]], Awaitable[Any]]
) -> dict[str, Any]:
    """The ``CallToolResult`` of a handle's work, errors as `invoke` shapes them."""
    try:
        value = await handle.result(submit)
        if isinstance(value, Deferred):
            raise TypeError("a Task's work returned another task")
        return shape_result(tool, value)
    except ToolError as exc:
        return error_result(str(exc) or type(exc).__name__)
    except (JsonRpcError, InputRequired, asyncio.CancelledError):
        raise
    except Exception as exc:
        log.exception("the task of tool %r raised", tool.name)
        return failure_result(tool, exc)


__all__ = ["Task", "shaped"]
