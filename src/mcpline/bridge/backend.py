"""What answers for a bridge: its upstreams and the eras that forward to them.

A `Backend` owns a `Pool` of upstreams for stateless traffic and, for legacy sessions,
either an upstream per session (`SessionEra`) or translation onto the pool
(`LegacyOverModern`). Which eras serve is known once the first upstream has shaken hands
(`start`), before anything is served; the engine is built at once with `Delegate` eras that
are pointed at the right ones then.

=====================  ============================  ===================================
bridged server          2026-07-28 clients            legacy (initialize) clients
=====================  ============================  ===================================
2026-07-28 (any era)    forwarded (`ForwardEra`)       own upstream per session, or
                                                       translated (``legacy="translate"``)
legacy only             translated (`TranslateEra`)    own upstream per session
=====================  ============================  ===================================
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..client.era import MODERN
from ..client.transports import Transport
from ..errors import ClientError, InternalError
from ..jsonrpc import Notification, Response
from ..protocol import MAX_INPUT_ROUNDS
from ..protocol.headers import HeaderParam
from ..server.context import Context
from ..server.engine import Engine
from ..spec import INITIALIZE, LISTEN, TOOLS_LIST
from ..wire import DEFAULT_MAX_LINE_BYTES
from .common import StaticHost, upstream_error
from .forward import ForwardEra
from .legacy_client import LegacyOverModern, RemoteWatch, UpstreamHost, bridge_info
from .pool import Pool
from .sessions import SessionEra
from .translate import TranslateEra
from .upstream import DEFAULT_CALL_TIMEOUT, Upstream

if TYPE_CHECKING:
    from ..server.engine import Exchange, Peer, Routed
    from ..server.eras import Era

log = logging.getLogger("mcpline.bridge")

LEGACY_MODES = ("sessions", "translate")


class Delegate:
    """An era that is one of the bridge's eras once the backend has started.

    Before that, with a ``ready`` coroutine, a request is taken at once and routed when the
    backend is ready (a stdio host is answered as soon as the server is reached, and never
    waits on its own pipe); the legacy era takes only ``initialize`` then.
    """

    def __init__(
        self,
        what: str,
        host: StaticHost,
        *,
        legacy: bool = False,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.what = what
        self.host = host
        self.legacy = legacy
        self.ready = ready
        self.target: Era | None = None

    def route(self, exchange: Exchange) -> Routed | None:
        if self.target is not None:
            return self.target.route(exchange)
        if self.ready is None:
            raise InternalError(f"Internal error: the bridge is not ready for {self.what}")
        method = exchange.request.method
        if self.legacy and method != INITIALIZE:
            return None
        ctx = Context(exchange, None, self.host)
        return ctx, self._later(exchange), method == LISTEN

    async def _later(self, exchange: Exchange) -> dict[str, Any]:
        assert self.ready is not None
        await self.ready()
        assert self.target is not None
        routed = self.target.route(exchange)
        if routed is None:
            raise InternalError(f"Internal error: {exchange.request.method} was not routed")
        ctx, work, _long = routed
        exchange.ctx = ctx
        result: dict[str, Any] = await work
        return result

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        return self.target is not None and self.target.on_notification(peer, note)

    def on_response(self, peer: Peer, resp: Response) -> bool:
        return self.target is not None and self.target.on_response(peer, resp)

    def list_changed(self, peer: Peer, kind: str) -> None:
        if self.target is not None:
            self.target.list_changed(peer, kind)

    def resource_updated(self, peer: Peer, uri: str) -> None:
        if self.target is not None:
            self.target.resource_updated(peer, uri)


@dataclass(frozen=True)
class BackendOptions:
    """How a backend runs its upstreams.

    ``pool``: upstreams for stateless traffic; ``legacy``: ``"sessions"`` (each legacy
    session gets an upstream of its own) or ``"translate"`` (legacy sessions are served from
    the pool, when the server is modern); ``attribute``: hold an upstream alone for a request
    that wants its log messages (needed when upstreams are shared by several clients);
    ``handshake_timeout``: for each upstream's handshake; ``wait_timeout``: how long a
    request waits while no upstream is alive; ``input_timeout``: how long a client may take
    to answer the server's request for input (parked calls, legacy sessions);
    ``call_timeout``: how long a forwarded request (a listen excepted) may go without an
    answer or a progress notification before it is cancelled upstream and fails;
    ``max_rounds``: how often one request of a legacy client of a 2026-07-28 server may ask
    it for input (``legacy="translate"``), as mcpline's client bounds its own rounds."""

    pool: int = 2
    legacy: str = "sessions"
    attribute: bool = True
    handshake_timeout: float = 30.0
    wait_timeout: float = 10.0
    input_timeout: float = 300.0
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    max_rounds: int = MAX_INPUT_ROUNDS
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    state_key: bytes | str | None = None
    modern_pool: int | None = None
    """The pool size when the server turns out to be modern (None: ``pool``)."""

    def __post_init__(self) -> None:
        if self.pool < 1:
            raise ValueError("the pool needs at least one upstream")
        if self.legacy not in LEGACY_MODES:
            raise ValueError(f"legacy must be one of {', '.join(LEGACY_MODES)}")
        if not self.call_timeout > 0:
            raise ValueError("call_timeout must be positive")
        if self.max_rounds < 0:
            raise ValueError("max_rounds must be at least 0")


class Backend:
    """The upstreams of one bridge (made by ``transport()``) and the eras serving them."""

    def __init__(
        self,
        transport: Callable[[], Transport],
        options: BackendOptions | None = None,
        *,
        client_info: dict[str, Any] | None = None,
    ) -> None:
        self.options = options or BackendOptions()
        self.transport = transport
        self.client_info = client_info or bridge_info()
        self.host = StaticHost(info=bridge_info())
        self.modern = Delegate("2026-07-28 requests", self.host, ready=self.ready)
        self.legacy = Delegate("legacy sessions", self.host, legacy=True, ready=self.ready)
        self.engine = Engine(self.modern, [self.legacy])
        self.pool = Pool(self._open, self.options.pool, wait_timeout=self.options.wait_timeout)
        self.forward: ForwardEra | None = None
        self.translate: TranslateEra | None = None
        self.sessions: SessionEra | None = None
        self.watch: RemoteWatch | None = None
        self.on_dead: Callable[[Peer], None] | None = None
        """Called when a legacy session's own upstream died (the HTTP front ends it)."""
        self.failure: str | None = None
        """Why `start` failed, if it did."""
        self.started = False
        self._starting: asyncio.Future[None] | None = None

    @property
    def label(self) -> str:
        return self.transport().label

    async def _open(self, handshake: str) -> Upstream:
        up = Upstream(
            self.transport(),
            max_line_bytes=self.options.max_line_bytes,
            call_timeout=self.options.call_timeout,
        )
        await up.open(
            handshake, client_info=self.client_info, timeout=self.options.handshake_timeout
        )
        return up

    async def _open_session(self) -> Upstream:
        up = Upstream(
            self.transport(),
            max_line_bytes=self.options.max_line_bytes,
            call_timeout=self.options.call_timeout,
        )
        await up.open("none", client_info=self.client_info)
        return up

    def _dead(self, peer: Peer) -> None:
        if self.on_dead is not None:
            self.on_dead(peer)

    async def ready(self) -> None:
        """Start the backend unless it is started or starting; wait for it. A failure is
        -32603 naming it (and the next call tries again)."""
        if self.started:
            return
        if self._starting is None:
            self._starting = asyncio.ensure_future(self.start())
        try:
            await asyncio.shield(self._starting)
        except ClientError as exc:
            if self.pool.first is None:
                self._starting = None  # nothing was set up: the next request tries again
            raise upstream_error("the bridge cannot reach the bridged server", exc) from None

    async def start(self) -> None:
        """Open the first upstream, choose the eras, then open the rest of the pool; raises
        `ClientError` when the server cannot be started or reached."""
        try:
            first = await self.pool.open_first()
        except ClientError as exc:
            self.failure = str(exc)
            raise
        self.failure = None
        desc = first.description
        assert desc is not None
        if desc.server_info:
            self.host.info = dict(desc.server_info)
        self.host.instructions = desc.instructions
        self.host.caps = dict(desc.capabilities)
        o = self.options
        if first.era == MODERN:
            if o.modern_pool is not None:
                self.pool.resize(o.modern_pool)
            self.forward = ForwardEra(self.pool, self.host, attribute=o.attribute)
            self.forward.engine = self.engine
            self.modern.target = self.forward
            if o.legacy == "translate":
                self.watch = RemoteWatch(self.pool)
                self.watch.engine = self.engine
                self.legacy.target = LegacyOverModern(
                    UpstreamHost(self.pool),
                    self.watch,
                    request_timeout=o.input_timeout,
                    max_rounds=o.max_rounds,
                )
        else:
            self.translate = TranslateEra(
                self.pool, self.host, input_timeout=o.input_timeout, state_key=o.state_key
            )
            self.translate.engine = self.engine
            self.modern.target = self.translate
        if self.legacy.target is None:
            self.sessions = SessionEra(
                self._open_session, self.host, request_timeout=o.input_timeout, on_dead=self._dead
            )
            self.legacy.target = self.sessions
        try:
            await self.pool.run()
            if self.forward is not None and "tools" in desc.capabilities:
                await self._list_tools(first)
        except ClientError as exc:
            self.failure = str(exc)
            raise
        self.started = True

    async def _list_tools(self, up: Upstream) -> None:
        """Learn the tools' ``x-mcp-header`` parameters (the HTTP front checks them)."""
        from ..protocol.meta import modern_meta

        assert up.description is not None
        meta = modern_meta(up.description.protocol_version, {}, self.client_info)
        cursor: Any = None
        for _ in range(100):
            params: dict[str, Any] = {"_meta": meta}
            if cursor is not None:
                params["cursor"] = cursor
            try:
                result = await up.request(TOOLS_LIST, params)
            except Exception as exc:  # the server may refuse; the check then learns later
                log.debug("listing the tools at start failed: %s", exc)
                return
            up.remember_tools(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                return

    def tool_params(self, name: str) -> tuple[HeaderParam, ...]:
        """The ``x-mcp-header`` parameters of tool ``name`` as last listed."""
        if self.forward is None:
            return ()
        return self.forward.tool_params.get(name, ())

    def describe(self) -> str:
        """One line for the ready message: what was found and how it is served."""
        first = self.pool.first
        if first is None or first.description is None:
            return "not started"
        desc = first.description
        name = desc.server_info.get("name", "?") if desc.server_info else "?"
        how = "forwarded" if self.forward is not None else "translated from legacy"
        legacy = (
            "legacy sessions translated"
            if self.sessions is None
            else "an upstream per legacy session"
        )
        return f"{name} ({desc.era} {desc.protocol_version}): 2026-07-28 {how}, {legacy}"

    async def aclose(self) -> None:
        """End every upstream: the pool's and the sessions' (process trees included)."""
        if self.watch is not None:
            await self.watch.aclose()
        if self.sessions is not None:
            for bs in list(self.sessions.sessions):
                up, bs.upstream = bs.upstream, None
                bs.closed = True
                if up is not None:
                    await up.aclose()
        await self.pool.aclose()


__all__ = ["Backend", "BackendOptions", "Delegate", "LEGACY_MODES"]
