"""The `TaskStore` contract, against each store: memory, SQLite (a real file) and Redis (a
real redis-server): create and read back, atomic updates (concurrent ones included), lease
renewal and what it tells a worker to stop, expiry and purging, scopes kept apart, and the
task quota (counted per owner and in all, checked atomically with the write it guards)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpline.server.tasks.manager import resolve_store
from mcpline.server.tasks.quota import QuotaExceeded, TaskQuota, Usage
from mcpline.server.tasks.redis_store import RedisTaskStore
from mcpline.server.tasks.sqlite_store import SqliteTaskStore
from mcpline.server.tasks.store import (
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
    encode_record,
    now_ms,
)

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


QUOTA = TaskQuota(
    tasks=3,
    bytes=20_000,
    anonymous_tasks=2,
    anonymous_bytes=8_000,
    total_tasks=6,
    total_bytes=40_000,
)


def size(rec: TaskRecord) -> int:
    return len(encode_record(rec))


def refused(exc: pytest.ExceptionInfo[QuotaExceeded]) -> tuple[str, str, int]:
    r = exc.value.refusal
    return r.bucket, r.what, r.limit


def test_quota_counts_tasks_per_owner_anonymous_and_in_all(make: Factory) -> None:
    async def main() -> None:
        store = await opened(make)
        for i in range(3):
            await store.create(record(f"a{i}", owner="alice"), QUOTA)
        with pytest.raises(QuotaExceeded) as exc:
            await store.create(record("a3", owner="alice"), QUOTA)
        assert refused(exc) == ("principal", "tasks", 3)
        assert await store.get("a3") is None
        for i in range(2):
            await store.create(record(f"n{i}"), QUOTA)  # anonymous
        with pytest.raises(QuotaExceeded) as exc:
            await store.create(record("n2"), QUOTA)
        assert refused(exc) == ("anonymous", "tasks", 2)
        await store.create(record("b0", owner="bob"), QUOTA)  # the sixth task
        with pytest.raises(QuotaExceeded) as exc:
            await store.create(record("b1", owner="bob"), QUOTA)
        assert refused(exc) == ("server", "tasks", 6)
        await store.create(record("b1", owner="bob"))  # no quota given: nothing is checked
        mine, total = await store.usage("alice")
        assert mine.tasks == 3 and total.tasks == 7
        expected = sum([size(r) for r in (await store.get_many(["a0", "a1", "a2"])).values()])
        assert mine.bytes == expected
        await store.aclose()

    run(main())


def test_quota_counts_bytes_and_checks_what_an_update_adds(make: Factory) -> None:
    async def main() -> None:
        store = await opened(make)
        with pytest.raises(QuotaExceeded) as exc:
            await store.create(record("big", owner="carol", arguments={"x": "y" * 20_000}), QUOTA)
        assert refused(exc) == ("principal", "bytes", 20_000)
        assert await store.usage("carol") == (Usage(0, 0), Usage(0, 0))
        await store.create(record("c", owner="carol", arguments={"x": "y" * 10_000}), QUOTA)
        with pytest.raises(QuotaExceeded) as exc:
            await store.update(
                "c", lambda r: msgspec.structs.replace(r, answers={"k": "z" * 12_000}), QUOTA
            )
        assert refused(exc) == ("principal", "bytes", 20_000)
        got = await store.get("c")
        assert got is not None and got.answers == {}
        grown = await store.update(
            "c", lambda r: msgspec.structs.replace(r, answers={"k": "z" * 5_000}), QUOTA
        )
        assert grown is not None
        mine, _ = await store.usage("carol")
        assert mine == Usage(1, size(grown))
        shrunk = await store.update(
            "c", lambda r: msgspec.structs.replace(r, arguments={}, answers={}), QUOTA
        )
        assert shrunk is not None
        assert (await store.usage("carol"))[0] == Usage(1, size(shrunk))
        until = now_ms() + 50_000
        assert await store.renew("w1", ["c"], until) == {}
        renewed = await store.get("c")
        assert renewed is not None and renewed.lease == until
        assert (await store.usage("carol"))[0] == Usage(1, size(renewed))
        await store.aclose()

    run(main())


def test_expired_tasks_leave_the_quota(make: Factory) -> None:
    async def main() -> None:
        store = await opened(make)
        # Long enough that a busy machine creates the fourth before the first three expire.
        early = [record(f"s{i}", owner="dave", ttl=3_000) for i in range(3)]
        for r in early:
            await store.create(r, QUOTA)
        with pytest.raises(QuotaExceeded):
            await store.create(record("s3", owner="dave"), QUOTA)
        expires = max(r.expires or 0 for r in early)
        await asyncio.sleep(max(0, expires - now_ms()) / 1000 + 0.2)  # all three expired
        await store.create(record("s3", owner="dave"), QUOTA)  # before any purge
        assert (await store.usage("dave"))[0].tasks == 1
        await store.purge(now_ms())
        got = await store.usage("dave")
        assert got[0] == got[1] == Usage(1, size(record("s3", owner="dave")))
        await store.aclose()

    run(main())


def test_concurrent_creates_never_pass_the_quota(make: Factory) -> None:
    async def main() -> None:
        stores = [await opened(make) for _ in range(4)]

        async def create(i: int) -> bool:
            try:
                await stores[i % 4].create(record(f"r{i}", owner="erin"), QUOTA)
            except QuotaExceeded:
                return False
            return True

        made = await asyncio.gather(*(create(i) for i in range(24)))
        assert sum(made) == 3
        assert (await stores[0].usage("erin"))[0].tasks == 3
        for s in stores:
            await s.aclose()

    run(main())


def test_sqlite_gains_the_quota_columns(tmp_path: Path) -> None:
    """A file made before quotas: its records are counted once the store opens it."""
    import sqlite3

    path = tmp_path / "old.db"
    old = record("old", owner="frank")
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE mcpline_tasks (scope TEXT NOT NULL, id TEXT NOT NULL, expires INTEGER,"
        " data BLOB NOT NULL, PRIMARY KEY (scope, id)) WITHOUT ROWID"
    )
    conn.execute(
        "INSERT INTO mcpline_tasks VALUES (?, ?, ?, ?)",
        ("s", "old", old.expires, encode_record(old)),
    )
    conn.commit()
    conn.close()

    async def main() -> tuple[Usage, Usage]:
        store = SqliteTaskStore(path)
        await store.open("s")
        assert await store.get("old") == old
        used = await store.usage("frank")
        await store.aclose()
        return used

    assert run(main()) == (Usage(1, size(old)), Usage(1, size(old)))
