"""Blocking file descriptors served to an event loop by threads.

Used where the loop cannot watch a descriptor: on POSIX for regular files and ``/dev/null``
(epoll refuses them), on Windows for every inherited stdin/stdout (anonymous pipes are not
opened for overlapped I/O, so the proactor cannot read them). Portable: only `os.read`,
`os.write`, threads and `loop.call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import collections
import os
import threading
from collections.abc import Callable
from typing import Any, Protocol

READ_CHUNK = 256 * 1024
HIGH_WATER = 64 * 1024
"""Unwritten bytes above which the writer asks its protocol to pause (asyncio's default)."""
LOW_WATER = 16 * 1024

Controls = tuple[Callable[[], None], Callable[[], None], Callable[[], None]]
"""(pause, resume, close) for a reader."""


class Sink(Protocol):
    """Where a reader delivers bytes (a `mcpline.server.connection.Connection`)."""

    def data_received(self, data: bytes) -> None: ...

    def eof_received(self) -> None: ...


def open_thread_reader(
    fd: int, sink: Sink, loop: asyncio.AbstractEventLoop, *, chunk: int = READ_CHUNK
) -> Controls:
    """Read ``fd`` on a daemon thread, handing each chunk to ``sink`` on ``loop``.

    ``pause`` stops the thread before its next read (a read already blocked completes and is
    delivered); ``resume`` lets it go on; ``close`` stops delivery (the thread may stay
    blocked in a read until the process exits: it is a daemon). End of input (or a read
    error) is one `eof_received`.
    """
    gate = threading.Event()
    gate.set()
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            gate.wait()
            try:
                data = os.read(fd, chunk)
            except OSError:
                data = b""
            if stop.is_set():
                return
            try:
                if not data:
                    loop.call_soon_threadsafe(sink.eof_received)
                    return
                loop.call_soon_threadsafe(sink.data_received, data)
            except RuntimeError:  # the loop is closed: we are exiting
                return

    threading.Thread(target=pump, name="mcpline-stdin", daemon=True).start()
    return gate.clear, gate.set, stop.set


class ThreadWriteTransport(asyncio.WriteTransport):
    """An `asyncio.WriteTransport` over a blocking descriptor, written by a daemon thread.

    `write` only queues (it never blocks the loop); past `HIGH_WATER` unwritten bytes the
    protocol's ``pause_writing`` is called, and ``resume_writing`` once the thread has brought
    them under `LOW_WATER`. A write error, `close` (after the queue is written) or `abort`
    (at once, discarding it) ends in the protocol's ``connection_lost``, on the loop. The
    descriptor is not closed here.
    """

    def __init__(
        self, fd: int, protocol: asyncio.BaseProtocol, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__()
        self._fd = fd
        self._protocol = protocol
        self._loop = loop
        self._queue: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._cond = threading.Condition()
        self._closing = False
        self._lost = False
        self._paused = False
        self._thread = threading.Thread(target=self._run, name="mcpline-stdout", daemon=True)
        self._thread.start()
        loop.call_soon(protocol.connection_made, self)

    # --- the loop's side --------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            raise BrokenPipeError("the output is closed")
        if not data:
            return
        with self._cond:
            self._queue.append(bytes(data))
            self._size += len(data)
            size = self._size
            self._cond.notify()
        if size > HIGH_WATER and not self._paused:
            self._paused = True
            self._protocol.pause_writing()

    def get_write_buffer_size(self) -> int:
        return self._size

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return LOW_WATER, HIGH_WATER

    def is_closing(self) -> bool:
        return self._closing

    def can_write_eof(self) -> bool:
        return False

    def close(self) -> None:
        """Write what is queued, then end (``connection_lost(None)``)."""
        with self._cond:
            self._closing = True
            self._cond.notify()

    def abort(self) -> None:
        """Discard what is queued and end now."""
        with self._cond:
            self._closing = True
            self._queue.clear()
            self._size = 0
            self._cond.notify()
        self._lose(None)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"fd": self._fd}.get(name, default)

    def _lose(self, exc: Exception | None) -> None:
        if not self._lost:
            self._lost = True
            self._protocol.connection_lost(exc)

    def _resume(self) -> None:
        if self._paused and self._size <= LOW_WATER:
            self._paused = False
            self._protocol.resume_writing()

    def _call(self, fn: Callable[..., None], *args: Any) -> bool:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed
            return False
        return True

    # --- the thread's side -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:  # closing, everything written (or discarded)
                    self._call(self._lose, None)
                    return
                data = self._queue.popleft()
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as exc:
                with self._cond:
                    self._closing = True
                    self._queue.clear()
                    self._size = 0
                self._call(self._lose, exc)
                return
            with self._cond:
                self._size = max(0, self._size - len(data))
                wake = self._paused and self._size <= LOW_WATER
            if wake and not self._call(self._resume):
                return
