"""Serving over the process's own stdin/stdout.

The protocol owns the real stdout: at start the original fd 1 is duplicated for protocol
output, and fd 1 itself (and ``sys.stdout``) is pointed at stderr, so ``print()``, C
libraries and child processes cannot corrupt the stream. fd 0 is likewise replaced by
``/dev/null`` (``nul`` on Windows) so that child processes cannot swallow protocol input.
How each step is done on each OS is `mcpline._platform`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._platform import claim_stdio as claim_stdio  # re-exported: `mcpline run` claims early
from .._platform import (
    install_shutdown_signals,
    open_reader,
    open_writer,
    parent_monitor,
)
from .table import BaseTransport

if TYPE_CHECKING:
    from ..server.connection import Connection
    from ..server.runtime import Served

log = logging.getLogger("mcpline.server")

EXIT_JOIN_TIMEOUT = 0.25
"""How long exit waits for leftover threads (e.g. a sync tool ignoring cancellation)."""


def configure_logging() -> None:
    """Send `logging` to stderr unless the application configured it already."""
    root = logging.getLogger()
    if not root.handlers:
        level = os.environ.get("MCPLINE_LOG_LEVEL", "WARNING").upper()
        fmt = "%(levelname)s %(name)s: %(message)s"
        logging.basicConfig(stream=sys.stderr, level=level, format=fmt)


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def pause_writing(self) -> None:
        if self.conn:
            self.conn.pause_writing()

    def resume_writing(self) -> None:
        if self.conn:
            self.conn.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        if self.conn:
            self.conn.write_failed = exc is not None or self.conn.write_failed
            self.conn.begin_shutdown("output closed")


class Writer:
    """Protocol output: a loop transport (a pipe; on Windows a writer thread), or blocking
    writes for regular files."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.transport: asyncio.WriteTransport | None = None
        self.protocol: _WriteProtocol | None = None
        self.failed = False

    async def open(self) -> None:
        opened = await open_writer(self.fd, _WriteProtocol)
        if opened is not None:
            transport, protocol = opened
            assert isinstance(protocol, _WriteProtocol)
            self.transport, self.protocol = transport, protocol

    def attach(self, conn: Connection) -> None:
        if self.protocol is not None:
            self.protocol.conn = conn

    def write(self, data: bytes) -> None:
        if self.transport is not None:
            if self.transport.is_closing():
                raise BrokenPipeError("protocol output is closed")
            self.transport.write(data)
            return
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def buffered(self) -> int:
        """Bytes the transport holds that the pipe has not taken yet."""
        return self.transport.get_write_buffer_size() if self.transport is not None else 0

    def abort(self) -> None:
        """Discard what is buffered and close the output now."""
        if self.transport is not None:
            self.transport.abort()

    async def aclose(self, timeout: float = 2.0) -> None:
        """Flush what is buffered (bounded by ``timeout``) and close."""
        if self.transport is not None:
            if not self.transport.is_closing():
                self.transport.close()
            assert self.protocol is not None
            try:
                await asyncio.wait_for(asyncio.shield(self.protocol.lost), timeout)
            except asyncio.TimeoutError:
                self.transport.abort()
        with contextlib.suppress(OSError):
            os.close(self.fd)


async def watch_parent(conn: Connection, interval: float) -> None:
    """Close the connection when the process that launched us is gone.

    On POSIX an orphan is re-parented, so a changed parent pid means the launcher died,
    even if something else still holds our stdin open; on Windows the parent's process
    handle says so (`mcpline._platform.parent_monitor`).
    """
    parent, gone = parent_monitor()
    while not conn.closing.is_set():
        await asyncio.sleep(interval)
        if gone():
            log.warning("the process that launched this server (pid %d) is gone; exiting", parent)
            conn.begin_shutdown("parent process exited")
            return


def _on_signal(conn: Connection, sig: signal.Signals) -> None:
    if conn.closing.is_set():
        # A second signal while shutting down: stop waiting for anything.
        _hard_exit(128 + sig.value)
    conn.begin_shutdown(f"signal {sig.name}")


def _hard_exit(code: int) -> None:
    for stream in (sys.stderr, sys.__stderr__):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(code)


async def serve_fds(
    server: Served, in_fd: int, out_fd: int, *, parent_poll: float | None = 0.5
) -> None:
    """Serve one connection over two file descriptors until EOF, a shutdown signal
    (`mcpline._platform.SHUTDOWN_SIGNALS`) or parent death."""
    from ..server.connection import Connection

    loop = asyncio.get_running_loop()
    async with server.runtime.services.running():
        writer = Writer(out_fd)
        await writer.open()
        # Some loops (uvloop) deliver data while the reader is still being opened, so the
        # connection may ask to pause before the controls exist: remember it, apply it after.
        controls: list[Callable[[], None]] = []
        held = [False]

        def pause_reading() -> None:
            if controls:
                controls[0]()
            else:
                held[0] = True

        def resume_reading() -> None:
            if controls:
                controls[1]()
            else:
                held[0] = False

        conn = Connection(
            server,
            writer.write,
            pause_reading=pause_reading,
            resume_reading=resume_reading,
            buffered=writer.buffered,
            abort=writer.abort,
        )
        writer.attach(conn)
        p, r, close_reader = await open_reader(in_fd, conn)
        controls += [p, r]
        if held[0]:
            p()
        remove_signals = install_shutdown_signals(loop, lambda sig: _on_signal(conn, sig))
        watcher = loop.create_task(watch_parent(conn, parent_poll)) if parent_poll else None
        try:
            await conn.closing.wait()
        finally:
            close_reader()
            if watcher:
                watcher.cancel()
            await conn.close()
            await writer.aclose()
            remove_signals()


def serve_stdio(
    server: Served, *, parent_poll: float | None = 0.5, uvloop: bool | None = None
) -> None:
    """Serve ``server`` on this process's stdin/stdout; returns when the client is gone.

    If threads are still busy afterwards (sync tools ignore cancellation), the process
    exits with status 0 instead of returning, rather than hang on them.
    """
    configure_logging()
    in_fd, out_fd = claim_stdio()
    # What imports and registration built lives as long as the process: keep it out of the
    # cyclic collector's scans (cheaper full collections while serving, and a fast exit).
    gc.freeze()
    run_loop(serve_fds(server, in_fd, out_fd, parent_poll=parent_poll), uvloop)
    if _lingering_threads(EXIT_JOIN_TIMEOUT):
        logging.shutdown()
        _hard_exit(0)


class StdioTransport(BaseTransport["Served"]):
    """The ``stdio`` row of `mcpline.transports.table`."""

    def serve(self, server: Served, address: str, **options: Any) -> None:
        if address != "stdio":
            raise ValueError(f"cannot serve {address!r}: stdio takes no address")
        serve_stdio(server, **options)

    def serve_file(
        self, target: str, address: str, load: Callable[[str], Served], **options: Any
    ) -> None:
        # Claim stdout before user code is imported, so that import-time prints and
        # banners land on stderr instead of corrupting the protocol stream.
        claim_stdio()
        self.serve(load(target), address, **options)


STDIO = StdioTransport()


def _lingering_threads(timeout: float) -> bool:
    """Join non-daemon threads for up to ``timeout`` seconds; True if some are still alive."""
    deadline = time.monotonic() + timeout
    main = threading.main_thread()
    current = threading.current_thread()
    for t in threading.enumerate():
        if t is main or t is current or t.daemon:
            continue
        t.join(max(0.0, deadline - time.monotonic()))
    return any(
        t.is_alive() and not t.daemon and t is not main and t is not current
        for t in threading.enumerate()
    )


def _new_loop(use_uvloop: bool | None) -> asyncio.AbstractEventLoop:
    if use_uvloop is None:
        use_uvloop = os.environ.get("MCPLINE_UVLOOP", "1") != "0"
    if use_uvloop:
        try:
            import uvloop  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            pass
        else:
            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            return loop
    return asyncio.new_event_loop()


def run_loop(coro: Any, use_uvloop: bool | None = None) -> Any:
    """Run ``coro`` on uvloop when it is installed (and not disabled), else on asyncio.

    Unlike `asyncio.run`, leftover tasks get a bounded time to finish and the default
    executor is shut down without waiting for threads that are stuck.
    """
    loop = _new_loop(use_uvloop)
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in tasks:
                t.cancel()
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=1.0))
            loop.run_until_complete(loop.shutdown_asyncgens())
            executor = getattr(loop, "_default_executor", None)
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
        finally:
            asyncio.set_event_loop(None)
            loop.close()


__all__ = [
    "configure_logging",
    "EXIT_JOIN_TIMEOUT",
    "run_loop",
    "serve_fds",
    "serve_stdio",
    "STDIO",
    "StdioTransport",
    "watch_parent",
    "Writer",
]
