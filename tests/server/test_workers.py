"""The worker pool that runs sync handlers: results, errors, concurrency, cancellation."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from mcpline.server.workers import WorkerPool

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_results_and_exceptions_come_back() -> None:
    async def main() -> None:
        pool = WorkerPool(4)
        assert await pool.run(lambda: 41 + 1) == 42
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 / 0)

        def stop() -> None:
            raise StopIteration

        with pytest.raises(RuntimeError, match="StopIteration"):
            await pool.run(stop)
        assert pool.running == 0
        pool.shutdown()

    run(main())


def test_many_calls_are_all_answered_in_batches() -> None:
    def square(i: int) -> int:
        return i * i

    async def main() -> None:
        pool = WorkerPool(8)
        results = await asyncio.gather(
            *(pool.run(functools.partial(square, i)) for i in range(2000))
        )
        assert results == [i * i for i in range(2000)]
        assert pool.threads <= 8 and pool.running == 0
        pool.shutdown()

    run(main())


def test_blocking_calls_run_concurrently_up_to_size() -> None:
    size = 6
    barrier = threading.Barrier(size, timeout=10)

    async def main() -> None:
        pool = WorkerPool(size)
        # Each call waits until all `size` calls are inside at once: only true concurrency
        # gets past the barrier (a broken barrier raises after 10 s).
        results = await asyncio.gather(*(pool.run(barrier.wait) for _ in range(size)))
        assert sorted(results) == list(range(size))
        assert pool.threads == size
        pool.shutdown()

    run(main())


def test_never_more_threads_than_size() -> None:
    gate = threading.Event()

    async def main() -> None:
        pool = WorkerPool(3)
        futs = [pool.submit(lambda: gate.wait(10)) for _ in range(10)]
        await asyncio.sleep(0.05)
        assert pool.threads == 3 and pool.running == 10
        gate.set()
        assert all(await asyncio.gather(*futs))
        assert pool.running == 0
        pool.shutdown()

    run(main())


def test_cancelled_call_result_is_dropped_and_queued_calls_never_run() -> None:
    gate = threading.Event()
    ran: list[int] = []

    async def main() -> None:
        pool = WorkerPool(1)
        first = pool.submit(lambda: gate.wait(10))
        queued = pool.submit(lambda: ran.append(1))
        await asyncio.sleep(0.01)
        first.cancel()
        queued.cancel()
        gate.set()
        # A later call still runs: the worker is not lost.
        assert await pool.run(lambda: "alive") == "alive"
        assert ran == []  # cancelled before a thread took it
        assert pool.running == 0
        pool.shutdown()

    run(main())


def test_shutdown_cancels_queued_calls_and_refuses_new_ones() -> None:
    gate = threading.Event()

    async def main() -> None:
        pool = WorkerPool(1)
        busy = pool.submit(lambda: gate.wait(10))
        waiting = pool.submit(lambda: "never")
        await asyncio.sleep(0.01)
        pool.shutdown()
        await asyncio.sleep(0.01)
        assert waiting.cancelled()
        with pytest.raises(RuntimeError):
            pool.submit(lambda: None)
        gate.set()
        assert await busy is True
        assert pool.running == 0

    run(main())


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        WorkerPool(0)
