"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) on the server.

A ``tools/call`` may be answered with a task handle (``CreateTaskResult``,
``resultType: "task"``) instead of its result, when the request declared the extension in
its client capabilities. The server decides, per request:

* ``@server.tool(task=True)`` (or ``"optional"``): the call becomes a task; the body runs in
  the background. ``task="required"``: a request without the extension gets -32021 instead.
  A client without the extension (``"optional"``) and every legacy (2025-11-25) session get
  the call run to completion, as a normal call.
* A body returns (or raises) `Task` (``mcpline.Task``) wrapping the work that makes the
  result (an external job, say): after whatever it did synchronously (MRTR rounds
  included), the call becomes a task whose result is that work's. Without the extension
  the work is awaited and its result returned, as a normal call.

Inside a task, ``ctx.ask`` (or raising `InputRequired`) moves the task to ``input_required``
with those requests; ``tasks/update`` delivers answers, and once every outstanding request is
answered the body runs again from the start, with every answer given so far in
``ctx.input_responses`` and the state it raised with in ``ctx.state`` (the MRTR re-run
rule). Progress reported with ``ctx.report_progress`` becomes the task's ``statusMessage``;
no ``notifications/progress`` or ``notifications/message`` are sent for a task (log records
go to `logging`). ``tasks/cancel`` reaches the body as cancellation (``CancelledError``, or
``ctx.cancelled`` for a sync body on its thread).

Tasks are bound to the requester's principal (``ctx.principal``, from the HTTP bearer-token
hook); a task of another principal is answered exactly as an unknown one. Ids are 192 random
bits (`secrets`).

What tasks keep is bounded by the server's `mcpline.server.tasks.quota.TaskQuota` (tasks and
bytes per principal, for anonymous callers together and in all): a ``tools/call`` whose task
does not fit, or a ``tasks/update`` whose answers do not, is answered -32010
(`TASK_QUOTA_EXCEEDED`); a result that does not fit fails its task with that error. A task
that ended keeps only its outcome (its arguments, answers and state are dropped).

`TaskManager` holds the runtime: the store (`mcpline.server.tasks.store`), this process's
running tasks and their leases, TTL purging, and ``notifications/tasks`` to the listens that
asked for a task's id. Across processes (SQLite, Redis): a process claims a task it runs
with a lease it renews every third of the store's ``lease``; a cancellation is a flag in the
record that the running process reads when it renews (or at once, when it is the one that
got ``tasks/cancel``); a task whose lease lapsed is failed by whoever reads it next;
changes made elsewhere reach local listens by polling the store for the ids they watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any

import msgspec

from ...errors import InvalidParams, JsonRpcError, MissingCapabilityError
from ...spec import INTERNAL_ERROR, MODERN, RESULT_TASK, TASKS_EXTENSION
from ..context import Context
from ..mrtr import InputRequest, check_answer
from ..owners import owner_key
from ..tools import Deferred, Tool, invoke
from .handle import _UNSET, Task, shaped
from .quota import TASK_QUOTA_EXCEEDED, QuotaExceeded, Refusal, TaskQuota, resolve_quota
from .records import (
    ENDED,
    accepts_tasks,
    failed,
    iso,
    new_task_id,
    required_extension,
    task_json,
)
from .runs import Run, TaskHost, TaskRuns
from .store import DEFAULT_LEASE, MemoryTaskStore, TaskRecord, TaskStore, now_ms

if TYPE_CHECKING:
    from ..subscriptions import Listen

log = logging.getLogger("mcpline.server")

STORE_ENV = "MCPLINE_TASK_STORE"
"""``memory``, ``sqlite:PATH`` or a Redis URL: the store when `Server` was given none."""
LEASE_ENV = "MCPLINE_TASK_LEASE"
"""Seconds of a worker's lease on a running task, for a store built from `STORE_ENV`."""
MAX_TASK_IDS = 1000
"""The most ``taskIds`` one ``subscriptions/listen`` may ask for."""


def resolve_store(given: TaskStore | str | None) -> TaskStore:
    """The store for ``Server(task_store=...)``: a store, a spec string, or None for
    ``$MCPLINE_TASK_STORE`` (default: memory)."""
    if given is not None and not isinstance(given, str):
        return given
    spec = given if given is not None else os.environ.get(STORE_ENV, "")
    lease_text = os.environ.get(LEASE_ENV)
    lease = float(lease_text) if lease_text else DEFAULT_LEASE
    if spec in ("", "memory"):
        return MemoryTaskStore(lease=lease)
    if spec.startswith("sqlite:"):
        from .sqlite_store import SqliteTaskStore

        path = spec[len("sqlite:") :]
        if path.startswith("//"):
            path = path[2:]  # sqlite:///abs/path
        if not path:
            raise ValueError(f"{STORE_ENV}: sqlite: needs a file path")
        return SqliteTaskStore(path, lease=lease)
    if spec.startswith(("redis://", "rediss://", "unix://")):
        from .redis_store import RedisTaskStore

        return RedisTaskStore(spec, lease=lease)
    raise ValueError(f"unknown task store {spec!r}: use memory, sqlite:PATH or a redis:// URL")


def quota_error(refusal: Refusal) -> JsonRpcError:
    """The -32010 answer to a request that would break a task quota."""
    err = refusal.to_error()
    return JsonRpcError(TASK_QUOTA_EXCEEDED, refusal.message, err["data"])


class TaskManager(TaskRuns):
    """The tasks of one server: its store, the tasks this process runs (`TaskRuns` runs
    them), their leases, TTLs and notifications."""

    max_rounds = 64
    """Input rounds one task may go through."""
    sweep_every = 5.0
    """Seconds between purges of expired tasks."""
    watch_every = 0.5
    """Seconds between polls of a shared store for the tasks listens watch."""

    def __init__(self, dispatch: TaskHost, store: TaskStore) -> None:
        self._d = dispatch
        self.store = store
        self.quota: TaskQuota = resolve_quota(dispatch.options.task_quota)
        """What tasks may keep, per principal and in all."""
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        """This process, as it appears in the records of the tasks it runs."""
        self._runs: dict[str, Run] = {}
        self._open = False
        self._opening: asyncio.Lock | None = None
        self._background: list[asyncio.Task[None]] = []
        self._sent: dict[str, tuple[str, int, str | None]] = {}
        self._messages: dict[str, str] = {}
        self._writing: set[str] = set()

    @property
    def running(self) -> int:
        """Tasks this process is running now."""
        return len(self._runs)

    # --- start and stop --------------------------------------------------------------------

    async def ready(self) -> None:
        """Open the store and start the background work, once (on the server's loop)."""
        if self._open:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._open:
                return
            await self.store.open(self._d.info["name"])
            loop = asyncio.get_running_loop()
            self._background = [
                loop.create_task(self._keep(), name="mcpline-task-leases"),
                loop.create_task(self._sweep(), name="mcpline-task-purge"),
                loop.create_task(self._watch(), name="mcpline-task-watch"),
            ]
            self._d.services.stop_hooks.append(self.aclose)
            self._open = True

    async def aclose(self) -> None:
        """Let running tasks finish for the server's ``shutdown_grace``, fail the rest
        ("the server stopped"), stop the background work and close the store."""
        if not self._open:
            return
        self._open = False
        with contextlib.suppress(ValueError):
            self._d.services.stop_hooks.remove(self.aclose)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._d.options.shutdown_grace
        while self._runs and loop.time() < deadline:
            await asyncio.sleep(0.02)
        for run in list(self._runs.values()):
            run.stop("shutdown")
        pending = [run.task for run in self._runs.values()]
        if pending:
            await asyncio.wait(pending, timeout=5)
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        await self.store.aclose()

    # --- tools/call --------------------------------------------------------------------------

    async def call_tool(
        self, tool: Tool, arguments: dict[str, Any], ctx: Context
    ) -> dict[str, Any]:
        """``tools/call`` of a tool registered with ``task=``, from a request that takes tasks."""
        if tool.validator.errors(arguments):
            return await invoke(tool, arguments, ctx, self._d.services.submit)  # isError now
        rec = await self._create(ctx, tool.name, "tool", arguments, None)
        self._start(rec, ctx.principal, tool, None)
        return {"resultType": RESULT_TASK, **task_json(rec, detailed=False)}

    async def adopt(self, tool: Tool, handle: Deferred, ctx: Context) -> dict[str, Any]:
        """A tool body returned a `Task` to a request that takes tasks: answer with a task."""
        if not isinstance(handle, Task):
            raise TypeError(f"tool {tool.name!r} returned an unknown deferral {handle!r}")
        try:
            rec = await self._create(ctx, tool.name, "job", {}, handle)
        except BaseException:
            handle.discard()
            raise
        self._start(rec, ctx.principal, tool, handle)
        return {"resultType": RESULT_TASK, **task_json(rec, detailed=False)}

    async def _create(
        self, ctx: Context, tool: str, kind: str, arguments: dict[str, Any], handle: Task | None
    ) -> TaskRecord:
        await self.ready()
        options = self._d.options
        ttl = options.task_ttl_ms
        poll = options.task_poll_interval_ms
        message = None
        if handle is not None:
            if handle.ttl_ms is not _UNSET:
                ttl = handle.ttl_ms
            poll = handle.poll_interval_ms or poll
            message = handle.status_message
        if ttl is not None:
            poll = max(1, min(poll, ttl // 2))  # a client polling as asked sees the end
        now = now_ms()
        meta = ctx.meta
        rec = TaskRecord(
            id=new_task_id(),
            owner=owner_key(ctx.principal),
            tool=tool,
            kind=kind,
            arguments=arguments,
            caps=dict(ctx.client_capabilities),
            client=ctx.client_info,
            version=meta.protocol_version if meta is not None else MODERN,
            status="working",
            message=message,
            created=now,
            updated=now,
            ttl=ttl,
            poll=poll,
            expires=None if ttl is None else now + ttl,
            worker=self.worker,
            lease=now + self._lease_ms(),
        )
        try:
            await self.store.create(rec, self.quota)
        except QuotaExceeded as exc:
            raise quota_error(exc.refusal) from None
        return rec

    def _lease_ms(self) -> int:
        return int(self.store.lease * 1000)

    # --- tasks/get, tasks/update, tasks/cancel ------------------------------------------------

    def _require(self, ctx: Context) -> None:
        if not accepts_tasks(ctx.client_capabilities):
            raise MissingCapabilityError(
                required_extension(),
                f"Missing required client capability: {ctx.method} needs the "
                f"{TASKS_EXTENSION} extension in the request's client capabilities",
            )

    @staticmethod
    def _task_id(params: dict[str, Any], method: str) -> str:
        task_id = params.get("taskId")
        if type(task_id) is not str or not task_id:
            raise InvalidParams(f"Invalid params: {method} needs a string 'taskId'")
        return task_id

    async def _visible(self, ctx: Context, task_id: str, verb: str) -> TaskRecord:
        """The task if this caller may see it; -32602 otherwise (unknown, foreign, expired)."""
        await self.ready()
        rec = await self.store.get(task_id)
        if rec is None or not hmac.compare_digest(rec.owner, owner_key(ctx.principal)):
            raise InvalidParams(f"Failed to {verb} task: Task not found")
        now = now_ms()
        if rec.expired(now):
            raise InvalidParams(f"Failed to {verb} task: Task has expired")
        return await self._alive(rec, now)

    async def _alive(self, rec: TaskRecord, now: int) -> TaskRecord:
        """``rec``, failed first if it is working under a lease that lapsed (its process died)."""
        if rec.status != "working" or rec.lease is None or rec.lease >= now or rec.id in self._runs:
            return rec
        dead = rec.worker

        def change(cur: TaskRecord) -> TaskRecord | None:
            if cur.status != "working" or cur.worker != dead or cur.lease is None:
                return None
            if cur.lease >= now:
                return None
            err = {
                "code": INTERNAL_ERROR,
                "message": "Internal error: the server process running this task stopped "
                "before it finished (its lease lapsed)",
            }
            return msgspec.structs.replace(
                cur, **failed(err), worker=None, lease=None, cancel=False, updated=now
            )

        after = await self.store.update(rec.id, change)  # it shrinks: no quota to check
        if after is None:
            return rec
        if after.updated == now and after.status == "failed":
            log.warning("task %s failed: its process %s stopped", rec.id[:8], dead)
            self._notify(after)
        return after

    async def get(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """``tasks/get``: the ``DetailedTask``."""
        self._require(ctx)
        rec = await self._visible(ctx, self._task_id(params, ctx.method), "retrieve")
        return task_json(rec, detailed=True)

    async def update(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """``tasks/update``: deliver answers; once none is outstanding, run the tool again."""
        self._require(ctx)
        task_id = self._task_id(params, ctx.method)
        responses = params.get("inputResponses", {})
        if type(responses) is not dict:
            raise InvalidParams("Invalid params: inputResponses must be an object")
        rec = await self._visible(ctx, task_id, "update")
        if rec.status != "input_required":
            return {}
        given = {k: v for k, v in responses.items() if k in rec.requests}
        for key, value in given.items():
            req = rec.requests[key]
            check_answer(key, InputRequest(req.get("method"), req.get("params") or {}), value)
        if not given:
            return {}
        now = now_ms()
        worker = self.worker
        until = now + self._lease_ms()
        claimed = [False]

        def change(cur: TaskRecord) -> TaskRecord | None:
            claimed[0] = False
            if cur.status != "input_required":
                return None
            got = {k: v for k, v in given.items() if k in cur.requests}
            if not got:
                return None
            left = {k: v for k, v in cur.requests.items() if k not in got}
            if left:
                return msgspec.structs.replace(
                    cur, answers={**cur.answers, **got}, requests=left, updated=now
                )
            claimed[0] = True
            return msgspec.structs.replace(
                cur,
                answers={**cur.answers, **got},
                requests={},
                status="working",
                message=None,
                worker=worker,
                lease=until,
                rounds=cur.rounds + 1,
                updated=now,
            )

        try:
            after = await self.store.update(task_id, change, self.quota)
        except QuotaExceeded as exc:
            raise quota_error(exc.refusal) from None
        if after is not None and after.updated == now:
            self._notify(after)
            if claimed[0]:
                tool = self._d.registry.tools.get(after.tool)
                self._start(after, ctx.principal, tool, None)
        return {}

    async def cancel(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """``tasks/cancel``: ack; a waiting task is cancelled now, a working one is signalled
        (here at once, in another process when it next renews its lease)."""
        self._require(ctx)
        task_id = self._task_id(params, ctx.method)
        rec = await self._visible(ctx, task_id, "cancel")
        if rec.terminal:
            return {}
        now = now_ms()

        def change(cur: TaskRecord) -> TaskRecord | None:
            if cur.terminal:
                return None
            if cur.status == "working" and cur.worker is not None:
                return None if cur.cancel else msgspec.structs.replace(cur, cancel=True)
            return msgspec.structs.replace(
                cur,
                **ENDED,
                status="cancelled",
                message="Cancelled at the client's request",
                worker=None,
                lease=None,
                updated=now,
            )

        after = await self.store.update(task_id, change)
        if after is not None and after.status == "cancelled" and after.updated == now:
            self._notify(after)
        run = self._runs.get(task_id)
        if run is not None:
            run.stop("cancel")
        return {}

    # --- notifications/tasks --------------------------------------------------------------

    async def listen_ids(self, ctx: Context, requested: Any) -> list[str]:
        """The ``taskIds`` of a ``subscriptions/listen`` this caller may watch (-32021 without
        the extension, -32602 for a malformed list; unknown and foreign ids are left out)."""
        if not isinstance(requested, list) or not all(isinstance(i, str) for i in requested):
            raise InvalidParams("Invalid params: notifications.taskIds must be an array of strings")
        self._require(ctx)
        if len(requested) > MAX_TASK_IDS:
            raise InvalidParams(f"Invalid params: at most {MAX_TASK_IDS} taskIds per listen")
        await self.ready()
        wanted = list(dict.fromkeys(requested))
        found = await self.store.get_many(wanted)
        owner = owner_key(ctx.principal)
        now = now_ms()
        return [
            i
            for i in wanted
            if i in found
            and hmac.compare_digest(found[i].owner, owner)
            and not found[i].expired(now)
        ]

    async def announce(self, sub: Listen) -> None:
        """Send a new listen the current state of each task it watches."""
        found = await self.store.get_many(sub.task_ids)
        now = now_ms()
        for task_id in sub.task_ids:
            rec = found.get(task_id)
            if rec is not None and not rec.expired(now):
                rec = await self._alive(rec, now)
                self._d.subscriptions.send_task(sub, task_json(rec, detailed=True))
                self._sent[rec.id] = (rec.status, rec.updated, rec.message)

    def _notify(self, rec: TaskRecord) -> None:
        """Tell every listen watching ``rec`` (in this process) its new state, once."""
        d = self._d
        if not d.has_subscriptions():
            return
        mark = (rec.status, rec.updated, rec.message)
        if self._sent.get(rec.id) == mark:
            return
        params = task_json(rec, detailed=True)
        subs = d.subscriptions
        watched = [False]

        def deliver(peer: Any) -> None:
            if subs.task_changed(peer, rec.id, params):
                watched[0] = True

        d.engine.on_loops(deliver)
        if watched[0]:
            self._sent[rec.id] = mark

    def _watched(self) -> set[str]:
        d = self._d
        if not d.has_subscriptions():
            return set()
        ids: set[str] = set()
        for peer in list(d.engine.peers):
            for sub in list(d.subscriptions.listens(peer).values()):
                ids.update(sub.task_ids)
        return ids

    # --- background -----------------------------------------------------------------------

    async def _keep(self) -> None:
        """Renew the leases of the tasks this process runs; stop those cancelled or gone."""
        while True:
            await asyncio.sleep(max(0.05, self.store.lease / 3))
            ids = list(self._runs)
            if not ids:
                continue
            try:
                stop = await self.store.renew(self.worker, ids, now_ms() + self._lease_ms())
            except Exception as exc:
                log.warning("could not renew task leases: %s: %s", type(exc).__name__, exc)
                continue
            for task_id, why in stop.items():
                run = self._runs.get(task_id)
                if run is not None:
                    run.stop(why)

    async def _sweep(self) -> None:
        """Purge expired tasks."""
        while True:
            await asyncio.sleep(self.sweep_every)
            try:
                await self.store.purge(now_ms())
            except Exception as exc:
                log.warning("could not purge expired tasks: %s: %s", type(exc).__name__, exc)

    async def _watch(self) -> None:
        """Notify listens of changes other processes made to the tasks they watch."""
        while True:
            await asyncio.sleep(self.watch_every)
            try:
                ids = self._watched()
                for gone in set(self._sent) - ids:
                    del self._sent[gone]
                if not ids or not self.store.shared:
                    continue
                found = await self.store.get_many(ids)
                now = now_ms()
                for rec in found.values():
                    self._notify(await self._alive(rec, now))
            except Exception as exc:
                log.warning("could not poll watched tasks: %s: %s", type(exc).__name__, exc)


__all__ = [
    "accepts_tasks",
    "iso",
    "LEASE_ENV",
    "MAX_TASK_IDS",
    "new_task_id",
    "quota_error",
    "resolve_store",
    "shaped",
    "STORE_ENV",
    "Task",
    "task_json",
    "TaskManager",
]
