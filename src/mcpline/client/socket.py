"""The client's end of a socket connection (``unix:/path`` or ``tcp:HOST:PORT``) to a
listener such as ``mcpline run --listen``: the same newline-delimited JSON as stdio, with
the half-close standing for "stdin closed". See docs/sockets.md."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from .._platform import unix_sockets_unavailable
from ..addresses import (
    LOOPBACK_NAMES,
    auth_line,
    canonical_host,
    check_token,
    find_token,
    is_loopback,
    os_reason,
    parse_address,
    refused,
)
from ..errors import ConnectionLost, NothingListening
from .session import Session


class _ClientProtocol(asyncio.Protocol):
    def __init__(self, channel: SocketChannel) -> None:
        self.channel = channel
        self.can_write = asyncio.Event()
        self.can_write.set()
        self.closed = asyncio.get_running_loop().create_future()
        self.received = False

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.channel.session.feed(data)

    def eof_received(self) -> bool:
        self.channel.session.eof(
            f"{self.channel.label} closed the connection{self._hint()}"
            if not self.channel.closing
            else f"{self.channel.label} closed"
        )
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        why = f"{self.channel.label}: connection lost" + (f" ({exc})" if exc else "")
        self.channel.session.connection_lost(
            ConnectionLost(why + self._hint(), retriable=not self.channel.closing)
        )
        self.can_write.set()
        if not self.closed.done():
            self.closed.set_result(None)

    def _hint(self) -> str:
        """Why a TCP listener may have closed before answering anything: the token."""
        if self.received or self.channel.closing or self.channel.auth is None:
            return ""
        if self.channel.auth:
            return (
                " before answering (is the token right, or is the listener at its "
                "connection limit?)"
            )
        return (
            " before answering (no token was found: give one, set $MCPLINE_TOKEN, "
            "or connect as the user who started the server)"
        )

    def pause_writing(self) -> None:
        self.can_write.clear()

    def resume_writing(self) -> None:
        self.can_write.set()


class SocketChannel:
    """A client connection to a server listening on a socket address.

    On TCP the first line sent is the authenticate notification with the token: ``token``,
    else ``$MCPLINE_TOKEN``, else the listener's default token file (looked up anew at
    every connection, since a restarted listener has a new token).
    """

    def __init__(self, session: Session, label: str, close_grace: float) -> None:
        self.session = session
        self.label = label
        self.close_grace = close_grace
        self.closing = False
        self.auth: bool | None = None
        """Whether a token was sent (None on a Unix socket, where none is needed)."""
        self.transport: asyncio.Transport | None = None
        self.protocol: _ClientProtocol | None = None

    @classmethod
    async def connect(
        cls,
        session: Session,
        address: str,
        *,
        close_grace: float = 2.0,
        timeout: float = 10.0,
        token: str | None = None,
    ) -> SocketChannel:
        try:
            addr = parse_address(address)
            unavailable = unix_sockets_unavailable() if addr.kind == "unix" else None
            if unavailable:
                raise ValueError(f"cannot connect to {addr}: {unavailable}")
            if addr.kind == "tcp":
                host = canonical_host(addr.host)
                others = LOOPBACK_NAMES if is_loopback(host) else ()
                if token is not None:
                    token = check_token(token, "the token argument")
                else:
                    token = find_token(host, addr.port, others)
        except ValueError as exc:
            raise ConnectionLost(str(exc), retriable=False) from None
        chan = cls(session, str(addr), close_grace)
        loop = asyncio.get_running_loop()
        try:
            if addr.kind == "unix":
                coro = loop.create_unix_connection(lambda: _ClientProtocol(chan), addr.path)
            else:
                coro = loop.create_connection(lambda: _ClientProtocol(chan), host, addr.port)
            transport, protocol = await asyncio.wait_for(coro, timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            why = (os_reason(exc) if isinstance(exc, OSError) else "") or "timed out"
            if refused(exc):
                why = "connection refused" if isinstance(exc, ConnectionRefusedError) else why
                raise NothingListening(f"nothing is listening on {addr} ({why})") from None
            raise ConnectionLost(f"cannot connect to {addr}: {why}") from None
        chan.transport = transport
        chan.protocol = protocol
        if addr.kind == "tcp":
            chan.auth = token is not None
            if token is not None:
                transport.write(auth_line(token))
        session.channel = chan
        return chan

    def send(self, message: dict[str, Any], line: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionLost(f"{self.label}: the connection is closed")
        self.transport.write(line)

    def buffered(self) -> int:
        """Bytes written that the server has not read yet (the transport's buffer)."""
        return self.transport.get_write_buffer_size() if self.transport is not None else 0

    def abort(self) -> None:
        """Close the connection at once, discarding what the server has not read."""
        if self.transport is not None:
            self.transport.abort()

    async def drain(self) -> None:
        p = self.protocol
        if p is not None and not p.can_write.is_set():
            await p.can_write.wait()

    async def aclose(self, within: float | None = None) -> None:
        """Half-close (the socket's "close stdin"), wait for the server to finish (at most
        ``within`` seconds when given), close."""
        if self.closing or self.transport is None or self.protocol is None:
            return
        self.closing = True
        t = self.transport
        if not t.is_closing() and t.can_write_eof():
            with contextlib.suppress(OSError):
                t.write_eof()
        try:
            grace = self.close_grace if within is None else min(self.close_grace, within)
            await asyncio.wait_for(asyncio.shield(self.protocol.closed), grace)
        except asyncio.TimeoutError:
            t.abort()
        finally:
            t.close()


__all__ = ["SocketChannel"]
