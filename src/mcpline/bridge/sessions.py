"""Legacy (``initialize``) sessions forwarded whole: one upstream of its own per session.

A 2025-11-25 session is stateful (negotiated version, client capabilities, log level,
subscriptions), so each session of a client gets a fresh upstream (a child process of the
stdio server, or a legacy session with the remote endpoint) and everything is passed through:
``initialize`` and ``notifications/initialized``, every request (ids and progress tokens
mapped by the upstream session), the client's cancellations. The server's own requests
(elicitation, sampling, roots) go to the client on the stream of the request in flight (the
most recent when there are several; the session's own stream when there is none) and the
client's answers go back to the server. Notifications that belong to no request go to the
session's own stream (on HTTP, the GET stream). Closing the session ends its upstream.

The session lives in ``peer.scoped`` under `mcpline.server.legacy.SESSION_KEY`, with the
``version`` attribute the HTTP transport reads to mark and prime its streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..client.session import header_channel
from ..errors import ClientError, ConnectionLost, InternalError, JsonRpcError
from ..jsonrpc import Notification, Response, notification
from ..server.context import Context
from ..server.legacy import SESSION_KEY, negotiate
from ..server.outbound import Kind
from ..spec import (
    CANCELLED,
    INITIALIZE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    MESSAGE,
)
from ..wire import encode
from .common import (
    StaticHost,
    incident,
    progress_relay,
    request_params,
    spawn,
    take_progress_token,
    upstream_error,
)
from .upstream import Upstream

if TYPE_CHECKING:
    from ..server.engine import Exchange, Peer, Routed

log = logging.getLogger("mcpline.bridge")

SessionOpener = Callable[[], Awaitable[Upstream]]
"""Opens the upstream of one new session (no handshake: the client's is forwarded)."""


class PassSession:
    """One client session and the upstream that serves it."""

    def __init__(self, version: str) -> None:
        self.version = version
        """The negotiated revision (the requested one until the server answers)."""
        self.upstream: Upstream | None = None
        self.ready = asyncio.Event()
        self.failed: str | None = None
        self.active: list[Exchange] = []
        """Requests being forwarded, oldest first."""
        self.pending: dict[int, asyncio.Future[Response]] = {}
        """The server's requests awaiting the client's answer, by the id the client saw."""
        self.ids = itertools.count(1)
        self.closed = False


class SessionEra:
    """Serves ``initialize`` sessions by forwarding them, each to an upstream of its own.

    ``open_upstream`` opens one (a child process, a remote session); ``request_timeout``
    bounds how long the client may take to answer one of the server's requests;
    ``on_dead(peer)`` is called when a session's upstream died, so the transport can end the
    session (an HTTP client then gets 404 and starts a new one).
    """

    def __init__(
        self,
        open_upstream: SessionOpener,
        host: StaticHost,
        *,
        request_timeout: float = 300.0,
        on_dead: Callable[[Peer], None] | None = None,
    ) -> None:
        self.open_upstream = open_upstream
        self.host = host
        self.request_timeout = request_timeout
        self.on_dead = on_dead
        self.sessions: set[PassSession] = set()

    @staticmethod
    def session(peer: Peer) -> PassSession | None:
        found = peer.scoped.get(SESSION_KEY)
        return found if isinstance(found, PassSession) else None

    # --- Era ----------------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> Routed | None:
        req = exchange.request
        peer = exchange.peer
        if req.method == INITIALIZE:
            if peer.scoped.get(SESSION_KEY) is not None:
                raise JsonRpcError(
                    INVALID_REQUEST, "Invalid Request: this connection is already initialized"
                )
            params = req.params
            requested = params.get("protocolVersion") if type(params) is dict else None
            if type(requested) is not str:
                raise JsonRpcError(
                    INVALID_PARAMS,
                    "Invalid params: initialize needs a string protocolVersion",
                    {"supported": list(LEGACY_VERSIONS)},
                )
            bs = PassSession(negotiate(requested))
            peer.scoped[SESSION_KEY] = bs
            peer.close_hooks.append(self._closed)
            self.sessions.add(bs)
            ctx = Context(exchange, None, self.host)
            ctx.legacy_version = bs.version
            return ctx, self._initialize(exchange, bs), False
        found = self.session(peer)
        if found is None:
            return None
        ctx = Context(exchange, None, self.host)
        ctx.legacy_version = found.version
        return ctx, self._forward(exchange, found), False

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        bs = self.session(peer)
        if bs is None:
            return False
        spawn(self._notify(bs, note))
        return True

    def on_response(self, peer: Peer, resp: Response) -> bool:
        bs = self.session(peer)
        if bs is None or type(resp.id) is not int:
            return False
        fut = bs.pending.get(resp.id)
        if fut is None or fut.done():
            return False
        fut.set_result(resp)
        return True

    def list_changed(self, peer: Peer, kind: str) -> None:
        """A session hears of changes from its own upstream."""

    def resource_updated(self, peer: Peer, uri: str) -> None:
        """A session hears of updates from its own upstream."""

    # --- the session --------------------------------------------------------------------------

    async def _initialize(self, exchange: Exchange, bs: PassSession) -> dict[str, Any]:
        peer = exchange.peer
        try:
            up = await self.open_upstream()
        except ClientError as exc:
            bs.failed = incident("the bridged server did not start", exc)
            bs.ready.set()
            raise InternalError(f"Internal error: {bs.failed}") from None
        if bs.closed:
            await up.aclose()
            raise InternalError("Internal error: the session ended before it started")
        up.on_notification = lambda method, params: self._notice(peer, bs, method, params)
        up.on_request = lambda method, params: self._ask(peer, bs, method, params)
        bs.upstream = up
        spawn(self._watch(peer, bs, up))
        try:
            result = await up.request(
                INITIALIZE, request_params(exchange.request.params), cancellable=False
            )
        except ConnectionLost as exc:
            bs.failed = incident("the bridged server went away", exc)
            raise InternalError(f"Internal error: {bs.failed}") from None
        except ClientError as exc:
            bs.failed = incident("initialize failed", exc)
            raise InternalError(f"Internal error: {bs.failed}") from None
        except JsonRpcError as exc:
            bs.failed = exc.message
            raise
        finally:
            bs.ready.set()
        version = result.get("protocolVersion")
        if isinstance(version, str):
            bs.version = version
            if (headed := header_channel(up.channel)) is not None:
                headed.agreed_version = version  # an HTTP upstream sends it as a header
        return result

    async def _watch(self, peer: Peer, bs: PassSession, up: Upstream) -> None:
        """A session whose upstream dies is over: its state died with it."""
        reason = await up.lost
        if bs.closed:
            return
        bs.failed = incident(
            "the bridged server of this session went away", f"{up.label}: {reason}"
        )
        await up.aclose()
        if self.on_dead is not None:
            self.on_dead(peer)

    async def _closed(self, peer: Peer) -> None:
        bs = self.session(peer)
        if bs is None:
            return
        bs.closed = True
        self.sessions.discard(bs)
        for fut in bs.pending.values():
            if not fut.done():
                fut.cancel()
        up, bs.upstream = bs.upstream, None
        if up is not None:
            await up.aclose()

    async def _usable(self, bs: PassSession) -> Upstream:
        await bs.ready.wait()
        if bs.failed is not None or bs.upstream is None:
            raise JsonRpcError(
                INVALID_REQUEST,
                f"Invalid Request: this session is over ({bs.failed or 'it ended'}); "
                "send initialize for a new one",
            )
        return bs.upstream

    async def _forward(self, exchange: Exchange, bs: PassSession) -> dict[str, Any]:
        up = await self._usable(bs)
        req = exchange.request
        params, token = take_progress_token(request_params(req.params))
        bs.active.append(exchange)
        try:
            return await up.request(req.method, params, on_progress=progress_relay(exchange, token))
        except ConnectionLost as exc:
            what = incident(
                f"the bridged server of this session went away while handling {req.method}", exc
            )
            raise InternalError(f"Internal error: {what}; it was not sent again") from None
        except ClientError as exc:
            raise upstream_error(f"{req.method} could not be forwarded", exc) from None
        finally:
            with contextlib.suppress(ValueError):
                bs.active.remove(exchange)

    async def _notify(self, bs: PassSession, note: Notification) -> None:
        if note.method == CANCELLED:
            return  # the transport cancels the exchange; the upstream session says so itself
        try:
            up = await self._usable(bs)
        except JsonRpcError:
            return
        await up.notify(note.method, note.params)

    # --- what the server sends ------------------------------------------------------------------

    def _notice(self, peer: Peer, bs: PassSession, method: str, params: Any) -> None:
        note = notification(method, params)
        if method == MESSAGE and len(bs.active) == 1 and bs.active[0].send(note, Kind.ADVISORY):
            return
        peer.send(encode(note), Kind.SESSION)

    async def _ask(self, peer: Peer, bs: PassSession, method: str, params: Any) -> Any:
        """One of the server's requests, put to the client under an id of the bridge's."""
        rid = next(bs.ids)
        fut: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        target = bs.active[-1] if bs.active else None
        message = jsonrpc.request(rid, method, params)
        bs.pending[rid] = fut
        try:
            sent = (
                target.send(message, Kind.PEER_REQUEST)
                if target is not None and target.open
                else peer.send(encode(message), Kind.SESSION)
            )
            if not sent:
                raise JsonRpcError(
                    INTERNAL_ERROR, f"Internal error: the client is not reading; {method} not sent"
                )
            try:
                if target is not None:
                    with target.waiting():
                        resp = await asyncio.wait_for(fut, self.request_timeout)
                else:
                    resp = await asyncio.wait_for(fut, self.request_timeout)
            except asyncio.TimeoutError:
                self._cancel(peer, rid, "timed out")
                raise JsonRpcError(
                    INTERNAL_ERROR,
                    f"Internal error: the client did not answer {method} within "
                    f"{self.request_timeout:g} s",
                ) from None
            except asyncio.CancelledError:
                if not bs.closed:
                    self._cancel(peer, rid, "the server cancelled its request")
                raise
        finally:
            bs.pending.pop(rid, None)
        if resp.error is not None:
            err = resp.error if isinstance(resp.error, dict) else {}
            code = err.get("code")
            raise JsonRpcError(
                code if type(code) is int else INTERNAL_ERROR,
                str(err.get("message", "the client answered with an error")),
                err.get("data"),
            )
        return resp.result

    @staticmethod
    def _cancel(peer: Peer, rid: int, reason: str) -> None:
        if not peer.closing.is_set():
            note = notification(CANCELLED, {"requestId": rid, "reason": reason})
            peer.send(encode(note), Kind.ADVISORY)


__all__ = ["PassSession", "SessionEra", "SessionOpener"]
