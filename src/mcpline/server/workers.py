"""A small thread pool for sync handlers, built for many short calls.

Compared with ``loop.run_in_executor(ThreadPoolExecutor)``: no `concurrent.futures`
future per call, and finished calls are handed back to the event loop in batches (one
loop wake-up for every call that finished meanwhile, instead of one per call). Threads
are added only while calls keep waiting (a burst of short calls is served by the threads
already running instead of waking ``size`` threads that fight over the GIL); blocking
calls still get up to ``size`` threads, each started within `SPAWN_DELAY`.
Threads are daemons: a handler that never returns cannot keep the process alive.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

_Item = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]
_Done = tuple["asyncio.Future[Any]", Any, "BaseException | None"]

SPAWN_DELAY = 0.001
"""How long a call may wait for a busy thread before another thread is started for it."""


class WorkerPool:
    """Runs blocking callables on up to ``size`` daemon threads."""

    def __init__(self, size: int, name: str = "mcpline-sync") -> None:
        if size < 1:
            raise ValueError("size must be positive")
        self.size = size
        self.name = name
        self.running = 0
        """Calls started and not yet returned (cancelled ones included)."""
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[_Item] = deque()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        """Threads waiting for work that no `submit` has woken yet."""
        self._closed = False
        self._check_pending = False
        self._done: dict[asyncio.AbstractEventLoop, list[_Done]] = {}

    @property
    def threads(self) -> int:
        return len(self._threads)

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Queue ``fn``; the returned future (of the running loop) gets its result.

        Cancelling the future does not stop a call that already started; its result is
        then dropped.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            self._queue.append((fn, fut, loop))
            self.running += 1
            if self._idle:
                self._idle -= 1
                self._cond.notify()
                return fut
            if self._threads:
                # Every thread is busy. Short calls will be picked up in a moment by the
                # threads we have; only if work is still waiting shortly do we add more.
                if not self._check_pending:
                    self._check_pending = True
                    loop.call_later(SPAWN_DELAY, self._grow)
                return fut
        self._spawn(1)
        return fut

    def _grow(self) -> None:
        """Add threads for the calls still waiting (up to ``size``)."""
        with self._cond:
            self._check_pending = False
            waiting = len(self._queue) - self._idle
        if waiting > 0 and not self._closed:
            self._spawn(waiting)

    def _spawn(self, count: int) -> None:
        started = []
        with self._cond:
            for _ in range(min(count, self.size - len(self._threads))):
                thread = threading.Thread(
                    target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                started.append(thread)
        for thread in started:
            thread.start()

    async def run(self, fn: Callable[[], Any]) -> Any:
        return await self.submit(fn)

    def shutdown(self) -> None:
        """Drop queued calls (their futures are cancelled) and let idle threads exit."""
        with self._cond:
            self._closed = True
            dropped = list(self._queue)
            self._queue.clear()
            self.running -= len(dropped)
            self._cond.notify_all()
        for _, fut, loop in dropped:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_cancel, fut)

    # --- worker side ---------------------------------------------------------------------

    def _work(self) -> None:
        cond = self._cond
        queue = self._queue
        while True:
            with cond:
                while not queue:
                    if self._closed:
                        self._threads.remove(threading.current_thread())
                        return
                    self._idle += 1
                    cond.wait()
                    # Whoever woke us took us off the idle count (or shutdown did).
                fn, fut, loop = queue.popleft()
            value: Any = None
            error: BaseException | None = None
            if not fut.cancelled():
                try:
                    value = fn()
                except StopIteration as exc:  # a future cannot carry StopIteration
                    error = RuntimeError(f"sync handler raised {exc!r}")
                except BaseException as exc:  # handed to the awaiting coroutine
                    error = exc
            with cond:
                self.running -= 1
                if fut.cancelled() or loop.is_closed():
                    continue
                first = loop not in self._done
                if first:
                    self._done[loop] = []
                self._done[loop].append((fut, value, error))
            if first:
                try:
                    loop.call_soon_threadsafe(self._deliver, loop)
                except RuntimeError:  # the loop closed meanwhile
                    with cond:
                        self._done.pop(loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._cond:
            batch = self._done.pop(loop, ())
        for fut, value, error in batch:
            if fut.cancelled():
                continue
            if error is None:
                fut.set_result(value)
            else:
                fut.set_exception(error)


def _cancel(fut: asyncio.Future[Any]) -> None:
    fut.cancel()
