"""Where tasks live: the record of one task, the `TaskStore` interface and the in-memory store.

A store keeps `TaskRecord` values by task id and changes them atomically (`TaskStore.update`
reads, applies a pure function and writes, as one step even when other processes share the
store). It knows nothing of MCP: `mcpline.server.tasks.manager` decides what each change is. Three
stores ship:

* `MemoryTaskStore` (the default): this process only; tasks die with it.
* `mcpline.server.tasks.sqlite_store.SqliteTaskStore`: a SQLite file in WAL mode, for one machine,
  restarts and several processes sharing the file.
* `mcpline.server.tasks.redis_store.RedisTaskStore`: Redis (the ``mcpline[redis]`` extra), for
  workers and replicas.

Times are integer milliseconds since the epoch (wall clock: processes that share a store
should keep their clocks in sync). A record whose ``expires`` has passed is expired: the
server answers as the SEP says and `TaskStore.purge` deletes it.

Each store also counts, per owner and in all, the unexpired records it keeps and their
encoded size, and checks a `mcpline.server.tasks.quota.TaskQuota` atomically with the write
it guards (`TaskStore.create`, `TaskStore.update`).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import msgspec

from ...spec import TERMINAL_TASK_STATUSES
from .quota import QuotaExceeded, TaskQuota, Usage

DEFAULT_LEASE = 15.0
"""Seconds a running task's worker may stay silent before the task is taken for dead."""


def now_ms() -> int:
    """Milliseconds since the epoch (wall clock)."""
    return time.time_ns() // 1_000_000


class TaskRecord(msgspec.Struct, kw_only=True):
    """Everything the server keeps about one task (stored as JSON)."""

    id: str
    owner: str = ""
    """The principal the task is bound to (`mcpline.server.owners.owner_key`); ""
    for none."""
    tool: str = ""
    kind: str = "tool"
    """``tool``: the tool body runs (again) from ``arguments``, in any process;
    ``job``: the work of a `mcpline.Task` handle, in the process that holds it."""
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    caps: dict[str, Any] = msgspec.field(default_factory=dict)
    """The client capabilities of the request that created the task."""
    client: dict[str, Any] | None = None
    version: str = ""
    status: str = "working"
    message: str | None = None
    created: int = 0
    updated: int = 0
    ttl: int | None = None
    poll: int = 1000
    expires: int | None = None
    requests: dict[str, Any] = msgspec.field(default_factory=dict)
    """Outstanding ``inputRequests`` (status ``input_required``)."""
    answers: dict[str, Any] = msgspec.field(default_factory=dict)
    """Every answer delivered so far, by key (the handler re-runs with all of them)."""
    state: Any = None
    asked: list[str] = msgspec.field(default_factory=list)
    """Every input key ever issued (keys are unique over the task's life)."""
    rounds: int = 0
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    worker: str | None = None
    """The process running it (status ``working``), if any."""
    lease: int | None = None
    """Until when that process's claim holds; renewed while it runs."""
    cancel: bool = False
    """A client asked to cancel it while it was working."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_TASK_STATUSES

    def expired(self, now: int) -> bool:
        return self.expires is not None and self.expires <= now


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(TaskRecord)


def encode_record(rec: TaskRecord) -> bytes:
    return _encoder.encode(rec)


def decode_record(data: bytes | str) -> TaskRecord:
    return _decoder.decode(data)


Change = Callable[[TaskRecord], "TaskRecord | None"]
"""A pure function of the current record: the record to write instead, or None to leave it.
A store may call it more than once (a conflict with another process): it must not keep
anything between calls but what it returns."""


class TaskStore(Protocol):
    """Keeps task records; every method runs on the server's event loop."""

    shared: bool
    """Other processes may change these records (their changes are polled for)."""
    lease: float
    """Seconds a worker's claim on a running task lasts without renewal."""

    async def open(self, scope: str) -> None:
        """Get ready; ``scope`` (the server's name) separates servers sharing a backend."""
        ...

    async def aclose(self) -> None: ...

    async def create(self, rec: TaskRecord, quota: TaskQuota | None = None) -> None:
        """Store a new record durably: once this returns, `get` finds it from any process.
        With ``quota``, `QuotaExceeded` (and nothing stored) when the record does not fit
        its owner's bucket or the server's."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record (expired or not), or None when there is none (or it was purged)."""
        ...

    async def get_many(self, ids: Iterable[str]) -> dict[str, TaskRecord]: ...

    async def update(
        self, task_id: str, change: Change, quota: TaskQuota | None = None
    ) -> TaskRecord | None:
        """Apply ``change`` atomically; the record as stored afterwards (None if absent).
        With ``quota``, `QuotaExceeded` (and the record left as it was) when the change
        grows the record by more than its owner's bucket or the server's has left."""
        ...

    async def renew(self, worker: str, ids: Iterable[str], until: int) -> dict[str, str]:
        """Extend ``worker``'s lease on the tasks ``ids`` to ``until``. Returns the ones it
        must stop running, with why: ``"cancel"`` (a client cancelled it) or ``"gone"``
        (absent, expired, finished or taken over elsewhere)."""
        ...

    async def purge(self, now: int) -> int:
        """Delete the records expired at ``now``; how many were deleted."""
        ...

    async def count(self) -> int:
        """Records kept now (expired ones not yet purged included)."""
        ...

    async def usage(self, owner: str) -> tuple[Usage, Usage]:
        """What ``owner``'s records and all records hold now (expired ones excluded)."""
        ...


def renew_records(
    found: Iterable[tuple[str, TaskRecord | None]], worker: str, until: int
) -> tuple[dict[str, str], list[TaskRecord]]:
    """A `TaskStore.renew` over ``found`` (task ids with their records, None when absent):
    the tasks ``worker`` must stop, with why, and the records whose lease now runs to
    ``until`` (for the store to write back)."""
    now = now_ms()
    stop: dict[str, str] = {}
    extended: list[TaskRecord] = []
    for task_id, rec in found:
        if rec is None or rec.expired(now) or rec.status != "working" or rec.worker != worker:
            stop[task_id] = "gone"
            continue
        rec.lease = until
        extended.append(rec)
        if rec.cancel:
            stop[task_id] = "cancel"
    return stop, extended


class MemoryTaskStore:
    """Tasks in this process's memory: fast, and gone when the process ends."""

    shared = False

    def __init__(self, *, lease: float = DEFAULT_LEASE) -> None:
        self.lease = lease
        self._records: dict[str, bytes] = {}
        self._expiry: list[tuple[int, str]] = []
        self._used: dict[str, list[int]] = {}
        """Tasks and bytes by owner; ``""`` (no owner) included."""
        self._total = [0, 0]

    def _charge(self, owner: str, tasks: int, size: int) -> None:
        used = self._used.setdefault(owner, [0, 0])
        used[0] += tasks
        used[1] += size
        if used[0] <= 0:
            del self._used[owner]
        self._total[0] += tasks
        self._total[1] += size

    def _check(self, quota: TaskQuota | None, owner: str, tasks: int, size: int) -> None:
        if quota is None or (tasks <= 0 and size <= 0):
            return
        self._purge(now_ms())
        mine = Usage(*self._used.get(owner, (0, 0)))
        refusal = quota.refusal(owner, mine, Usage(*self._total), tasks, size)
        if refusal is not None:
            raise QuotaExceeded(refusal)

    async def open(self, scope: str) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def create(self, rec: TaskRecord, quota: TaskQuota | None = None) -> None:
        if rec.id in self._records:
            raise ValueError(f"task {rec.id!r} exists already")
        raw = encode_record(rec)
        self._check(quota, rec.owner, 1, len(raw))
        self._records[rec.id] = raw
        self._charge(rec.owner, 1, len(raw))
        if rec.expires is not None:
            heapq.heappush(self._expiry, (rec.expires, rec.id))
            if self._expiry[0][0] <= rec.created:
                self._purge(rec.created)

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = self._records.get(task_id)
        return None if raw is None else decode_record(raw)

    async def get_many(self, ids: Iterable[str]) -> dict[str, TaskRecord]:
        out = {}
        for task_id in ids:
            raw = self._records.get(task_id)
            if raw is not None:
                out[task_id] = decode_record(raw)
        return out

    async def update(
        self, task_id: str, change: Change, quota: TaskQuota | None = None
    ) -> TaskRecord | None:
        raw = self._records.get(task_id)
        if raw is None:
            return None
        old = decode_record(raw)
        new = change(decode_record(raw))
        if new is None:
            return old
        data = encode_record(new)
        self._check(quota, old.owner, 0, len(data) - len(raw))
        if self._records.get(task_id) is not raw:
            return None  # purged by the check: it had expired
        self._records[task_id] = data
        self._charge(old.owner, 0, len(data) - len(raw))
        return new

    async def renew(self, worker: str, ids: Iterable[str], until: int) -> dict[str, str]:
        records = self._records
        found = [(i, decode_record(records[i]) if i in records else None) for i in ids]
        stop, extended = renew_records(found, worker, until)
        for rec in extended:
            data = encode_record(rec)
            self._charge(rec.owner, 0, len(data) - len(records[rec.id]))
            records[rec.id] = data
        return stop

    async def purge(self, now: int) -> int:
        return self._purge(now)

    def _purge(self, now: int) -> int:
        dropped = 0
        heap = self._expiry
        while heap and heap[0][0] <= now:
            _, task_id = heapq.heappop(heap)
            raw = self._records.get(task_id)
            if raw is None:
                continue
            rec = decode_record(raw)
            if rec.expired(now):
                del self._records[task_id]
                self._charge(rec.owner, -1, -len(raw))
                dropped += 1
        return dropped

    async def count(self) -> int:
        return len(self._records)

    async def usage(self, owner: str) -> tuple[Usage, Usage]:
        self._purge(now_ms())
        return Usage(*self._used.get(owner, (0, 0))), Usage(*self._total)


__all__ = [
    "Change",
    "decode_record",
    "DEFAULT_LEASE",
    "encode_record",
    "MemoryTaskStore",
    "now_ms",
    "renew_records",
    "TaskRecord",
    "TaskStore",
]
