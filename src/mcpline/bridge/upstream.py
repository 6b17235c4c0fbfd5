"""One connection from the bridge to the server it bridges: a stdio child or a remote
Streamable HTTP endpoint, spoken to through the client's session engine.

`Upstream` wraps a `mcpline.client.session.Session` over the channel a client `Transport`
opens (`StdioServer` launches a process in its own process group, `HttpServer` posts to a
URL). The session gives the bridge what forwarding needs: ids of its own for every request
(so the requests of many clients never collide on one upstream), progress tokens of its own,
listen streams keyed by its ids, ``notifications/cancelled`` when a forwarding task is
cancelled, and a bounded reader. What the upstream sends that belongs to no request (log
messages, list changes, requests of a legacy server) goes to `on_notification` and
`on_request`, which the user of the upstream sets.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .. import jsonrpc
from ..client import era as era_mod
from ..client.era import LEGACY, MODERN, FallBack, ServerDescription
from ..client.session import Channel, Session, header_channel
from ..client.transports import Transport
from ..errors import ClientError, ConnectionLost, JsonRpcError, RequestTimeout, ServerError
from ..protocol.headers import HeaderParam, InvalidHeaderAnnotation, header_params
from ..spec import INTERNAL_ERROR, LISTEN, PING
from ..wire import DEFAULT_MAX_LINE_BYTES

log = logging.getLogger("mcpline.bridge")

NotificationSink = Callable[[str, Any], None]
RequestSink = Callable[[str, Any], Awaitable[Any]]

BRIDGE_CAPABILITIES: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {},
    "roots": {},
}
"""What the bridge declares when it opens a legacy session of its own (the translation
pool): everything, since any client of the bridge may be able to answer. A request whose own
client did not declare what the server then asks for is answered with an error."""

_counter = itertools.count(1)

DEFAULT_CALL_TIMEOUT = 600.0
"""Seconds a forwarded request may go without an answer or a progress notification."""


class Upstream:
    """One open connection to the bridged server, after its handshake (if any).

    ``handshake`` is ``"auto"`` (``server/discover``, else ``initialize``), ``"modern"``,
    ``"legacy"`` (the bridge's own ``initialize``) or ``"none"`` (a client's ``initialize``
    will be forwarded). Errors the server answers are raised as `JsonRpcError` with its code,
    message and data; a lost connection as `ConnectionLost`. ``call_timeout`` bounds each
    request but a listen: with no answer and no progress for that long it is cancelled
    upstream and fails with -32603 (None: no bound).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    ):
        self.number = next(_counter)
        self.call_timeout = call_timeout
        self.transport = transport
        self.label = f"{transport.label}#{self.number}"
        self.max_line_bytes = max_line_bytes
        self.session: Session | None = None
        self.channel: Channel | None = None
        self.description: ServerDescription | None = None
        self.on_notification: NotificationSink = self._drop
        self.on_request: RequestSink = self._refuse
        self.inflight = 0
        """Requests forwarded and not yet answered."""
        self.holder: Any = None
        """The request this upstream's unsolicited messages belong to, while one holds it
        alone (see `mcpline.bridge.pool`)."""
        self.tool_params: dict[str, tuple[HeaderParam, ...]] = {}
        """The ``x-mcp-header`` parameters of each tool a ``tools/list`` answer showed."""

    # --- opening --------------------------------------------------------------------------

    async def open(
        self,
        handshake: str,
        *,
        client_info: dict[str, Any],
        timeout: float = 30.0,
        capabilities: dict[str, Any] | None = None,
    ) -> ServerDescription | None:
        """Connect (or launch) and shake hands; raises `ClientError` when that fails."""
        session = Session(
            self._notification,
            self._request,
            max_line_bytes=self.max_line_bytes,
            label=self.label,
        )
        self.session = session
        self.channel = await self.transport.open(session)
        if (headed := header_channel(self.channel)) is not None:
            headed.tool_headers = self.tool_params
        caps = dict(BRIDGE_CAPABILITIES if capabilities is None else capabilities)
        try:
            if handshake == "none":
                session.accept_requests = True
                return None
            if handshake in ("auto", MODERN):
                try:
                    desc = await era_mod.probe(
                        session, caps=caps, info=client_info, timeout=timeout
                    )
                except FallBack as fb:
                    if handshake == MODERN:
                        raise ConnectionLost(
                            f"{self.label} did not answer as a 2026-07-28 server: {fb}",
                            retriable=not fb.died,
                        ) from None
                    if fb.died:
                        raise ConnectionLost(str(fb)) from None
                    desc = await self._initialize(caps, client_info, timeout, fb.version)
            else:
                desc = await self._initialize(caps, client_info, timeout, None)
        except BaseException:
            await self.aclose()
            raise
        self.description = desc
        return desc

    async def _initialize(
        self, caps: dict[str, Any], info: dict[str, Any], timeout: float, version: str | None
    ) -> ServerDescription:
        assert self.session is not None
        self.session.accept_requests = True
        return await era_mod.initialize(
            self.session, caps=caps, info=info, timeout=timeout, version=version
        )

    @property
    def era(self) -> str | None:
        return None if self.description is None else self.description.era

    @property
    def legacy(self) -> bool:
        return self.era == LEGACY

    @property
    def alive(self) -> bool:
        return self.session is not None and not self.session.closed

    @property
    def lost(self) -> asyncio.Future[ClientError]:
        assert self.session is not None
        return self.session.lost

    @property
    def pid(self) -> int | None:
        pid = getattr(self.channel, "pid", None)
        return pid if isinstance(pid, int) else None

    async def aclose(self) -> None:
        """Shut the connection down (a process: stdin closed, SIGTERM, SIGKILL, the tree)."""
        channel, self.channel = self.channel, None
        if channel is not None:
            await channel.aclose()

    # --- requests -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_progress: Callable[[float, float | None, str | None], Any] | None = None,
        on_notification: Callable[[str, Any], None] | None = None,
        cancellable: bool = True,
    ) -> dict[str, Any]:
        """Forward one request; its result, or `JsonRpcError` as the server answered it."""
        if self.session is None:
            raise ConnectionLost(f"{self.label} is not connected")
        self.inflight += 1
        try:
            result = await self.session.request(
                method,
                params,
                timeout=None if method == LISTEN else self.call_timeout,
                on_progress=on_progress,
                on_notification=on_notification,
                cancellable=cancellable,
            )
        except ServerError as exc:
            raise JsonRpcError(exc.code, exc.message, exc.data) from None
        except RequestTimeout:
            raise JsonRpcError(
                INTERNAL_ERROR,
                f"Internal error: the bridged server did not answer {method} within "
                f"{self.call_timeout:g} s (the bridge's --call-timeout); it was cancelled",
            ) from None
        finally:
            self.inflight -= 1
        if not isinstance(result, dict):
            raise JsonRpcError(
                INTERNAL_ERROR,
                f"Internal error: the bridged server answered {method} with a result that is "
                f"not an object ({type(result).__name__})",
            )
        return result

    async def notify(self, method: str, params: Any = jsonrpc.MISSING) -> None:
        """Forward one notification; nothing when the connection is gone."""
        if self.session is None or self.session.closed:
            return
        try:
            await self.session.notify(method, params)
        except ClientError as exc:
            log.debug("%s: %s not forwarded: %s", self.label, method, exc)

    def share_tools(self, table: dict[str, tuple[HeaderParam, ...]]) -> None:
        """Keep tool parameters in ``table`` (shared by the upstreams of one server)."""
        table.update(self.tool_params)
        self.tool_params = table
        if (headed := header_channel(self.channel)) is not None:
            headed.tool_headers = table

    def remember_tools(self, result: dict[str, Any]) -> None:
        """Note the ``x-mcp-header`` parameters of the tools in a ``tools/list`` page (an HTTP
        upstream mirrors them; the HTTP front checks them)."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            try:
                found = header_params(tool.get("inputSchema"))
            except InvalidHeaderAnnotation:
                found = ()
            self.tool_params[tool["name"]] = found
        if (headed := header_channel(self.channel)) is not None:
            headed.tool_headers = self.tool_params

    # --- what the server sends on its own -------------------------------------------------

    def _notification(self, method: str, params: Any) -> None:
        self.on_notification(method, params)

    async def _request(self, method: str, params: Any) -> Any:
        if method == PING:
            return {}
        return await self.on_request(method, params)

    @staticmethod
    def _drop(method: str, params: Any) -> None:
        log.debug("dropped %s from the bridged server (no request to give it to)", method)

    @staticmethod
    async def _refuse(method: str, params: Any) -> Any:
        raise JsonRpcError(
            INTERNAL_ERROR,
            f"Internal error: the bridge has no client to forward {method} to",
        )


__all__ = ["BRIDGE_CAPABILITIES", "NotificationSink", "RequestSink", "Upstream"]
