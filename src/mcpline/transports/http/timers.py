"""Many timers of one fixed delay, run by a single event-loop timer.

Each request of the HTTP transport has deadlines of a fixed length: its body must arrive
within ``body_timeout``, and a request still running after `modern.WATCH_AFTER` gets a task
that watches for its client's disconnection. One ``loop.call_later`` per request and
deadline costs a heap push, and leaves a cancelled handle in the loop's heap when the
request ends first (nearly always). Timers of one delay fall due in the order they were
started, so `FixedDelayTimers` keeps them in a dict (insertion-ordered) and asks the loop
for one timer only, at the oldest one's due time: starting and cancelling a timer are a dict
insert and removal.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable

log = logging.getLogger("mcpline.server")


class FixedDelayTimers:
    """Timers that each call their callback ``delay`` seconds after `start`, unless
    cancelled first. Callbacks run on the event loop, in start order, each at its due time
    or as soon after it as the loop gets to it. Not thread-safe: use from the loop only."""

    __slots__ = ("_handle", "_keys", "_loop", "delay", "pending")

    def __init__(self, delay: float) -> None:
        if not delay > 0:
            raise ValueError("a timer's delay must be positive")
        self.delay = delay
        self.pending: dict[int, tuple[float, Callable[[], object]]] = {}
        """The timers not yet due and not cancelled, oldest first: key → (due, callback)."""
        self._keys = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, callback: Callable[[], object]) -> int:
        """Call ``callback`` in `delay` seconds; returns the key that `cancel` takes."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # first use, or the app serves on a new loop
            self._loop = loop
            self._handle = None
        key = next(self._keys)
        due = loop.time() + self.delay
        self.pending[key] = (due, callback)
        if self._handle is None:
            self._handle = loop.call_at(due, self._fire)
        return key

    def cancel(self, key: int) -> bool:
        """Cancel a timer; False when it had already run (or was cancelled before)."""
        return self.pending.pop(key, None) is not None

    def _fire(self) -> None:
        self._handle = None
        loop = self._loop
        assert loop is not None
        now = loop.time()
        pending = self.pending
        while pending:
            key = next(iter(pending))
            due, callback = pending[key]
            if due > now:
                self._handle = loop.call_at(due, self._fire)
                return
            del pending[key]
            try:
                callback()
            except Exception:
                log.exception("a timer's callback failed")


__all__ = ["FixedDelayTimers"]
