"""Server-Sent Events framing, and the queue of what one HTTP response still has to write."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from ...server.outbound import Action, Kind, decide

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


class Outbox:
    """What one HTTP response still has to write, bounded like a stream connection's output.

    `put` is called by the engine (through a peer); the response's writer awaits `ready`
    and takes the items. Past ``limit`` bytes waiting, `mcpline.server.outbound.decide`
    says what happens: advisory messages are dropped, a listen's notices end its listens
    (``on_full``), and a reply past the limit aborts the response.
    """

    __slots__ = ("items", "size", "limit", "ready", "closed", "aborted", "dropped", "_on_full")

    def __init__(self, limit: int, on_full: Callable[[], None] = lambda: None) -> None:
        self.items: deque[Item] = deque()
        self.size = 0
        self.limit = limit
        self.ready = asyncio.Event()
        """Set while there is something to take, or once the outbox is closed."""
        self.closed = False
        """No more items will come (the request ended, or the stream was let go)."""
        self.aborted = False
        """The response must end now, unfinished (its reader fell too far behind)."""
        self.dropped = 0
        self._on_full = on_full

    def put(self, data: bytes, kind: Kind, event_id: str | None = None) -> bool:
        """Queue one message; False when it was not queued."""
        if self.closed:
            return False
        if self.size + len(data) > self.limit:
            action = decide(kind, self.size, len(data), self.limit)
            if action is not Action.SEND:
                if action is Action.DROP:
                    self.dropped += 1
                elif action is Action.END_STREAMS:
                    self._on_full()
                elif action is Action.DISCONNECT:
                    self.abort()
                return False
        self.items.append((data, kind, event_id))
        self.size += len(data)
        self.ready.set()
        return True

    def take(self) -> list[Item]:
        """Everything queued, in order."""
        items = list(self.items)
        self.items.clear()
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
        self.items.clear()
        self.size = 0
        self.close()


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
    "event",
    "Item",
    "KEEPALIVE",
    "next_items",
    "Outbox",
    "priming",
]
