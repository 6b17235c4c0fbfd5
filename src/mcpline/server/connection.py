"""One stream peer of a `Server` (stdio, a Unix or TCP socket): bytes in, messages out.

Transport-independent: a transport feeds bytes to `data_received`/`eof_received` and gives
the connection a `write` callable, read pause/resume callbacks, and how many bytes it holds
unwritten (``buffered``) and how to drop the peer (``abort``) for the outbound bound.

The connection owns what is per stream: the in-flight limit (requests past it wait in order
and reading pauses), cancellation by ``notifications/cancelled``, and the outbound buffer.
What each request does is the engine's (`mcpline.server.engine`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..inbound import Inbound, Invalid, Notification, Oversized, Request, Response
from ..jsonrpc import RequestId, duplicate_id_reply, error_response, is_valid_id
from ..spec import CANCELLED, PARSE_ERROR
from ..wire import encode
from .engine import FINAL, Exchange, Phase
from .outbound import Action, Kind, decide
from .peer import PeerState

if TYPE_CHECKING:
    from .runtime import Served

log = logging.getLogger("mcpline.server")


class Connection(PeerState):
    """Serves one peer. Every request runs as its own task; replies are written whole."""

    def __init__(
        self,
        server: Served,
        write: Callable[[bytes], None],
        *,
        pause_reading: Callable[[], None] = lambda: None,
        resume_reading: Callable[[], None] = lambda: None,
        buffered: Callable[[], int] = lambda: 0,
        abort: Callable[[], None] = lambda: None,
        name: str = "stdio",
        max_line_bytes: int | None = None,
    ) -> None:
        super().__init__(name)
        options = server.options
        self._engine = server.runtime.engine
        self._write = write
        self._pause = pause_reading
        self._resume = resume_reading
        self._buffered = buffered
        self._abort = abort
        self._max_in_flight = options.max_in_flight
        self._max_outbound = options.max_outbound_bytes
        self._grace = options.shutdown_grace
        self.max_line_bytes = options.max_line_bytes if max_line_bytes is None else max_line_bytes
        """This connection's longest line; longer ones are answered with a parse error."""
        self._inbound = Inbound(self.max_line_bytes)
        self.inflight: dict[RequestId, Exchange] = {}
        """Started requests not yet answered or cancelled, by id."""
        self._queued: deque[Exchange] = deque()
        """Requests read while at the in-flight limit; started in order as slots free up."""
        self._running = 0
        """In-flight requests holding a slot (`Phase.RUNNING`)."""
        self._read_paused = False
        self._write_paused = False
        self._releasing = False
        self.write_failed = False
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._receiving = False
        """Inside `data_received`: lines written meanwhile go out together at its end."""
        self.dropped = 0
        """Advisory notifications not sent because the peer was not reading."""
        self._engine.peers.add(self)

    # --- input ---------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.closing.is_set():
            return
        self._receiving = True
        try:
            for event in self._inbound.feed(data):
                if type(event) is Request:
                    self.handle_request(event)
                else:
                    self._event(event)
        finally:
            self._receiving = False
            if self._out:
                self.flush()

    def eof_received(self) -> None:
        for event in self._inbound.eof():
            self._event(event)
        self.begin_shutdown("end of input")

    def _event(self, event: Any) -> None:
        kind = type(event)
        if kind is Request:
            self.handle_request(event)
        elif kind is Notification:
            self.handle_notification(event)
        elif kind is Response:
            self._engine.response(self, event)
        elif kind is Invalid:
            if event.reply is not None:
                self.send(event.reply)
            else:
                log.debug("ignored malformed notification: %s", event.reason)
        elif kind is Oversized and (event.id is not None or event.complete):
            # Answered once: when its id is known, or when it ends without one.
            why = (
                f"Parse error: message of {'at least ' if not event.complete else ''}"
                f"{event.size} bytes exceeds the {event.limit}-byte line limit"
            )
            self.send(error_response(event.id, PARSE_ERROR, why))

    def handle_request(self, req: Request) -> None:
        exchange = Exchange(req, self)
        if self._queued or self._held():
            self._queued.append(exchange)
            self._pause_reading()
            return
        self._start(exchange)

    def _start(self, exchange: Exchange) -> None:
        if exchange.id in self.inflight:
            self.send(duplicate_id_reply(exchange.id))
            return
        self.inflight[exchange.id] = exchange
        self._engine.start(exchange)
        if self._held():
            self._pause_reading()

    def phase_changed(self, exchange: Exchange, old: Phase) -> None:
        """Keep the slot count, forget ended requests, and start queued ones as room frees."""
        new = exchange.phase
        if old is Phase.RUNNING:
            self._running -= 1
        elif new is Phase.RUNNING:
            self._running += 1
            if self._held():
                self._pause_reading()
            return
        if new in FINAL and self.inflight.get(exchange.id) is exchange:
            del self.inflight[exchange.id]
        if self._read_paused:
            self._release()

    def _held(self) -> bool:
        """At the in-flight limit, or the peer is not reading our output."""
        return self._write_paused or self._running >= self._max_in_flight

    def _pause_reading(self) -> None:
        if not self._read_paused:
            self._read_paused = True
            self._pause()

    def _release(self) -> None:
        """Start queued requests while there is room; resume reading once all have started."""
        if self._releasing:
            return
        self._releasing = True
        try:
            while self._queued and not self._held():
                self._start(self._queued.popleft())
        finally:
            self._releasing = False
        if self._read_paused and not self._queued and not self._held():
            self._read_paused = False
            if not self.closing.is_set():
                self._resume()

    def handle_notification(self, note: Notification) -> None:
        if note.method == CANCELLED:
            params = note.params
            rid = params.get("requestId") if isinstance(params, dict) else None
            if is_valid_id(rid):
                self.cancel(rid, params.get("reason"))
            return
        self._engine.notification(self, note)

    def cancel(self, request_id: RequestId, reason: Any = None) -> bool:
        """Stop a request; nothing more is written for it. False when it is not in flight."""
        exchange = self.inflight.get(request_id)
        if exchange is None:
            for queued in self._queued:
                if queued.id == request_id and type(queued.id) is type(request_id):
                    self._queued.remove(queued)
                    return True
            return False
        log.debug("request %r cancelled (%s)", request_id, reason or "no reason given")
        return exchange.cancel()

    # --- output ---------------------------------------------------------------------------

    def send(self, msg: dict[str, Any] | bytes, kind: Kind = Kind.REPLY) -> bool:
        """Write one message, or one encoded line (raises `TypeError` if the message is not
        JSON-encodable); see `write`."""
        return self.write(msg if type(msg) is bytes else encode(msg), kind)

    def deliver(self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind) -> bool:
        """Write a message of one of this connection's requests (``data``, encoded)."""
        return self.write(data, kind)

    def outbound(self) -> int:
        """Bytes written for the peer that the kernel has not taken yet."""
        return self._out_bytes + self._buffered()

    def write(self, data: bytes, kind: Kind = Kind.REPLY) -> bool:
        """Write one encoded line; False when it was not queued.

        Lines are written whole and in order. While other requests are in flight, lines
        written in one event-loop pass are coalesced into a single write at the end of it
        (one syscall for many pipelined replies), as are those written while a chunk of input
        is handled; otherwise the line goes out at once.
        Past ``max_outbound_bytes`` (a `Server` option) unread bytes,
        `mcpline.server.outbound.decide` says what happens instead; a closed output begins
        shutdown instead of raising.
        """
        if self.write_failed:
            return False
        limit = self._max_outbound
        waiting = self._out_bytes + self._buffered()
        if waiting + len(data) > limit:
            action = decide(kind, waiting, len(data), limit)
            if action is not Action.SEND:
                self._overflow(action)
                return False
        self._out.append(data)
        self._out_bytes += len(data)
        if self._receiving:
            pass  # replies given while reading (eager requests) leave in one write at its end
        elif len(self.inflight) > 1:
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self.loop.call_soon(self.flush)
        else:
            self.flush()
        return not self.write_failed

    def flush(self) -> None:
        """Hand every coalesced line to the transport now."""
        self._flush_scheduled = False
        out = self._out
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_bytes = 0
        if self.write_failed:
            return
        try:
            self._write(data)
        except (BrokenPipeError, ConnectionError, OSError):
            self.write_failed = True
            self.begin_shutdown("output closed")

    def _overflow(self, action: Action) -> None:
        if action is Action.DROP:
            if not self.dropped:
                log.warning(
                    "connection %s is not reading (%d bytes waiting): dropping progress and "
                    "log notifications",
                    self.name,
                    self.outbound(),
                )
            self.dropped += 1
        elif action is Action.END_STREAMS:
            log.warning(
                "connection %s is not reading (%d bytes waiting): ending its listen streams",
                self.name,
                self.outbound(),
            )
            self.run_overflow_hooks()
        elif action is Action.DISCONNECT:
            self.disconnect(f"the peer is not reading ({self.outbound()} bytes waiting)")

    def disconnect(self, why: str) -> None:
        """Drop the peer now: discard unwritten output, close the transport, shut down."""
        if self.write_failed:
            return
        log.warning("connection %s closed: %s", self.name, why)
        self.write_failed = True
        self._out.clear()
        self._out_bytes = 0
        self._abort()
        self.begin_shutdown(why)

    def pause_writing(self) -> None:
        """The peer is not reading: stop reading more work until it catches up."""
        self._write_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._read_paused:
            self._release()

    # --- shutdown ---------------------------------------------------------------------------

    def begin_shutdown(self, why: str = "") -> None:
        if not self.closing.is_set():
            log.debug("connection %s closing: %s", self.name, why)
            self.closing.set()

    async def close(self, grace: float | None = None) -> None:
        """Let in-flight work finish for ``grace`` seconds, cancel the rest, run close hooks."""
        grace = self._grace if grace is None else grace
        await self.run_close_hooks()
        loop = self.loop
        deadline = loop.time() + grace
        while self.inflight and grace > 0:
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.wait(self._tasks(), timeout=left)
        if self._queued:
            log.debug("dropping %d requests that never started", len(self._queued))
            self._queued.clear()
        tasks = self._tasks()
        for rid in list(self.inflight):
            self.cancel(rid, "shutting down")
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        self.flush()
        self._engine.peers.discard(self)

    def _tasks(self) -> list[asyncio.Task[None]]:
        return [e.task for e in self.inflight.values() if e.task is not None]


__all__ = [
    "Connection",
]
