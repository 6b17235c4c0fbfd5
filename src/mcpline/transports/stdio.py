"""Serving over the process's own stdin/stdout.

The protocol owns the real stdout: at start the original fd 1 is duplicated for protocol
output, and fd 1 itself (and ``sys.stdout``) is pointed at stderr, so ``print()``, C
libraries and child processes cannot corrupt the stream. fd 0 is likewise replaced by
``/dev/null`` so that child processes cannot swallow protocol input.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import selectors
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.connection import Connection
    from ..server.server import Server

log = logging.getLogger("mcpline.server")

READ_CHUNK = 256 * 1024
EXIT_JOIN_TIMEOUT = 0.25
"""How long exit waits for leftover threads (e.g. a sync tool ignoring cancellation)."""

_claimed: tuple[int, int] | None = None


def claim_stdio() -> tuple[int, int]:
    """Take fds 0 and 1 for the protocol; return (input fd, output fd).

    Afterwards fd 1 and ``sys.stdout`` point at stderr and fd 0 at ``/dev/null``. Calling
    it again returns the same pair, so a launcher can claim before importing user code.
    """
    global _claimed
    if _claimed is not None:
        return _claimed
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _claimed = (in_fd, out_fd)
    return _claimed


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def configure_logging() -> None:
    """Send `logging` to stderr unless the application configured it already."""
    root = logging.getLogger()
    if not root.handlers:
        level = os.environ.get("MCPLINE_LOG_LEVEL", "WARNING").upper()
        fmt = "%(levelname)s %(name)s: %(message)s"
        logging.basicConfig(stream=sys.stderr, level=level, format=fmt)


def pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: pipes, sockets and terminals can; regular
    files and ``/dev/null`` (which epoll refuses) cannot."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    return True


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
        if not pollable(self.fd):
            return
        pipe = os.fdopen(self.fd, "wb", buffering=0, closefd=False)
        try:
            self.transport, self.protocol = await asyncio.get_running_loop().connect_write_pipe(
                _WriteProtocol, pipe
            )
        except OSError:
            # e.g. /dev/null, which epoll refuses: fall back to blocking writes.
            self.transport = self.protocol = None

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


Controls = tuple[Callable[[], None], Callable[[], None], Callable[[], None]]


async def open_reader(fd: int, conn: Connection) -> Controls:
    """Start feeding ``fd`` to ``conn``; return (pause, resume, close)."""
    loop = asyncio.get_running_loop()
    if pollable(fd):
        pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
        try:
            transport, _ = await loop.connect_read_pipe(lambda: _ReadProtocol(conn), pipe)
        except OSError:
            pass  # e.g. /dev/null, which epoll refuses: read on a thread instead
        else:

            def close() -> None:
                transport.close()
                loop.call_soon(_close_fd, fd)

            return transport.pause_reading, transport.resume_reading, close
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
            if stop.is_set():
                return
            try:
                if not chunk:
                    loop.call_soon_threadsafe(conn.eof_received)
                    return
                loop.call_soon_threadsafe(conn.data_received, chunk)
            except RuntimeError:  # the loop is closed: we are exiting
                return

    threading.Thread(target=pump, name="mcpline-stdin", daemon=True).start()
    return gate.clear, gate.set, stop.set


async def watch_parent(conn: Connection, interval: float) -> None:
    """Close the connection when the process that launched us is gone.

    An orphan is re-parented (to init or a subreaper), so a changed parent pid means the
    launcher died, even if something else still holds our stdin open.
    """
    parent = os.getppid()
    while not conn.closing.is_set():
        await asyncio.sleep(interval)
        if os.getppid() != parent:
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
    server: Server, in_fd: int, out_fd: int, *, parent_poll: float | None = 0.5
) -> None:
    """Serve one connection over two file descriptors until EOF, a signal or parent death."""
    from ..server.connection import Connection

    loop = asyncio.get_running_loop()
    async with server._services.running():
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
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, _on_signal, conn, sig)
        watcher = loop.create_task(watch_parent(conn, parent_poll)) if parent_poll else None
        try:
            await conn.closing.wait()
        finally:
            close_reader()
            if watcher:
                watcher.cancel()
            await conn.close()
            await writer.aclose()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(sig)


def serve_stdio(
    server: Server, *, parent_poll: float | None = 0.5, uvloop: bool | None = None
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
    "claim_stdio",
    "configure_logging",
    "Controls",
    "EXIT_JOIN_TIMEOUT",
    "open_reader",
    "pollable",
    "READ_CHUNK",
    "run_loop",
    "serve_fds",
    "serve_stdio",
    "watch_parent",
    "Writer",
]
