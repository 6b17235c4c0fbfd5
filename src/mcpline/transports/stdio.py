"""Serving over the process's own stdin/stdout.

The protocol owns the real stdout: at start the original fd 1 is duplicated for protocol
output, and fd 1 itself (and ``sys.stdout``) is pointed at stderr, so ``print()``, C
libraries and child processes cannot corrupt the stream. fd 0 is likewise replaced by
``/dev/null`` so that child processes cannot swallow protocol input.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.core import Server
    from ..server.runtime import Connection

log = logging.getLogger("mcpline.server")

READ_CHUNK = 256 * 1024


def claim_stdio() -> tuple[int, int]:
    """Take fds 0 and 1 for the protocol; return (input fd, output fd)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return in_fd, out_fd


def configure_logging() -> None:
    """Send `logging` to stderr unless the application configured it already."""
    root = logging.getLogger()
    if not root.handlers:
        level = os.environ.get("MCPLINE_LOG_LEVEL", "WARNING").upper()
        logging.basicConfig(stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s")


def pollable(fd: int) -> bool:
    """Pipes, sockets and terminals can be driven by the event loop; regular files cannot."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.eof = False

    def data_received(self, data: bytes) -> None:
        self.conn.data_received(data)

    def eof_received(self) -> bool:
        self.eof = True
        self.conn.eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.eof:
            self.conn.eof_received()


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
    """Protocol output: an asyncio pipe transport, or blocking writes for regular files."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.transport: asyncio.WriteTransport | None = None
        self.protocol: _WriteProtocol | None = None
        self.failed = False

    async def open(self) -> None:
        if pollable(self.fd):
            self.transport, self.protocol = await asyncio.get_running_loop().connect_write_pipe(
                _WriteProtocol, os.fdopen(self.fd, "wb", buffering=0, closefd=True)
            )

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

    async def aclose(self, timeout: float = 2.0) -> None:
        """Flush what is buffered (bounded by ``timeout``) and close."""
        if self.transport is None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            return
        if not self.transport.is_closing():
            self.transport.close()
        assert self.protocol is not None
        try:
            await asyncio.wait_for(asyncio.shield(self.protocol.lost), timeout)
        except asyncio.TimeoutError:
            self.transport.abort()


async def open_reader(fd: int, conn: Connection) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """Start feeding ``fd`` to ``conn``; return (pause, resume, close)."""
    loop = asyncio.get_running_loop()
    if pollable(fd):
        transport, _ = await loop.connect_read_pipe(
            lambda: _ReadProtocol(conn), os.fdopen(fd, "rb", buffering=0, closefd=True)
        )
        return transport.pause_reading, transport.resume_reading, transport.close
    # A regular file (or anything the event loop cannot poll): read it on a thread.
    gate = threading.Event()
    gate.set()
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            gate.wait()
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                loop.call_soon_threadsafe(conn.eof_received)
                return
            loop.call_soon_threadsafe(conn.data_received, chunk)

    threading.Thread(target=pump, name="mcpline-stdin", daemon=True).start()
    return gate.clear, gate.set, stop.set


async def watch_parent(conn: Connection, interval: float) -> None:
    """Close the connection when the process that launched us is gone."""
    parent = os.getppid()
    while not conn.closing.is_set():
        await asyncio.sleep(interval)
        if os.getppid() != parent:
            conn.begin_shutdown("parent process exited")
            return


async def serve_fds(server: Server, in_fd: int, out_fd: int, *, parent_poll: float | None = 1.0) -> None:
    """Serve one connection over two file descriptors until EOF, a signal or parent death."""
    from ..server.runtime import Connection

    loop = asyncio.get_running_loop()
    async with server.running():
        writer = Writer(out_fd)
        await writer.open()
        pause: list[Callable[[], None]] = []
        resume: list[Callable[[], None]] = []
        conn = Connection(
            server,
            writer.write,
            pause_reading=lambda: pause[0](),
            resume_reading=lambda: resume[0](),
        )
        writer.attach(conn)
        p, r, close_reader = await open_reader(in_fd, conn)
        pause.append(p)
        resume.append(r)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, conn.begin_shutdown, f"signal {sig.name}")
        watcher = loop.create_task(watch_parent(conn, parent_poll)) if parent_poll else None
        await conn.closing.wait()
        close_reader()
        if watcher:
            watcher.cancel()
        await conn.close()
        await writer.aclose()


def serve_stdio(server: Server, *, parent_poll: float | None = 1.0, uvloop: bool | None = None) -> None:
    """Serve ``server`` on this process's stdin/stdout; returns when the client is gone."""
    configure_logging()
    in_fd, out_fd = claim_stdio()
    run_loop(serve_fds(server, in_fd, out_fd, parent_poll=parent_poll), uvloop)
    if server.busy_threads:
        # Sync handlers that ignore cancellation cannot be stopped; do not wait for them.
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        logging.shutdown()
        os._exit(0)


def run_loop(coro: Any, use_uvloop: bool | None = None) -> Any:
    """Run ``coro`` on uvloop when it is installed (and not disabled), else on asyncio."""
    if use_uvloop is None:
        use_uvloop = os.environ.get("MCPLINE_UVLOOP", "1") != "0"
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.run(coro)
    return asyncio.run(coro)
