"""The `TaskStore` contract, against each store: memory, SQLite (a real file) and Redis (a
real redis-server): create and read back, atomic updates (concurrent ones included), lease
renewal and what it tells a worker to stop, expiry and purging, scopes kept apart."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpline.server.task_redis import RedisTaskStore
from mcpline.server.task_sqlite import SqliteTaskStore
from mcpline.server.task_store import MemoryTaskStore, TaskRecord, TaskStore, now_ms
from mcpline.server.tasks import resolve_store

from ..redis_server import RedisServer, running_redis

Factory = Callable[[], TaskStore]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
    kind = request.param
    if kind == "memory":
        shared = MemoryTaskStore()
        return lambda: shared  # one process: "another store" is the same one
    if kind == "sqlite":
        return lambda: SqliteTaskStore(tmp_path / "tasks.db")
    url = request.getfixturevalue("redis").url
    return lambda: RedisTaskStore(url)  # keys under mcpline:tasks:<scope>:


def record(task_id: str, *, ttl: int | None = 60_000, **fields: Any) -> TaskRecord:
    now = now_ms()
    fields.setdefault("worker", "w1")
    return TaskRecord(
        id=task_id,
        created=now,
        updated=now,
        ttl=ttl,
        expires=None if ttl is None else now + ttl,
        lease=now + 10_000,
        **fields,
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


SCOPE = ""


@pytest.fixture(autouse=True)
def _scope(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test's stores use scopes of their own (Redis is shared by the module)."""
    global SCOPE
    SCOPE = request.node.name
    yield


async def opened(make: Factory, scope: str = "") -> TaskStore:
    store = make()
    await store.open(SCOPE + scope)
    return store


def test_create_get_and_update(make: Factory) -> None:
    async def main() -> None:
        store = await opened(make)
        rec = record("t1", arguments={"x": [1, "ü"]}, caps={"extensions": {}})
        await store.create(rec)
        with pytest.raises(ValueError):
            await store.create(rec)
        assert await store.get("t1") == rec
        assert await store.get("nope") is None
        assert await store.get_many(["t1", "nope", "t1"]) == {"t1": rec}
        after = await store.update("t1", lambda r: msgspec.structs.replace(r, status="failed"))
        assert after is not None and after.status == "failed"
        same = await store.update("t1", lambda r: None)
        assert same == after
        assert await store.update("nope", lambda r: r) is None
        got = await store.get("t1")
        assert got is not None and got.status == "failed" and got.arguments == {"x": [1, "ü"]}
        await store.aclose()

    run(main())


def test_concurrent_updates_are_atomic(make: Factory) -> None:
    async def main() -> None:
        stores = [await opened(make) for _ in range(4)]
        await stores[0].create(record("counter", rounds=0))

        async def bump(store: TaskStore) -> None:
            for _ in range(25):
                await store.update(
                    "counter", lambda r: msgspec.structs.replace(r, rounds=r.rounds + 1)
                )

        await asyncio.gather(*(bump(s) for s in stores))
        got = await stores[0].get("counter")
        assert got is not None and got.rounds == 100
        for s in stores:
            await s.aclose()

    run(main())


def test_renew_extends_leases_and_says_what_to_stop(make: Factory) -> None:
    async def main() -> None:
        store = await opened(make)
        await store.create(record("mine"))
        await store.create(record("cancelled", cancel=True))
        await store.create(record("other", worker="w2"))
        await store.create(record("finished", status="completed"))
        until = now_ms() + 99_000
        stop = await store.renew("w1", ["mine", "cancelled", "other", "finished", "gone"], until)
        assert stop == {"cancelled": "cancel", "other": "gone", "finished": "gone", "gone": "gone"}
        mine, other = await store.get("mine"), await store.get("other")
        assert mine is not None and mine.lease == until
        assert other is not None and other.lease != until
        assert await store.renew("w1", [], until) == {}
        await store.aclose()

    run(main())


def test_expiry_and_purge(make: Factory) -> None:
    async def main() -> None:
        store = await opened(make)
        await store.create(record("short", ttl=100))
        await store.create(record("long", ttl=60_000))
        await store.create(record("forever", ttl=None))
        await asyncio.sleep(0.3)
        short = await store.get("short")
        assert short is None or short.expired(now_ms())  # Redis expires the key itself
        await store.purge(now_ms())
        assert await store.get("short") is None
        assert await store.get("long") is not None and await store.get("forever") is not None
        assert await store.count() == 2
        stop = await store.renew("w1", ["short"], now_ms() + 1000)
        assert stop == {"short": "gone"}
        await store.aclose()

    run(main())


def test_scopes_are_kept_apart(make: Factory, request: pytest.FixtureRequest) -> None:
    if "memory" in request.node.name:
        pytest.skip("a memory store belongs to one server")

    async def main() -> None:
        one, two = await opened(make, "one"), await opened(make, "two")
        await one.create(record("same-id"))
        await two.create(record("same-id", status="cancelled"))
        a, b = await one.get("same-id"), await two.get("same-id")
        assert a is not None and b is not None and a.status != b.status
        assert await one.count() == 1 and await two.count() == 1
        await one.aclose()
        await two.aclose()

    run(main())


def test_a_store_spec_names_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPLINE_TASK_STORE", raising=False)
    monkeypatch.setenv("MCPLINE_TASK_LEASE", "2.5")
    assert isinstance(resolve_store(None), MemoryTaskStore)
    assert resolve_store("memory").lease == 2.5
    sqlite = resolve_store(f"sqlite:{tmp_path / 'a.db'}")
    assert isinstance(sqlite, SqliteTaskStore) and sqlite.path == str(tmp_path / "a.db")
    absolute = resolve_store("sqlite:///var/tmp/x.db")
    assert isinstance(absolute, SqliteTaskStore) and absolute.path == "/var/tmp/x.db"
    assert isinstance(resolve_store("redis://127.0.0.1:1/0"), RedisTaskStore)
    given = MemoryTaskStore()
    assert resolve_store(given) is given
    monkeypatch.setenv("MCPLINE_TASK_STORE", f"sqlite:{tmp_path / 'b.db'}")
    assert isinstance(resolve_store(None), SqliteTaskStore)
    for bad in ("sqlite:", "mongodb://x", "nonsense"):
        with pytest.raises(ValueError):
            resolve_store(bad)


def test_sqlite_writes_through_a_thread_and_uses_wal(tmp_path: Path) -> None:
    async def main() -> str:
        store = SqliteTaskStore(tmp_path / "wal.db")
        await store.open("s")
        await store.create(record("t"))
        await store.aclose()
        import sqlite3

        conn = sqlite3.connect(tmp_path / "wal.db")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        conn.close()
        return str(mode)

    assert run(main()) == "wal"
    assert "sqlite3" in sys.modules  # loaded by the store when it opened
