"""2026-07-28 clients of a legacy-only server: the bridge translates.

Each upstream of the pool is a legacy session the bridge opened itself (``initialize`` with
every client capability, `mcpline.bridge.upstream.BRIDGE_CAPABILITIES`). A modern request is
answered statelessly from it:

* ``server/discover`` comes from the ``InitializeResult`` (capabilities, instructions, the
  server's identity as ``_meta`` serverInfo); ``ttlMs: 0`` and ``cacheScope: "private"``
  mark it, and every cacheable result, as not cacheable: the legacy server said nothing.
* Other requests lose their modern ``_meta`` keys and go to the server; results get
  ``resultType``, the caching hints and serverInfo; -32002 (resource not found) is -32602.
* ``tools/call``, ``prompts/get`` and ``resources/read`` hold their upstream alone (so the
  server's own requests during the call are theirs). When the server asks for input
  (``elicitation/create``, ``sampling/createMessage``, ``roots/list``), the call is *parked*:
  the client gets an ``InputRequiredResult`` whose sealed ``requestState`` names the parked
  call, the server's request stays unanswered, and the client's retry answers it with its
  ``inputResponses``; the call then goes on, maybe to another round. A parked call waits at
  most ``input_timeout`` seconds. Input the request's client did not declare is refused to
  the server at once (as a client lacking the capability would).
* A request with ``logLevel`` holds its upstream alone too, after ``logging/setLevel``; the
  server's log messages then go to it, filtered by its level.
* ``subscriptions/listen`` is served by the bridge: list changes the sessions announce go to
  every listen that asked, and the resources a listen names are subscribed to with
  ``resources/subscribe`` on every upstream while some listen wants them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections import Counter
from typing import TYPE_CHECKING, Any, cast

from ..errors import (
    ClientError,
    ConnectionLost,
    InvalidParams,
    JsonRpcError,
    MethodNotFound,
)
from ..jsonrpc import Notification, Response
from ..protocol.capabilities import has_flag
from ..protocol.meta import RequestMeta, validate_request_meta
from ..protocol.state import MemoryNonceLedger, StateSealer
from ..server.context import Context
from ..server.mrtr import InputRequest, InputRequired, can_ask, run_modern
from ..server.subscriptions import Subscriptions, honour
from ..spec import (
    COMPLETE,
    DISCOVER,
    ELICIT,
    IDEMPOTENT_METHODS,
    INPUT_METHODS,
    INTERNAL_ERROR,
    LEGACY_ONLY_METHODS,
    LIST_CHANGED,
    LISTEN,
    MESSAGE,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_VERSIONS,
    MRTR_METHODS,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCE_UPDATED,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    ROOTS,
    SET_LEVEL,
    SUBSCRIBE,
    TOOLS_CALL,
    TOOLS_LIST,
    UNSUBSCRIBE,
)
from .common import (
    Holder,
    StaticHost,
    legacy_params,
    modern_capabilities,
    modern_error,
    modern_result,
    progress_relay,
    request_params,
    spawn,
    take_progress_token,
    upstream_error,
)
from .forward import RESEND, lost_error
from .pool import Pool
from .upstream import Upstream

if TYPE_CHECKING:
    from ..server.engine import Engine, Exchange, Peer, Routed
    from ..server.methods import Dispatcher

log = logging.getLogger("mcpline.bridge")

METHOD_CAPABILITY = {
    TOOLS_LIST: "tools",
    TOOLS_CALL: "tools",
    RESOURCES_LIST: "resources",
    RESOURCES_TEMPLATES_LIST: "resources",
    RESOURCES_READ: "resources",
    PROMPTS_LIST: "prompts",
    PROMPTS_GET: "prompts",
    COMPLETE: "completions",
}
"""The legacy capability each method needs (-32601 without it)."""
LIST_NOTIFICATIONS = {method: kind for kind, (_flag, method) in LIST_CHANGED.items()}
BATCH_SECONDS = 0.02
"""How long a round waits, after the server's first request for input, for more of them."""


class _Ask:
    """One request of the server for input, waiting for a client's answer."""

    __slots__ = ("key", "method", "params", "future", "sent")

    def __init__(self, key: str, method: str, params: dict[str, Any]) -> None:
        self.key = key
        self.method = method
        self.params = params
        self.future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.sent = False
        """Put to a client in an InputRequiredResult (and not yet answered)."""

    def refuse(self, exc: JsonRpcError) -> None:
        if not self.future.done():
            self.future.set_exception(exc)


class Call(Holder):
    """One ``tools/call``, ``prompts/get`` or ``resources/read`` on a legacy upstream, across
    the client's rounds: the server's requests for input are its `_Ask`s."""

    def __init__(self, era: TranslateEra, exchange: Exchange, meta: RequestMeta) -> None:
        super().__init__(exchange, meta)
        self.era = era
        self.id = secrets.token_urlsafe(16)
        self.up: Upstream | None = None
        self.token: Any = None
        self.asks: dict[str, _Ask] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Future[dict[str, Any]] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.asked = False
        self._numbers = itertools.count(1)
        self._done = False

    def round(self, exchange: Exchange, meta: RequestMeta, token: Any) -> None:
        """The client's (next) request of this call: progress and logs go to it now."""
        self.exchange = exchange
        self.meta = meta
        self.token = token

    def start(self, up: Upstream, method: str, params: dict[str, Any]) -> None:
        self.up = up
        self.task = asyncio.ensure_future(up.request(method, params, on_progress=self._progress))

    def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        relay = progress_relay(self.exchange, self.token)
        if relay is not None:
            relay(progress, total, message)

    async def ask(self, method: str, params: Any) -> dict[str, Any]:
        """The server's request ``method``: wait for a client's answer."""
        if method not in INPUT_METHODS:
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        key = f"{method.partition('/')[0]}-{next(self._numbers)}"
        ask = _Ask(key, method, params if isinstance(params, dict) else {})
        self.asks[key] = ask
        self.asked = True
        self.changed.set()
        try:
            return await ask.future
        finally:
            self.asks.pop(key, None)

    def answer(self, responses: dict[str, dict[str, Any]]) -> None:
        """Give the server the client's answers; asks left unanswered are put again."""
        for key, ask in list(self.asks.items()):
            if key in responses and not ask.future.done():
                ask.future.set_result(responses[key])
            else:
                ask.sent = False

    async def next(self) -> dict[str, Any] | list[_Ask]:
        """The call's result (or its error, raised), or new asks to put to the client."""
        assert self.task is not None
        while True:
            if self.task.done():
                return self.task.result()
            if self._fresh():
                await asyncio.sleep(BATCH_SECONDS)  # asks made together go out together
                if self.task.done():
                    return self.task.result()
                return self._fresh()
            self.changed.clear()
            waiter: asyncio.Future[Any] = asyncio.ensure_future(self.changed.wait())
            task: asyncio.Future[Any] = self.task
            try:
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()

    def _fresh(self) -> list[_Ask]:
        return [a for a in self.asks.values() if not a.sent and not a.future.done()]

    def park(self, timeout: float) -> None:
        self.timer = asyncio.get_running_loop().call_later(timeout, self.era.expire, self)

    def unpark(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def finish(self) -> None:
        """The call is over: its upstream is free again."""
        if self._done:
            return
        self._done = True
        self.unpark()
        for ask in self.asks.values():
            ask.refuse(JsonRpcError(INTERNAL_ERROR, "Internal error: the request ended"))
        if self.up is not None:
            self.era.pool.release(self.up, self)

    def abort(self) -> None:
        """End the call unanswered: the server is told (``notifications/cancelled``)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.finish()


class _ListenHost:
    """What `mcpline.server.subscriptions.Subscriptions` asks of a dispatcher."""

    def __init__(self, era: TranslateEra) -> None:
        self._era = era

    def capabilities(self) -> dict[str, Any]:
        return self._era.capabilities()

    def watchable(self, uri: str) -> bool:
        return has_flag(self._era.legacy_capabilities(), "resources.subscribe")

    def finish_result(self, result: dict[str, Any]) -> dict[str, Any]:
        return modern_result(LISTEN, result, self._era.server_info())


class TranslateEra:
    """Serves 2026-07-28 requests from a pool of legacy upstreams (see the module docs).

    ``state_key`` seals ``requestState`` (else ``$MCPLINE_STATE_KEY``, else a random key:
    parked calls live in this process anyway).
    """

    def __init__(
        self,
        pool: Pool,
        host: StaticHost,
        *,
        input_timeout: float = 300.0,
        state_key: bytes | str | None = None,
    ) -> None:
        self.pool = pool
        self.host = host
        self.input_timeout = input_timeout
        self.engine: Engine | None = None
        """Where list changes and resource updates are announced (set by the backend)."""
        self.sealer = StateSealer(
            state_key, scope="mcpline-bridge", ttl=input_timeout, ledger=MemoryNonceLedger()
        )
        self.parked: dict[str, Call] = {}
        self.subs = Subscriptions(cast("Dispatcher", _ListenHost(self)))
        self.watched: Counter[str] = Counter()
        pool.on_open.append(self._opened)

    async def _opened(self, up: Upstream) -> None:
        up.on_notification = lambda method, params: self.notice(up, method, params)
        up.on_request = lambda method, params: self.server_request(up, method, params)
        for uri in list(self.watched):
            await self._subscribe_one(up, uri, True)

    # --- what the legacy server is ------------------------------------------------------------

    def legacy_capabilities(self) -> dict[str, Any]:
        first = self.pool.first
        return {} if first is None or first.description is None else first.description.capabilities

    def capabilities(self) -> dict[str, Any]:
        return modern_capabilities(self.legacy_capabilities())

    def server_info(self) -> dict[str, Any] | None:
        first = self.pool.first
        return None if first is None or first.description is None else first.description.server_info

    # --- Era ----------------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> Routed:
        req = exchange.request
        binding = exchange.binding
        if binding is None:
            meta = validate_request_meta(req.params, MODERN_VERSIONS)
        else:
            meta = validate_request_meta(req.params, MODERN_VERSIONS, binding.check_version)
            binding.check_request(req)
        ctx = Context(exchange, meta, self.host)
        method = req.method
        params = request_params(req.params)
        if method == DISCOVER:
            return ctx, self._discover(), False
        if method == LISTEN:
            return ctx, self._listen(ctx, params), True
        if method in LEGACY_ONLY_METHODS:
            raise MethodNotFound(
                f"Method not found: {method} is not part of MCP {', '.join(MODERN_VERSIONS)}"
            )
        need = METHOD_CAPABILITY.get(method)
        if need is not None and need not in self.legacy_capabilities():
            raise MethodNotFound(f"Method not found: {method} (this server does not offer {need})")
        if method in MRTR_METHODS:

            async def handler(c: Context, p: dict[str, Any]) -> dict[str, Any]:
                return await self._call(exchange, c, meta, p)

            work = run_modern(handler, ctx, params, self.sealer)
        else:
            work = self._plain(exchange, meta, params)
        return ctx, self._finished(method, work), False

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        return False

    def on_response(self, peer: Peer, resp: Response) -> bool:
        return False

    def list_changed(self, peer: Peer, kind: str) -> None:
        self.subs.list_changed(peer, kind)

    def resource_updated(self, peer: Peer, uri: str) -> None:
        self.subs.resource_updated(peer, uri)

    # --- requests -----------------------------------------------------------------------------

    async def _finished(self, method: str, work: Any) -> dict[str, Any]:
        result: dict[str, Any] = await work
        return modern_result(method, result, self.server_info())

    async def _discover(self) -> dict[str, Any]:
        first = self.pool.first
        result: dict[str, Any] = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": self.capabilities(),
        }
        if first is not None and first.description is not None and first.description.instructions:
            result["instructions"] = first.description.instructions
        return modern_result(DISCOVER, result, self.server_info())

    async def _set_level(self, up: Upstream, meta: RequestMeta) -> None:
        if meta.log_level is None or "logging" not in self.legacy_capabilities():
            return
        try:
            await up.request(SET_LEVEL, {"level": meta.log_level})
        except (ClientError, JsonRpcError) as exc:
            log.debug("%s: logging/setLevel failed: %s", up.label, exc)

    async def _plain(
        self, exchange: Exchange, meta: RequestMeta, params: dict[str, Any]
    ) -> dict[str, Any]:
        method = exchange.request.method
        body, token = take_progress_token(params)
        body = legacy_params(body)
        exclusive = meta.log_level is not None
        holder = Holder(exchange, meta) if exclusive else None
        relay = progress_relay(exchange, token)
        resent = 0
        while True:
            up = await self.pool.acquire(exclusive=exclusive, holder=holder)
            try:
                await self._set_level(up, meta)
                result = await up.request(method, body, on_progress=relay)
            except JsonRpcError as exc:
                raise modern_error(exc, method, params) from None
            except ConnectionLost as exc:
                if method in IDEMPOTENT_METHODS and resent < RESEND and exchange.open:
                    resent += 1
                    continue
                raise lost_error(method, exc, resent) from None
            except ClientError as exc:
                raise upstream_error(f"{method} could not be forwarded", exc) from None
            finally:
                self.pool.release(up, holder)
            return result

    async def _call(
        self, exchange: Exchange, ctx: Context, meta: RequestMeta, params: dict[str, Any]
    ) -> dict[str, Any]:
        """One round of an MRTR-capable request (run by `run_modern`, which has checked and
        opened ``requestState`` and ``inputResponses`` into the context)."""
        method = exchange.request.method
        body, token = take_progress_token(params)
        body = legacy_params(body)
        state = ctx.state
        resent = 0
        if state is None:
            call = await self._start(exchange, meta, method, body)
        else:
            cid = state.get("call") if isinstance(state, dict) else None
            found = self.parked.pop(cid, None) if isinstance(cid, str) else None
            if found is None:
                raise InvalidParams(
                    "Invalid params: the call this requestState continues is no longer waiting "
                    "(it timed out, or the bridge restarted); send the request again without "
                    "inputResponses and requestState"
                )
            call = found
            call.unpark()
            call.answer(ctx.input_responses)
        call.round(exchange, meta, token)
        while True:
            try:
                got = await call.next()
            except InputRequired:
                raise
            except JsonRpcError as exc:
                call.finish()
                raise modern_error(exc, method, params) from None
            except ConnectionLost as exc:
                call.finish()
                if method in IDEMPOTENT_METHODS and not call.asked and resent < RESEND:
                    resent += 1
                    call = await self._start(exchange, meta, method, body)
                    call.round(exchange, meta, token)
                    continue
                raise lost_error(method, exc, resent) from None
            except ClientError as exc:
                call.finish()
                raise upstream_error(f"{method} failed", exc) from None
            except BaseException:
                call.abort()
                raise
            if isinstance(got, dict):
                call.finish()
                return got
            askable = self._askable(got, meta)
            if not askable:
                continue
            for key in askable:
                call.asks[key].sent = True
            self.parked[call.id] = call
            call.park(self.input_timeout)
            raise InputRequired(askable, {"call": call.id})

    async def _start(
        self, exchange: Exchange, meta: RequestMeta, method: str, body: dict[str, Any]
    ) -> Call:
        call = Call(self, exchange, meta)
        up = await self.pool.acquire(exclusive=True, holder=call)
        call.up = up
        try:
            await self._set_level(up, meta)
        except BaseException:
            call.finish()
            raise
        call.start(up, method, body)
        return call

    def _askable(self, asks: list[_Ask], meta: RequestMeta) -> dict[str, InputRequest]:
        """The asks this request's client can answer; the others are refused to the server."""
        out: dict[str, InputRequest] = {}
        for ask in asks:
            request = InputRequest(ask.method, ask.params)
            if can_ask(meta.client_capabilities, request):
                out[ask.key] = request
            else:
                need = next(iter(request.required_capabilities()))
                ask.refuse(
                    JsonRpcError(
                        MISSING_REQUIRED_CLIENT_CAPABILITY if ask.method == ELICIT else -1,
                        f"the client of this request did not declare {need}",
                    )
                )
        return out

    def expire(self, call: Call) -> None:
        """A parked call whose client never came back."""
        if self.parked.get(call.id) is call:
            del self.parked[call.id]
            log.info("a parked %s call timed out waiting for its client's input", call.id[:6])
            call.abort()

    # --- what the legacy server sends ---------------------------------------------------------

    def notice(self, up: Upstream, method: str, params: Any) -> None:
        engine = self.engine
        kind = LIST_NOTIFICATIONS.get(method)
        if kind is not None:
            if engine is not None:
                engine.list_changed(kind)
            return
        if method == RESOURCE_UPDATED:
            uri = params.get("uri") if isinstance(params, dict) else None
            if isinstance(uri, str) and engine is not None:
                engine.resource_updated(uri)
            return
        holder = up.holder
        if method == MESSAGE and isinstance(holder, Holder) and holder.log(params):
            return
        log.debug("%s: %s dropped (no request of a client it belongs to)", up.label, method)

    async def server_request(self, up: Upstream, method: str, params: Any) -> Any:
        """A request of the legacy server: the call holding its upstream asks its client."""
        holder = up.holder
        if isinstance(holder, Call):
            return await holder.ask(method, params)
        if method == ROOTS:
            return {"roots": []}  # outside a request there is no client to have roots
        raise JsonRpcError(
            INTERNAL_ERROR,
            f"Internal error: {method} outside a tools/call, prompts/get or resources/read "
            "has no client to ask (the bridge serves stateless 2026-07-28 clients)",
        )

    # --- listens ------------------------------------------------------------------------------

    async def _listen(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        try:
            honoured = honour(params.get("notifications"), self.capabilities(), self._watchable)
        except JsonRpcError:
            honoured = {}  # Subscriptions.listen answers the same error
        uris = [u for u in honoured.get("resourceSubscriptions", ()) if isinstance(u, str)]
        for uri in uris:
            self.watched[uri] += 1
            if self.watched[uri] == 1:
                for up in self.pool.upstreams():
                    await self._subscribe_one(up, uri, True)
        try:
            return await self.subs.listen(ctx, params)
        finally:
            for uri in uris:
                self.watched[uri] -= 1
                if self.watched[uri] <= 0:
                    del self.watched[uri]
                    for up in self.pool.upstreams():
                        spawn(self._subscribe_one(up, uri, False))

    def _watchable(self, uri: str) -> bool:
        return has_flag(self.legacy_capabilities(), "resources.subscribe")

    async def _subscribe_one(self, up: Upstream, uri: str, on: bool) -> None:
        with contextlib.suppress(ClientError, JsonRpcError):
            await up.request(SUBSCRIBE if on else UNSUBSCRIBE, {"uri": uri})


__all__ = ["Call", "METHOD_CAPABILITY", "TranslateEra"]
