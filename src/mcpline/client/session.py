"""The client's request/response engine for one byte stream (one process or one socket).

Bytes become events in `mcpline.inbound.Inbound` (the same pipeline the server uses); this
module is the client's policy on them: it correlates ids to pending requests, progress
tokens to callbacks, subscription ids to listeners and (legacy era only) server-initiated
requests to host handlers, and decides what an over-long or unreadable line fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .. import jsonrpc
from ..errors import (
    ClientError,
    ConnectionLost,
    JsonRpcError,
    ProtocolError,
    RequestTimeout,
    ServerError,
)
from ..inbound import Event, Inbound, Invalid, Notification, Oversized, Request, Response
from ..jsonrpc import RequestId
from ..spec import (
    CANCELLED,
    INTERNAL_ERROR,
    PARSE_ERROR,
    PROGRESS,
    PROGRESS_TOKEN_KEY,
    SUBSCRIPTION_ID_KEY,
)
from ..wire import DEFAULT_MAX_LINE_BYTES, encode
from ._callbacks import MAX_CALLBACK_TASKS as MAX_CALLBACK_TASKS
from ._callbacks import CallbackTasks
from ._deadlines import Deadlines, Pending

if TYPE_CHECKING:
    from ..protocol.headers import HeaderParam

log = logging.getLogger("mcpline.client")

ProgressCallback = Callable[[float, "float | None", "str | None"], Any]
NotificationCallback = Callable[[str, Any], None]
RequestHandler = Callable[[str, Any], Awaitable[Any]]
"""Answers a server-initiated request (method, params) with its result, or raises
`JsonRpcError`."""
Trace = Callable[[str, bytes], None]
"""``trace(direction, line)``: direction is ``"send"`` or ``"recv"``."""

MAX_SERVER_REQUESTS = 16
"""Server-initiated requests handled at once by default; more are refused with -32603."""

MAX_OUTBOUND_BYTES = 16 * 1024 * 1024
"""Bytes written to a server that it has not read yet, by default, before the connection is
failed (as the server bounds what waits for a client: docs/backpressure.md)."""


class Channel(Protocol):
    """The way to one server: the session hands `send` each outgoing message, as the dict it
    encoded and as its line (a byte stream writes the line; HTTP POSTs the message, and
    feeds each response stream through its own `Session.new_inbound` and
    `Session.dispatch`, so that streams never mix their lines).

    A channel that can tell how many bytes it wrote that the server has not taken yet offers
    ``buffered()``, and ``abort()`` to drop them and close at once: the session then bounds
    what it writes without waiting (`Session.check_outbound`).
    """

    label: str

    def send(self, message: dict[str, Any], line: bytes) -> None: ...

    async def drain(self) -> None: ...

    async def aclose(self, within: float | None = None) -> None:
        """Close; ``within`` (seconds) bounds the graces given to the server."""


@runtime_checkable
class HeaderChannel(Protocol):
    """A channel that also says in headers of its own what its messages carry (HTTP)."""

    tool_headers: Mapping[str, tuple[HeaderParam, ...]]
    """The ``x-mcp-header`` parameters of each listed tool, by name (set by whoever lists
    them), mirrored into ``Mcp-Param-*`` headers."""
    agreed_version: str | None
    """The legacy protocol version ``initialize`` agreed on, sent as a header."""


def header_channel(channel: Channel | None) -> HeaderChannel | None:
    """``channel`` if it carries headers of its own (`HeaderChannel`), else None."""
    return channel if isinstance(channel, HeaderChannel) else None


class Session:
    """Correlates the messages of one connection. Feed it bytes; it resolves futures.

    Notifications that belong to no request (progress and listen streams are routed here)
    go to ``on_notification``; once ``accept_requests`` is set (legacy era), the server's
    own requests go to ``on_request``.

    ``max_line_bytes`` bounds memory: a longer line is discarded as it arrives and fails the
    requests it could belong to. Garbage lines are logged and skipped. At most
    ``max_server_requests`` server-initiated requests are handled at once; more are answered
    with -32603 at once. The session's own requests wait for the channel to drain; what it
    writes without waiting (answers to the server, cancellations) fails the connection once
    ``max_outbound_bytes`` written bytes wait for a server that does not read them
    (`check_outbound`).
    """

    def __init__(
        self,
        on_notification: NotificationCallback,
        on_request: RequestHandler,
        *,
        ids: Iterator[int] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        trace: Trace | None = None,
        label: str = "server",
        max_server_requests: int = MAX_SERVER_REQUESTS,
        max_outbound_bytes: int = MAX_OUTBOUND_BYTES,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self._host_notification = on_notification
        self._host_request = on_request
        self.label = label
        self.channel: Channel | None = None
        self.accept_requests = False
        """Answer server-initiated requests (only a legacy-era session does)."""
        self._ids = ids if ids is not None else itertools.count(1)
        self._max_line_bytes = max_line_bytes
        self._trace_recv = functools.partial(trace, "recv") if trace else None
        self._inbound = self.new_inbound()
        self._pending: dict[RequestId, Pending] = {}
        self._tokens: dict[RequestId, Pending] = {}
        self._listeners: dict[RequestId, Pending] = {}
        self._served: dict[RequestId, asyncio.Task[None]] = {}
        self.max_server_requests = max_server_requests
        self.max_outbound_bytes = max_outbound_bytes
        self.refused = 0
        """Server-initiated requests refused because ``max_server_requests`` were running."""
        self.ignored = 0
        """Server-initiated requests ignored because the era allows none."""
        self.callbacks = CallbackTasks()
        self._trace = trace
        self._garbage = 0
        self.answered = False
        """True once the server sent a response (to anything)."""
        self.closed = False
        self.close_reason: ClientError | None = None
        self.lost: asyncio.Future[ClientError] = self.loop.create_future()
        self.deadlines = Deadlines(self.loop, self._pending, self._expire)
        """Times out the requests in flight (one timer for all of them)."""

    # --- input --------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes from the server's output."""
        for event in self._inbound.feed(data):
            self._dispatch(event)

    def eof(self, reason: str | ClientError = "the server closed its output") -> None:
        """The server's output ended; ``reason`` (or the error made of it) fails what waits."""
        for event in self._inbound.eof():
            self._dispatch(event)
        self.connection_lost(reason if isinstance(reason, ClientError) else ConnectionLost(reason))

    def new_inbound(self) -> Inbound:
        """A pipeline like the session's own (same line limit and trace), for one stream of
        a message-oriented channel; its events go to `dispatch`."""
        return Inbound(self._max_line_bytes, on_line=self._trace_recv)

    def dispatch(self, event: Event) -> None:
        """Act on one event of a stream read through `new_inbound`."""
        if not self.closed:
            self._dispatch(event)

    def is_pending(self, rid: RequestId) -> bool:
        """True while request ``rid`` waits for its answer."""
        return rid in self._pending

    def fail(self, rid: RequestId, exc: ClientError) -> None:
        """Fail request ``rid`` with ``exc`` (its stream ended or broke without an answer);
        nothing is sent to the server."""
        p = self._pending.get(rid)
        if p is None:
            return
        self._forget(p)
        if not p.future.done():
            p.future.set_exception(exc)

    def pause(self, rid: RequestId) -> None:
        """Stop the clock of request ``rid`` (the user is authorizing it, say) until
        `resume`."""
        p = self._pending.get(rid)
        if p is not None:
            p.deadline = p.hard_deadline = None

    def resume(self, rid: RequestId) -> None:
        """Start the clock of request ``rid`` afresh: its whole timeouts from now."""
        p = self._pending.get(rid)
        if p is None:
            return
        now = self.loop.time()
        if p.timeout is not None:
            p.deadline = now + p.timeout
            self.deadlines.arm(p.deadline)
        if p.max_timeout is not None:
            p.hard_deadline = now + p.max_timeout
            self.deadlines.arm(p.hard_deadline)

    def _dispatch(self, event: Event) -> None:
        kind = type(event)
        if kind is Response:
            self.answered = True
            self._on_response(event)  # type: ignore[arg-type]
        elif kind is Notification:
            self._on_notification(event.method, event.params)  # type: ignore[union-attr]
        elif kind is Request:
            self._on_request(event)  # type: ignore[arg-type]
        elif kind is Oversized:
            if not event.followup:  # type: ignore[union-attr]
                self._oversized(event)  # type: ignore[arg-type]
        else:
            self._invalid(event)  # type: ignore[arg-type]

    def _invalid(self, event: Invalid) -> None:
        """Garbage is logged (rate-limited) and skipped, unless it is an unusable answer."""
        if self._unusable_answer(event.line, event.reason):
            return
        self._garbage += 1
        level = (
            logging.WARNING if self._garbage <= 20 or self._garbage % 1000 == 0 else logging.DEBUG
        )
        log.log(
            level,
            "%s wrote a line that is not a JSON-RPC message (%s), skipped: %r",
            self.label,
            event.reason,
            event.line[:200],
        )

    def _unusable_answer(self, line: bytes, reason: str) -> bool:
        """A line we cannot use whose top level names a pending request as its answer
        (e.g. a string escape strict UTF-8 refuses): fail that request now instead of
        leaving it to time out. Other garbage is skipped."""
        if b'"id"' not in line:
            return False
        env = jsonrpc.scan_envelope(line)
        p = self._pending.get(env.id) if env.id is not None and not env.has_method else None
        if p is None or type(p.id) is not type(env.id) or p.on_notification is not None:
            return False
        err = ProtocolError(
            f"{self.label}'s answer to {p.method} (id {p.id!r}) could not be used: {reason}"
        )
        log.warning("%s", err)
        self._forget(p)  # answered, so not cancelled
        if not p.future.done():
            p.future.set_exception(err)
        return True

    def _oversized(self, event: Oversized) -> None:
        """An over-long line, dropped; acted on at its first report (what its ends say).

        A notification or a server request is no answer and fails nothing (a server request
        with an id gets a -32700 reply); an answer fails its own request without cancelling
        it, or nothing if that one no longer waits; a line that names no id fails every
        request in flight but listens.
        """
        limit = event.limit
        if event.has_method:
            log.warning(
                "%s sent a %s of at least %d bytes, over the %d-byte line limit; discarded",
                self.label,
                "request" if event.has_id else "notification",
                event.size,
                limit,
            )
            if event.id is not None and self.accept_requests and not self.closed:
                self._send_quietly(
                    jsonrpc.error_response(
                        event.id, PARSE_ERROR, f"Parse error: over {limit} bytes"
                    )
                )
            return
        err = ProtocolError(
            f"{self.label} sent a message of at least {event.size} bytes, "
            f"over the {limit}-byte line limit; "
            "it was discarded"
        )
        log.warning("%s", err)
        if event.id is not None:
            p = self._pending.get(event.id)
            if p is not None:  # answered, if unreadably: fail it without cancelling
                self._forget(p)
                if not p.future.done():
                    p.future.set_exception(err)
            return
        for p in list(self._pending.values()):
            if p.on_notification is None:  # listens survive; their next message is intact
                self._fail(p, err)

    def _on_response(self, resp: Response) -> None:
        p = self._pending.get(resp.id) if resp.id is not None else None
        if p is None:
            if resp.id is None and resp.error is not None:
                log.warning(
                    "%s reported an error about an unreadable message: %r", self.label, resp.error
                )
            else:
                log.debug("dropped a response to %r (late, cancelled or unknown)", resp.id)
            return
        self._forget(p)
        if p.future.done():
            return
        if resp.error is not None:
            p.future.set_exception(ServerError.from_error(resp.error, p.method))
        else:
            p.future.set_result(resp.result)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == PROGRESS and isinstance(params, dict):
            token: Any = params.get(PROGRESS_TOKEN_KEY)
            p = self._tokens.get(token) if jsonrpc.is_valid_id(token) else None
            if p is not None and type(p.token) is type(token):
                self._progress(p, params)
                return
        if isinstance(params, dict):
            meta = params.get("_meta")
            if isinstance(meta, dict) and SUBSCRIPTION_ID_KEY in meta:
                sid = meta[SUBSCRIPTION_ID_KEY]
                lp = self._listeners.get(sid) if jsonrpc.is_valid_id(sid) else None
                if lp is not None and type(lp.id) is type(sid) and lp.on_notification is not None:
                    if method == CANCELLED:
                        self._forget(lp)
                        if not lp.future.done():
                            lp.future.set_exception(
                                ConnectionLost(
                                    f"{self.label} ended the subscription: "
                                    f"{params.get('reason', '')}",
                                    retriable=False,
                                )
                            )
                        return
                    lp.on_notification(method, params)
                    return
            if method == CANCELLED:
                rid: Any = params.get("requestId")
                task = self._served.get(rid) if jsonrpc.is_valid_id(rid) else None
                if task is not None:
                    task.cancel()
                    return
                lp = self._listeners.get(rid) if jsonrpc.is_valid_id(rid) else None
                if lp is not None:
                    self._forget(lp)
                    if not lp.future.done():
                        lp.future.set_exception(
                            ConnectionLost(f"{self.label} ended the subscription", retriable=False)
                        )
                return
        try:
            self._host_notification(method, params)
        except Exception:
            log.exception("notification handler failed for %s", method)

    def _progress(self, p: Pending, params: dict[str, Any]) -> None:
        if p.timeout is not None and p.deadline is not None:
            p.deadline = self.loop.time() + p.timeout  # the sweep timer sees it when it fires
            p.progressed = True
        if p.on_progress is not None:
            progress = params.get("progress")
            total = params.get("total")
            message = params.get("message")
            try:
                res = p.on_progress(
                    progress if isinstance(progress, (int, float)) else 0,
                    total if isinstance(total, (int, float)) else None,
                    message if isinstance(message, str) else None,
                )
                if asyncio.iscoroutine(res):
                    self.callbacks.run(res, "progress")
            except Exception:
                log.exception("progress callback failed")

    def _on_request(self, req: Request) -> None:
        if not self.accept_requests:
            self.ignored += 1
            if self.ignored == 1 or self.ignored % 1000 == 0:
                log.warning(
                    "%s sent a %s request, which this era does not allow; ignored (%d so far)",
                    self.label,
                    req.method,
                    self.ignored,
                )
            return
        if req.id in self._served:
            self._send_quietly(jsonrpc.duplicate_id_reply(req.id))
            return
        if len(self._served) >= self.max_server_requests:
            self.refused += 1
            if self.refused == 1 or self.refused % 1000 == 0:
                log.warning(
                    "%s sent more than %d requests at once; refused %d so far",
                    self.label,
                    self.max_server_requests,
                    self.refused,
                )
            why = (
                f"Internal error: the client is already handling {self.max_server_requests} "
                f"requests from the server; {req.method} refused"
            )
            self._send_quietly(jsonrpc.error_response(req.id, INTERNAL_ERROR, why))
            return
        self._served[req.id] = self.loop.create_task(self._serve(req))

    async def _serve(self, req: Request) -> None:
        try:
            params = req.params if req.params is not jsonrpc.MISSING else {}
            result = await self._host_request(req.method, params)
            msg = jsonrpc.result_response(req.id, result if result is not None else {})
        except asyncio.CancelledError:
            return
        except JsonRpcError as exc:
            msg = jsonrpc.error_response(req.id, exc.code, exc.message, exc.data)
        except Exception as exc:
            log.exception("handler for the server's %s request failed", req.method)
            msg = jsonrpc.error_response(
                req.id, INTERNAL_ERROR, f"client failed to handle {req.method}: {exc}"
            )
        finally:
            self._served.pop(req.id, None)
        self._send_quietly(msg)

    # --- output -------------------------------------------------------------------------

    def check_outbound(self, waiting: int) -> None:
        """The rule for a message sent without waiting while ``waiting`` bytes written before
        are not yet taken by the server: under ``max_outbound_bytes`` it may go (so what waits
        exceeds the bound by one message at most); at it, the connection is failed with a
        `ConnectionLost` naming the limit, raised here, and the channel must be aborted."""
        if waiting < self.max_outbound_bytes:
            return
        err = ConnectionLost(
            f"{self.label} has not read the last {waiting} bytes the client wrote to it "
            f"(the limit is max_outbound_bytes={self.max_outbound_bytes}); "
            "the connection is closed",
            retriable=False,
        )
        if not self.closed:
            log.warning("%s", err)
            self.connection_lost(err)
        raise err

    def _send(self, msg: dict[str, Any]) -> None:
        if self.closed or self.channel is None:
            raise self._closed_error()
        line = encode(msg)
        if self._trace is not None:
            self._trace("send", line[:-1])
        self.channel.send(msg, line)

    def _send_quietly(self, msg: dict[str, Any]) -> None:
        """Send without waiting for the channel to drain, unless the connection is gone
        (then there is no one to tell) or too much waits already (then it fails)."""
        if self.closed:
            return
        buffered = getattr(self.channel, "buffered", None)
        with contextlib.suppress(ClientError):
            if buffered is not None:
                try:
                    self.check_outbound(buffered())
                except ConnectionLost:
                    self.channel.abort()  # type: ignore[union-attr]
                    raise
            self._send(msg)

    def _closed_error(self) -> ClientError:
        """Why nothing can be sent, with no traceback yet: raising one stored exception
        again and again would chain every traceback to it."""
        err = self.close_reason or ConnectionLost(f"{self.label} is not connected")
        return err.with_traceback(None)

    async def notify(self, method: str, params: Any = jsonrpc.MISSING) -> None:
        self._send(jsonrpc.notification(method, params))
        if self.channel is not None:
            await self.channel.drain()

    def cancel_quietly(self, rid: RequestId, reason: str) -> None:
        """Send ``notifications/cancelled`` for ``rid``, ignoring a dead connection."""
        self._send_quietly(jsonrpc.notification(CANCELLED, {"requestId": rid, "reason": reason}))

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        max_timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_notification: NotificationCallback | None = None,
        cancellable: bool = True,
        on_sent: Callable[[RequestId], None] | None = None,
    ) -> Any:
        """Send a request and wait for its result (raises `ServerError` for an error reply).

        ``timeout`` is reset by each matching progress notification; ``max_timeout`` is never
        reset. On expiry the request is cancelled on the server and `RequestTimeout` raised.
        With ``on_notification``, messages tagged with this request's id as
        ``subscriptionId`` go to that callback (a listen stream).
        """
        if self.closed:
            raise self._closed_error()
        rid = next(self._ids)
        p = Pending(
            rid, method, self.loop.create_future(), timeout, on_progress, cancellable=cancellable
        )
        if on_progress is not None:
            params = dict(params)
            meta = dict(params.get("_meta") or {})
            meta[PROGRESS_TOKEN_KEY] = rid
            params["_meta"] = meta
            p.token = rid
            self._tokens[rid] = p
        if on_notification is not None:
            p.on_notification = on_notification
            self._listeners[rid] = p
        self._pending[rid] = p
        if timeout is not None or max_timeout is not None:
            now = self.loop.time()
            if timeout is not None:
                p.deadline = now + timeout
                self.deadlines.arm(p.deadline)
            if max_timeout is not None:
                p.max_timeout = max_timeout
                p.hard_deadline = now + max_timeout
                self.deadlines.arm(p.hard_deadline)
        try:
            self._send(jsonrpc.request(rid, method, params))
            if on_sent is not None:
                on_sent(rid)
            assert self.channel is not None
            await self.channel.drain()
            return await p.future
        except asyncio.CancelledError:
            if rid in self._pending and p.cancellable and not self.closed:
                self.cancel_quietly(rid, "the client no longer needs the result")
            raise
        finally:
            self._forget(p)

    def _forget(self, p: Pending) -> None:
        self._pending.pop(p.id, None)
        self._listeners.pop(p.id, None)
        if p.token is not None:
            self._tokens.pop(p.token, None)

    def _expire(self, p: Pending, why: str) -> None:
        """Time ``p`` out (`deadlines` found it past its deadline)."""
        self._forget(p)
        if p.cancellable:
            self.cancel_quietly(p.id, f"timed out: {why}")
        if not p.future.done():
            tail = "; it was cancelled" if p.cancellable else ""
            p.future.set_exception(
                RequestTimeout(f"{p.method} (id {p.id!r}) timed out: {why}{tail}")
            )

    def _fail(self, p: Pending, exc: ClientError) -> None:
        self._forget(p)
        if p.cancellable and not self.closed:
            self.cancel_quietly(p.id, str(exc))
        if not p.future.done():
            p.future.set_exception(exc)

    # --- end ----------------------------------------------------------------------------

    def connection_lost(self, exc: ClientError) -> None:
        """The stream ended: fail everything pending with ``exc``."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = exc
        self.deadlines.stop()
        for p in list(self._pending.values()):
            self._forget(p)
            if not p.future.done():
                p.future.set_exception(exc)
        for task in list(self._served.values()):
            task.cancel()
        if not self.lost.done():
            self.lost.set_result(exc)


__all__ = [
    "MAX_OUTBOUND_BYTES",
    "MAX_SERVER_REQUESTS",
    "CallbackTasks",
    "Channel",
    "header_channel",
    "HeaderChannel",
    "NotificationCallback",
    "ProgressCallback",
    "RequestHandler",
    "Session",
    "Trace",
]
