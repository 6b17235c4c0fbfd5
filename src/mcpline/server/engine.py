"""The request engine: one request in, the messages of that request out.

`Engine.start` routes a request through the eras (`mcpline.server.eras`) and runs its
handler as a task (an eager one first runs right there, and most such end there);
`Engine.run` runs it in the calling task instead, for a transport whose every request has a
task of its own (an HTTP POST).
Everything written for the request goes through its `Exchange`: first the notifications tied
to it (progress, log, a listen's notices, a legacy session's requests for input), then
exactly one response. The engine knows nothing of connections. Whoever carries requests is a
`Peer` (a stdio or socket connection, an HTTP request): it decides where an
exchange's messages go and owns in-flight limits, pausing and cancellation, following each
exchange through its phases.

Phases and the only moves between them (`Exchange.move`)::

    QUEUED ──▶ RUNNING ⇄ WAITING           (waiting on the peer: a legacy input request)
       │          │  ╲
       │          │   ▶ LISTENING          (subscriptions/listen, until ended)
       ▼          ▼         ▼
    ANSWERED / CANCELLED  (final; nothing is written for the request after either)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..eager import resume
from ..errors import wire_error
from ..jsonrpc import Notification, Request, RequestId, Response, error_response, result_response
from ..protocol.meta import has_modern_meta
from ..spec import INTERNAL_ERROR
from ..wire import encode
from .outbound import Kind

if TYPE_CHECKING:
    from .context import Context
    from .eras import Era

log = logging.getLogger("mcpline.server")


class Phase(enum.Enum):
    """Where a request is in its life."""

    QUEUED = "queued"
    """Read, not started (the peer is at its in-flight limit)."""
    RUNNING = "running"
    """Its handler runs; it holds an in-flight slot."""
    WAITING = "waiting on the peer"
    """Its handler awaits an answer from the peer; no slot is held meanwhile."""
    LISTENING = "listening"
    """A ``subscriptions/listen`` stream: open until ended, holding no slot."""
    ANSWERED = "answered"
    CANCELLED = "cancelled"

    # Members are singletons: identity hashing is exact and, unlike Enum's default (a Python
    # method hashing the name), costs nothing on the per-request path (MOVES, FINAL).
    __hash__ = object.__hash__


MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.QUEUED: frozenset({Phase.RUNNING, Phase.LISTENING, Phase.ANSWERED, Phase.CANCELLED}),
    Phase.RUNNING: frozenset({Phase.WAITING, Phase.ANSWERED, Phase.CANCELLED}),
    Phase.WAITING: frozenset({Phase.RUNNING, Phase.ANSWERED, Phase.CANCELLED}),
    Phase.LISTENING: frozenset({Phase.ANSWERED, Phase.CANCELLED}),
    Phase.ANSWERED: frozenset(),
    Phase.CANCELLED: frozenset(),
}
"""The allowed moves from each phase."""

FINAL = frozenset({Phase.ANSWERED, Phase.CANCELLED})


class Peer(Protocol):
    """What carries requests to the engine and their messages back (its attributes are those
    of `mcpline.server.peer.PeerState`, which every peer builds on)."""

    name: str
    loop: asyncio.AbstractEventLoop
    loop_thread: int
    closing: asyncio.Event
    """Set once the peer is going away (no new listens are kept open)."""
    scoped: dict[str, Any]
    """State features keep for this peer (its listens, its legacy session), by feature key."""
    close_hooks: list[Callable[[Any], Awaitable[None] | None]]
    """Run (with the peer) when it closes."""
    overflow_hooks: list[Callable[[Any], None]]
    """Run (with the peer) when a stream notification finds its output full."""

    def deliver(self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind) -> bool:
        """Write one message of ``exchange`` (``data`` is ``message`` encoded); False when it
        was not queued."""
        ...

    def send(self, data: bytes, kind: Kind) -> bool:
        """Write one encoded message tied to no request (a legacy session's notices)."""
        ...

    def phase_changed(self, exchange: Exchange, old: Phase) -> None:
        """``exchange`` moved from ``old`` to its current phase."""
        ...


class Binding(Protocol):
    """What a transport that carries request metadata of its own (HTTP headers) adds to one
    request: its checks against the body, the caller it authenticated, its stream."""

    modern_only: bool
    """The transport already chose the modern era for this request: no other era claims it."""
    principal: Any
    """What the transport's authentication returned for the caller (``ctx.principal``)."""

    def check_version(self, version: str) -> None:
        """Raise `mcpline.errors.JsonRpcError` when the transport's protocol version disagrees
        with ``_meta``'s (called once ``_meta`` is well formed, before its version is judged)."""
        ...

    def check_request(self, request: Request) -> None:
        """Raise `mcpline.errors.JsonRpcError` when the transport's metadata disagrees with
        the body (called after the ``_meta`` checks, before the method is looked up)."""
        ...

    def close_stream(self) -> None:
        """End the stream carrying this request's messages before its response, where the
        transport can resume it later (a legacy HTTP session); otherwise nothing."""
        ...


def error_reply(
    rid: RequestId, exc: BaseException, method: str, legacy: bool = False
) -> dict[str, Any]:
    """The response to request ``rid`` that failed with ``exc`` (`wire_error`). Built here, not
    in the failing frame: a local there holding the error would tie it to its own traceback,
    a reference cycle that keeps the request (its arguments, its body) until the cyclic
    collector runs."""
    err = wire_error(exc, method, legacy=legacy)
    return error_response(rid, err.code, err.message, err.data)


class Exchange:
    """One request and everything written for it: the engine's per-request record."""

    __slots__ = ("request", "id", "method", "peer", "phase", "ctx", "task", "binding", "eager")

    def __init__(self, request: Request, peer: Peer, binding: Binding | None = None) -> None:
        self.request = request
        self.id: RequestId = request.id
        self.method: str = request.method
        self.peer = peer
        self.phase = Phase.QUEUED
        self.ctx: Context | None = None
        self.task: asyncio.Task[None] | None = None
        self.binding = binding
        """The transport's own view of the request (None on stdio and sockets)."""
        self.eager = False
        """Set by the era that routes it: its awaitable is a coroutine whose first step
        needs no task of its own (see `Engine.start`)."""

    @property
    def open(self) -> bool:
        """Neither answered nor cancelled: messages may still be written for it."""
        return self.phase not in FINAL

    def move(self, phase: Phase) -> None:
        """The one transition function; raises `RuntimeError` for a move `MOVES` forbids."""
        old = self.phase
        if phase not in MOVES[old]:
            raise RuntimeError(f"request {self.id!r}: no move from {old.value} to {phase.value}")
        self.phase = phase
        if phase in FINAL:
            # The context points back here: without this cycle the request and its
            # arguments are freed as soon as the handler is done, not at the next collection.
            self.ctx = None
        self.peer.phase_changed(self, old)

    def send(self, msg: dict[str, Any], kind: Kind = Kind.ADVISORY) -> bool:
        """Write a message of this request unless it is answered or cancelled (raises
        `TypeError` if it is not JSON-encodable)."""
        return self.phase not in FINAL and self.peer.deliver(self, msg, encode(msg), kind)

    def reply(self, msg: dict[str, Any]) -> None:
        """Write the response and end the request (nothing if it already ended)."""
        if self.phase in FINAL:
            return
        try:
            data = encode(msg)
        except Exception:
            log.exception("the reply to %s could not be encoded as JSON", self.method)
            why = f"Internal error: the result of {self.method} is not JSON-encodable"
            msg = error_response(self.id, INTERNAL_ERROR, why)
            data = encode(msg)
        self.peer.deliver(self, msg, data, Kind.REPLY)
        if self.phase not in FINAL:  # delivering may have closed the peer and cancelled it
            self.move(Phase.ANSWERED)

    def cancel(self) -> bool:
        """End the request unanswered and cancel its task; False if it had already ended."""
        if self.phase in FINAL:
            return False
        self.move(Phase.CANCELLED)
        if self.task is not None:
            self.task.cancel()
        return True

    async def own_task(self) -> None:
        """Make sure what follows runs in a task of its own: during an eager exchange's first
        step (`Engine.start`) there is none yet, and ``asyncio.current_task`` and timeouts
        need one; one loop pass gets it."""
        if self.task is None:
            await asyncio.sleep(0)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """While the handler awaits the peer it holds no in-flight slot, so reading goes on
        and the answer can arrive even when every slot is taken."""
        if self.phase is not Phase.RUNNING:
            yield
            return
        self.move(Phase.WAITING)
        try:
            yield
        finally:
            if self._is(Phase.WAITING):
                self.move(Phase.RUNNING)

    def _is(self, phase: Phase) -> bool:
        return self.phase is phase


EAGER = sys.version_info >= (3, 11)
"""Whether eager exchanges run their first step in `Engine.start` (a task's ``context``
argument is needed, new in Python 3.11)."""


class Middleware(Protocol):
    """What the engine asks of a middleware chain (`mcpline.middleware.Chain`)."""

    def request(
        self,
        exchange: Exchange,
        ctx: Context | None,
        awaitable: Awaitable[dict[str, Any]],
        *,
        task: RequestId | None = None,
    ) -> Awaitable[dict[str, Any]]:
        """``awaitable`` (the request's handler; raising its refusal when ``ctx`` is None;
        ``task``: the id of a task whose run this is) run through the chain."""
        ...

    def notification(
        self, peer: Peer, note: Notification, deliver: Callable[[Peer, Notification], None]
    ) -> None:
        """``note`` run through the chain, ending in ``deliver(peer, note)``."""
        ...


MAX_PENDING_CHANGES = 65_536
"""Distinct changes that may wait for one event loop; past it, new ones are dropped (logged)."""

Change = tuple[str, str]
"""``("list", kind)`` or ``("resource", uri)``."""

Routed = tuple["Context", Awaitable[dict[str, Any]], bool]
"""What an era makes of a request: its context, the awaitable of its result, and whether it
is long-lived (a listen)."""


class Engine:
    """Routes requests through the eras and runs them; fans peer events out to the eras.

    ``modern`` routes every request that carries modern ``_meta`` (and, last, whatever no
    other era claims); ``others`` (the legacy era) see the rest first.
    """

    def __init__(self, modern: Era, others: list[Era]) -> None:
        self.modern = modern
        self.others = others
        self.eras = [modern, *others]
        self.peers: set[Peer] = set()
        """Every open peer (list changes and resource updates go to all of them); a 2026-07-28
        HTTP POST joins once it outlives its first step, before which nothing can reach it."""
        self._pending: dict[asyncio.AbstractEventLoop, dict[Change, None]] = {}
        self._pending_lock = threading.Lock()
        self._dropped = 0
        self.middleware: Middleware | None = None
        """The middleware chain every request and notification goes through (None: none)."""

    # --- requests ------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> Routed:
        """Modern ``_meta`` first (or a transport that chose the modern era); otherwise each
        other era may claim the request."""
        binding = exchange.binding
        if (
            self.others
            and not has_modern_meta(exchange.request.params)
            and not (binding is not None and binding.modern_only)
        ):
            for era in self.others:
                routed = era.route(exchange)
                if routed is not None:
                    return routed
        routed = self.modern.route(exchange)
        assert routed is not None
        return routed

    def _begin(self, exchange: Exchange) -> Awaitable[dict[str, Any]] | None:
        """Route ``exchange`` and move it to its running phase: the awaitable of its result
        (through the middleware, if any), or None when, without middleware, it was refused
        and answered at once."""
        req = exchange.request
        chain = self.middleware
        try:
            ctx, awaitable, long_lived = self.route(exchange)
        except Exception as exc:
            if chain is None:
                exchange.reply(error_reply(req.id, exc, req.method))
                return None
            exchange.move(Phase.RUNNING)
            return chain.request(exchange, None, _raise(exc))
        exchange.ctx = ctx
        if chain is not None:
            awaitable = chain.request(exchange, ctx, awaitable)
        exchange.move(Phase.LISTENING if long_lived else Phase.RUNNING)
        return awaitable

    def start(self, exchange: Exchange) -> None:
        """Route ``exchange`` and run it (through the middleware, if any); without middleware
        a request refused at once is answered at once.

        It runs as a task; an eager one (`Exchange.eager`, and no middleware) first runs
        here, up to where it first waits, and gets a task only if it does."""
        awaitable = self._begin(exchange)
        if awaitable is None:
            return
        loop = exchange.peer.loop
        if not (exchange.eager and EAGER and self.middleware is None):
            exchange.task = loop.create_task(self._run(exchange, awaitable))
            return
        # Run it here up to its first suspension, in a context of its own: most such
        # requests end there, and never cost a task and a loop pass. (Stepped by hand, not
        # through `first_step`: one call less on the stdio hot path, about 1.5% of a call.)
        coro = cast("Coroutine[Any, Any, dict[str, Any]]", awaitable)
        context = contextvars.copy_context()
        try:
            yielded = context.run(coro.send, None)
        except StopIteration as done:
            exchange.reply(result_response(exchange.id, done.value))
            return
        except asyncio.CancelledError:
            self._cancelled(exchange)
            return
        except Exception as exc:
            self._failed(exchange, exc)
            return
        rest = self._run(exchange, resume(coro, yielded))
        task = loop.create_task(rest, context=context)  # type: ignore[call-arg,unused-ignore]
        exchange.task = task
        if not exchange.open:  # cancelled during the first step
            task.cancel()

    async def run(self, exchange: Exchange) -> None:
        """Route ``exchange`` and run it to its end in the calling task (through the
        middleware, if any): for a transport whose every request already has a task of its
        own, an HTTP POST. Cancelling the exchange cancels that task, and the cancellation
        ends here; a cancellation from outside ends the request and goes on."""
        exchange.task = asyncio.current_task()
        try:
            awaitable = self._begin(exchange)
            if awaitable is not None:
                await self._run(exchange, awaitable)
        finally:
            exchange.task = None  # the task goes on without it: ending it cancels nothing

    async def _run(self, exchange: Exchange, awaitable: Awaitable[dict[str, Any]]) -> None:
        """Await the handler and answer with what it gave. The exchange's own cancellation
        (`Exchange.cancel`) ends here; one from outside (the loop closing, the caller of
        `run` cancelled) ends the exchange and goes on."""
        try:
            result = await awaitable
        except asyncio.CancelledError:
            if exchange.open:
                exchange.move(Phase.CANCELLED)
                raise
            task = asyncio.current_task()
            if sys.version_info >= (3, 11) and task is not None:
                task.uncancel()  # handled: later waits of the task are not cut short
            return
        except Exception as exc:
            self._failed(exchange, exc)
            return
        exchange.reply(result_response(exchange.id, result))

    @staticmethod
    def _cancelled(exchange: Exchange) -> None:
        if exchange.open:  # the first step raised CancelledError itself: there is no task
            exchange.move(Phase.CANCELLED)

    @staticmethod
    def _failed(exchange: Exchange, exc: Exception) -> None:
        ctx = exchange.ctx
        legacy = ctx is not None and ctx.legacy
        exchange.reply(error_reply(exchange.id, exc, exchange.method, legacy))

    # --- what else a peer receives -------------------------------------------------------

    def notification(self, peer: Peer, note: Notification) -> None:
        """A notification other than ``notifications/cancelled`` (which the peer handles)."""
        if self.middleware is not None:
            self.middleware.notification(peer, note, self.notify_eras)
        else:
            self.notify_eras(peer, note)

    def notify_eras(self, peer: Peer, note: Notification) -> None:
        """Hand ``note`` to the first era that takes it."""
        for era in self.eras:
            try:
                if era.on_notification(peer, note):
                    return
            except Exception:
                log.exception("notification handler for %s failed", note.method)
                return
        log.debug("ignored notification %s", note.method)

    def response(self, peer: Peer, resp: Response) -> None:
        """A response from the peer (to a request an era sent it)."""
        for era in self.eras:
            try:
                if era.on_response(peer, resp):
                    return
            except Exception:
                log.exception("response handler failed for id %r", resp.id)
                return
        log.debug("ignored a response with id %r", resp.id)

    # --- changes, to every peer ----------------------------------------------------------

    def on_loops(self, fn: Callable[[Peer], None]) -> None:
        """Run ``fn(peer)`` for every peer, on that peer's loop thread (now, for this one)."""
        here = threading.get_ident()
        for peer in list(self.peers):
            if peer.loop_thread == here:
                fn(peer)
            else:
                peer.loop.call_soon_threadsafe(fn, peer)

    def list_changed(self, kind: str) -> None:
        """Tell every peer, through each era, that a list changed; any thread."""
        self._change(("list", kind))

    def resource_updated(self, uri: str) -> None:
        """Tell every peer, through each era, that ``uri`` changed; any thread."""
        self._change(("resource", uri))

    def _change(self, change: Change) -> None:
        """Peers on this thread hear of ``change`` now. Other threads' loops get it through
        one pending set per loop, flushed by one callback: the same change made again before
        the flush is told once (it means "fetch again" either way), so a thread reporting
        changes faster than a loop can send them never queues more than `MAX_PENDING_CHANGES`
        of them."""
        here = threading.get_ident()
        others: set[asyncio.AbstractEventLoop] = set()
        for peer in list(self.peers):
            if peer.loop_thread == here:
                self._deliver(peer, change)
            else:
                others.add(peer.loop)
        for loop in others:
            with self._pending_lock:
                pending = self._pending.setdefault(loop, {})
                first = not pending
                if change in pending or len(pending) < MAX_PENDING_CHANGES:
                    pending[change] = None
                else:
                    self._dropped += 1
                    if self._dropped == 1 or self._dropped % 10_000 == 0:
                        log.warning(
                            "%d distinct changes wait for a busy event loop: %d dropped so far",
                            MAX_PENDING_CHANGES,
                            self._dropped,
                        )
            if first:
                with contextlib.suppress(RuntimeError):  # that loop has closed
                    loop.call_soon_threadsafe(self._flush, loop)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._pending_lock:
            changes = self._pending.pop(loop, {})
        for peer in [p for p in self.peers if p.loop is loop]:
            for change in changes:
                self._deliver(peer, change)

    def _deliver(self, peer: Peer, change: Change) -> None:
        what, value = change
        for era in self.eras:
            if what == "list":
                era.list_changed(peer, value)
            else:
                era.resource_updated(peer, value)


async def _raise(exc: Exception) -> dict[str, Any]:
    raise exc


__all__ = [
    "Binding",
    "Engine",
    "Exchange",
    "FINAL",
    "Middleware",
    "MOVES",
    "Peer",
    "Phase",
    "Routed",
]
