"""A `Server` in this process as a client's transport: no process, no pipe.

``Client.memory(server)`` wires the client's session straight to the server's engine: each
line the client writes is handed to a server `Connection` on the next pass of the event
loop, as a pipe would deliver it, and each line the server writes reaches the session the
same way. Everything above the bytes is the real thing (framing, ``_meta``, the engine,
both eras), so it is the fast way to test a server::

    async with Client.memory(server) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})

What it does not exercise is the process: stdout purity, signals and end of input. Test
those over stdio (`Client.stdio`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionLost
from .session import Channel, Session

if TYPE_CHECKING:
    from ..server.connection import Connection
    from ..server.server import Server


@dataclass(frozen=True, eq=False)
class MemoryServer:
    """Serve ``server`` in this process, on the client's event loop."""

    server: Server

    @property
    def label(self) -> str:
        return f"{self.server.name} (in memory)"

    async def open(self, session: Session) -> Channel:
        return await MemoryChannel.open(session, self.server, self.label)


class MemoryChannel:
    """One connection between a client session and an in-process server."""

    def __init__(self, session: Session, label: str) -> None:
        self.session = session
        self.label = label
        self.loop = asyncio.get_running_loop()
        self._stack = contextlib.AsyncExitStack()
        self._conn: Connection | None = None
        self._watch: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def open(cls, session: Session, server: Server, label: str) -> MemoryChannel:
        from ..server.connection import Connection

        chan = cls(session, label)
        await chan._stack.enter_async_context(server.runtime.services.running())
        chan._conn = Connection(server, chan._to_client, name=label)
        chan._watch = chan.loop.create_task(chan._until_closed(chan._conn))
        session.channel = chan
        return chan

    def _to_client(self, data: bytes) -> None:
        self.loop.call_soon(self.session.feed, data)

    def send(self, message: dict[str, Any], line: bytes) -> None:
        conn = self._conn
        if self._closed or conn is None or conn.closing.is_set():
            raise ConnectionLost(f"{self.label}: the connection is closed")
        self.loop.call_soon(conn.data_received, line)

    async def drain(self) -> None:
        return None

    async def _until_closed(self, conn: Connection) -> None:
        """The server ended the connection (or we did): finish it and tell the session."""
        await conn.closing.wait()
        await conn.close()
        await self._stack.aclose()
        self.loop.call_soon(self.session.eof, f"{self.label} closed the connection")

    async def aclose(self, within: float | None = None) -> None:
        """End of input for the server: it finishes in-flight work within its grace period
        (its own: ``within`` does not shorten it)."""
        if self._closed or self._conn is None or self._watch is None:
            return
        self._closed = True
        self._conn.eof_received()
        await asyncio.shield(self._watch)


__all__ = ["MemoryChannel", "MemoryServer"]
