"""2026-07-28 requests forwarded as they are to a pool of 2026-07-28 upstreams.

The protocol is stateless, so any upstream can answer any request. The bridge checks what the
transport it serves on adds to a request (HTTP headers against the body, through the
`mcpline.server.engine.Binding`) and ``_meta`` itself, so those errors come in the order the
binding specifies, then hands the request over unchanged but for its id and progress token,
which the upstream session replaces with its own (and maps back). A listen is one long
request on one upstream; its notifications carry the client's own id again.

Cancelling the exchange (the HTTP client closed its stream, a stdio client sent
``notifications/cancelled``) cancels the forwarding task, and the upstream session sends
``notifications/cancelled`` with the id it used. When an upstream dies, an idempotent request
(`mcpline.spec.IDEMPOTENT_METHODS`) is sent again on another; any other fails with -32603
saying it was not sent again; a listen is opened again on another upstream, and its client is
told that everything it listens to may have changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..errors import ClientError, ConnectionLost, InternalError, JsonRpcError
from ..jsonrpc import Notification, Response, notification, result_response
from ..protocol.headers import HeaderParam
from ..protocol.meta import RequestMeta, modern_meta, validate_request_meta
from ..server.context import Context
from ..server.outbound import Kind
from ..spec import (
    ACKNOWLEDGED,
    HEADER_MISMATCH,
    IDEMPOTENT_METHODS,
    LIST_CHANGED,
    LISTEN,
    MESSAGE,
    MODERN_VERSIONS,
    RESOURCE_UPDATED,
    SUBSCRIPTION_ID_KEY,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ..wire import encode
from .common import (
    Holder,
    StaticHost,
    incident,
    list_flags,
    progress_relay,
    request_params,
    take_progress_token,
    upstream_error,
)
from .pool import Pool
from .upstream import Upstream

if TYPE_CHECKING:
    from ..server.engine import Engine, Exchange, Peer, Routed

log = logging.getLogger("mcpline.bridge")

RESEND = 2
"""How many times an idempotent request is sent again after its upstream died."""


def lost_error(method: str, exc: ClientError, resent: int) -> InternalError:
    """The -32603 of a request whose upstream died under it."""
    if method in IDEMPOTENT_METHODS:
        tail = f"it was sent again {resent} times" if resent else "it was not sent again"
    else:
        tail = f"{method} is not idempotent, so it was not sent again"
    what = incident(f"the bridged server went away while handling {method}", exc)
    return InternalError(f"Internal error: {what}; {tail}")


def rewrite_subscription(params: dict[str, Any], sid: Any) -> dict[str, Any]:
    """``params`` with ``_meta.subscriptionId`` set to ``sid`` (the client's listen id)."""
    out = dict(params)
    meta = out.get("_meta")
    out["_meta"] = {**(meta if isinstance(meta, dict) else {}), SUBSCRIPTION_ID_KEY: sid}
    return out


class ForwardEra:
    """Forwards modern requests to ``pool``; ``attribute`` makes a request that asks for log
    messages hold its upstream alone (on stdio no log line names its request)."""

    def __init__(self, pool: Pool, host: StaticHost, *, attribute: bool = True) -> None:
        self.pool = pool
        self.host = host
        self.attribute = attribute
        self.tool_params: dict[str, tuple[HeaderParam, ...]] = {}
        """``x-mcp-header`` parameters of every tool listed so far (shared by the pool)."""
        self.listens: set[_Listen] = set()
        self.engine: Engine | None = None
        """Where notifications go when they are not attributed (set by the backend)."""
        self._watches: set[asyncio.Future[None]] = set()
        pool.on_open.append(self._opened)

    async def _opened(self, up: Upstream) -> None:
        up.share_tools(self.tool_params)
        up.on_notification = lambda method, params: self.notice(up, method, params)
        if self.pool.size > 1:
            task = asyncio.ensure_future(self._watch(up))
            self._watches.add(task)
            task.add_done_callback(self._watches.discard)

    async def _watch(self, up: Upstream) -> None:
        """The bridge's own listen on one upstream of several, for the list changes made in
        that process: the client listens held by the others hear of them too (the pool is
        one server to its clients, as replicas sharing a notification bus are)."""
        desc = up.description
        if desc is None:
            return
        flags = list_flags(desc.capabilities)
        if not flags:
            return
        params = {
            "_meta": modern_meta(desc.protocol_version, {}, {"name": "mcpline-bridge"}),
            "notifications": flags,
        }
        with contextlib.suppress(ClientError, JsonRpcError):
            await up.request(LISTEN, params, on_notification=lambda m, p: self._fan_out(up, m))

    def _fan_out(self, source: Upstream, method: str) -> None:
        flag = LIST_NOTIFICATION.get(method)
        if flag is None:
            return
        for listen in list(self.listens):
            if listen.host is not source and listen.honoured.get(flag) is True:
                meta = {SUBSCRIPTION_ID_KEY: listen.exchange.id}
                listen.exchange.send(notification(method, {"_meta": meta}), Kind.STREAM)

    def versions(self) -> tuple[str, ...]:
        """The modern revisions the bridged server said it supports."""
        first = self.pool.first
        found = (
            ()
            if first is None or first.description is None
            else first.description.supported_versions
        )
        return tuple(found) or MODERN_VERSIONS

    # --- Era ----------------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> Routed:
        req = exchange.request
        binding = exchange.binding
        if binding is None:
            meta = validate_request_meta(req.params, self.versions())
        else:
            meta = validate_request_meta(req.params, self.versions(), binding.check_version)
            binding.check_request(req)
        ctx = Context(exchange, meta, self.host)
        if req.method == LISTEN:
            return ctx, self._listen(exchange), True
        return ctx, self._forward(exchange, meta), False

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        return False

    def on_response(self, peer: Peer, resp: Response) -> bool:
        return False

    def list_changed(self, peer: Peer, kind: str) -> None:
        """Listens are the upstream's: it tells them itself."""

    def resource_updated(self, peer: Peer, uri: str) -> None:
        """Listens are the upstream's: it tells them itself."""

    # --- forwarding ---------------------------------------------------------------------------

    def notice(self, up: Upstream, method: str, params: Any) -> None:
        """What an upstream sends outside any request. Shared upstreams (``attribute``): a
        log message goes to the request that holds the upstream (and asked for that level),
        the rest has nobody to go to. Otherwise (one client, as on stdio): to every peer."""
        if not self.attribute:
            if self.engine is not None:
                data = encode(notification(method, params))
                for peer in list(self.engine.peers):
                    peer.send(data, Kind.ADVISORY)
            return
        holder = up.holder
        if method == MESSAGE and isinstance(holder, Holder) and holder.log(params):
            return
        log.debug("%s: %s dropped (no request of a client it belongs to)", up.label, method)

    async def _forward(self, exchange: Exchange, meta: RequestMeta) -> dict[str, Any]:
        req = exchange.request
        params, token = take_progress_token(request_params(req.params))
        relay = progress_relay(exchange, token)
        exclusive = self.attribute and meta.log_level is not None
        holder = Holder(exchange, meta) if exclusive else None
        resent = 0
        refreshed = False
        while True:
            up = await self.pool.acquire(exclusive=exclusive, holder=holder)
            try:
                result = await up.request(req.method, params, on_progress=relay)
            except JsonRpcError as exc:
                if exc.code != HEADER_MISMATCH or req.method != TOOLS_CALL or refreshed:
                    raise
                refreshed = True  # the tool's x-mcp-header parameters changed: list, retry
                await self._refresh_tools(up, params)
                continue
            except ConnectionLost as exc:
                if req.method in IDEMPOTENT_METHODS and resent < RESEND and exchange.open:
                    resent += 1
                    log.info("%s lost with %s (%s); sending it again", req.method, up.label, exc)
                    continue
                raise lost_error(req.method, exc, resent) from None
            except ClientError as exc:
                raise upstream_error(f"{req.method} could not be forwarded", exc) from None
            finally:
                self.pool.release(up, holder)
            if req.method == TOOLS_LIST:
                up.remember_tools(result)
            return result

    async def _refresh_tools(self, up: Upstream, params: dict[str, Any]) -> None:
        meta = params.get("_meta")
        cursor: Any = None
        for _ in range(100):
            page: dict[str, Any] = {"_meta": meta} if isinstance(meta, dict) else {}
            if cursor is not None:
                page["cursor"] = cursor
            try:
                result = await up.request(TOOLS_LIST, page)
            except (ClientError, JsonRpcError):
                return
            up.remember_tools(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                return

    # --- listens ------------------------------------------------------------------------------

    async def _listen(self, exchange: Exchange) -> dict[str, Any]:
        """One ``subscriptions/listen`` on one upstream, opened again on another if that one
        dies; ended with its completion result when the bridge shuts down or the client stops
        reading."""
        req = exchange.request
        params, _ = take_progress_token(request_params(req.params))
        cid = exchange.id
        peer = exchange.peer
        acked = False
        entry = _Listen(exchange)

        def graceful(_peer: Any = None) -> None:
            if exchange.open:
                exchange.reply(result_response(cid, listen_result(cid)))
            if exchange.task is not None:
                exchange.task.cancel()

        def on_note(method: str, note: Any) -> None:
            nonlocal acked
            if not isinstance(note, dict):
                return
            out = rewrite_subscription(note, cid)
            if method == ACKNOWLEDGED:
                if acked:  # opened again after a crash: what changed meanwhile is unknown
                    _may_have_changed(exchange, out, cid)
                    return
                acked = True
                honoured = out.get("notifications")
                entry.honoured = honoured if isinstance(honoured, dict) else {}
                self.listens.add(entry)
            exchange.send(notification(method, out), Kind.STREAM)

        peer.close_hooks.append(graceful)
        peer.overflow_hooks.append(graceful)
        try:
            while True:
                up = await self.pool.acquire()
                entry.host = up
                try:
                    result = await up.request(LISTEN, params, on_notification=on_note)
                except ConnectionLost as exc:
                    if not exchange.open:
                        raise
                    log.info("a listen lost %s (%s); listening on another", up.label, exc)
                    continue
                except ClientError as exc:
                    raise upstream_error("the listen failed", exc) from None
                finally:
                    self.pool.release(up)
                return rewrite_subscription(result, cid)
        finally:
            self.listens.discard(entry)
            with contextlib.suppress(ValueError):
                peer.close_hooks.remove(graceful)
            with contextlib.suppress(ValueError):
                peer.overflow_hooks.remove(graceful)


class _Listen:
    """A client's listen, the upstream it is open on, and what that upstream honoured."""

    __slots__ = ("exchange", "honoured", "host")

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.honoured: dict[str, Any] = {}
        self.host: Upstream | None = None


LIST_NOTIFICATION = {method: flag for flag, method in LIST_CHANGED.values()}
"""A list-changed notification → the listen filter flag that asks for it."""


def listen_result(cid: Any) -> dict[str, Any]:
    """The graceful completion of a listen with id ``cid``."""
    return {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: cid}}


def _may_have_changed(exchange: Exchange, ack: dict[str, Any], cid: Any) -> None:
    honoured = ack.get("notifications")
    if not isinstance(honoured, dict):
        return
    meta = {SUBSCRIPTION_ID_KEY: cid}
    for _kind, (flag, method) in LIST_CHANGED.items():
        if honoured.get(flag) is True:
            exchange.send(notification(method, {"_meta": meta}), Kind.STREAM)
    uris = honoured.get("resourceSubscriptions")
    if isinstance(uris, list):
        for uri in uris:
            if isinstance(uri, str):
                exchange.send(
                    notification(RESOURCE_UPDATED, {"_meta": meta, "uri": uri}), Kind.STREAM
                )


__all__ = ["ForwardEra", "RESEND", "listen_result", "lost_error", "rewrite_subscription"]
