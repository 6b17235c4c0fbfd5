"""A pool of upstreams for stateless traffic: N long-lived connections (child processes of
one stdio server, or one remote endpoint), each replaced when it dies.

Any upstream can answer any stateless request; `Pool.acquire` picks the least loaded one.
Some requests need the upstream's *unsolicited* messages to be theirs: a request that asked
for log messages (the stdio binding ties no log line to a request), or, on a legacy server, a
call during which the server may send requests of its own. Such a request is *exclusive*:
its upstream has it as `Upstream.holder`, and what the upstream sends on its own goes to it.
Two exclusive requests never share an upstream; on a pool whose upstreams are ``alone``
(legacy servers, which log and ask whenever they like) an exclusive request also has its
upstream to itself, so nothing another client caused is attributed to it.

A dead upstream is replaced with exponential backoff (``backoff``), so a server that crashes
in a loop costs a bounded amount of work; the requests it held have already failed (the
forwarding eras decide what is sent again). While no upstream is alive, a request waits at
most ``wait_timeout`` seconds and then fails with the last failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ClientError, InternalError
from .common import incident
from .upstream import Upstream

log = logging.getLogger("mcpline.bridge")

Opener = Callable[[str], Awaitable[Upstream]]
"""Opens one upstream with the given handshake (``"auto"`` for the first)."""


class _Slot:
    __slots__ = ("up", "leases", "reserved", "task")

    def __init__(self) -> None:
        self.up: Upstream | None = None
        self.leases = 0
        self.reserved: Any = None
        """An exclusive request waiting for this upstream to empty (no new leases meanwhile)."""
        self.task: asyncio.Task[None] | None = None


class Pool:
    """``size`` upstreams opened by ``opener``; see the module docs."""

    def __init__(
        self,
        opener: Opener,
        size: int,
        *,
        backoff: tuple[float, float] = (0.1, 5.0),
        stable_after: float = 10.0,
        wait_timeout: float = 10.0,
    ) -> None:
        if size < 1:
            raise ValueError("the pool size must be at least 1")
        self._opener = opener
        self.size = size
        self.backoff = backoff
        self.stable_after = stable_after
        self.wait_timeout = wait_timeout
        self.alone = False
        """Exclusive requests have their upstream to themselves (set for legacy servers)."""
        self.era: str | None = None
        """The era of the first upstream (the others are opened in it)."""
        self.first: Upstream | None = None
        self.last_failure = ""
        self.on_open: list[Callable[[Upstream], Awaitable[None]]] = []
        """Run for each upstream once open, before it takes requests (and for replacements)."""
        self._slots = [_Slot() for _ in range(size)]
        self._changed = asyncio.Event()
        self._closed = False

    # --- life -------------------------------------------------------------------------------

    async def open_first(self) -> Upstream:
        """Open the first upstream, which tells the era of the others (raises `ClientError`
        if it fails). Nothing is served from it until `run`."""
        first = await self._opener("auto")
        self.first = first
        self.era = first.era
        self.alone = first.legacy
        return first

    def resize(self, size: int) -> None:
        """Change the number of upstreams (before `run`)."""
        if size < 1 or any(s.task is not None for s in self._slots):
            raise ValueError("resize needs a size of at least 1, before run()")
        self.size = size
        self._slots = [_Slot() for _ in range(size)]

    async def run(self, *, wait_all: bool = True) -> None:
        """Prepare the first upstream (the `on_open` hooks), then keep every slot filled;
        with ``wait_all``, return once every slot has tried to open once (a failure there is
        retried in the background, not raised)."""
        first = self.first
        if first is None:
            raise RuntimeError("open_first() comes before run()")
        try:
            await self._prepare(first)
        except BaseException:
            await first.aclose()
            raise
        tried: list[asyncio.Future[None]] = []
        loop = asyncio.get_running_loop()
        for i, slot in enumerate(self._slots):
            once: asyncio.Future[None] = loop.create_future()
            tried.append(once)
            slot.task = asyncio.ensure_future(
                self._supervise(slot, first if i == 0 else None, once)
            )
        if wait_all:
            await asyncio.wait(tried)

    async def aclose(self) -> None:
        """Close every upstream (each process tree is ended) and stop replacing them."""
        self._closed = True
        tasks = [s.task for s in self._slots if s.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        ups = [s.up for s in self._slots if s.up is not None]
        for slot in self._slots:
            slot.up = None
        await asyncio.gather(*(u.aclose() for u in ups), return_exceptions=True)
        self._pulse()

    def upstreams(self) -> list[Upstream]:
        """The upstreams alive now."""
        return [s.up for s in self._slots if s.up is not None and s.up.alive]

    async def _prepare(self, up: Upstream) -> None:
        for hook in self.on_open:
            await hook(up)

    async def _supervise(
        self, slot: _Slot, up: Upstream | None, once: asyncio.Future[None] | None = None
    ) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        try:
            while not self._closed:
                if up is None:
                    try:
                        up = await self._opener(self.era or "auto")
                        await self._prepare(up)
                    except ClientError as exc:
                        if up is not None:
                            await up.aclose()
                            up = None
                        failures += 1
                        self.last_failure = incident("the bridged server did not start", exc)
                        log.info("the bridged server will be started again")
                        if once is not None and not once.done():
                            once.set_result(None)
                        await asyncio.sleep(self._delay(failures))
                        continue
                slot.up = up
                slot.leases = 0
                opened = loop.time()
                self._pulse()
                if once is not None and not once.done():
                    once.set_result(None)
                await self._serve(slot, up)
                up = None
                failures = 0 if loop.time() - opened >= self.stable_after else failures + 1
                await asyncio.sleep(self._delay(failures))
        finally:
            if once is not None and not once.done():
                once.set_result(None)

    async def _serve(self, slot: _Slot, up: Upstream) -> None:
        """Until ``up`` dies; then take it out of its slot and close it."""
        reason = await up.lost
        slot.up = None
        slot.reserved = None
        self._pulse()
        if self._closed:
            return
        self.last_failure = incident("the bridged server went away", f"{up.label}: {reason}")
        log.info("replacing the bridged server that went away")
        await up.aclose()

    def _delay(self, failures: int) -> float:
        low, high = self.backoff
        return 0.0 if failures <= 0 else min(high, low * 2 ** (failures - 1))

    def _pulse(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    # --- leases -------------------------------------------------------------------------------

    async def acquire(self, *, exclusive: bool = False, holder: Any = None) -> Upstream:
        """An upstream for one request (release it with `release`); exclusive requests become
        its `Upstream.holder`. Raises `InternalError` when none comes alive in time."""
        loop = asyncio.get_running_loop()
        dead_since: float | None = None
        reserved: _Slot | None = None
        try:
            while True:
                if self._closed:
                    raise InternalError("Internal error: the bridge is shutting down")
                slot = self._pick(exclusive, holder, reserved)
                if slot is not None:
                    assert slot.up is not None
                    if reserved is not None and reserved is not slot:
                        reserved.reserved = None
                    reserved = None
                    slot.leases += 1
                    if exclusive:
                        slot.up.holder = holder
                        slot.reserved = None
                    return slot.up
                if exclusive and self.alone and reserved is None:
                    reserved = self._reserve(holder)
                alive = any(s.up is not None and s.up.alive for s in self._slots)
                now = loop.time()
                if alive:
                    dead_since = None
                elif dead_since is None:
                    dead_since = now
                elif now - dead_since >= self.wait_timeout:
                    why = self.last_failure or "it did not start"
                    raise InternalError(
                        f"Internal error: the bridged server is not running ({why})"
                    )
                changed = self._changed
                timeout = self.wait_timeout if dead_since is None else self.wait_timeout / 4
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout)
        except BaseException:
            if reserved is not None and reserved.reserved is holder:
                reserved.reserved = None
                self._pulse()
            raise

    def _pick(self, exclusive: bool, holder: Any, reserved: _Slot | None) -> _Slot | None:
        best: _Slot | None = None
        for slot in self._slots:
            up = slot.up
            if up is None or not up.alive:
                continue
            if exclusive:
                if up.holder is not None or slot.reserved not in (None, holder):
                    continue
                if self.alone and slot.leases:
                    continue
            elif slot.reserved is not None or (self.alone and up.holder is not None):
                continue
            if best is None or slot.leases < best.leases:
                best = slot
        return best

    def _reserve(self, holder: Any) -> _Slot | None:
        """Keep new requests off the least loaded free upstream until it empties."""
        free = [
            s
            for s in self._slots
            if s.up is not None and s.up.alive and s.up.holder is None and s.reserved is None
        ]
        if not free:
            return None
        slot = min(free, key=lambda s: s.leases)
        slot.reserved = holder
        return slot

    def release(self, up: Upstream, holder: Any = None) -> None:
        """Give back what `acquire` returned."""
        for slot in self._slots:
            if slot.up is up:
                slot.leases = max(0, slot.leases - 1)
                break
        if holder is not None and up.holder is holder:
            up.holder = None
        self._pulse()


__all__ = ["Opener", "Pool"]
