"""The tasks this process runs, for `mcpline.server.tasks.manager.TaskManager`: starting a run,
recording its end (result, input requests, failure or cancellation) and its progress as the
task's ``statusMessage``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ...errors import InvalidParams, JsonRpcError, MissingCapabilityError
from ...jsonrpc import Request
from ...protocol.meta import RequestMeta
from ...spec import INTERNAL_ERROR, PROGRESS, TOOLS_CALL
from ..context import Context
from ..engine import Engine, Exchange, Phase
from ..eras import EraHost
from ..mrtr import InputRequired, select_requests
from ..outbound import Kind
from ..peer import PeerState
from ..tools import Deferred, Tool, invoke
from .handle import Task, shaped
from .quota import QuotaExceeded, TaskQuota
from .records import ENDED, STOPPED, failed
from .store import TaskRecord, TaskStore, now_ms

if TYPE_CHECKING:
    from .._options import ServerOptions
    from ..registry import Registry
    from ..services import Services
    from ..subscriptions import Subscriptions

log = logging.getLogger("mcpline.server")

_PROGRESS_TOKEN = "mcpline-task"


class TaskHost(EraHost, Protocol):
    """What the tasks extension asks of the server's method table (`mcpline.server.methods`):
    what a context's host offers, and the server's options, services, registry, engine and
    listens."""

    @property
    def options(self) -> ServerOptions: ...

    @property
    def services(self) -> Services: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def subscriptions(self) -> Subscriptions: ...

    def has_subscriptions(self) -> bool: ...


class _TaskBinding:
    """What a task's context knows of its caller: the principal (no transport checks)."""

    modern_only = True

    def __init__(self, principal: Any) -> None:
        self.principal = principal

    def check_version(self, version: str) -> None:
        return None

    def check_request(self, request: Request) -> None:
        return None

    def close_stream(self) -> None:
        return None


class _TaskPeer(PeerState):
    """The peer of a task's context: nothing reaches a client; progress becomes the task's
    ``statusMessage``."""

    def __init__(self, manager: TaskRuns, task_id: str):
        super().__init__(f"task {task_id[:8]}")
        self._manager = manager
        self._task_id = task_id

    def deliver(self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind) -> bool:
        if message.get("method") == PROGRESS:
            self._manager.progress(self._task_id, message.get("params") or {})
        return True

    def send(self, data: bytes, kind: Kind) -> bool:
        return False

    def phase_changed(self, exchange: Exchange, old: Phase) -> None:
        return None


@dataclass
class Run:
    task: asyncio.Task[None]
    exchange: Exchange
    reason: str | None = None
    """Why it was stopped: ``cancel``, ``gone`` or ``shutdown``."""

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.exchange.cancel()


class TaskRuns:
    """The part of `TaskManager` (its base class) that runs tasks in this process."""

    _d: TaskHost
    store: TaskStore
    quota: TaskQuota
    worker: str
    max_rounds: int
    _runs: dict[str, Run]
    _messages: dict[str, str]
    _writing: set[str]

    if TYPE_CHECKING:

        def _notify(self, rec: TaskRecord) -> None: ...

    def _start(
        self, rec: TaskRecord, principal: Any, tool: Tool | None, handle: Task | None
    ) -> None:
        loop = asyncio.get_running_loop()
        peer = _TaskPeer(self, rec.id)
        request = Request(rec.id, TOOLS_CALL, {"name": rec.tool, "arguments": rec.arguments})
        exchange = Exchange(request, peer, _TaskBinding(principal))
        exchange.move(Phase.RUNNING)
        meta = RequestMeta(
            protocol_version=rec.version,
            client_capabilities=rec.caps,
            client_info=rec.client,
            log_level=None,
            progress_token=_PROGRESS_TOKEN,
            raw={},
        )
        ctx = Context(exchange, meta, self._d)
        ctx.input_responses = dict(rec.answers)
        ctx.state = rec.state
        task = loop.create_task(self._run(rec, ctx, exchange, tool, handle))
        exchange.task = task
        self._runs[rec.id] = Run(task, exchange)
        task.add_done_callback(lambda _: self._reap(rec.id, handle))

    def _reap(self, task_id: str, handle: Task | None) -> None:
        """A run cancelled before its first step never ran its own ending: record it here."""
        run = self._runs.pop(task_id, None)
        if run is None:
            return
        if handle is not None:
            handle.discard()
        if run.reason == "gone":
            return
        if run.reason == "cancel":
            fields = {
                **ENDED,
                "status": "cancelled",
                "message": "Cancelled at the client's request",
            }
        else:
            fields = failed(STOPPED)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing can be recorded
            asyncio.get_running_loop().create_task(self._finish(task_id, fields))

    async def _run(
        self,
        rec: TaskRecord,
        ctx: Context,
        exchange: Exchange,
        tool: Tool | None,
        handle: Task | None,
    ) -> None:
        fields: dict[str, Any] | None
        submit = self._d.services.submit
        try:
            try:
                if tool is None:
                    raise InvalidParams(f"Unknown tool: {rec.tool!r}", {"name": rec.tool})
                if handle is None:
                    try:
                        result = await self._through_chain(
                            exchange, ctx, invoke(tool, rec.arguments, ctx, submit)
                        )
                    except Deferred as deferred:
                        if not isinstance(deferred, Task):
                            raise
                        handle = deferred
                        result = await shaped(tool, handle, submit)
                else:
                    result = await shaped(tool, handle, submit)
                result.setdefault("resultType", "complete")  # as tools/call would say
                fields = {**ENDED, "status": "completed", "result": result, "message": None}
            except InputRequired as ir:
                fields = self._asking(ir, ctx)
            except JsonRpcError as exc:
                fields = failed(exc.to_error())
            except asyncio.CancelledError:
                fields = await self._stopped(rec.id, handle)
            except Exception:
                log.exception("task %s of tool %r failed", rec.id[:8], rec.tool)
                fields = failed(
                    {
                        "code": INTERNAL_ERROR,
                        "message": f"Internal error while running tool {rec.tool!r}",
                    }
                )
        finally:
            if exchange.open:
                exchange.move(Phase.ANSWERED)
        try:
            if fields is not None:
                await self._finish(rec.id, fields)
        except Exception:
            log.exception("could not record the end of task %s", rec.id[:8])
        finally:
            self._runs.pop(rec.id, None)

    def _through_chain(
        self, exchange: Exchange, ctx: Context, run: Awaitable[dict[str, Any]]
    ) -> Awaitable[dict[str, Any]]:
        """``run`` (a task's tool call) through the server's middleware, if it has any."""
        chain = self._d.engine.middleware
        return run if chain is None else chain.request(exchange, ctx, run, task=exchange.id)

    async def _stopped(self, task_id: str, handle: Task | None) -> dict[str, Any] | None:
        run = self._runs.get(task_id)
        reason = run.reason if run is not None else None
        if reason == "cancel":
            if handle is not None and handle.on_cancel is not None:
                try:
                    res = handle.on_cancel()
                    if inspect.isawaitable(res):
                        await res
                except Exception:
                    log.exception("on_cancel of task %s raised", task_id[:8])
            return {**ENDED, "status": "cancelled", "message": "Cancelled at the client's request"}
        if reason == "gone":
            return None  # expired, or finished elsewhere: nothing to record
        return failed(STOPPED)

    def _asking(self, ir: InputRequired, ctx: Context) -> dict[str, Any]:
        """The fields of a task that now waits for ``ir``'s requests (or of a failed one)."""
        try:
            requests = select_requests(ir, ctx.client_capabilities)
        except MissingCapabilityError as exc:
            return failed(exc.to_error())
        if ir.state is not None:
            try:
                msgspec.json.encode(ir.state)
            except (TypeError, msgspec.EncodeError) as exc:
                return failed(
                    {"code": INTERNAL_ERROR, "message": f"Internal error: state is not JSON: {exc}"}
                )
        return {
            "status": "input_required",
            "requests": {k: r.to_json() for k, r in requests.items()},
            "state": ir.state,
        }

    async def _finish(self, task_id: str, fields: dict[str, Any]) -> None:
        """Record how a run ended; an end that does not fit the quota (a result too large,
        say) fails the task with the quota's error instead."""
        try:
            await self._record_end(task_id, fields, self.quota)
        except QuotaExceeded as exc:
            await self._record_end(task_id, failed(exc.refusal.to_error()), None)

    async def _record_end(
        self, task_id: str, fields: dict[str, Any], quota: TaskQuota | None
    ) -> None:
        now = now_ms()
        worker = self.worker
        max_rounds = self.max_rounds

        def change(cur: TaskRecord) -> TaskRecord | None:
            if cur.status != "working" or cur.worker != worker:
                return None
            new = dict(fields)
            if new["status"] == "input_required":
                asked = {k: v for k, v in new["requests"].items() if k not in cur.answers}
                if not asked:
                    new = failed(
                        {
                            "code": INTERNAL_ERROR,
                            "message": f"Internal error: tool {cur.tool!r} asked again for "
                            "input it was given",
                        }
                    )
                elif cur.rounds >= max_rounds:
                    new = failed(
                        {
                            "code": INTERNAL_ERROR,
                            "message": f"Internal error: tool {cur.tool!r} kept asking for "
                            f"input after {max_rounds} rounds",
                        }
                    )
                else:
                    new["requests"] = asked
                    new["asked"] = [*cur.asked, *asked]
                    new["message"] = "Waiting for input: " + ", ".join(asked)
            return msgspec.structs.replace(
                cur, **new, worker=None, lease=None, cancel=False, updated=now
            )

        after = await self.store.update(task_id, change, quota)
        if after is not None and after.updated == now and after.status != "working":
            self._notify(after)

    # --- progress as statusMessage --------------------------------------------------------

    def progress(self, task_id: str, params: dict[str, Any]) -> None:
        """A task run's progress notification, kept as its ``statusMessage``."""
        progress, total = params.get("progress"), params.get("total")
        message = params.get("message")
        count = f"{progress:g}" + (f"/{total:g}" if isinstance(total, (int, float)) else "")
        self._messages[task_id] = f"{message} ({count})" if message else count
        if task_id not in self._writing:
            self._writing.add(task_id)
            asyncio.get_running_loop().create_task(self._write_messages(task_id))

    async def _write_messages(self, task_id: str) -> None:
        worker = self.worker
        try:
            while (text := self._messages.pop(task_id, None)) is not None:
                now = now_ms()

                def change(cur: TaskRecord, text: str = text, now: int = now) -> TaskRecord | None:
                    if cur.status != "working" or cur.worker != worker or cur.message == text:
                        return None
                    return msgspec.structs.replace(cur, message=text, updated=now)

                after = await self.store.update(task_id, change, self.quota)
                if after is not None and after.updated == now:
                    self._notify(after)
        except QuotaExceeded as exc:
            log.warning("the progress of task %s was not recorded: %s", task_id[:8], exc)
        except Exception:
            log.warning("could not record the progress of task %s", task_id[:8], exc_info=True)
        finally:
            self._writing.discard(task_id)


__all__ = ["Run", "TaskHost", "TaskRuns"]
