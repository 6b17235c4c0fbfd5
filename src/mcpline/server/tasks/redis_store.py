"""`RedisTaskStore`: tasks in Redis, shared by every worker and replica of a server.

Needs the ``redis`` extra (``pip install 'mcpline[redis]'``, redis-py 5.0.1 or later, asyncio
client), imported when the store opens. Each task is one string key,
``<prefix><task id>``, holding the record's JSON; the key expires with the task (``PXAT``),
so Redis purges expired tasks itself. Every change is optimistic: ``WATCH`` the key, read,
apply, then write with a Lua script that checks the record is still the one read (its
SHA-1) and again if another process wrote first. A task is created (by a script) before its
``CreateTaskResult`` is sent, so any replica finds it at once.

Quotas: three keys beside the records (ids never contain ``~``) count what they hold, and
every script keeps them in step with the write it makes: ``<prefix>~expiry`` (a sorted set
of task ids by expiry), ``<prefix>~sizes`` (id → ``size:owner``) and ``<prefix>~usage``
(``n``/``b``: tasks and bytes in all; ``n:<owner>``/``b:<owner>``: of one owner). Each
script first drops from the counts the tasks that expired (Redis dropped their records
itself); `purge` drops the rest.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .quota import QuotaExceeded, Refusal, TaskQuota, Usage
from .store import (
    DEFAULT_LEASE,
    Change,
    TaskRecord,
    decode_record,
    encode_record,
    now_ms,
    renew_records,
)

if TYPE_CHECKING:
    import redis.asyncio
    from redis.commands.core import AsyncScript

DEFAULT_URL = "redis://127.0.0.1:6379/0"
_GLOB = re.compile(r"([*?\[\]\\])")
_BOOKS = ("~expiry", "~sizes", "~usage")
_CLEAN_BATCH = 1000

_LUA_COMMON = """
local function charge(u, owner, n, b)
  redis.call('HINCRBY', u, 'n', n)
  redis.call('HINCRBY', u, 'b', b)
  if redis.call('HINCRBY', u, 'n:' .. owner, n) <= 0 then
    redis.call('HDEL', u, 'n:' .. owner, 'b:' .. owner)
  else
    redis.call('HINCRBY', u, 'b:' .. owner, b)
  end
end
local function split(m)
  local sep = string.find(m, ':', 1, true)
  return tonumber(string.sub(m, 1, sep - 1)), string.sub(m, sep + 1)
end
local function clean(z, h, u, now)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, BATCH)
  for _, id in ipairs(gone) do
    local m = redis.call('HGET', h, id)
    if m then
      local size, owner = split(m)
      charge(u, owner, -1, -size)
      redis.call('HDEL', h, id)
    end
    redis.call('ZREM', z, id)
  end
  return #gone
end
-- the bounds of TaskQuota.bounds from ARGV[first]: their count, then per bound the two
-- fields of ~usage it counts with, its limits and its bucket; the rule of quota.check
local function refuse(u, first, tasks, size)
  for j = 0, tonumber(ARGV[first]) - 1 do
    local at = first + 1 + j * 5
    local n = tonumber(redis.call('HGET', u, ARGV[at]) or '0')
    local b = tonumber(redis.call('HGET', u, ARGV[at + 1]) or '0')
    if tasks > 0 and n + tasks > tonumber(ARGV[at + 2]) then
      return {'refused', ARGV[at + 4], 'tasks', ARGV[at + 2]}
    end
    if size > 0 and b + size > tonumber(ARGV[at + 3]) then
      return {'refused', ARGV[at + 4], 'bytes', ARGV[at + 3]}
    end
  end
  return nil
end
""".replace("BATCH", str(_CLEAN_BATCH))

_LUA_CREATE = (
    _LUA_COMMON
    + """
-- KEYS: record, ~expiry, ~sizes, ~usage; ARGV: id, data, expires or '', owner, now, bounds
clean(KEYS[2], KEYS[3], KEYS[4], ARGV[5])
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
local size = string.len(ARGV[2])
local refused = refuse(KEYS[4], 6, 1, size)
if refused then return refused end
if ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], '+inf', ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
end
redis.call('HSET', KEYS[3], ARGV[1], size .. ':' .. ARGV[4])
charge(KEYS[4], ARGV[4], 1, size)
return {'ok'}
"""
)

_LUA_UPDATE = (
    _LUA_COMMON
    + """
-- KEYS: record, ~expiry, ~sizes, ~usage; ARGV: id, SHA-1 of the record read, data, now,
-- bounds. Writes only when the record is still the one read ('retry' otherwise).
local cur = redis.call('GET', KEYS[1])
if not cur then return {'gone'} end
if redis.sha1hex(cur) ~= ARGV[2] then return {'retry'} end
clean(KEYS[2], KEYS[3], KEYS[4], ARGV[4])
local size = string.len(ARGV[3])
local m = redis.call('HGET', KEYS[3], ARGV[1])
if m then
  local old, owner = split(m)
  local refused = refuse(KEYS[4], 5, 0, size - old)
  if refused then return refused end
  redis.call('HSET', KEYS[3], ARGV[1], size .. ':' .. owner)
  charge(KEYS[4], owner, 0, size - old)
end
redis.call('SET', KEYS[1], ARGV[3], 'KEEPTTL')
return {'ok'}
"""
)

_LUA_CLEAN = (
    _LUA_COMMON
    + """
-- KEYS: ~expiry, ~sizes, ~usage; ARGV: now
return clean(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
"""
)


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
        from ..scale.redis_bus import _require_redis

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
        self._scripts: dict[str, AsyncScript] = {}

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
        self._scripts = {
            "create": self._redis.register_script(_LUA_CREATE),
            "update": self._redis.register_script(_LUA_UPDATE),
            "clean": self._redis.register_script(_LUA_CLEAN),
        }

    def _books(self) -> list[str]:
        return [self._prefix + name for name in _BOOKS]

    async def _script(self, name: str, keys: list[str], args: list[Any]) -> list[str]:
        out = await self._scripts[name](keys=keys, args=args)
        return [v.decode() if isinstance(v, bytes) else str(v) for v in out]

    @staticmethod
    def _bounds(quota: TaskQuota | None, owner: str) -> list[Any]:
        if quota is None:
            return [0]
        out: list[Any] = [2]
        for bound in quota.bounds(owner):
            fields = ("n", "b") if bound.bucket == "server" else ("n:" + owner, "b:" + owner)
            out += [*fields, bound.tasks, bound.bytes, bound.bucket]
        return out

    @staticmethod
    def _outcome(out: list[str]) -> str:
        if out[0] == "refused":
            raise QuotaExceeded(Refusal(out[1], out[2], int(out[3])))
        return out[0]

    async def aclose(self) -> None:
        client, self._redis = self._redis, None
        if client is not None:
            await client.aclose()

    async def create(self, rec: TaskRecord, quota: TaskQuota | None = None) -> None:
        self._client()
        expires = "" if rec.expires is None else rec.expires
        args = [rec.id, encode_record(rec), expires, rec.owner, now_ms()]
        args += self._bounds(quota, rec.owner)
        out = await self._script("create", [self._key(rec.id), *self._books()], args)
        if self._outcome(out) == "exists":
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

    async def update(
        self, task_id: str, change: Change, quota: TaskQuota | None = None
    ) -> TaskRecord | None:
        client = self._client()
        keys = [self._key(task_id), *self._books()]
        while True:
            raw = await client.get(keys[0])
            if raw is None:
                return None
            rec = decode_record(raw)
            new = change(rec)
            if new is None:
                return rec
            read = raw if isinstance(raw, bytes) else raw.encode()
            args = [
                task_id,
                hashlib.sha1(read, usedforsecurity=False).hexdigest(),
                encode_record(new),
                now_ms(),
            ]
            args += self._bounds(quota, rec.owner)
            outcome = self._outcome(await self._script("update", keys, args))
            if outcome == "ok":
                return new
            if outcome == "gone":
                return None

    async def renew(self, worker: str, ids: Iterable[str], until: int) -> dict[str, str]:
        stop: dict[str, str] = {}
        for task_id in dict.fromkeys(ids):
            why = await self._renew_one(worker, task_id, until)
            if why is not None:
                stop[task_id] = why
        return stop

    async def _renew_one(self, worker: str, task_id: str, until: int) -> str | None:
        why: dict[str, str] = {}

        def change(rec: TaskRecord) -> TaskRecord | None:
            found, extended = renew_records([(task_id, rec)], worker, until)
            why.clear()
            why.update(found)
            return extended[0] if extended else None

        if await self.update(task_id, change) is None:
            return "gone"
        return why.get(task_id)

    async def purge(self, now: int) -> int:
        """Drop expired tasks from the counts (Redis drops their records itself)."""
        self._client()
        dropped = 0
        while True:
            done = await self._scripts["clean"](keys=self._books(), args=[now])
            dropped += int(done)
            if int(done) < _CLEAN_BATCH:
                return dropped

    async def count(self) -> int:
        pattern = _GLOB.sub(r"\\\1", self._prefix) + "*"
        skip = len(self._prefix.encode())
        found = 0
        async for key in self._client().scan_iter(match=pattern, count=1000):
            if b"~" not in key[skip:]:
                found += 1
        return found

    async def usage(self, owner: str) -> tuple[Usage, Usage]:
        await self.purge(now_ms())
        fields = ["n:" + owner, "b:" + owner, "n", "b"]
        got = await self._client().hmget(self._books()[2], fields)
        n, b, tn, tb = (int(v or 0) for v in got)
        return Usage(n, b), Usage(tn, tb)


__all__ = [
    "DEFAULT_URL",
    "RedisTaskStore",
]
