"""The stdio framing over stream sockets: ``unix:/path`` and ``tcp:HOST:PORT``.

Server side: `serve_address` accepts any number of clients; each connection gets its own
`Connection` (ids, in-flight requests and cancellation are per connection) and the same
lifecycle as stdio (half-close from the client = stdin EOF). Client side: `SocketChannel`
connects to such an address for `mcpline.Client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import socket
import stat
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..client.session import Session
    from ..server.core import Server
    from ..server.runtime import Connection

log = logging.getLogger("mcpline.server")


@dataclass(frozen=True)
class Address:
    """A parsed ``unix:/path`` or ``tcp:HOST:PORT``."""

    kind: str
    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix:{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp:{host}:{self.port}"


def parse_address(text: str) -> Address:
    """``unix:/path/to.sock`` or ``tcp:HOST:PORT`` (IPv6 hosts in brackets), or ValueError."""
    kind, sep, rest = text.partition(":")
    if not sep or not rest:
        raise ValueError(f"bad address {text!r}: expected unix:/path or tcp:HOST:PORT")
    if kind == "unix":
        return Address("unix", path=rest)
    if kind == "tcp":
        host, sep, port_text = rest.rpartition(":")
        if (
            not sep
            or not host
            or not (port_text.isascii() and port_text.isdigit())  # not "٣" or "²"
            or int(port_text) > 65535
        ):
            raise ValueError(f"bad address {text!r}: expected tcp:HOST:PORT")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return Address("tcp", host=host, port=int(port_text))
    raise ValueError(f"bad address {text!r}: the scheme must be unix: or tcp:")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- server side ------------------------------------------------------------------------


class _ServerProtocol(asyncio.Protocol):
    """Feeds one accepted socket to its own `Connection`."""

    def __init__(self, server: Server, tasks: set[asyncio.Task[None]]) -> None:
        self.server = server
        self.tasks = tasks
        self.conn: Connection | None = None
        self.transport: asyncio.Transport | None = None
        self.done = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        from ..server.runtime import Connection

        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername") or "unix peer"
        self.conn = Connection(
            self.server,
            self._write,
            pause_reading=transport.pause_reading,  # type: ignore[attr-defined]
            resume_reading=transport.resume_reading,  # type: ignore[attr-defined]
            buffered=transport.get_write_buffer_size,  # type: ignore[attr-defined]
            abort=transport.abort,  # type: ignore[attr-defined]
            name=f"socket {peer}",
        )
        task = asyncio.get_running_loop().create_task(self._lifecycle())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        if self.transport.is_closing():
            raise BrokenPipeError("socket closed")
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        assert self.conn is not None
        self.conn.data_received(data)

    def eof_received(self) -> bool:
        assert self.conn is not None
        self.conn.eof_received()
        return True  # keep our half open to flush the last answers

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.conn.write_failed = True
            self.conn.begin_shutdown("socket closed")

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.conn.pause_writing()

    def resume_writing(self) -> None:
        if self.conn is not None:
            self.conn.resume_writing()

    async def _lifecycle(self) -> None:
        assert self.conn is not None and self.transport is not None
        await self.conn.closing.wait()
        await self.conn.close()
        transport = self.transport
        if not transport.is_closing():
            if transport.can_write_eof():
                with contextlib.suppress(OSError):
                    transport.write_eof()
            transport.close()


async def serve_socket(
    server: Server, address: str, *, ready: Any = None, stop: asyncio.Event | None = None
) -> None:
    """Accept connections on ``address`` until ``stop`` is set (or SIGTERM/SIGINT)."""
    addr = parse_address(address)
    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    tasks: set[asyncio.Task[None]] = set()

    def factory() -> _ServerProtocol:
        return _ServerProtocol(server, tasks)

    async with server.running():
        if addr.kind == "unix":
            _remove_stale_socket(addr.path)
            old_umask = os.umask(0o177)  # the socket file is created 0600: owner only
            try:
                listener = await loop.create_unix_server(factory, addr.path)
            finally:
                os.umask(old_umask)
            bound = str(addr)
        else:
            if not _is_loopback(addr.host):
                log.warning(
                    "listening on %s, which is not loopback: there is no authentication", addr
                )
            listener = await loop.create_server(factory, addr.host, addr.port, reuse_address=True)
            sockname = listener.sockets[0].getsockname()
            bound = str(Address("tcp", host=addr.host, port=sockname[1]))
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
        print(f"mcpline: listening on {bound}", file=sys.stderr, flush=True)
        if ready is not None:
            ready(bound)
        try:
            await stop.wait()
        finally:
            listener.close()
            for conn in list(server.connections):
                conn.begin_shutdown("server stopping")
            if tasks:
                await asyncio.wait(list(tasks), timeout=server.shutdown_grace + 2)
            await listener.wait_closed()
            if addr.kind == "unix":
                with contextlib.suppress(OSError):
                    os.unlink(addr.path)


def _remove_stale_socket(path: str) -> None:
    """Remove a socket file left by a dead server; refuse to clobber anything else."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise SystemExit(f"mcpline: {path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
    else:
        raise SystemExit(f"mcpline: another server is already listening on unix:{path}")
    finally:
        probe.close()


def serve_address(server: Server, address: str, **options: Any) -> None:
    """Serve ``server`` on ``unix:/path`` or ``tcp:HOST:PORT`` until SIGTERM/SIGINT."""
    from .stdio import configure_logging, run_loop

    configure_logging()
    try:
        parse_address(address)
    except ValueError as exc:
        raise SystemExit(f"mcpline: {exc}") from None
    run_loop(serve_socket(server, address, ready=options.get("ready")), options.get("uvloop"))


# --- client side ------------------------------------------------------------------------


class _ClientProtocol(asyncio.Protocol):
    def __init__(self, channel: SocketChannel) -> None:
        self.channel = channel
        self.can_write = asyncio.Event()
        self.can_write.set()
        self.closed = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.channel.session.feed(data)

    def eof_received(self) -> bool:
        self.channel.session.eof(
            f"{self.channel.label} closed the connection"
            if not self.channel.closing
            else f"{self.channel.label} closed"
        )
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        from ..client.errors import ConnectionLost

        why = f"{self.channel.label}: connection lost" + (f" ({exc})" if exc else "")
        self.channel.session.connection_lost(
            ConnectionLost(why, retriable=not self.channel.closing)
        )
        self.can_write.set()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self.can_write.clear()

    def resume_writing(self) -> None:
        self.can_write.set()


class SocketChannel:
    """A client connection to a server listening on a socket address."""

    def __init__(self, session: Session, label: str, close_grace: float) -> None:
        self.session = session
        self.label = label
        self.close_grace = close_grace
        self.closing = False
        self.transport: asyncio.Transport | None = None
        self.protocol: _ClientProtocol | None = None

    @classmethod
    async def connect(
        cls, session: Session, address: str, *, close_grace: float = 2.0, timeout: float = 10.0
    ) -> SocketChannel:
        from ..client.errors import ConnectionLost

        try:
            addr = parse_address(address)
        except ValueError as exc:
            raise ConnectionLost(str(exc), retriable=False) from None
        chan = cls(session, str(addr), close_grace)
        loop = asyncio.get_running_loop()
        try:
            if addr.kind == "unix":
                coro = loop.create_unix_connection(lambda: _ClientProtocol(chan), addr.path)
            else:
                coro = loop.create_connection(lambda: _ClientProtocol(chan), addr.host, addr.port)
            transport, protocol = await asyncio.wait_for(coro, timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            raise ConnectionLost(f"cannot connect to {addr}: {exc or 'timed out'}") from None
        chan.transport = transport  # type: ignore[assignment]
        chan.protocol = protocol  # type: ignore[assignment]
        session.channel = chan
        return chan

    def write(self, data: bytes) -> None:
        from ..client.errors import ConnectionLost

        if self.transport is None or self.transport.is_closing():
            raise ConnectionLost(f"{self.label}: the connection is closed")
        self.transport.write(data)

    async def drain(self) -> None:
        p = self.protocol
        if p is not None and not p.can_write.is_set():
            await p.can_write.wait()

    async def aclose(self) -> None:
        """Half-close (the socket's "close stdin"), wait for the server to finish, close."""
        if self.closing or self.transport is None or self.protocol is None:
            return
        self.closing = True
        t = self.transport
        if not t.is_closing() and t.can_write_eof():
            with contextlib.suppress(OSError):
                t.write_eof()
        try:
            await asyncio.wait_for(asyncio.shield(self.protocol.closed), self.close_grace)
        except asyncio.TimeoutError:
            t.abort()
        finally:
            t.close()
