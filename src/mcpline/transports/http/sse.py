"""Server-Sent Events framing, and the queue of what one HTTP response still has to write."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from ...server.outbound import Action, Kind, decide
from .admission import hit

KEEPALIVE = b": keep-alive\n\n"
"""A comment line: clients ignore it; intermediaries see the stream is alive."""


def event(data: bytes, event_id: str | None = None) -> bytes:
    """One ``message`` event carrying one encoded JSON-RPC message (one line: JSON escapes
    every newline inside strings, so only the terminator is dropped)."""
    if data.endswith(b"\n"):
        data = data[:-1]
    if event_id is None:
        return b"event: message\ndata: " + data + b"\n\n"
    return b"id: " + event_id.encode("ascii") + b"\nevent: message\ndata: " + data + b"\n\n"


def priming(event_id: str, retry_ms: int) -> bytes:
    """The event that opens a resumable stream: an id, the reconnection delay, empty data."""
    return f"id: {event_id}\nretry: {retry_ms}\ndata: \n\n".encode("ascii")


Item = tuple[bytes, Kind, "str | None"]
"""One message waiting to be written: its JSON, its kind, its SSE event id (if any)."""


DRAINED_WRITE = 64 * 1024
"""Bytes from which a write is followed by a wait until the client has taken most of it
(the default high-water mark of an asyncio transport's buffer): what the write held is then
off the server's books only once it has left the buffer. A reply smaller than this is never
refused by the `OutboundBudget` (each connection holds at most one), so that readers who do
not read cannot starve the small answers of those who do."""


class OutboundBudget:
    """Bytes waiting to be written to clients, across every response of an app: queued in an
    `Outbox`, or taken by its writer and not yet written (a reader that does not read holds
    them in the socket's buffer). At most ``limit``: a message that would pass it first ends
    the responses with the most bytes queued (their readers are the ones not reading), then,
    if it still does not fit, is treated as over its own outbox's limit. A reply smaller than
    `DRAINED_WRITE` always fits."""

    __slots__ = ("held", "limit", "outboxes")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("max_outbound_total_bytes must be positive")
        self.limit = limit
        self.held = 0
        """Bytes waiting now, every outbox's."""
        self.outboxes: set[Outbox] = set()
        """The outboxes of responses in progress."""

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes if they fit under the limit; False, holding nothing, if
        not."""
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        """``size`` held bytes were written (or dropped)."""
        self.held -= size

    def relieve(self, size: int, asking: Outbox) -> None:
        """Abort the outboxes (other than ``asking``) with the most bytes queued until
        ``size`` more fits, or none has `DRAINED_WRITE` bytes queued (a shorter queue is
        one its writer is taking)."""
        while self.held + size > self.limit:
            queued = [o for o in self.outboxes if o is not asking and o.size >= DRAINED_WRITE]
            if not queued:
                return
            hit("max_outbound_total_bytes")
            max(queued, key=_queued).abort()


def _queued(outbox: Outbox) -> int:
    return outbox.size


class Outbox:
    """What one HTTP response still has to write, bounded like a stream connection's output.

    `put` is called by the engine (through a peer); the response's writer awaits `ready`
    and takes the items. Past ``limit`` bytes waiting, `mcpline.server.outbound.decide`
    says what happens: advisory messages are dropped, a listen's notices end its listens
    (``on_full``), and a reply past the limit aborts the response. With a ``budget``, the
    same rule holds for the bytes of every response together (`OutboundBudget`); `release`
    gives this response's bytes back when it ends.
    """

    __slots__ = (
        "aborted",
        "budget",
        "closed",
        "dropped",
        "in_flight",
        "items",
        "limit",
        "ready",
        "size",
        "_on_full",
    )

    def __init__(
        self,
        limit: int,
        on_full: Callable[[], None] = lambda: None,
        budget: OutboundBudget | None = None,
    ) -> None:
        self.items: deque[Item] = deque()
        self.size = 0
        """Bytes queued."""
        self.in_flight = 0
        """Bytes of the last `take`, counted in the budget until the next one (or `release`):
        the writer comes back for more only once it has written them."""
        self.limit = limit
        self.ready = asyncio.Event()
        """Set while there is something to take, or once the outbox is closed."""
        self.closed = False
        """No more items will come (the request ended, or the stream was let go)."""
        self.aborted = False
        """The response must end now, unfinished (its reader fell too far behind)."""
        self.dropped = 0
        self._on_full = on_full
        self.budget = budget
        if budget is not None:
            budget.outboxes.add(self)

    def put(self, data: bytes, kind: Kind, event_id: str | None = None) -> bool:
        """Queue one message; False when it was not queued."""
        if self.closed:
            return False
        size = len(data)
        budget = self.budget
        if self.size + size <= self.limit and (
            budget is None or budget.held + size <= budget.limit
        ):
            action = Action.SEND  # the common case: room in both
        else:
            action = decide(kind, self.size, size, self.limit)
            if (
                action is Action.SEND
                and budget is not None
                and budget.held + size > budget.limit
                and (kind is not Kind.REPLY or size >= DRAINED_WRITE)
            ):
                budget.relieve(size, self)
                action = decide(kind, budget.held, size, budget.limit)
        if action is not Action.SEND:
            if action is Action.DROP:
                self.dropped += 1
            elif action is Action.END_STREAMS:
                self._on_full()
            elif action is Action.DISCONNECT:
                self.abort()
            return False
        self.items.append((data, kind, event_id))
        self.size += size
        if budget is not None:
            budget.held += size
        self.ready.set()
        return True

    def take(self) -> list[Item]:
        """Everything queued, in order (the previous batch is written by now)."""
        items = list(self.items)
        self.items.clear()
        if self.budget is not None:
            self.budget.held -= self.in_flight
        self.in_flight = self.size
        self.size = 0
        if not self.closed:
            self.ready.clear()
        return items

    def close(self) -> None:
        """Nothing more will be queued; what is queued is still written."""
        self.closed = True
        self.ready.set()

    def abort(self) -> None:
        """End the response now: what is queued is discarded."""
        self.aborted = True
        if self.budget is not None:
            self.budget.held -= self.size
        self.items.clear()
        self.size = 0
        self.close()

    def release(self) -> None:
        """The response ended: nothing more is queued, and its bytes leave the budget."""
        budget = self.budget
        if budget is not None:
            budget.held -= self.size + self.in_flight
            budget.outboxes.discard(self)
            self.budget = None
        self.items.clear()
        self.size = self.in_flight = 0
        self._on_full = _nothing  # often a method of the outbox's owner: no cycle is left
        if not self.closed:
            self.close()


def _nothing() -> None:
    pass


async def next_items(outbox: Outbox, keepalive: float | None) -> list[Item] | None:
    """The next items of ``outbox``; None when ``keepalive`` seconds passed without any."""
    if not outbox.ready.is_set():
        if keepalive is None:
            await outbox.ready.wait()
        else:
            try:
                await asyncio.wait_for(outbox.ready.wait(), keepalive)
            except asyncio.TimeoutError:
                return None
    return outbox.take()


__all__ = [
    "DRAINED_WRITE",
    "OutboundBudget",
    "event",
    "Item",
    "KEEPALIVE",
    "next_items",
    "Outbox",
    "priming",
]
