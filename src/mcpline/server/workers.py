"""A small thread pool for sync handlers, built for many short calls.

Compared with ``loop.run_in_executor(ThreadPoolExecutor)``: no `concurrent.futures`
future per call, and finished calls are handed back to the event loop in batches (one
loop wake-up for every call that finished meanwhile, instead of one per call).

Threads are woken and added only while calls are stuck: a submit wakes a parked thread
when none is awake; otherwise the threads already awake take the call, and only if none of
them has taken new work for `SPAWN_DELAY` (they are all inside blocking calls) are more
threads woken or started (doubling those at work, up to ``size``). A burst of short calls
is thus served by one or two threads instead of many that fight over the GIL, while
blocking calls still get up to ``size`` threads within a few `SPAWN_DELAY` checks.
Parked threads sleep on a lock of their own (no per-wait allocation). Threads are daemons:
a handler that never returns cannot keep the process alive.
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
"""How long waiting calls may see no thread take new work before more threads are used."""


class WorkerPool:
    """Runs blocking callables on up to ``size`` daemon threads."""

    def __init__(self, size: int, name: str = "mcpline-sync") -> None:
        if size < 1:
            raise ValueError("size must be positive")
        self.size = size
        self.name = name
        self.running = 0
        """Calls submitted and not yet returned (cancelled ones included)."""
        self._lock = threading.Lock()
        self._queue: deque[_Item] = deque()
        self._threads: list[threading.Thread] = []
        self._parked: list[threading.Lock] = []
        """Wake locks of threads waiting for work (held while the thread sleeps), LIFO."""
        self._awake = 0
        """Threads not parked: running a call or about to look at the queue."""
        self._taken = 0
        """Calls taken off the queue so far (progress, for the growth check)."""
        self._taken_at_check = 0
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
        spawn = False
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            self._queue.append((fn, fut, loop))
            self.running += 1
            if self._awake == 0:
                if self._parked:
                    self._awake += 1
                    self._parked.pop().release()
                    return fut
                spawn = True
            elif not self._check_pending:
                # A thread is awake and will take this call unless it is stuck in a
                # blocking one: look again shortly, and add threads only then.
                self._check_pending = True
                self._taken_at_check = self._taken
                loop.call_later(SPAWN_DELAY, self._grow, loop)
        if spawn:
            self._spawn(1)
        return fut

    def _grow(self, loop: asyncio.AbstractEventLoop) -> None:
        """Calls still wait: if no thread took work since the last look, use more threads."""
        with self._lock:
            self._check_pending = False
            waiting = len(self._queue)
            if not waiting or self._closed:
                return
            if not self._parked and len(self._threads) >= self.size:
                return  # every thread is at work: nothing to add (a new submit looks again)
            # Calls still wait: look again shortly (after growing, too, as growth is gradual).
            self._check_pending = True
            progressed = self._taken != self._taken_at_check
            self._taken_at_check = self._taken
            loop.call_later(SPAWN_DELAY, self._grow, loop)
            if progressed:
                return  # the threads are getting through the queue
            # Double the threads at work (at most one per waiting call): calls that block
            # get threads within a few checks, while a false alarm (threads that only
            # waited for the GIL) costs few extra threads.
            grow = min(waiting, max(1, self._awake))
            while grow and self._parked:
                self._awake += 1
                self._parked.pop().release()
                grow -= 1
        if grow:
            self._spawn(grow)

    def _spawn(self, count: int) -> None:
        started = []
        with self._lock:
            for _ in range(min(count, self.size - len(self._threads))):
                wake = threading.Lock()
                wake.acquire()
                thread = threading.Thread(
                    target=self._work,
                    args=(wake,),
                    name=f"{self.name}-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                self._awake += 1
                started.append(thread)
        for thread in started:
            thread.start()

    async def run(self, fn: Callable[[], Any]) -> Any:
        return await self.submit(fn)

    def shutdown(self) -> None:
        """Drop queued calls (their futures are cancelled) and let idle threads exit."""
        with self._lock:
            self._closed = True
            dropped = list(self._queue)
            self._queue.clear()
            self.running -= len(dropped)
            while self._parked:
                self._awake += 1
                self._parked.pop().release()
        for _, fut, loop in dropped:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_cancel, fut)

    # --- worker side ---------------------------------------------------------------------

    def _work(self, wake: threading.Lock) -> None:
        lock = self._lock
        queue = self._queue
        done = self._done
        finished: _Done | None = None
        finished_loop: asyncio.AbstractEventLoop | None = None
        while True:
            notify: asyncio.AbstractEventLoop | None = None
            item: _Item | None = None
            leave = False
            with lock:
                if finished_loop is not None:
                    # Hand the last result over and take the next call in one lock hold.
                    self.running -= 1
                    if finished is not None:
                        batch = done.get(finished_loop)
                        if batch is None:
                            done[finished_loop] = [finished]
                            notify = finished_loop
                        else:
                            batch.append(finished)
                    finished = finished_loop = None
                if queue:
                    item = queue.popleft()
                    self._taken += 1
                else:
                    self._awake -= 1
                    if self._closed:
                        self._threads.remove(threading.current_thread())
                        leave = True
                    else:
                        self._parked.append(wake)
            if notify is not None:
                try:
                    notify.call_soon_threadsafe(self._deliver, notify)
                except RuntimeError:  # the loop closed meanwhile
                    with lock:
                        done.pop(notify, None)
            if item is None:
                if leave:
                    return
                wake.acquire()  # parked until a submit, a growth check or shutdown
                continue
            fn, fut, loop = item
            finished_loop = loop
            if fut.cancelled():
                continue
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn()
            except StopIteration as exc:  # a future cannot carry StopIteration
                error = RuntimeError(f"sync handler raised {exc!r}")
            except BaseException as exc:  # handed to the awaiting coroutine
                error = exc
            if not fut.cancelled() and not loop.is_closed():
                finished = (fut, value, error)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
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


__all__ = [
    "SPAWN_DELAY",
    "WorkerPool",
]
