"""How a `Client` reaches its server: a transport value opens one channel per connection.

A `Transport` is a small immutable value (what to launch or where to connect) with one
coroutine, ``open(session)``, which the client calls for its first connection and again for
each restart or reconnect. It returns a `Channel` that carries the session's bytes::

    class MyTransport:
        label = "my server"              # names the server in errors and logs

        async def open(self, session: Session) -> Channel:
            channel = MyChannel(...)     # write(bytes), drain(), aclose(), label
            session.channel = channel    # the session writes through it
            ...                          # every byte received: session.feed(data);
            return channel               # the end: session.eof(...) or connection_lost(...)

A channel that fails to open raises `ConnectionLost` (``retriable=False`` when trying again
cannot help). A channel to a process may also offer ``pid`` and ``returncode``, which
`Client.pid` and `Client.returncode` report. The client knows nothing else about a
transport, so a new one plugs in without touching it: ``Client(MyTransport(), ...)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from .session import Channel, Session


class Transport(Protocol):
    """Opens channels to one server for a `Client` (see the module docs)."""

    @property
    def label(self) -> str:
        """The server's name in errors and logs."""
        ...

    async def open(self, session: Session) -> Channel:
        """Connect (or launch), attach the channel to ``session`` and return it."""
        ...


@dataclass(frozen=True)
class StdioServer:
    """Launch ``command args`` and speak over its stdin/stdout (the stdio binding).

    The environment is this process's (unless ``inherit_env=False``) updated with ``env``
    (left out of the repr, as it often holds keys; so is a socket's ``token``).
    Its stderr lines go to ``on_stderr`` (else `logging`). Shutdown closes stdin, waits
    ``close_grace`` seconds, sends SIGTERM to its process group, waits ``term_grace``, then
    SIGKILL; with ``watchdog`` a helper process ends the server if this host dies.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    inherit_env: bool = True
    cwd: str | os.PathLike[str] | None = None
    on_stderr: Callable[[str], None] | None = None
    close_grace: float = 2.0
    term_grace: float = 2.0
    watchdog: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        if self.env is not None:
            object.__setattr__(self, "env", MappingProxyType(dict(self.env)))

    @property
    def label(self) -> str:
        return os.path.basename(self.command)

    async def open(self, session: Session) -> Channel:
        from .process import ProcessChannel

        return await ProcessChannel.start(
            session,
            self.command,
            self.args,
            env=self.env,
            inherit_env=self.inherit_env,
            cwd=self.cwd,
            on_stderr=self.on_stderr,
            close_grace=self.close_grace,
            term_grace=self.term_grace,
            watchdog=self.watchdog,
        )


@dataclass(frozen=True)
class SocketServer:
    """Connect to a server listening on ``unix:/path`` or ``tcp:HOST:PORT``.

    A TCP listener wants its token: ``token``, else ``$MCPLINE_TOKEN``, else the file the
    listener wrote for its address (looked up at each connection; see docs/sockets.md).
    Closing half-closes the socket and waits ``close_grace`` seconds for the server.
    """

    address: str
    token: str | None = field(default=None, repr=False)
    close_grace: float = 2.0

    @property
    def label(self) -> str:
        return self.address

    async def open(self, session: Session) -> Channel:
        from .socket import SocketChannel

        return await SocketChannel.connect(
            session, self.address, close_grace=self.close_grace, token=self.token
        )


__all__ = ["SocketServer", "StdioServer", "Transport"]
