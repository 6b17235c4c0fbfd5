"""Tasks created and expired leave nothing behind: 10,000 tasks through each store.

    .venv/bin/python bench/tasks.py                       # memory, SQLite and Redis
    .venv/bin/python bench/tasks.py --stores memory --rounds 2 --per-round 500
    .venv/bin/python bench/tasks.py --redis-url redis://127.0.0.1:6379/0

A server in this process (``Client.memory``) with one task tool; each round starts
``--per-round`` tasks (``Client.start_tool``, 100 at a time), then waits until every one has
finished, expired (``--ttl-ms``) and been purged. After each round it prints how many
records the store holds and the process's RSS: both should come back to where they were
(the store to 0) however many rounds run. Without ``--redis-url`` a redis-server is started
for the Redis store (``tests/redis_server.py`` finds or provisions one). Numbers are printed,
never judged: this is not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from mcpline import Client, Server  # noqa: E402
from mcpline.server.tasks.manager import TaskManager  # noqa: E402
from mcpline.server.tasks.redis_store import RedisTaskStore  # noqa: E402
from mcpline.server.tasks.sqlite_store import SqliteTaskStore  # noqa: E402
from mcpline.server.tasks.store import MemoryTaskStore, TaskStore  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / (1024 * 1024)


@contextlib.contextmanager
def redis_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    sys.path.insert(0, str(REPO))
    running: Any = importlib.import_module("tests.redis_server").running_redis
    with running() as server:
        yield server.url


@contextlib.asynccontextmanager
async def serving(store: TaskStore, ttl_ms: int) -> AsyncIterator[Client]:
    server = Server("bench-tasks", task_store=store, task_ttl_ms=ttl_ms)

    @server.tool(task=True)
    async def work(i: int) -> str:
        """A task that is done at once."""
        return f"done {i}"

    async with Client.memory(server, timeout=60) as client:
        yield client


async def one_store(name: str, store: TaskStore, rounds: int, per_round: int, ttl_ms: int) -> None:
    print(f"\n{name}: {rounds} rounds of {per_round} tasks, TTL {ttl_ms} ms")
    print(
        "| round | tasks so far | created in | records at the end of the round "
        "| records once expired | RSS MiB |"
    )
    print("|---|---|---|---|---|---|")
    async with serving(store, ttl_ms) as client:
        await client.start_tool("work", {"i": -1})  # warm up: the store is open
        for r in range(1, rounds + 1):
            started = time.perf_counter()
            for first in range(0, per_round, 100):
                batch = range(first, min(first + 100, per_round))
                await asyncio.gather(*(client.start_tool("work", {"i": i}) for i in batch))
            took = time.perf_counter() - started
            held = await store.count()
            deadline = time.monotonic() + ttl_ms / 1000 + 60
            while await store.count() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            left = await store.count()
            print(f"| {r} | {r * per_round} | {took:.1f} s | {held} | {left} | {rss_mib():.1f} |")


async def main_async(args: argparse.Namespace) -> None:
    TaskManager.sweep_every = 0.25  # purge often: the rounds are short
    with tempfile.TemporaryDirectory(prefix="mcpline-bench-tasks-") as tmp:
        for name in args.stores:
            if name == "memory":
                await one_store(name, MemoryTaskStore(), args.rounds, args.per_round, args.ttl_ms)
            elif name == "sqlite":
                store = SqliteTaskStore(Path(tmp) / "tasks.db")
                await one_store(name, store, args.rounds, args.per_round, args.ttl_ms)
                size = sum(p.stat().st_size for p in Path(tmp).glob("tasks.db*"))
                print(f"SQLite files at the end: {size / 1024:.0f} KiB (WAL included)")
            else:
                with redis_url(args.redis_url) as url:
                    redis = RedisTaskStore(url, prefix="bench:tasks:")
                    await one_store(name, redis, args.rounds, args.per_round, args.ttl_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--stores",
        nargs="+",
        default=["memory", "sqlite", "redis"],
        choices=["memory", "sqlite", "redis"],
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=2000)
    parser.add_argument("--ttl-ms", type=int, default=500)
    parser.add_argument("--redis-url")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
