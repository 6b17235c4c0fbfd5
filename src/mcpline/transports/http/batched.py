"""`BatchedTransport`: what a connection writes during one pass of the event loop leaves in
one write, once the pass's other work is done; `WriteBatch` does that for every connection
of a loop at once.

uvicorn writes a response in two writes (its head, then its body), and a server that answers
many connections writes each reply the moment it is ready. Each write is a system call, and
each one that reaches a reader asleep on its socket is a wake-up, which on loopback the
writer pays for. Held, a response leaves as one segment, and the replies of a busy pass go
out back to back, so a client reading several connections wakes once for all of them.

Holding pays only while other requests are being answered (`WriteBatch.open`, which the
protocol keeps with `WriteBatch.opened` and `WriteBatch.closed`): while no other request is
open, a write goes out at once (with anything held before), so a lone client waits for
nothing and the loop gets no extra work. Otherwise, each time a request's handler has been
queued on the loop, the batch is set to be written right after the handlers queued so far
have run, in the same pass (`WriteBatch.flush_later`). Anything else held is written at the
next pass.

Only small writes are held: at most `HOLD_BYTES` per connection, until the next pass at the
latest. A write that would take the held bytes past that sends them, and itself, at once (a
large body is not copied into a joined buffer). `BatchedTransport.get_write_buffer_size`
counts the held bytes with the transport's own buffer, so the write deadline sees them too.
"""

from __future__ import annotations

import asyncio
from typing import Any

HOLD_BYTES = 64 * 1024
"""Bytes a connection holds back at most (asyncio's default high-water mark): more are written
at once."""


class WriteBatch:
    """The connections of one event loop whose writes are held, written together by `flush`.
    Built anywhere (it is picklable until first used); each `BatchedTransport` binds it to
    the loop it is made on. Not thread-safe: use from the loop only."""

    __slots__ = ("_handle", "_held", "_loop", "open")

    def __init__(self) -> None:
        self.open = 0
        """Requests being answered on the batch's connections (`opened` less `closed`)."""
        self._held: list[BatchedTransport] = []
        self._handle: asyncio.Handle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def opened(self) -> None:
        """A request's handler was just queued: count the request; while others are open,
        write the batch after that handler (`flush_later`)."""
        self.open += 1
        if self.open > 1:
            self.flush_later()

    def closed(self, count: int = 1) -> None:
        """``count`` requests were answered, or their connection was lost."""
        self.open -= count

    def hold(self, transport: BatchedTransport) -> None:
        """``transport`` holds its first bytes: write them with the rest of the batch (at
        the next pass at the latest)."""
        self._held.append(transport)
        if self._handle is None:
            self._handle = self._on().call_soon(self.flush)

    def flush_later(self) -> None:
        """Write the batch once the callbacks queued on the loop so far have run (call it
        when a request's handler has just been queued)."""
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._on().call_soon(self.flush)

    def flush(self) -> None:
        """Write what every connection of the batch holds."""
        self._handle = None
        held, self._held = self._held, []
        for transport in held:
            transport.flush()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run on ``loop`` (first use, or a server serving on a new loop)."""
        if loop is not self._loop:
            self._loop = loop
            self._handle = None

    def _on(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None, "a WriteBatch is bound by its first BatchedTransport"
        return self._loop


class BatchedTransport(asyncio.Transport):
    """A transport whose writes reach ``transport`` in order, held and joined as the module
    says: with those of the other connections of ``batch``, or with its own next write.

    `close` and `write_eof` write what is held first; `abort` drops it, as it drops the
    transport's own buffer. What is held when the transport is already closing (the peer
    went away) is dropped."""

    __slots__ = ("_batch", "_held", "_held_bytes", "_transport")

    def __init__(self, transport: asyncio.Transport, batch: WriteBatch) -> None:
        """Made on the loop the connection serves on (its protocol's ``connection_made``)."""
        super().__init__()
        batch.bind(asyncio.get_running_loop())
        self._transport = transport
        self._batch = batch
        self._held: list[bytes] = []
        self._held_bytes = 0

    @property
    def transport(self) -> asyncio.Transport:
        """The transport the writes go to."""
        return self._transport

    def write(self, data: bytes | bytearray | memoryview) -> None:
        size = len(data)
        if not size:
            return
        if self._held_bytes + size > HOLD_BYTES:
            self.flush()
            self._transport.write(data)
            return
        if self._batch.open <= 1:  # no other answer in the making to wait for
            if self._held:
                self._held.append(bytes(data))
                self.flush()
            else:
                self._transport.write(data)
            return
        if not self._held:
            self._batch.hold(self)
        self._held.append(bytes(data))
        self._held_bytes += size

    def flush(self) -> None:
        """Write what is held now."""
        held = self._held
        if not held:
            return
        self._held = []
        self._held_bytes = 0
        if self._transport.is_closing():
            return
        self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._held_bytes = 0
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held_bytes

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()


__all__ = ["BatchedTransport", "HOLD_BYTES", "WriteBatch"]
