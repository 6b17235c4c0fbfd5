"""What a running server owns besides its registry: the lifespan hook, the worker threads and
the notification bus.

`Services.running` enters the user's lifespan hook in the background (``server/discover`` is
answered at once; other requests `wait_ready` until the hook has been entered, or get -32603
if it failed), starts the pool that runs plain ``def`` handlers off the event loop, and runs
the server's `NotificationBus` (if it has one) for as long.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import InternalError
from .workers import WorkerPool

if TYPE_CHECKING:
    from .scale.bus import Deliver, NotificationBus

log = logging.getLogger("mcpline.server")

LifespanHook = Callable[[Any], contextlib.AbstractAsyncContextManager[Any]]
"""Called with the `Server`; the value it yields is ``ctx.lifespan``."""


class Services:
    """The lifespan hook's state, the worker pool and the bus of one server."""

    def __init__(
        self,
        owner: Any,
        hook: LifespanHook | None,
        sync_workers: int,
        bus: NotificationBus | None = None,
        deliver: Deliver | None = None,
    ) -> None:
        self._owner = owner
        self._hook = hook
        self._sync_workers = sync_workers
        self._bus = bus
        self._deliver = deliver
        self.value: Any = None
        """What the lifespan hook yielded (``None`` without one, or before it is entered)."""
        self._ready: asyncio.Event | None = None
        self._failed = False
        self._workers: WorkerPool | None = None
        self._users = 0
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None
        self.stop_hooks: list[Callable[[], Awaitable[None]]] = []
        """Awaited first when the server stops (the tasks manager registers itself here)."""

    @property
    def serving(self) -> bool:
        """Some transport is inside `running` now."""
        return self._users > 0

    @property
    def bus(self) -> NotificationBus | None:
        """The bus run while serving (None: this process only)."""
        return self._bus

    def set_bus(self, bus: NotificationBus | None) -> None:
        """Run ``bus`` from the next start on; `RuntimeError` while serving."""
        if self._users:
            raise RuntimeError("a server's bus cannot change while it serves")
        self._bus = bus

    @property
    def ready(self) -> bool:
        """The hook has been entered (or there is none) and did not fail."""
        return not self._failed and self._ready is not None and self._ready.is_set()

    async def wait_ready(self) -> None:
        """Wait for the lifespan hook to be entered; -32603 if it failed."""
        if self._ready is not None:
            await self._ready.wait()
        if self._failed:
            raise InternalError("Internal error: the server failed to start")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Enter the lifespan hook in the background, own the worker threads, run the bus.

        Re-entrant: transports that serve one server side by side (in-memory clients, say)
        share one lifespan and one pool, started by the first and stopped by the last."""
        self._users += 1
        if self._users == 1:
            try:
                await self._start()
            except BaseException:
                self._users -= 1
                raise
        try:
            yield
        finally:
            self._users -= 1
            if self._users == 0:
                await self._stop()

    async def _start(self) -> None:
        if self._bus is not None:
            assert self._deliver is not None
            await self._bus.start(self._deliver, self._owner.name)
        self._workers = WorkerPool(self._sync_workers, "mcpline-sync")
        self._ready = asyncio.Event()
        self._stopping = asyncio.Event()
        if self._hook is None:
            self._ready.set()
        else:
            self._task = asyncio.get_running_loop().create_task(self._run_hook(self._stopping))

    async def _stop(self) -> None:
        assert self._ready is not None and self._stopping is not None
        for hook in list(self.stop_hooks):
            try:
                await hook()
            except Exception:
                log.exception("a stop hook failed")
        self._stopping.set()
        task, self._task = self._task, None
        if task is not None:
            if not self._ready.is_set():
                task.cancel()  # still starting: do not make the exit wait for it
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(task, 5)
        if self._workers is not None:
            self._workers.shutdown()
        if self._bus is not None:
            await self._bus.aclose()

    async def _run_hook(self, stop: asyncio.Event) -> None:
        assert self._hook is not None and self._ready is not None
        try:
            async with self._hook(self._owner) as value:
                self.value = value
                self._ready.set()
                await stop.wait()
        except Exception:
            log.exception("lifespan hook failed")
            if not self._ready.is_set():
                self._failed = True
                self._ready.set()

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """The future of ``fn`` run on a worker thread."""
        if self._workers is None:  # used outside `running()`: start a pool lazily
            self._workers = WorkerPool(self._sync_workers, "mcpline-sync")
        return self._workers.submit(fn)
