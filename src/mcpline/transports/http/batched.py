"""`BatchedTransport`: what a connection writes during one pass of the event loop leaves in
one write, at the start of the next pass.

uvicorn writes a response in two writes (its head, then its body), and a server that answers
many connections writes each reply the moment it is ready. Each write is a system call, and
each one that reaches a reader asleep on its socket is a wake-up, which on loopback the
writer pays for. Held for the rest of the pass, a response leaves as one segment, and the
replies of a busy pass go out back to back, so a client reading several connections wakes
once for all of them. The cost is the rest of one loop pass of latency.

Only small writes are held: at most `HOLD_BYTES` per connection, for at most the rest of the
pass. A write that would take the held bytes past that sends them, and itself, at once (a
large body is not copied into a joined buffer). `BatchedTransport.get_write_buffer_size`
counts the held bytes with the transport's own buffer, so the write deadline sees them too.
"""

from __future__ import annotations

import asyncio
from typing import Any

HOLD_BYTES = 64 * 1024
"""Bytes a connection holds back at most (asyncio's default high-water mark): more are written
at once."""


class BatchedTransport(asyncio.Transport):
    """A transport whose writes of one loop pass reach ``transport`` as one write, in order.

    `close` and `write_eof` write what is held first; `abort` drops it, as it drops the
    transport's own buffer. What is held when the transport is already closing (the peer
    went away) is dropped."""

    __slots__ = ("_held", "_held_bytes", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
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
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))
        self._held_bytes += size

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Write what is held now (scheduled by the first held write of a pass)."""
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


__all__ = ["BatchedTransport", "HOLD_BYTES"]
