"""The deadlines of a `mcpline.client.session.Session`'s requests: each request in flight
(`Pending`) and the one sweep timer that finds those past their deadline (`Deadlines`, which
a session holds)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..jsonrpc import RequestId

if TYPE_CHECKING:
    from .session import NotificationCallback, ProgressCallback


@dataclass(eq=False)
class Pending:
    """A request of the session that waits for its answer."""

    id: RequestId
    method: str
    future: asyncio.Future[Any]
    timeout: float | None
    on_progress: ProgressCallback | None = None
    token: RequestId | None = None
    on_notification: NotificationCallback | None = None
    deadline: float | None = None
    """Loop time by which an answer (or progress) must come; pushed back by progress."""
    max_timeout: float | None = None
    hard_deadline: float | None = None
    """Loop time of ``max_timeout``, never pushed back."""
    progressed: bool = False
    cancellable: bool = True


class Deadlines:
    """Finds a session's requests past their deadline with one timer for all of them (no
    timer per request), armed for the earliest deadline it knows of. ``pending`` is the
    session's table of requests; ``expire(pending, why)`` times one out (it leaves the table)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pending: Mapping[RequestId, Pending],
        expire: Callable[[Pending, str], None],
    ) -> None:
        self.loop = loop
        self.pending = pending
        self.expire = expire
        self.stopped = False
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = 0.0

    def arm(self, when: float) -> None:
        """Make sure the sweep runs no later than ``when`` (loop time)."""
        if self.stopped:
            return
        if self._sweep is not None:
            if self._sweep_at <= when:
                return
            self._sweep.cancel()
        self._sweep_at = when
        self._sweep = self.loop.call_at(when, self._expire_due)

    def stop(self) -> None:
        """No more sweeps (the session ended)."""
        self.stopped = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None

    def _expire_due(self) -> None:
        """Time out every request past a deadline; re-arm for the earliest one left."""
        self._sweep = None
        now = self.loop.time() + 1e-6  # a timer may fire within the clock's resolution
        due: list[tuple[float, Pending, str]] = []
        upcoming: float | None = None
        for p in self.pending.values():
            hard, soft = p.hard_deadline, p.deadline
            if hard is not None and hard <= now and (soft is None or hard <= soft):
                due.append((hard, p, f"no answer within the {p.max_timeout:g}s maximum"))
            elif soft is not None and soft <= now:
                what = "no answer or progress for" if p.progressed else "no answer within"
                due.append((soft, p, f"{what} {p.timeout:g}s"))
            else:
                for when in (soft, hard):
                    if when is not None and (upcoming is None or when < upcoming):
                        upcoming = when
        for _, p, why in sorted(due, key=lambda d: d[0]):
            if p.id in self.pending:
                self.expire(p, why)
        if upcoming is not None:
            self.arm(upcoming)


__all__ = ["Deadlines", "Pending"]
