"""The ASGI 3 application of one `mcpline.Server`: its MCP endpoint over Streamable HTTP.

Every request climbs the rungs of `mcpline.transports.http.admission` in this order: the
header block's size (431), ``Origin`` (403), ``Host`` (421), the HTTP method (405), the bearer
token when a verifier is set (401); a POST then its ``Content-Type`` (415), ``Accept`` (406)
and body (413 too large, 503 over the budget of bodies in flight, 408 too slow, 400 not
JSON-RPC). Then the era is decided per request: an ``MCP-Protocol-Version`` that is
not a legacy revision, or modern ``_meta`` on a request without a session, is 2026-07-28
(`mcpline.transports.http.modern`); everything else belongs to a legacy session
(`mcpline.transports.http.legacy`). GET and DELETE exist only for legacy sessions (405
otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ... import jsonrpc
from ...jsonrpc import Invalid, Notification, Request, Response
from ...protocol.meta import has_modern_meta
from ...server.owners import owner_key
from ...spec import INTERNAL_ERROR, INVALID_REQUEST, LISTEN
from ...wire import encode
from . import admission, auth_gate, legacy, modern, respond, sse
from .headers import PROTOCOL_VERSION, SESSION_ID, Headers, is_modern_version
from .legacy import Sessions
from .probes import Probes
from .security import WELL_KNOWN, Gatekeeper, TokenVerifier
from .security import check_metadata as _check_metadata
from .timers import FixedDelayTimers

if TYPE_CHECKING:
    from ...protocol.headers import HeaderParam
    from ...server.auth.proxy import OAuthProxy
    from ...server.engine import Engine
    from ...server.runtime import Served
    from .modern import PostPeer

log = logging.getLogger("mcpline.server")

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The default body limit (or the server's ``max_line_bytes``, when smaller)."""
DEFAULT_MAX_OUTBOUND_TOTAL = 64 * 1024 * 1024
"""Bytes waiting to be written to clients, across every response."""
DEFAULT_MAX_BODY_TOTAL = 64 * 1024 * 1024
"""The default bytes of request bodies held at once (or ``max_body_bytes``, when larger)."""
ALLOW = b"GET, POST, DELETE"
CORS_ALLOW_HEADERS = (
    b"content-type, accept, authorization, last-event-id, mcp-protocol-version, "
    b"mcp-session-id, mcp-method, mcp-name"
)
CORS_EXPOSE = b"mcp-session-id, www-authenticate"


class HttpApp:
    """An ASGI application serving ``server`` at ``path`` (see ``docs/http.md``).

    ``allowed_origins``: browser origins allowed besides the endpoint's own on a loopback
    bind (``"*"`` allows any); ``allowed_hosts``: ``Host`` names accepted besides loopback
    names on a loopback bind (and the only ones elsewhere, when given);
    ``verify_token(token) -> principal | None`` (sync or async) requires a bearer token,
    and handlers see the principal as ``ctx.principal``; ``resource_metadata`` is the RFC
    9728 document served at ``/.well-known/oauth-protected-resource`` (and with the
    endpoint's path appended), named in every 401. Limits: ``max_body_bytes`` (413),
    ``max_body_total_bytes`` bytes of bodies held at once across every request (503 with
    ``Retry-After``, decided from ``Content-Length`` before reading, and while reading a
    chunked body), ``max_header_bytes`` (431), ``body_timeout`` seconds for the whole body
    (408), ``max_requests`` POSTs in progress at once (503), of which one client (its
    principal, else its address) may have ``max_requests_per_client``, listens among them
    ``max_listens_per_client`` (429; see `admission.Shares`). Bytes waiting to be written
    to clients, across every response: ``max_outbound_total_bytes`` (64 MiB; the responses
    with the most queued end first, see `sse.OutboundBudget`). ``keepalive`` seconds of
    silence on an event stream bring a comment line. ``max_body_bytes`` defaults to 4 MiB,
    or the server's ``max_line_bytes`` when smaller; ``max_body_total_bytes`` to 64 MiB, or
    ``max_body_bytes`` when larger. Legacy sessions: at most ``max_sessions``, and
    ``max_sessions_per_client`` for one client, closed after ``session_idle_timeout`` idle
    seconds; a new one only ever ends a session idle for ``session_evictable_after`` seconds
    (or the same client's own least recently used idle one), else is refused (503, or 429
    for a client at its share); ``session_rate`` bounds the new sessions a client opens per
    second (429). Each of their streams keeps ``replay_bytes`` for
    resumption, and tells the client to wait ``retry_ms`` before reconnecting.
    ``oauth_proxy`` (`mcpline.server.auth.proxy.OAuthProxy`) serves an authorization server
    beside the endpoint, whose tokens it verifies and which its metadata names.
    ``health`` serves ``/healthz`` and ``/readyz``; ``metrics`` serves ``/metrics`` (behind
    the same checks and token as the endpoint), see docs/observability.md.
    """

    def __init__(
        self,
        server: Served,
        path: str = "/mcp",
        *,
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        verify_token: TokenVerifier | None = None,
        resource_metadata: dict[str, Any] | None = None,
        max_body_bytes: int | None = None,
        max_body_total_bytes: int | None = None,
        max_outbound_total_bytes: int = DEFAULT_MAX_OUTBOUND_TOTAL,
        max_header_bytes: int = 16 * 1024,
        body_timeout: float = 30.0,
        max_requests: int = 1024,
        max_requests_per_client: int = 128,
        max_listens_per_client: int = 32,
        keepalive: float | None = 15.0,
        max_sessions: int = 1024,
        max_sessions_per_client: int = 16,
        session_idle_timeout: float = 1800.0,
        session_evictable_after: float = 600.0,
        session_rate: float | None = None,
        replay_bytes: int = 1024 * 1024,
        retry_ms: int = 1000,
        health: bool = True,
        metrics: bool = False,
        oauth_proxy: OAuthProxy | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        if max_body_bytes is None:
            max_body_bytes = min(DEFAULT_MAX_BODY_BYTES, server.options.max_line_bytes)
        for name, value in (
            ("max_body_bytes", max_body_bytes),
            ("max_header_bytes", max_header_bytes),
            ("max_sessions", max_sessions),
            ("max_sessions_per_client", max_sessions_per_client),
        ):
            if value < 1:
                raise ValueError(f"{name} must be positive")
        if min(body_timeout, session_idle_timeout, session_evictable_after, keepalive or 1) <= 0:
            raise ValueError("timeouts and intervals must be positive")
        self.server = server
        self.path = path.rstrip("/") or "/"
        self._metadata_routes = (WELL_KNOWN, WELL_KNOWN + (self.path if self.path != "/" else ""))
        self.gate = Gatekeeper(allowed_origins, allowed_hosts)
        self.oauth_proxy = oauth_proxy
        if oauth_proxy is not None:
            verify_token = verify_token or oauth_proxy.verifier()
            resource_metadata = resource_metadata or oauth_proxy.resource_metadata()
        self.verify_token = verify_token
        if verify_token is None and server.registry.scopes:
            log.warning(
                "scopes are declared but this app verifies no tokens (verify_token): "
                "every caller may call everything"
            )
        self.resource_metadata = (
            None if resource_metadata is None else _check_metadata(resource_metadata)
        )
        self.max_body_bytes = max_body_bytes
        if max_body_total_bytes is None:
            max_body_total_bytes = max(DEFAULT_MAX_BODY_TOTAL, max_body_bytes)
        elif max_body_total_bytes < max_body_bytes:
            raise ValueError(
                f"max_body_total_bytes ({max_body_total_bytes}) must be at least max_body_bytes "
                f"({max_body_bytes}): a body that large could never be read"
            )
        self.bodies = admission.BodyBudget(max_body_total_bytes)
        """Bytes of request bodies held at once, across every request (``max_body_total_bytes``)."""
        self.max_header_bytes = max_header_bytes
        self.body_timeout = body_timeout
        self.body_deadlines = FixedDelayTimers(body_timeout)
        """The ``body_timeout`` of every body being read."""
        self.watch_after = FixedDelayTimers(modern.WATCH_AFTER)
        """When each 2026-07-28 request still running begins to watch for its client's
        disconnection."""
        self.outbound = sse.OutboundBudget(max_outbound_total_bytes)
        """Bytes waiting to be written to clients, every response's
        (``max_outbound_total_bytes``)."""
        self.shares = admission.Shares(
            max_requests, max_requests_per_client, max_listens_per_client
        )
        """Requests and listens in progress, per client and in all."""
        self.keepalive = keepalive
        self.replay_bytes = replay_bytes
        self.retry_ms = retry_ms
        self.legacy = bool(server.runtime.engine.others)
        """Whether the server serves legacy (initialize) sessions (`Server(legacy=...)`)."""
        self.allow = ALLOW if self.legacy else b"POST"
        """The methods this endpoint takes (its ``Allow`` header)."""
        self.sessions = Sessions(
            self,
            max_sessions,
            session_idle_timeout,
            per_client=max_sessions_per_client,
            evictable_after=session_evictable_after,
            rate=session_rate,
        )
        self.posts: set[PostPeer] = set()
        self.on_startup: list[Callable[[HttpApp], None]] = []
        """Called (on the event loop) once `startup` has run."""
        self._stack: contextlib.AsyncExitStack | None = None
        self._expiry: asyncio.Task[None] | None = None
        self._ending: asyncio.Task[None] | None = None
        self._stopping = False
        self.probes = Probes(self, health=health, metrics=metrics)
        """``/healthz``, ``/readyz`` and ``/metrics`` (see `mcpline.transports.http.probes`)."""

    @property
    def stopping(self) -> bool:
        """The app takes no more requests (it is shutting down)."""
        return self._stopping

    @property
    def engine(self) -> Engine:
        return self.server.runtime.engine

    def header_params(self, tool: str) -> Sequence[HeaderParam]:
        """The ``x-mcp-header`` parameters of a tool (none for an unknown one)."""
        found = self.server.registry.tools.get(tool)
        return () if found is None else found.header_params

    # --- start and stop --------------------------------------------------------------------

    async def startup(self) -> None:
        """Enter the server's lifespan hook and worker threads; start expiring sessions."""
        if self._stack is not None:
            return
        stack = contextlib.AsyncExitStack()
        self._stack = stack
        await stack.enter_async_context(self.server.runtime.services.running())
        self._expiry = asyncio.ensure_future(self.sessions.expire())
        for hook in self.on_startup:
            hook(self)

    def begin_ending(self) -> None:
        """`end_streams` in the background (from a signal handler, say)."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self.end_streams())

    async def end_streams(self) -> None:
        """Take no more requests; end every stream: open listens get their completion
        result, legacy sessions close."""
        self._stopping = True
        if self._expiry is not None:
            self._expiry.cancel()
        for peer in list(self.posts):
            await peer.close()
        await self.sessions.close_all()

    async def shutdown(self) -> None:
        """`end_streams`, let requests in flight finish for the server's ``shutdown_grace``,
        cancel the rest, then leave the lifespan hook."""
        await self.end_streams()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.server.options.shutdown_grace
        while self.posts and loop.time() < deadline:
            await asyncio.sleep(0.02)
        for peer in list(self.posts):
            if peer.exchange is not None:
                peer.exchange.cancel()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _lifespan(self, receive: respond.Receive, send: respond.Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # --- ASGI ------------------------------------------------------------------------------

    async def __call__(
        self, scope: dict[str, Any], receive: respond.Receive, send: respond.Send
    ) -> None:
        if scope["type"] != "http":
            await self._other(scope, receive, send)
            return
        if self._stack is None and not self._stopping:
            await self.startup()  # mounted without lifespan events: start on first use
        route = self._route(scope)
        method = scope["method"]
        if route != self.path or route in self._metadata_routes:
            await self._elsewhere(route, method, scope, receive, send)
            return
        headers = Headers(scope.get("headers", ()))
        refusal = self.screen(scope, headers)
        if refusal is not None:
            await respond.refuse(send, refusal)
            return
        if method == "OPTIONS":
            await self._preflight(headers, send)
            return
        extra = self.cors(headers)
        refusal = admission.method(method, self.allow)
        principal = None
        if refusal is not None:
            await respond.refuse(send, refusal, extra)
            return
        if self.verify_token is not None:
            principal = await auth_gate.authenticate(
                self.verify_token, scope, headers, self.resource_metadata, send, extra
            )
            if principal is None:
                return
        client = admission.client_key(
            None if principal is None else owner_key(principal), scope.get("client")
        )
        if method == "POST":
            await self._post(headers, principal, client, receive, send, extra)
        elif not self.legacy or is_modern_version(headers.get(PROTOCOL_VERSION)):
            await respond.refuse(send, admission.not_allowed(b"POST"), extra)
        elif SESSION_ID not in headers:
            await respond.refuse(send, admission.not_allowed(self.allow), extra)
        elif method == "GET":
            await legacy.get(self, headers, principal, receive, send, extra)
        else:
            await legacy.delete(self, headers, principal, send, extra)

    async def _other(
        self, scope: dict[str, Any], receive: respond.Receive, send: respond.Send
    ) -> None:
        """A scope other than ``http``: lifespan events are served, websockets refused."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1003})

    def cors(self, headers: Headers) -> list[tuple[bytes, bytes]]:
        """The CORS headers of a response to a request from an accepted ``Origin``."""
        origin = headers.get("origin")
        if origin is None:
            return []
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", CORS_EXPOSE),
            (b"vary", b"origin"),
        ]

    def screen(self, scope: dict[str, Any], headers: Headers) -> admission.Refusal | None:
        """The rungs every request climbs first, on any path the app serves: the header
        block's size (431), ``Origin`` (403) and ``Host`` (421)."""
        bound = _bound(scope)
        return (
            admission.header_size(headers.size, self.max_header_bytes)
            or admission.origin(self.gate, headers.get("origin"), bound)
            or admission.host(self.gate, headers.get("host"), bound)
        )

    def _route(self, scope: dict[str, Any]) -> str:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path.rstrip("/") or "/"

    async def _elsewhere(
        self,
        route: str,
        method: str,
        scope: dict[str, Any],
        receive: respond.Receive,
        send: respond.Send,
    ) -> None:
        """A path other than the endpoint's: metadata, the OAuth proxy, probes, else 404."""
        if route in self._metadata_routes:
            await self._metadata(method, send)
            return
        if self.oauth_proxy is not None and self.oauth_proxy.handles(route):
            await self.oauth_proxy.handle(route, scope, receive, send)
            return
        probe = self.probes.routes.get(route)
        if probe is not None:
            await probe(scope, send)
            return
        await respond.start(send, 404, [(b"content-type", b"text/plain")])
        await respond.body(send, b"Not Found")

    async def _post(
        self,
        headers: Headers,
        principal: Any,
        client: str,
        receive: respond.Receive,
        send: respond.Send,
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        length = admission.declared_length(headers.get("content-length"))
        hold = self.bodies.hold()
        try:
            refusal = admission.content_type(headers.get("content-type"))
            refusal = refusal or admission.accept(headers.get("accept"))
            if refusal is None and length:
                refusal = admission.body_size(length, self.max_body_bytes) or hold.grow(length)
            if refusal is not None:
                await respond.refuse(send, refusal, extra)
                return
            try:
                data = await respond.read_body(
                    receive, self.max_body_bytes, hold, self.body_deadlines
                )
            except respond.Disconnected:
                return
            except (respond.BodyTooLarge, respond.OverBudget, respond.BodyTimeout) as exc:
                await respond.refuse(send, self._unread(exc), extra)
                return
            await self._answer(data, headers, principal, client, receive, send, extra)
        finally:
            hold.release()

    def _unread(self, exc: Exception) -> admission.Refusal:
        """The answer to a body that could not be read whole."""
        if isinstance(exc, respond.OverBudget):
            return exc.refusal
        if isinstance(exc, respond.BodyTimeout):
            why = f"Request Timeout: the body did not arrive within {self.body_timeout:g} s"
            return admission.Refusal(408, why, close=True, limit="body_timeout")
        return admission.too_large(self.max_body_bytes)

    async def _answer(
        self,
        data: bytes,
        headers: Headers,
        principal: Any,
        client: str,
        receive: respond.Receive,
        send: respond.Send,
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        message = jsonrpc.parse(data)
        if isinstance(message, Invalid):
            owed = message.reply or jsonrpc.error_response(None, INVALID_REQUEST, message.reason)
            await respond.reply(send, encode(owed), extra)
            return
        if self._stopping:
            why = "Service Unavailable: the server is shutting down"
            await respond.error(send, 503, INTERNAL_ERROR, why, _id(message), extra)
            return
        if principal is not None and isinstance(message, Request):
            needed = self.server.registry.required_scopes(message.method, message.params)
            if needed and not auth_gate.holds(principal, needed):
                await auth_gate.insufficient_scope(
                    send, needed, message.id, self.resource_metadata, extra
                )
                return
        listen = isinstance(message, Request) and message.method == LISTEN
        refusal = self.shares.admit(client, listen)
        if refusal is not None:
            await respond.refuse(send, refusal, extra, _id(message))
            return
        try:
            if not self._modern(message, headers):
                await legacy.post(self, message, headers, principal, client, receive, send, extra)
            elif isinstance(message, Request):
                await modern.serve(self, message, headers, principal, receive, send, extra)
            elif isinstance(message, Notification):
                await respond.empty(send, 202, extra)
            else:
                why = (
                    "Invalid Request: a 2026-07-28 client sends no responses (the server asks "
                    "for input with InputRequiredResult)"
                )
                await respond.error(send, 400, INVALID_REQUEST, why, None, extra)
        finally:
            self.shares.release(client, listen)

    def _modern(self, message: Request | Notification | Response, headers: Headers) -> bool:
        if not self.legacy or is_modern_version(headers.get(PROTOCOL_VERSION)):
            return True
        return (
            isinstance(message, Request)
            and SESSION_ID not in headers
            and has_modern_meta(message.params)
        )

    def open_post(self, peer: PostPeer) -> None:
        self.posts.add(peer)
        self.engine.peers.add(peer)

    def close_post(self, peer: PostPeer) -> None:
        self.posts.discard(peer)
        self.engine.peers.discard(peer)

    # --- small answers ---------------------------------------------------------------------

    async def _preflight(self, headers: Headers, send: respond.Send) -> None:
        out = [(b"allow", self.allow)]
        if headers.get("origin") is not None:
            out += [
                *self.cors(headers),
                (b"access-control-allow-methods", self.allow),
                (b"access-control-allow-headers", _requested(headers) or CORS_ALLOW_HEADERS),
                (b"access-control-max-age", b"600"),
            ]
        await respond.empty(send, 204, out)

    async def _metadata(self, method: str, send: respond.Send) -> None:
        if self.resource_metadata is None:
            await respond.start(send, 404, [(b"content-type", b"text/plain")])
            await respond.body(send, b"Not Found")
            return
        if method not in ("GET", "HEAD"):
            await respond.empty(send, 405, [(b"allow", b"GET")])
            return
        data = encode(self.resource_metadata)
        await respond.json(send, 200, data, [(b"access-control-allow-origin", b"*")])


def _bound(scope: dict[str, Any]) -> tuple[str, int] | None:
    server = scope.get("server")
    if not server or server[1] is None:
        return None
    return str(server[0]), int(server[1])


def _id(message: Request | Notification | Response) -> Any:
    return message.id if isinstance(message, Request) else None


def _requested(headers: Headers) -> bytes:
    wanted = headers.get("access-control-request-headers")
    if not wanted:
        return b""
    names = [n.strip().lower() for n in wanted.split(",") if n.strip()]
    return ", ".join(names).encode("latin-1")


__all__ = [
    "ALLOW",
    "CORS_ALLOW_HEADERS",
    "CORS_EXPOSE",
    "DEFAULT_MAX_BODY_TOTAL",
    "DEFAULT_MAX_OUTBOUND_TOTAL",
    "DEFAULT_MAX_BODY_BYTES",
    "HttpApp",
]
