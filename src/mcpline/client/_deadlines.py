"""The deadlines of a `mcpline.client.session.Session`'s requests: each request in flight
(`Pending`) and the one sweep timer that times them out (`Deadlines`, a base class of
`Session`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import RequestTimeout
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
    """Times out a session's requests with one timer for all of them (no timer per
    request), armed for the earliest deadline it knows of."""

    loop: asyncio.AbstractEventLoop
    closed: bool
    _pending: dict[RequestId, Pending]
    _sweep: asyncio.TimerHandle | None
    _sweep_at: float

    if TYPE_CHECKING:

        def _forget(self, p: Pending) -> None: ...

        def cancel_quietly(self, rid: RequestId, reason: str) -> None: ...

    def _arm(self, when: float) -> None:
        """Make sure the sweep runs no later than ``when``."""
        if self._sweep is not None:
            if self._sweep_at <= when:
                return
            self._sweep.cancel()
        self._sweep_at = when
        self._sweep = self.loop.call_at(when, self._expire_due)

    def _expire_due(self) -> None:
        """Time out every request past a deadline; re-arm for the earliest one left."""
        self._sweep = None
        now = self.loop.time() + 1e-6  # a timer may fire within the clock's resolution
        due: list[tuple[float, Pending, str]] = []
        upcoming: float | None = None
        for p in self._pending.values():
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
            self._expire(p, why)
        if upcoming is not None and not self.closed:
            self._arm(upcoming)

    def _expire(self, p: Pending, why: str) -> None:
        if p.id not in self._pending:
            return
        self._forget(p)
        if p.cancellable:
            self.cancel_quietly(p.id, f"timed out: {why}")
        if not p.future.done():
            tail = "; it was cancelled" if p.cancellable else ""
            p.future.set_exception(
                RequestTimeout(f"{p.method} (id {p.id!r}) timed out: {why}{tail}")
            )


__all__ = ["Deadlines", "Pending"]
