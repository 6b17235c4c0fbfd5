"""2026-07-28 over HTTP: each POST is one exchange with a peer of its own, run in the POST's
own task.

The reply is plain JSON when it is the first message of the request (always so for a request
that cannot produce notifications), with the status its error code maps to; as soon as a
notification comes first (progress, a log message the request asked for with ``logLevel``,
a listen's acknowledgement), the response becomes an SSE stream ending with the reply.
Closing that stream is the cancellation of the request: nothing more is written for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...eager import Waiting, first_step, resume
from ...errors import JsonRpcError
from ...jsonrpc import Request
from ...server.engine import FINAL, Exchange, Phase
from ...server.outbound import Kind
from ...server.peer import PeerState
from ...spec import HEADER_MISMATCH, INTERNAL_ERROR, TOOLS_CALL
from . import respond, sse
from .headers import PROTOCOL_VERSION, HeaderError, Headers, mirror_problem, status_for

if TYPE_CHECKING:
    from ...protocol.headers import HeaderParam
    from .app import HttpApp

log = logging.getLogger("mcpline.server")

WATCH_AFTER = 0.05
"""Seconds a request may run before a task watches for its client's disconnection (which
cancels it): so a client that hangs up cancels a longer request within this much more."""


class HttpBinding:
    """What one HTTP request says besides its body: its headers and its caller."""

    __slots__ = ("headers", "modern_only", "principal", "_app", "_close")

    def __init__(
        self,
        app: HttpApp,
        headers: Headers,
        *,
        modern_only: bool,
        principal: Any,
        close: Callable[[], None] | None = None,
    ) -> None:
        self._app = app
        self.headers = headers
        self.modern_only = modern_only
        self.principal = principal
        self._close = close

    def check_version(self, version: str) -> None:
        try:
            header = self.headers.one(PROTOCOL_VERSION)
        except HeaderError as exc:
            raise JsonRpcError(HEADER_MISMATCH, f"Header mismatch: {exc}") from None
        if header is None:
            raise JsonRpcError(
                HEADER_MISMATCH,
                f"Header mismatch: the MCP-Protocol-Version header is missing (the body says "
                f"{version!r}; send both)",
            )
        if header != version:
            raise JsonRpcError(
                HEADER_MISMATCH,
                f"Header mismatch: the MCP-Protocol-Version header {header!r} does not match "
                f"the body's _meta protocolVersion {version!r}",
            )

    def check_request(self, request: Request) -> None:
        params = request.params
        mirrored: Sequence[HeaderParam] = ()
        if request.method == TOOLS_CALL and isinstance(params, dict):
            name = params.get("name")
            if isinstance(name, str):
                mirrored = self._app.header_params(name)
        problem = mirror_problem(request.method, params, self.headers, mirrored)
        if problem is not None:
            raise JsonRpcError(HEADER_MISMATCH, f"Header mismatch: {problem}")

    def close_stream(self) -> None:
        if self._close is not None:
            self._close()


class PostPeer(PeerState):
    """The `mcpline.server.engine.Peer` of one 2026-07-28 POST, whose handler runs in the
    request's own task (`Engine.run`): its exchange, what its response is written from,
    and the task that watches for its client's disconnection (started only for a request
    still running after `WATCH_AFTER`, or streaming).

    A reply that comes first is kept as the `answer` and written as plain JSON, counted in
    the app's outbound budget while it is written. A notification that comes first makes
    the response an SSE stream: it is queued in an `sse.Outbox` (made on first use, `queue`)
    that a `writer` task streams from while the handler goes on, the reply last; so is a
    reply that would pass the budget, written by the request's task."""

    def __init__(
        self,
        app: HttpApp,
        name: str,
        receive: respond.Receive,
        send: respond.Send,
        extra: respond.Headers,
    ) -> None:
        super().__init__(name)
        self.exchange: Exchange | None = None
        self.outbox: sse.Outbox | None = None
        """The queue the response is written from; None until something needs it."""
        self.answer: bytes | None = None
        """The reply, when it came before anything else (no outbox needed)."""
        self.writer: asyncio.Task[bool] | None = None
        """The task streaming the response, once a notification came first."""
        self.status = 200
        """The HTTP status of the reply, from its JSON-RPC error code (`status_for`)."""
        self.gone = False
        """The client disconnected: the request is cancelled and nothing more is written."""
        self._receive = receive
        self._send = send
        self._extra = extra
        self._watcher: asyncio.Task[None] | None = None
        self._app = app

    def queue(self) -> sse.Outbox:
        """The response's outbox, made on first use."""
        outbox = self.outbox
        if outbox is None:
            app = self._app
            outbox = self.outbox = sse.Outbox(
                app.server.options.max_outbound_bytes, self.run_overflow_hooks, app.outbound
            )
        return outbox

    def deliver(self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind) -> bool:
        if kind is Kind.REPLY:
            error = message.get("error")
            if isinstance(error, dict):
                code = error.get("code")
                if type(code) is int:
                    self.status = status_for(code)
            if self.outbox is None and self._app.outbound.take(len(data)):
                self.answer = data
                return True
            return self.queue().put(data, kind)
        outbox = self.queue()
        queued = outbox.put(data, kind)
        if queued and self.writer is None and not self.gone:
            self.watch()
            head = [*respond.SSE_HEADERS, *self._extra]
            self.writer = self.loop.create_task(
                respond.stream(self._send, outbox, self._app.keepalive, self.left, head)
            )
        return queued

    def send(self, data: bytes, kind: Kind) -> bool:
        return False  # nothing on a 2026-07-28 POST is tied to no request

    def phase_changed(self, exchange: Exchange, old: Phase) -> None:
        if exchange.phase in FINAL and self.outbox is not None:
            self.outbox.close()

    def left(self) -> bool:
        """Whether the client disconnected (`gone`)."""
        return self.gone

    def disconnected(self) -> None:
        """The client went away: cancel the request, drop what it still had to write."""
        self.gone = True
        if self.exchange is not None:
            self.exchange.cancel()
        self.queue().abort()

    def release(self) -> None:
        """The response ended: its bytes leave the outbound budget."""
        if self.answer is not None:
            self._app.outbound.give_back(len(self.answer))
            self.answer = None
        if self.outbox is not None:
            self.outbox.release()

    def watch(self) -> None:
        """Start watching for the client's disconnection (idempotent; a timer callback too)."""
        if self._watcher is None:
            self._watcher = self.loop.create_task(respond.watch(self._receive, self.disconnected))

    def unwatch(self) -> None:
        """Stop the watcher task, if it was started. Once cancelled it never calls
        `disconnected`; it is not waited for, so that the request ends (and gives its share
        back) without another loop pass."""
        task = self._watcher
        if task is not None:
            task.cancel()
            task.add_done_callback(self._watch_ended)

    def _watch_ended(self, task: asyncio.Task[None]) -> None:
        self._watcher = None  # the task's frame holds this peer: no cycle is left
        if not task.cancelled():
            task.exception()  # retrieved: a watch that failed ends with its request

    async def close(self) -> None:
        """Run the close hooks (an open listen gets its completion result); once."""
        if self.closing.is_set():
            return
        self.closing.set()
        await self.run_close_hooks()


async def serve(
    app: HttpApp,
    request: Request,
    headers: Headers,
    principal: Any,
    receive: respond.Receive,
    send: respond.Send,
    extra: respond.Headers,
) -> None:
    """Serve one 2026-07-28 request POST through the engine, in this task."""
    peer = PostPeer(app, f"http {request.method} {request.id!r}", receive, send, extra)
    exchange = Exchange(
        request, peer, HttpBinding(app, headers, modern_only=True, principal=principal)
    )
    peer.exchange = exchange
    # Most requests end in their first step: they never pay for a place among the open
    # peers or the timer that starts a watcher for one still running after WATCH_AFTER.
    later: int | None = None
    opened = False
    context = contextvars.copy_context()  # what the handler sets stays its own
    try:
        running = first_step(app.engine.run(exchange), context)
        if isinstance(running, Waiting):
            app.open_post(peer)
            opened = True
            later = app.watch_after.start(peer.watch)
            rest = resume(running.steps, running.yielded, context)
            running = None  # held by the rest alone, which may run for long (a listen)
            await rest
        if peer.writer is not None:
            if not opened:
                app.open_post(peer)
                opened = True
            await peer.writer
            return
        if peer.gone:
            return
        answer = peer.answer
        if answer is None:
            outbox = peer.outbox
            if outbox is not None and outbox.aborted:
                why = (
                    "Internal error: the response outgrew the server's outbound limits "
                    "(max_outbound_bytes, max_outbound_total_bytes)"
                )
                await respond.error(send, 500, INTERNAL_ERROR, why, request.id, extra)
                return
            items = outbox.take() if outbox is not None else []
            if not items:  # ended unanswered: the server is shutting down
                why = "Server shutting down: the request was not completed"
                await respond.error(send, 503, INTERNAL_ERROR, why, request.id, extra)
                return
            answer = items[0][0]
        await respond.json(send, peer.status, answer, extra)
    finally:
        if later is not None:
            app.watch_after.cancel(later)  # however the request ended
        peer.unwatch()
        writer = peer.writer
        if writer is not None:
            if not writer.done():
                writer.cancel()
            elif not writer.cancelled():
                writer.exception()  # retrieved: raised above when it was awaited
        if exchange.open:
            exchange.cancel()
        if peer.close_hooks:
            await peer.close()
        else:
            peer.closing.set()
        if opened:
            app.close_post(peer)
        peer.release()
        peer.writer = None
        peer.exchange = None  # no cycle left: the request is freed when it ends, not collected


__all__ = [
    "HttpBinding",
    "WATCH_AFTER",
    "PostPeer",
    "serve",
]
