"""The legacy era: clients that open with ``initialize`` (2025-11-25, 2025-06-18, 2025-03-26).

An `mcpline.server.eras.Era` that `Server` adds (``legacy=True``, the default): it claims
``initialize`` and, on a peer that sent one, every request without modern ``_meta``; it
takes the client's answers to our server-to-client requests and
``notifications/initialized``, and sends list-changed and resource-updated notifications to
the session. It sees the server only through `mcpline.server.eras.EraHost`.

The session (negotiated version, client capabilities, log level, subscriptions) lives in
``peer.scoped`` of the peer that sent ``initialize``. Requests carrying modern ``_meta`` on
the same peer never reach this module: they are served statelessly under the modern rules,
so both eras work at once on one process.

Legacy results follow the legacy schema: no ``resultType``, no serverInfo ``_meta``, no
``ttlMs``/``cacheScope``, and a missing resource is -32002. An MRTR handler works unchanged:
its input requests become real ``elicitation/create``, ``sampling/createMessage`` and
``roots/list`` requests to the client, and the handler is re-run with the answers.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from .. import jsonrpc
from ..errors import JsonRpcError
from ..jsonrpc import MISSING, Response, notification
from ..protocol import MAX_INPUT_ROUNDS
from ..protocol.meta import RequestMeta
from ..spec import (
    CANCELLED,
    ELICIT,
    INITIALIZE,
    INITIALIZED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_URL_ELICITATION_FROM,
    LEGACY_VERSIONS,
    LIST_CHANGED,
    LOG_LEVEL_RANK,
    LOG_LEVELS,
    METHOD_NOT_FOUND,
    MODERN_ONLY_METHODS,
    MRTR_METHODS,
    PING,
    RESOURCE_UPDATED,
    SERVER_INFO_KEY,
    SET_LEVEL,
    SUBSCRIBE,
    TOOLS_CALL,
    UNSUBSCRIBE,
)
from ..wire import encode
from .context import Context
from .mrtr import (
    InputRequest,
    InputRequired,
    content_problems,
    refuse,
    response_problem,
    select_requests,
)
from .outbound import Kind
from .tools import error_result

if TYPE_CHECKING:
    from .engine import Exchange, Peer, Routed
    from .eras import EraHost, Method

log = logging.getLogger("mcpline.server")

SESSION_KEY = "mcpline.legacy"
"""Where a peer keeps its `LegacySession` in ``peer.scoped``."""
_STRIPPED = frozenset({"resultType", "ttlMs", "cacheScope"})
_LEGACY_CAPABILITY_KEYS = (
    "experimental",
    "logging",
    "completions",
    "prompts",
    "resources",
    "tools",
)


class ClientInputError(JsonRpcError):
    """The client could not give the input a handler asked for (error, bad answer, timeout).

    A bad answer is the client's fault (-32602); the others are -32603. In ``tools/call``
    either becomes an ``isError`` result.
    """

    def __init__(self, message: str, data: Any = None, code: int = INTERNAL_ERROR) -> None:
        super().__init__(code, message, data)


class LegacySession:
    """What ``initialize`` established for one connection."""

    def __init__(
        self, version: str, capabilities: dict[str, Any], client_info: dict[str, Any] | None
    ) -> None:
        self.version = version
        self.capabilities = capabilities
        self.client_info = client_info
        self.log_level: str | None = None
        self.answered = False
        """True once the InitializeResult was written (notifications may flow)."""
        self.initialized = asyncio.Event()
        """Set by ``notifications/initialized`` (server-to-client requests wait for it)."""
        self.subscriptions: set[str] = set()
        self.pending: dict[int, asyncio.Future[Response]] = {}
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)


def negotiate(requested: str) -> str:
    """Echo a legacy version we speak, else answer our latest."""
    return requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0]


def legacy_result(result: dict[str, Any]) -> dict[str, Any]:
    """A modern result reshaped for a legacy session (modern-only fields removed)."""
    out = {k: v for k, v in result.items() if k not in _STRIPPED}
    meta = out.get("_meta")
    if isinstance(meta, dict) and SERVER_INFO_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO_KEY}
        if rest:
            out["_meta"] = rest
        else:
            del out["_meta"]
    return out


def _json_copy(value: Any) -> Any:
    """``value`` as it would come back from JSON (what a modern retry would see)."""
    return msgspec.json.decode(msgspec.json.encode(value))


class LegacyEra:
    """Serves ``initialize`` sessions beside the modern, stateless protocol.

    ``server_info`` replaces the server's identity in the InitializeResult;
    ``request_timeout`` bounds each server-to-client request (seconds); ``max_rounds``
    bounds how often one request may ask the client for input (the handler runs once more
    with the last answers; asking again is -32603); ``max_outstanding`` bounds the
    server-to-client requests awaiting an answer per connection (one more fails the request
    that wanted it, as a client that cannot give input does). ``on_set_level(ctx, level)`` and
    ``on_subscribe(ctx, uri, subscribed)`` are optional callbacks for the application.
    """

    def __init__(
        self,
        host: EraHost,
        *,
        server_info: dict[str, Any] | None = None,
        request_timeout: float = 300.0,
        max_rounds: int = MAX_INPUT_ROUNDS,
        max_outstanding: int = 64,
    ) -> None:
        self._host = host
        self.server_info = server_info
        self.request_timeout = request_timeout
        self.max_rounds = max_rounds
        self.max_outstanding = max_outstanding
        self.on_set_level: Callable[[Context, str], Any] | None = None
        self.on_subscribe: Callable[[Context, str, bool], Any] | None = None
        self._methods: dict[
            str, Callable[[Context, LegacySession, dict[str, Any]], Awaitable[dict[str, Any]]]
        ] = {
            PING: self._ping,
            SET_LEVEL: self._set_level,
            SUBSCRIBE: self._subscribe,
            UNSUBSCRIBE: self._unsubscribe,
        }

    # --- routing -------------------------------------------------------------------------------

    @staticmethod
    def session(peer: Peer) -> LegacySession | None:
        return peer.scoped.get(SESSION_KEY)

    def route(self, exchange: Exchange) -> Routed | None:
        """Claim ``initialize`` and, once initialized, every request (the engine sends only
        requests without modern ``_meta`` here)."""
        req = exchange.request
        if req.method == INITIALIZE:
            return self._initialize(exchange)
        session = self.session(exchange.peer)
        if session is None:
            return None
        params = {} if req.params is MISSING or req.params is None else req.params
        if type(params) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "Invalid params: params must be an object")
        ctx = Context(exchange, self._meta(session, params), self._host)
        ctx.legacy_version = session.version
        own = self._methods.get(req.method)
        if own is not None:
            return ctx, own(ctx, session, params), False
        method = self._host.method(req.method)
        if method is None or req.method in MODERN_ONLY_METHODS:
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {req.method}")
        if method.capability is not None and not self._host.offers(method.capability):
            raise JsonRpcError(
                METHOD_NOT_FOUND,
                f"Method not found: {req.method} (this server does not offer {method.capability})",
            )
        return ctx, self._run(method, ctx, session, params), False

    @staticmethod
    def _meta(session: LegacySession, params: dict[str, Any]) -> RequestMeta:
        meta = params.get("_meta")
        raw = meta if type(meta) is dict else {}
        token = raw.get("progressToken")
        return RequestMeta(
            protocol_version=session.version,
            client_capabilities=session.capabilities,
            client_info=session.client_info,
            log_level=session.log_level,
            progress_token=token if type(token) in (str, int) else None,
            raw=raw,
        )

    # --- the handshake -------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """Our capabilities as a legacy ServerCapabilities: list changes are pushed to the
        session and resources can be subscribed to."""
        modern = self._host.capabilities()
        caps: dict[str, Any] = {}
        for key in _LEGACY_CAPABILITY_KEYS:
            if key in modern:
                caps[key] = dict(modern[key])
        for key in ("tools", "prompts", "resources"):
            if key in caps:
                caps[key]["listChanged"] = True
        if "resources" in caps:
            caps["resources"]["subscribe"] = True
        caps["logging"] = {}
        return caps

    def _initialize(self, exchange: Exchange) -> Routed:
        peer = exchange.peer
        if self.session(peer) is not None:
            raise JsonRpcError(
                INVALID_REQUEST, "Invalid Request: this connection is already initialized"
            )
        params = exchange.request.params
        if type(params) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "Invalid params: initialize needs params")
        requested = params.get("protocolVersion")
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        if type(requested) is not str:
            raise JsonRpcError(
                INVALID_PARAMS,
                "Invalid params: initialize needs a string protocolVersion",
                {"supported": list(LEGACY_VERSIONS)},
            )
        if type(caps) is not dict:
            raise JsonRpcError(
                INVALID_PARAMS, "Invalid params: initialize needs a capabilities object"
            )
        session = LegacySession(negotiate(requested), caps, info if type(info) is dict else None)
        peer.scoped[SESSION_KEY] = session
        peer.close_hooks.append(self._on_close)
        ctx = Context(exchange, None, self._host)
        ctx.legacy_version = session.version
        return ctx, self._initialize_result(session), False

    async def _initialize_result(self, session: LegacySession) -> dict[str, Any]:
        await self._host.wait_ready()
        result: dict[str, Any] = {
            "protocolVersion": session.version,
            "capabilities": self.capabilities(),
            "serverInfo": dict(self.server_info or self._host.info),
        }
        if self._host.instructions:
            result["instructions"] = self._host.instructions
        session.answered = True
        return result

    def on_notification(self, peer: Peer, note: jsonrpc.Notification) -> bool:
        if note.method != INITIALIZED:
            return False
        session = self.session(peer)
        if session is not None:
            session.initialized.set()
        return True

    # --- legacy-only methods -------------------------------------------------------------------

    async def _ping(
        self, ctx: Context, session: LegacySession, params: dict[str, Any]
    ) -> dict[str, Any]:
        return {}

    async def _set_level(
        self, ctx: Context, session: LegacySession, params: dict[str, Any]
    ) -> dict[str, Any]:
        level = params.get("level")
        if type(level) is not str or level not in LOG_LEVEL_RANK:
            raise JsonRpcError(
                INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}"
            )
        session.log_level = level
        ctx.meta = self._meta(session, params)
        if self.on_set_level is not None:
            await self._callback(self.on_set_level, ctx, level)
        return {}

    async def _subscribe(
        self, ctx: Context, session: LegacySession, params: dict[str, Any]
    ) -> dict[str, Any]:
        uri = self._uri(params)
        session.subscriptions.add(uri)
        if self.on_subscribe is not None:
            await self._callback(self.on_subscribe, ctx, uri, True)
        return {}

    async def _unsubscribe(
        self, ctx: Context, session: LegacySession, params: dict[str, Any]
    ) -> dict[str, Any]:
        uri = self._uri(params)
        session.subscriptions.discard(uri)
        if self.on_subscribe is not None:
            await self._callback(self.on_subscribe, ctx, uri, False)
        return {}

    def _uri(self, params: dict[str, Any]) -> str:
        if not self._host.offers("resources"):
            raise JsonRpcError(
                METHOD_NOT_FOUND, "Method not found: this server offers no resources"
            )
        uri = params.get("uri")
        if type(uri) is not str or not uri:
            raise JsonRpcError(INVALID_PARAMS, "Invalid params: uri must be a non-empty string")
        return uri

    @staticmethod
    async def _callback(fn: Callable[..., Any], *args: Any) -> None:
        res = fn(*args)
        if asyncio.iscoroutine(res):
            await res

    # --- shared methods, legacy-shaped -------------------------------------------------------

    async def _run(
        self, method: Method, ctx: Context, session: LegacySession, params: dict[str, Any]
    ) -> dict[str, Any]:
        if method.waits_for_lifespan:
            await self._host.wait_ready()
        params = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
        try:
            if ctx.method in MRTR_METHODS:
                result = await self._run_mrtr(method, ctx, session, params)
            else:
                try:
                    result = await method.handler(ctx, params)
                except InputRequired:
                    raise refuse(ctx.method) from None
        except ClientInputError as exc:
            if ctx.method != TOOLS_CALL:
                raise
            result = error_result(exc.message)
        return legacy_result(result)

    async def _run_mrtr(
        self, method: Method, ctx: Context, session: LegacySession, params: dict[str, Any]
    ) -> dict[str, Any]:
        """Run the handler; each time it asks for input, ask the client for real and re-run
        (at most ``max_rounds`` times)."""
        for asked in itertools.count():
            try:
                return await method.handler(ctx, params)
            except InputRequired as ir:
                if asked >= self.max_rounds:
                    break
                requests = select_requests(ir, session.capabilities, session.version)
                answers = await self._ask_client(ctx, session, requests)
                ctx.input_responses = answers
                ctx.state = None if ir.state is None else _json_copy(ir.state)
                ctx.asked = {k: r.method for k, r in requests.items()}
        raise JsonRpcError(
            INTERNAL_ERROR,
            f"Internal error: {ctx.method} kept asking for input after {self.max_rounds} rounds",
        )

    async def _ask_client(
        self, ctx: Context, session: LegacySession, requests: dict[str, InputRequest]
    ) -> dict[str, dict[str, Any]]:
        if not requests:
            return {}
        if not session.initialized.is_set():
            try:
                await asyncio.wait_for(session.initialized.wait(), self.request_timeout)
            except asyncio.TimeoutError:
                raise ClientInputError(
                    "the client never sent notifications/initialized; it cannot be asked for input"
                ) from None
        tasks = [
            asyncio.ensure_future(self._ask_one(ctx, session, key, req))
            for key, req in requests.items()
        ]
        try:
            pairs = await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return dict(pairs)

    async def _ask_one(
        self, ctx: Context, session: LegacySession, key: str, req: InputRequest
    ) -> tuple[str, dict[str, Any]]:
        params = dict(req.params)
        if req.method == ELICIT and session.version < LEGACY_URL_ELICITATION_FROM:
            params.pop("mode", None)  # no modes before 2025-11-25 (form only)
        resp = await self.client_request(ctx, session, req.method, params)
        if resp.is_error:
            err = resp.error if isinstance(resp.error, dict) else {}
            raise ClientInputError(
                f"the client answered {req.method} with an error: {err.get('message', resp.error)}",
                {"inputKey": key, "clientError": resp.error},
            )
        problem = response_problem(req.method, resp.result)
        if problem is not None:
            raise ClientInputError(
                f"the client's answer to {req.method} is malformed: it {problem}",
                {"inputKey": key},
                INVALID_PARAMS,
            )
        problems = content_problems(req, resp.result)
        if problems:
            # Not asked again: see `mcpline.server.mrtr.ask`.
            raise ClientInputError(
                f"the client's answer to {req.method} did not match the requested schema "
                f"({'; '.join(problems)})",
                {"inputKey": key, "problems": problems},
                INVALID_PARAMS,
            )
        return key, resp.result

    async def client_request(
        self, ctx: Context, session: LegacySession, method: str, params: dict[str, Any]
    ) -> Response:
        """Send one request to the client and await its response (at most ``request_timeout`` s).

        If the request that needed it is cancelled, the client is told with
        ``notifications/cancelled``; a timeout does the same and raises `ClientInputError`,
        as do ``max_outstanding`` requests already waiting and a client that is not reading.
        """
        exchange = ctx.exchange
        peer = exchange.peer
        if len(session.pending) >= self.max_outstanding:
            raise ClientInputError(
                f"too many requests to the client await an answer ({len(session.pending)}, "
                f"limit {self.max_outstanding}); {method} was not sent"
            )
        rid = session.next_id()
        fut: asyncio.Future[Response] = peer.loop.create_future()
        if not exchange.send(jsonrpc.request(rid, method, params), Kind.PEER_REQUEST):
            raise ClientInputError(
                f"the client is not reading what this server writes; {method} was not sent"
            )
        session.pending[rid] = fut
        try:
            with exchange.waiting():
                return await asyncio.wait_for(fut, self.request_timeout)
        except asyncio.TimeoutError:
            self._cancel_client_request(peer, rid, "timed out")
            raise ClientInputError(
                f"the client did not answer {method} within {self.request_timeout:g} s"
            ) from None
        except asyncio.CancelledError:
            self._cancel_client_request(
                peer, rid, "the request that needed this input was cancelled"
            )
            raise
        finally:
            session.pending.pop(rid, None)

    @staticmethod
    def _cancel_client_request(peer: Peer, rid: int, reason: str) -> None:
        if not peer.closing.is_set():
            note = notification(CANCELLED, {"requestId": rid, "reason": reason})
            peer.send(encode(note), Kind.ADVISORY)

    def on_response(self, peer: Peer, resp: Response) -> bool:
        session = self.session(peer)
        if session is not None and type(resp.id) is int:
            fut = session.pending.get(resp.id)
            if fut is not None and not fut.done():
                fut.set_result(resp)
                return True
        return False

    def _on_close(self, peer: Peer) -> None:
        session = self.session(peer)
        if session is None:
            return
        for fut in session.pending.values():
            if not fut.done():
                fut.set_exception(
                    ClientInputError("the client closed the connection before answering")
                )

    # --- notifications to legacy sessions -----------------------------------------------------

    def list_changed(self, peer: Peer, kind: str) -> None:
        session = self.session(peer)
        if session is not None and session.answered:
            peer.send(encode(notification(LIST_CHANGED[kind][1])), Kind.SESSION)

    def resource_updated(self, peer: Peer, uri: str) -> None:
        """``notifications/resources/updated`` when ``peer``'s session subscribed to ``uri``."""
        session = self.session(peer)
        if session is not None and session.answered and uri in session.subscriptions:
            peer.send(encode(notification(RESOURCE_UPDATED, {"uri": uri})), Kind.SESSION)


__all__ = [
    "ClientInputError",
    "legacy_result",
    "LegacyEra",
    "LegacySession",
    "negotiate",
    "SESSION_KEY",
]
