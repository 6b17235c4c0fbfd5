"""The stdio framing over stream sockets, server side: ``unix:/path`` and ``tcp:HOST:PORT``.

`serve_socket` accepts any number of clients; each connection gets its own `Connection`
(ids, in-flight requests and cancellation are per connection) and the same lifecycle as
stdio (half-close from the client = stdin EOF), once the connection has passed the
`auth.Gate` (JSON-RPC only; on TCP, the token first). The client's side is
`mcpline.client.socket`; addresses and tokens are `mcpline.addresses`. See docs/sockets.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._platform import install_shutdown_signals, unix_sockets_unavailable
from ..addresses import (
    TOKEN_ENV,
    Address,
    canonical_host,
    check_token,
    is_loopback,
    os_reason,
    parse_address,
    read_token_file,
)
from .auth import Gate, Verdict, new_token, write_token_file
from .table import BaseTransport

if TYPE_CHECKING:
    from ..server.connection import Connection
    from ..server.runtime import Served

log = logging.getLogger("mcpline.server")


# --- server side ------------------------------------------------------------------------

SOCKET_MAX_LINE_BYTES = 4 * 1024 * 1024
"""Default largest line on a socket connection (4 MiB), unless the server's is smaller."""

DEFAULT_MAX_CONNECTIONS = 64
"""Connections past the gate open at once."""

DEFAULT_MAX_PENDING = 16
"""Connections not yet past the gate (no first line yet) open at once, besides those."""

DEFAULT_AUTH_TIMEOUT = 5.0
"""Seconds a connection has to pass the gate (the token line on TCP, a ``{`` on Unix)."""

DEFAULT_IDLE_TIMEOUT = 300.0


class ListenError(Exception):
    """The listener cannot start (bad path, address in use, unusable token); one line."""


@dataclass
class _Listener:
    """What the connections of one listener share: its limits, token and live protocols.

    ``pending`` holds the connections still at the gate, oldest first (a dict keeps the
    order); ``active`` those let through."""

    server: Served
    token: str | None
    max_connections: int
    idle_timeout: float | None
    max_line_bytes: int
    max_pending: int = DEFAULT_MAX_PENDING
    auth_timeout: float = DEFAULT_AUTH_TIMEOUT
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    active: set[_ServerProtocol] = field(default_factory=set)
    pending: dict[_ServerProtocol, None] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)

    def note(self, kind: str, message: str, *args: object) -> None:
        """Log a warning of ``kind`` at its 1st, 2nd, 4th, 8th... and every 1000th occurrence,
        with the count (a flood of hostile connections must not become a flood of log
        lines)."""
        n = self.notes.get(kind, 0) + 1
        self.notes[kind] = n
        if n & (n - 1) == 0 or n % 1000 == 0:
            log.warning(message + " (%d so far)", *args, n)


class _ServerProtocol(asyncio.Protocol):
    """Admits one accepted socket through a `Gate`, then feeds it to its own `Connection`."""

    def __init__(self, listener: _Listener) -> None:
        self.listener = listener
        self.conn: Connection | None = None
        self.transport: asyncio.Transport | None = None
        self.gate = Gate(listener.token)
        self.peer = "unix peer"
        self.last_activity = 0.0
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.peer = str(transport.get_extra_info("peername") or "unix peer")
        listener = self.listener
        if len(listener.active) >= listener.max_connections:
            self._refuse()
            return
        if len(listener.pending) >= listener.max_pending:
            oldest = next(iter(listener.pending))
            listener.note(
                "evicted",
                "closed the oldest connection still at the gate (from %s) for a new one: "
                "%d connections wait for their first line (the limit)",
                oldest.peer,
                listener.max_pending,
            )
            oldest.abort()
        listener.pending[self] = None
        loop = asyncio.get_running_loop()
        self.last_activity = loop.time()
        self.timer = loop.call_later(listener.auth_timeout, self._gate_expired)

    def _refuse(self) -> None:
        self.listener.note(
            "refused",
            "refused a connection from %s: %d connections are open (the limit)",
            self.peer,
            self.listener.max_connections,
        )
        self.abort()

    def abort(self) -> None:
        """Close at once, discarding what is buffered (no longer counted anywhere)."""
        self.listener.pending.pop(self, None)
        self.listener.active.discard(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.transport is not None:
            self.transport.abort()

    def _gate_expired(self) -> None:
        self.timer = None
        if self.conn is None:
            self.listener.note(
                "gate-timeout",
                "closed a connection from %s: no %s within %g s",
                self.peer,
                "authenticate line" if self.listener.token is not None else "JSON-RPC",
                self.listener.auth_timeout,
            )
            self.abort()

    def _admit(self) -> bool:
        """Move this connection from the gate to the open ones; False if they are full."""
        listener = self.listener
        listener.pending.pop(self, None)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if len(listener.active) >= listener.max_connections:
            self._refuse()
            return False
        listener.active.add(self)
        if listener.idle_timeout is not None:
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(listener.idle_timeout, self._check_idle)
        return True

    def _open(self) -> None:
        from ..server.connection import Connection

        transport = self.transport
        assert transport is not None
        self.conn = Connection(
            self.listener.server,
            self._write,
            pause_reading=transport.pause_reading,
            resume_reading=transport.resume_reading,
            buffered=transport.get_write_buffer_size,
            abort=transport.abort,
            name=f"socket {self.peer}",
            max_line_bytes=self.listener.max_line_bytes,
        )
        task = asyncio.get_running_loop().create_task(self._lifecycle())
        self.listener.tasks.add(task)
        task.add_done_callback(self.listener.tasks.discard)

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        if self.transport.is_closing():
            raise BrokenPipeError("socket closed")
        self.last_activity = asyncio.get_running_loop().time()
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.last_activity = asyncio.get_running_loop().time()
        if self.conn is not None:
            self.conn.data_received(data)
            return
        data = self.gate.feed(data)
        if self.gate.verdict is Verdict.REJECT:
            log.warning("closed a connection from %s: %s", self.peer, self.gate.reason)
            self.abort()
        elif self.gate.verdict is Verdict.OPEN and self._admit():
            self._open()
            if data:
                self.data_received(data)

    def eof_received(self) -> bool:
        if self.conn is None:
            return False  # nothing was let through: close
        self.conn.eof_received()
        return True  # keep our half open to flush the last answers

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.active.discard(self)
        self.listener.pending.pop(self, None)
        if self.timer is not None:
            self.timer.cancel()
        if self.conn is not None:
            self.conn.write_failed = True
            self.conn.begin_shutdown("socket closed")

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.conn.pause_writing()

    def resume_writing(self) -> None:
        if self.conn is not None:
            self.conn.resume_writing()

    def _check_idle(self) -> None:
        """Close the connection once nothing was received or written for ``idle_timeout``
        seconds while no request (a pending ``subscriptions/listen`` included) is in flight."""
        timeout = self.listener.idle_timeout
        assert timeout is not None and self.transport is not None
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self.conn is not None and self.conn.inflight:
            self.last_activity = now
        due = self.last_activity + timeout
        if now < due:
            self.timer = loop.call_later(due - now, self._check_idle)
            return
        self.timer = None
        log.info("closing the connection from %s: idle for %g s", self.peer, timeout)
        if self.conn is not None:
            self.conn.begin_shutdown("idle")

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.begin_shutdown("server stopping")
        elif self.transport is not None:
            self.transport.close()

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
    server: Served,
    address: str,
    *,
    ready: Any = None,
    stop: asyncio.Event | None = None,
    token: str | None = None,
    auth: bool = True,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    max_line_bytes: int | None = None,
    max_pending: int = DEFAULT_MAX_PENDING,
    auth_timeout: float = DEFAULT_AUTH_TIMEOUT,
) -> None:
    """Accept connections on ``address`` until ``stop`` is set (or SIGTERM/SIGINT).

    A connection whose first byte (after whitespace) is not ``{`` is closed unread. On TCP
    the first line must also be the `AUTH_METHOD` notification with the token: ``token``,
    else ``$MCPLINE_TOKEN``, else a new random one; it is stored in the default token file
    of the bound address (`mcpline.addresses.token_path`), which is removed at exit. ``auth=False``
    drops the token (a loud warning). A connection has ``auth_timeout`` seconds to pass that
    gate; at most ``max_pending`` wait at it at once (one more closes the oldest of them), and
    at most ``max_connections`` are past it (more are closed at once); one idle for
    ``idle_timeout`` seconds (None: never) is closed; lines are at most ``max_line_bytes``
    (default: the server's limit, capped at 4 MiB). Raises `ListenError`.
    """
    try:
        addr = parse_address(address)
    except ValueError as exc:
        raise ListenError(str(exc)) from None
    unavailable = unix_sockets_unavailable() if addr.kind == "unix" else None
    if unavailable:
        raise ListenError(unavailable)
    if max_connections < 1:
        raise ListenError("the connection limit must be at least 1")
    if max_pending < 1:
        raise ListenError("the limit of connections at the gate must be at least 1")
    if auth_timeout <= 0:
        raise ListenError("the authentication timeout must be positive")
    if idle_timeout is not None and idle_timeout <= 0:
        raise ListenError("the idle timeout must be positive")
    if max_line_bytes is None:
        max_line_bytes = min(server.options.max_line_bytes, SOCKET_MAX_LINE_BYTES)
    elif max_line_bytes < 1:
        raise ListenError("the line limit must be positive")
    if addr.kind == "tcp" and auth:
        env = os.environ.get(TOKEN_ENV)
        try:
            if token is not None:
                token = check_token(token, "the token argument")
            elif env:
                token = check_token(env, f"${TOKEN_ENV}")
            else:
                token = new_token()
        except ValueError as exc:
            raise ListenError(str(exc)) from None
    else:
        token = None
    listener = _Listener(
        server, token, max_connections, idle_timeout, max_line_bytes, max_pending, auth_timeout
    )
    loop = asyncio.get_running_loop()
    stop = stop or asyncio.Event()
    token_file: Path | None = None

    def factory() -> _ServerProtocol:
        return _ServerProtocol(listener)

    async with server.runtime.services.running():
        if addr.kind == "unix":
            _remove_stale_socket(addr.path)
            old_umask = os.umask(0o177)  # the socket file is created 0600: owner only
            try:
                sock_server = await loop.create_unix_server(factory, addr.path)
            except OSError as exc:
                raise ListenError(f"cannot listen on {addr}: {os_reason(exc)}") from None
            finally:
                os.umask(old_umask)
            bound = str(addr)
        else:
            host = canonical_host(addr.host)
            try:
                sock_server = await loop.create_server(factory, host, addr.port, reuse_address=True)
            except OSError as exc:
                raise ListenError(f"cannot listen on {addr}: {os_reason(exc)}") from None
            port = sock_server.sockets[0].getsockname()[1]
            bound = str(Address("tcp", host=host, port=port))
            if token is not None:
                try:
                    token_file = write_token_file(host, port, token)
                except ValueError as exc:
                    sock_server.close()
                    raise ListenError(str(exc)) from None
                print(f"mcpline: the token for {bound} is in {token_file}", file=sys.stderr)
            else:
                print(
                    f"mcpline: WARNING: {bound} has no authentication (--no-auth): every "
                    "local user, and every host that can reach it, can call this server",
                    file=sys.stderr,
                )
            if not is_loopback(host):
                log.warning(
                    "listening on %s, which is not loopback: the traffic, the token "
                    "included, is not encrypted",
                    bound,
                )
        install_shutdown_signals(loop, lambda sig: stop.set())
        print(f"mcpline: listening on {bound}", file=sys.stderr, flush=True)
        if ready is not None:
            ready(bound)
        try:
            await stop.wait()
        finally:
            sock_server.close()
            for proto in [*listener.active, *listener.pending]:
                proto.stop()
            if listener.tasks:
                await asyncio.wait(list(listener.tasks), timeout=server.options.shutdown_grace + 2)
            await sock_server.wait_closed()
            if addr.kind == "unix":
                with contextlib.suppress(OSError):
                    os.unlink(addr.path)
            if token_file is not None:
                with contextlib.suppress(OSError):
                    os.unlink(token_file)


def _remove_stale_socket(path: str) -> None:
    """Remove a socket file left by a dead server; refuse to clobber anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ListenError(f"cannot listen on unix:{path}: {os_reason(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ListenError(f"{path} is a symbolic link; give the socket's own path")
    if not stat.S_ISSOCK(st.st_mode):
        raise ListenError(f"{path} exists and is not a socket")
    # Only reached where unix_sockets_unavailable() found AF_UNIX (Windows may lack it).
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # type: ignore[attr-defined,unused-ignore]
    try:
        probe.connect(path)
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        raise ListenError(f"another server is already listening on unix:{path}")
    finally:
        probe.close()


class SocketTransport(BaseTransport["Served"]):
    """The ``unix`` and ``tcp`` rows of `mcpline.transports.table`: `serve_socket`, whose
    failures to start are one ``mcpline: ...`` line on stderr and exit status 2.

    Its ``serve`` options are those of `serve_socket` plus ``uvloop``. Of the command line,
    ``--token-file`` gives the token, ``--no-auth`` is ``auth=False`` and an
    ``--idle-timeout`` of 0 is never.
    """

    def serve(self, server: Served, address: str, **options: Any) -> None:
        from .stdio import configure_logging, run_loop

        configure_logging()
        use_uvloop = options.pop("uvloop", None)
        try:
            run_loop(serve_socket(server, address, **options), use_uvloop)
        except ListenError as exc:
            print(f"mcpline: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    def options(self, given: dict[str, Any], address: str) -> dict[str, Any]:
        options = dict(given)
        token_file = options.pop("token_file", None)
        no_auth = options.pop("no_auth", False)
        if token_file and no_auth:
            raise ValueError("--token-file and --no-auth exclude each other")
        if token_file:
            options["token"] = read_token_file(token_file)
        if no_auth:
            options["auth"] = False
        if "idle_timeout" in options:
            options["idle_timeout"] = options["idle_timeout"] or None
        return options


SOCKETS = SocketTransport()


__all__ = [
    "DEFAULT_AUTH_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_PENDING",
    "ListenError",
    "serve_socket",
    "SocketTransport",
    "SOCKETS",
    "SOCKET_MAX_LINE_BYTES",
]
