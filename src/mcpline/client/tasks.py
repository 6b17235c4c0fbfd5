"""Tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663) from the client's side.

A modern server may answer ``tools/call`` with a task handle (``resultType: "task"``)
instead of the result. `Client.call_tool` then follows the task to its end and returns
the result as if none had been made: it polls ``tasks/get`` at the interval the server asks
for (or follows ``notifications/tasks`` on a listen, with ``listen=True``), answers
``input_required`` through the client's ``on_elicit``/``on_sample``/``on_roots`` callbacks
(``tasks/update``), and raises what a plain call would (`ServerError` for a ``failed``
task) or `TaskCancelled`.

`TaskHandle` is the explicit form: `Client.start_tool` returns one without waiting, and
`TaskHandle.resume` makes one from a task id saved earlier (after the host restarted, say).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InputDeclined, ProtocolError, RequestTimeout, ServerError, TaskCancelled
from ..spec import (
    ACKNOWLEDGED,
    RESULT_TASK,
    TASK_STATUS,
    TASK_STATUSES,
    TASKS_CANCEL,
    TASKS_GET,
    TASKS_UPDATE,
    TERMINAL_TASK_STATUSES,
    TOOLS_CALL,
)
from .mrtr import maybe_await

if TYPE_CHECKING:
    from .client import Client, Listener

StatusCallback = Callable[[dict[str, Any]], Any]
"""``on_status(task)`` with each new state of a task (its ``Task`` fields, as the server sent
them); may be a coroutine function."""

DEFAULT_POLL = 1.0
"""Seconds between polls when the server suggests no interval."""
MIN_POLL, MAX_POLL = 0.01, 60.0
"""Bounds on the interval a server may ask for."""
LISTEN_BACKSTOP = 10
"""When following notifications, poll anyway after this many poll intervals of silence."""


def is_task(result: Any) -> bool:
    return isinstance(result, dict) and result.get("resultType") == RESULT_TASK


_NOT_TASK = ("resultType", "_meta")


def _checked(task: Any, what: str) -> dict[str, Any]:
    """The ``Task`` fields of a result or notification (``resultType`` and ``_meta`` left
    out); `ProtocolError` when it is not a task."""
    if not isinstance(task, dict):
        raise ProtocolError(f"{what}: the task is not an object: {task!r:.200}")
    if not isinstance(task.get("taskId"), str) or not task["taskId"]:
        raise ProtocolError(f"{what}: the task has no string taskId: {task!r:.200}")
    if task.get("status") not in TASK_STATUSES:
        raise ProtocolError(f"{what}: unknown task status {task.get('status')!r}")
    return {k: v for k, v in task.items() if k not in _NOT_TASK}


class TaskHandle:
    """One task on the server (or, from `Client.start_tool`, a call the server answered at
    once: then `task_id` is None and `done` is true).

    `state` is what was last learned (a ``Task``, with ``result``/``error``/
    ``inputRequests`` when ``tasks/get`` or a notification carried them).
    """

    def __init__(self, client: Client, state: dict[str, Any], *, result: Any = None) -> None:
        self.client = client
        self.state = {k: v for k, v in state.items() if k not in _NOT_TASK}
        self._result: dict[str, Any] | None = result
        self._answered: set[str] = set()
        """Input keys already answered (the server repeats outstanding ones on each poll)."""

    @classmethod
    def created(cls, client: Client, result: Any) -> TaskHandle:
        """The handle of a ``CreateTaskResult`` (`ProtocolError` when it is not one)."""
        return cls(client, _checked(result, TOOLS_CALL))

    @classmethod
    async def resume(cls, client: Client, task_id: str) -> TaskHandle:
        """A handle on a task started earlier (by this client or, with the same credentials,
        another one), fetched with ``tasks/get`` (`ServerError` -32602 when it is unknown,
        expired or not the caller's)."""
        handle = cls(client, {"taskId": task_id, "status": "working"})
        await handle.status()
        return handle

    @classmethod
    def finished(cls, client: Client, result: dict[str, Any]) -> TaskHandle:
        """A call that the server answered without a task."""
        return cls(client, {"status": "completed", "result": result}, result=result)

    @property
    def task_id(self) -> str | None:
        tid = self.state.get("taskId")
        return tid if isinstance(tid, str) else None

    @property
    def done(self) -> bool:
        """The last state seen is terminal (``completed``, ``failed`` or ``cancelled``)."""
        return self.state.get("status") in TERMINAL_TASK_STATUSES

    def __repr__(self) -> str:
        return f"TaskHandle({self.task_id!r}, {self.state.get('status')!r})"

    async def status(self) -> dict[str, Any]:
        """``tasks/get``: the task's current state (also kept as `state`): its ``status``,
        ``statusMessage``, ``pollIntervalMs``, ``ttlMs`` and, at the end, ``result`` or
        ``error``."""
        if self.task_id is None:
            return self.state
        got = await self.client.request(TASKS_GET, {"taskId": self.task_id}, idempotent=True)
        self.state = _checked(got, TASKS_GET)
        return self.state

    async def cancel(self) -> None:
        """``tasks/cancel`` (cooperative: the task may still end otherwise)."""
        if self.task_id is not None and not self.done:
            await self.client.request(TASKS_CANCEL, {"taskId": self.task_id}, idempotent=True)

    async def result(
        self,
        *,
        timeout: float | None = None,
        on_status: StatusCallback | None = None,
        listen: bool = False,
    ) -> dict[str, Any]:
        """Follow the task to its end and return its ``CallToolResult``.

        Polls at the server's ``pollIntervalMs`` (``listen=True``: waits for
        ``notifications/tasks`` instead, polling only after a long silence); answers
        ``input_required`` with the client's input callbacks. Raises `ServerError` for a
        ``failed`` task, `TaskCancelled` for a cancelled one, `InputDeclined` (after
        cancelling the task) when an input cannot be given, and `RequestTimeout` (after
        cancelling it) when ``timeout`` seconds pass first.
        """
        if self._result is not None:
            return self._result
        if timeout is None:
            return await self._follow(on_status, listen)
        try:
            return await asyncio.wait_for(self._follow(on_status, listen), timeout)
        except asyncio.TimeoutError:
            with contextlib.suppress(Exception):
                await self.cancel()
            raise RequestTimeout(
                f"task {self.task_id} did not finish within {timeout:g}s; it was cancelled"
            ) from None

    async def _follow(self, on_status: StatusCallback | None, listen: bool) -> dict[str, Any]:
        listener = await self._listen() if listen else None
        try:
            seen: tuple[Any, ...] | None = None
            while True:
                state = self.state
                mark = (state.get("status"), state.get("lastUpdatedAt"), state.get("statusMessage"))
                if on_status is not None and mark != seen:
                    await maybe_await(on_status(state))
                seen = mark
                status = state.get("status")
                if status == "completed":
                    result = state.get("result")
                    if not isinstance(result, dict):
                        result = (await self.status()).get("result")
                    if not isinstance(result, dict):
                        raise ProtocolError(f"task {self.task_id}: completed without a result")
                    self._result = result
                    return result
                if status == "failed":
                    error = state.get("error")
                    if error is None:
                        error = (await self.status()).get("error")
                    raise ServerError.from_error(error, TOOLS_CALL)
                if status == "cancelled":
                    raise TaskCancelled(
                        f"task {self.task_id} was cancelled"
                        + (f": {state['statusMessage']}" if state.get("statusMessage") else "")
                    )
                if status == "input_required" and await self._answer(state):
                    await self.status()
                    continue
                await self._next(listener)
        finally:
            if listener is not None:
                await listener.aclose()

    def _interval(self) -> float:
        """The server's ``pollIntervalMs``, bounded, and never past a quarter of the TTL."""
        wait = DEFAULT_POLL
        ms = self.state.get("pollIntervalMs")
        if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0:
            wait = ms / 1000
        ttl = self.state.get("ttlMs")
        if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0:
            wait = min(wait, ttl / 4000)
        return min(max(wait, MIN_POLL), MAX_POLL)

    async def _next(self, listener: Listener | None) -> None:
        """Wait for the task's next state: a notification, or the next poll."""
        wait = self._interval()
        if listener is None:
            await asyncio.sleep(wait)
            await self.status()
            return
        try:
            item = await asyncio.wait_for(listener.__anext__(), wait * LISTEN_BACKSTOP)
        except asyncio.TimeoutError:
            await self.status()
            return
        except StopAsyncIteration:
            await asyncio.sleep(wait)
            await self.status()
            return
        params = item.params
        if item.method == TASK_STATUS and params.get("taskId") == self.task_id:
            self.state = _checked(params, TASK_STATUS)

    async def _answer(self, state: dict[str, Any]) -> bool:
        """Answer the input requests not answered yet; False when there are none."""
        requests = state.get("inputRequests")
        if requests is None:
            requests = (await self.status()).get("inputRequests")
        if not isinstance(requests, dict):
            raise ProtocolError(f"task {self.task_id}: input_required without inputRequests")
        pending = {k: v for k, v in requests.items() if k not in self._answered}
        if not pending:
            return False
        try:
            answers = await self.client.links.handlers.fulfil(pending)
        except InputDeclined:
            with contextlib.suppress(Exception):
                await self.cancel()
            raise
        await self.client.request(
            TASKS_UPDATE, {"taskId": self.task_id, "inputResponses": answers}, idempotent=True
        )
        self._answered.update(pending)
        return True

    async def _listen(self) -> Listener | None:
        """A listen for this task's notifications, if the server agrees to send them."""
        assert self.task_id is not None
        listener = self.client.listen(
            tools=False, prompts=False, resources=False, task_ids=[self.task_id]
        )
        try:
            first = await asyncio.wait_for(listener.__anext__(), self.client.options.timeout)
        except Exception:
            await listener.aclose()
            return None
        ack = first.params.get("notifications") if first.method == ACKNOWLEDGED else None
        if not isinstance(ack, dict) or self.task_id not in (ack.get("taskIds") or ()):
            await listener.aclose()
            return None
        return listener


__all__ = [
    "DEFAULT_POLL",
    "is_task",
    "StatusCallback",
    "TaskHandle",
]
