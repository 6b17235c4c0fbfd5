"""Connection guards for uvicorn: what a client must do to keep holding a socket.

uvicorn closes a connection that stays idle ``timeout_keep_alive`` seconds **after** a
response, and (``limit_concurrency``) answers 503 to a request once too many connections are
open, but only when the request's headers are complete. A connection that never sends
anything, or never finishes its headers, is never closed, and every such connection holds a
file descriptor. `GuardedHttpToolsProtocol`, uvicorn's httptools protocol with these guards,
closes those gaps:

- **a connection limit**: a connection accepted while ``max_connections`` are open gets a
  503 with ``Retry-After`` and is closed at once (`admission.connection_limit`);
- **a header deadline**: a request's head (request line and headers) must arrive whole
  within ``header_timeout`` seconds of the connection opening, or of its first byte on a
  kept-alive connection; otherwise 408 (or, when nothing came, a silent close);
- **a header size**: a head over ``max_head_bytes`` gets 431 and a close (httptools has no
  limit of its own);
- **a write deadline**: a connection whose reader takes none of the server's writes (the
  socket's buffer full, and no smaller) for ``write_timeout`` seconds is aborted, which
  frees what its response held and cancels its request (uvicorn would wait forever);
- **batched writes**: while other requests are being answered, the connection's writes are
  held and leave with theirs, once per loop pass (`mcpline.transports.http.batched`);

and, for a request answered before its body arrived whole (a refusal, say), the rest of the
body must come within the same ``header_timeout`` and ``max_head_bytes``, or the connection
is closed (uvicorn would go on reading, and discarding, a body of any length or pace).

When the process runs out of file descriptors, asyncio logs a traceback for every failed
``accept()``, thousands a second; `quiet_accept_errors` turns that into one line per interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..._platform import open_file_limit, unsent_socket_bytes
from . import admission
from .batched import BatchedTransport, WriteBatch
from .respond import error_body

log = logging.getLogger("mcpline.server")

DEFAULT_MAX_CONNECTIONS = 1024
"""Connections open at once, or the open-file limit less `FD_RESERVE` when that is lower."""
FD_RESERVE = 64
"""File descriptors kept free for everything but client connections (the listening socket,
logs, the server's own files and clients)."""
ACCEPT_LOG_INTERVAL = 10.0
"""At most one log line per this many seconds about failing ``accept()`` calls."""
OPENED = "opened"
"""`GuardedHttpToolsProtocol.waiting` on a new connection, before its first byte."""
HEAD = "head"
"""`GuardedHttpToolsProtocol.waiting` for the rest of a request's head."""
DRAIN = "drain"
"""`GuardedHttpToolsProtocol.waiting` for the unread body of a request already answered."""
ACCEPT_ERROR = "socket.accept() out of system resource"
"""The message of asyncio's exception-handler context for a failed ``accept()``."""


def default_max_connections() -> int:
    """`DEFAULT_MAX_CONNECTIONS`, or the soft open-file limit less `FD_RESERVE` when lower
    (at least 1)."""
    limit = open_file_limit()
    if limit is None:
        return DEFAULT_MAX_CONNECTIONS
    return max(1, min(DEFAULT_MAX_CONNECTIONS, limit - FD_RESERVE))


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The guards of `GuardedHttpToolsProtocol`."""

    max_connections: int
    header_timeout: float
    max_head_bytes: int
    write_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.max_head_bytes < 1:
            raise ValueError("max_connections and max_head_bytes must be positive")
        if not (self.header_timeout > 0 and self.write_timeout > 0):
            raise ValueError("header_timeout and write_timeout must be positive")


def raw_response(refusal: admission.Refusal) -> bytes:
    """A `Refusal` as the bytes of a whole HTTP/1.1 response that closes the connection."""
    body = error_body(None, refusal.code, refusal.message)
    try:
        phrase = http.HTTPStatus(refusal.status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP/1.1 {refusal.status} {phrase}".encode("ascii")]
    lines += [name + b": " + value for name, value in refusal.headers]
    lines += [
        b"content-type: application/json",
        b"content-length: " + str(len(body)).encode("ascii"),
        b"connection: close",
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def head_too_slow(timeout: float) -> admission.Refusal:
    """408: the request's head did not arrive whole in time."""
    return admission.Refusal(
        408,
        f"Request Timeout: the request headers did not arrive within {timeout:g} s",
        close=True,
        limit="header_timeout",
    )


def head_too_large(limit: int) -> admission.Refusal:
    """431: the request's head is over ``limit`` bytes."""
    return admission.Refusal(
        431,
        f"Request Header Fields Too Large: the request head exceeds {limit} bytes",
        close=True,
        limit="max_head_bytes",
    )


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a connection limit, a header deadline, a header
    size limit and batched writes (see the module). Give uvicorn ``protocol_factory(limits)``
    as ``http``."""

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: ConnectionLimits,
        batch: WriteBatch | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        self.batch = batch if batch is not None else WriteBatch()
        """Holds this connection's writes with those of the server's other connections."""
        self.answering = 0
        """Requests of this connection being answered (counted in `WriteBatch.open`)."""
        self.watch: asyncio.TimerHandle | None = None
        """The one timer of this connection: it checks the deadline of `waiting`."""
        self.waiting: str | None = OPENED
        """What the connection waits for under a deadline: `OPENED`, its first request;
        `HEAD`, the rest of a request's head; `DRAIN`, the rest of the body of a request
        already answered; None, nothing (a request being answered, or idle after a response:
        uvicorn's keep-alive timeout)."""
        self.since = 0.0
        """Loop time at which the wait began."""
        self.received = 0
        """Bytes received during the wait."""
        self.waits = 0
        """How many waits began so far."""
        self.stall: asyncio.TimerHandle | None = None
        """The write deadline, while the transport's buffer is full."""
        self.unwritten = 0
        """`unwritten_bytes` when the write deadline was last set."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = BatchedTransport(transport, self.batch)
        refusal = admission.connection_limit(len(self.connections), self.limits.max_connections)
        if refusal is not None:
            self.refuse(refusal)
            return
        self.since = self.loop.time()
        self.watch = self.loop.call_later(self.limits.header_timeout, self.check)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
        if self.stall is not None:
            self.stall.cancel()
            self.stall = None
        self.batch.closed(self.answering)
        self.answering = 0
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stall is None:
            self.unwritten = self.unwritten_bytes()
            self.stall = self.loop.call_later(self.limits.write_timeout, self.stalled)

    def resume_writing(self) -> None:
        if self.stall is not None:
            self.stall.cancel()
            self.stall = None
        super().resume_writing()

    def unwritten_bytes(self) -> int:
        """Bytes written and not yet taken by the peer: the transport's buffer, plus the
        kernel's send queue where the platform tells (so that a reader taking little, slowly,
        counts as reading)."""
        unsent = 0
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, ValueError):
                unsent = unsent_socket_bytes(sock.fileno())
        return self.transport.get_write_buffer_size() + unsent

    def stalled(self) -> None:
        """The write deadline passed with the buffer still full: if the reader took some of
        it meanwhile, set the deadline again; if it took nothing, abort the connection (a
        close would wait for the buffer to drain)."""
        self.stall = None
        unwritten = self.unwritten_bytes()
        if unwritten < self.unwritten:
            self.unwritten = unwritten
            self.stall = self.loop.call_later(self.limits.write_timeout, self.stalled)
            return
        log.info(
            "a client read none of the server's writes for %g s: its connection is closed "
            "(write_timeout)",
            self.limits.write_timeout,
        )
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        waits = self.waits
        super().data_received(data)
        # A wait that began within this data counts from the next (at most one read more).
        if self.waiting is not None and self.waits == waits and not self.transport.is_closing():
            self.received += len(data)
            if self.received > self.limits.max_head_bytes:
                if self.waiting == DRAIN:
                    self.transport.close()
                else:
                    self.refuse(head_too_large(self.limits.max_head_bytes))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.waiting == OPENED:  # the first request: its wait began with the connection
            self.waiting = HEAD
        elif self.waiting is None:  # a later request on a kept-alive connection
            self.wait_for(HEAD)

    def on_headers_complete(self) -> None:
        self.waiting = None
        cycle = self.cycle
        super().on_headers_complete()
        if self.cycle is not cycle:  # a request to answer (not an upgrade)
            self.answering += 1
            self.batch.opened()

    def on_message_complete(self) -> None:
        if self.waiting == DRAIN:
            self.waiting = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        cycle = self.cycle  # a pipelined request's own cycle while the previous one ends
        if cycle is not None and cycle.response_complete and cycle.more_body:
            self.wait_for(DRAIN)  # answered before its body came whole: a bounded wait
        if self.answering:
            self.answering -= 1
            self.batch.closed()
        super().on_response_complete()

    def wait_for(self, what: str) -> None:
        """Begin a wait for ``what`` (`HEAD` or `DRAIN`) under the deadline."""
        self.waiting = what
        self.since = self.loop.time()
        self.received = 0
        self.waits += 1

    def check(self) -> None:
        """The deadline of `waiting`, checked by one timer per connection rather than one
        per request. A late head gets 408; a connection that sent nothing, or the late body
        of an answered request, a close. Otherwise look again when the current wait would be
        late."""
        self.watch = None
        if self.transport.is_closing():
            return
        timeout = self.limits.header_timeout
        wait = timeout
        if self.waiting is not None:
            wait = self.since + timeout - self.loop.time()
            if wait <= 0:
                if self.waiting == HEAD:
                    self.refuse(head_too_slow(timeout))
                else:
                    self.transport.close()
                return
        self.watch = self.loop.call_later(wait, self.check)

    def refuse(self, refusal: admission.Refusal) -> None:
        """Answer ``refusal`` and close the connection, leaving any request unread (only
        close it when a response to an earlier request is being written)."""
        self.waiting = None
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(raw_response(refusal))
        self.transport.close()


def protocol_factory(limits: ConnectionLimits) -> Callable[..., GuardedHttpToolsProtocol]:
    """What uvicorn's ``Config(http=...)`` takes to build a guarded protocol per connection,
    its connections sharing one `WriteBatch` (picklable, for worker processes)."""
    return functools.partial(GuardedHttpToolsProtocol, limits=limits, batch=WriteBatch())


class AcceptErrors:
    """A loop exception handler that logs failed ``accept()`` calls (out of file descriptors
    or memory) as one line per ``interval`` seconds, without a traceback, and passes every
    other context on to ``fallback``."""

    def __init__(
        self,
        fallback: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object],
        interval: float = ACCEPT_LOG_INTERVAL,
    ) -> None:
        self.fallback = fallback
        self.interval = interval
        self.unlogged = 0
        """Failures since the last line."""
        self.last: float | None = None

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != ACCEPT_ERROR:
            self.fallback(loop, context)
            return
        self.unlogged += 1
        now = loop.time()
        if self.last is not None and now - self.last < self.interval:
            return
        exc = context.get("exception")
        why = getattr(exc, "strerror", None) or type(exc).__name__
        log.warning(
            "cannot accept connections: %s (%d failed accept() calls since the last such "
            "line; at most one line per %g s); raise the open-file limit (ulimit -n) or "
            "lower --max-connections",
            why,
            self.unlogged,
            self.interval,
        )
        self.unlogged = 0
        self.last = now


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> AcceptErrors:
    """Install `AcceptErrors` as ``loop``'s exception handler, in front of the handler it
    had (or asyncio's default); returns it."""
    previous = loop.get_exception_handler()

    def fallback(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if previous is None:
            loop.default_exception_handler(context)
        else:
            previous(loop, context)

    handler = AcceptErrors(fallback)
    loop.set_exception_handler(handler)
    return handler


__all__ = [
    "ACCEPT_ERROR",
    "ACCEPT_LOG_INTERVAL",
    "AcceptErrors",
    "ConnectionLimits",
    "DEFAULT_MAX_CONNECTIONS",
    "default_max_connections",
    "DRAIN",
    "FD_RESERVE",
    "GuardedHttpToolsProtocol",
    "HEAD",
    "head_too_large",
    "head_too_slow",
    "OPENED",
    "protocol_factory",
    "quiet_accept_errors",
    "raw_response",
]
