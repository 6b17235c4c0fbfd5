"""`RedisTaskStore`: tasks in Redis, shared by every worker and replica of a server.

Needs the ``redis`` extra (``pip install 'mcpline[redis]'``, redis-py 5.0.1 or later, asyncio
client), imported when the store opens. Each task is one string key,
``<prefix><task id>``, holding the record's JSON; the key expires with the task (``PXAT``),
so Redis purges expired tasks itself. Every change is optimistic: ``WATCH`` the key, read,
apply, ``MULTI``/``SET … KEEPTTL``/``EXEC``, and again if another process wrote first. A
task is created with ``SET … NX`` before its ``CreateTaskResult`` is sent, so any replica
finds it at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .task_store import (
    DEFAULT_LEASE,
    Change,
    TaskRecord,
    decode_record,
    encode_record,
    renew_records,
)

if TYPE_CHECKING:
    import redis.asyncio

DEFAULT_URL = "redis://127.0.0.1:6379/0"
_GLOB = re.compile(r"([*?\[\]\\])")


class RedisTaskStore:
    """``Server(task_store=RedisTaskStore(url))``: tasks in Redis.

    ``prefix`` defaults to ``mcpline:tasks:<server name>:``; ``lease`` is how long (seconds)
    a running task's process may go without renewing its claim before the task is failed as
    dead; ``timeout`` bounds connecting, each command and the wait for one of the
    ``max_connections`` connections (a busy server queues for them rather than failing).
    """

    shared = True

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        prefix: str | None = None,
        lease: float = DEFAULT_LEASE,
        timeout: float = 5.0,
        max_connections: int = 32,
    ) -> None:
        from .redis_bus import _require_redis

        _require_redis("RedisTaskStore")
        if lease <= 0 or timeout <= 0 or max_connections < 1:
            raise ValueError("lease, timeout and max_connections must be positive")
        self.url = url
        self.prefix = prefix
        self.lease = lease
        self.timeout = timeout
        self.max_connections = max_connections
        self._prefix = prefix or ""
        self._redis: redis.asyncio.Redis | None = None

    def _key(self, task_id: str) -> str:
        return self._prefix + task_id

    def _client(self) -> redis.asyncio.Redis:
        if self._redis is None:
            raise RuntimeError("the Redis task store is not open")
        return self._redis

    async def open(self, scope: str) -> None:
        if self._redis is not None:
            return
        from redis.asyncio import BlockingConnectionPool, Redis

        self._prefix = self.prefix or f"mcpline:tasks:{scope}:"
        pool = BlockingConnectionPool.from_url(
            self.url,
            max_connections=self.max_connections,
            timeout=self.timeout,
            socket_timeout=self.timeout,
            socket_connect_timeout=self.timeout,
        )
        self._redis = Redis.from_pool(pool)  # closed with the client

    async def aclose(self) -> None:
        client, self._redis = self._redis, None
        if client is not None:
            await client.aclose()

    async def create(self, rec: TaskRecord) -> None:
        done = await self._client().set(
            self._key(rec.id), encode_record(rec), nx=True, pxat=rec.expires
        )
        if not done:
            raise ValueError(f"task {rec.id!r} exists already")

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = await self._client().get(self._key(task_id))
        return None if raw is None else decode_record(raw)

    async def get_many(self, ids: Iterable[str]) -> dict[str, TaskRecord]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found = await self._client().mget([self._key(i) for i in wanted])
        out = {}
        for raw in found:
            if raw is not None:
                rec = decode_record(raw)
                out[rec.id] = rec
        return out

    async def update(self, task_id: str, change: Change) -> TaskRecord | None:
        from redis.exceptions import WatchError

        key = self._key(task_id)
        async with self._client().pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if raw is None:
                        return None
                    rec = decode_record(raw)
                    new = change(rec)
                    if new is None:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        return rec
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(key, encode_record(new), keepttl=True)
                    await pipe.execute()
                    return new
                except WatchError:
                    continue

    async def renew(self, worker: str, ids: Iterable[str], until: int) -> dict[str, str]:
        from redis.exceptions import WatchError

        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        keys = [self._key(i) for i in wanted]
        async with self._client().pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(*keys)
                    found = await pipe.mget(keys)
                    records = (None if raw is None else decode_record(raw) for raw in found)
                    stop, extended = renew_records(zip(wanted, records, strict=True), worker, until)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    for rec in extended:
                        pipe.set(self._key(rec.id), encode_record(rec), keepttl=True)
                    await pipe.execute()
                    return stop
                except WatchError:
                    continue

    async def purge(self, now: int) -> int:
        return 0  # every key expires with its task

    async def count(self) -> int:
        pattern = _GLOB.sub(r"\\\1", self._prefix) + "*"
        found = 0
        async for _ in self._client().scan_iter(match=pattern, count=1000):
            found += 1
        return found


__all__ = [
    "DEFAULT_URL",
    "RedisTaskStore",
]
