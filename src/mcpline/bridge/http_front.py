"""The bridge served over Streamable HTTP: mcpline's own HTTP app in front of a `Backend`.

`BridgeServer` is a `mcpline.Server` whose engine is the backend's: the HTTP app
(`mcpline.transports.http.HttpApp`) is used as it is, so a bridged stdio server gets exactly
the binding mcpline's servers get: ``Origin``/``Host`` checks, the bearer-token hook, body,
header and request limits, the header/body agreement of 2026-07-28 requests (against the
tools' ``x-mcp-header`` parameters as the backend last listed them), JSON or SSE answers,
cancellation by closing a stream, legacy sessions with resumption and their bounds
(``max_sessions``, ``session_idle_timeout``). `BridgeApp` only starts and stops the backend
with the app and ends a legacy session whose upstream died (its client gets 404 and starts a
new one).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from .._version import version as mcpline_version
from ..errors import ClientError
from ..protocol.headers import HeaderParam
from ..server.server import Server
from ..transports.http import HttpApp
from ..transports.http.legacy import Session
from ..wire import DEFAULT_MAX_LINE_BYTES
from .backend import Backend
from .common import spawn


class BridgeServer(Server):
    """A `Server` that serves nothing of its own: its engine forwards to ``backend``."""

    def __init__(
        self,
        backend: Backend,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_outbound_bytes: int = 16 * 1024 * 1024,
        max_in_flight: int = 256,
        shutdown_grace: float = 2.0,
        middleware: Iterable[Any] = (),
    ) -> None:
        super().__init__(
            "mcpline-bridge",
            version=mcpline_version(),
            legacy=True,
            max_line_bytes=max_line_bytes,
            max_outbound_bytes=max_outbound_bytes,
            max_in_flight=max_in_flight,
            shutdown_grace=shutdown_grace,
            sync_workers=1,
        )
        self.backend = backend
        self.runtime = self.runtime._replace(engine=backend.engine)
        for item in middleware:
            self.add_middleware(item)

    def http_app(self, path: str = "/mcp", **options: Any) -> HttpApp:
        """The bridge as an ASGI app (`BridgeApp`); ``options`` are `HttpApp`'s."""
        return BridgeApp(self, path, **options)


class BridgeApp(HttpApp):
    """`HttpApp` serving a `BridgeServer`: the backend starts and stops with the app."""

    def __init__(self, server: BridgeServer, path: str = "/mcp", **options: Any) -> None:
        super().__init__(server, path, **options)
        self.backend = server.backend
        self.backend.on_dead = self._end_session
        self._backend_started = False

    def header_params(self, tool: str) -> Sequence[HeaderParam]:
        return self.backend.tool_params(tool)

    async def startup(self) -> None:
        """Start the app, then the backend (a failure fails the lifespan startup)."""
        await super().startup()
        if self._backend_started:
            return
        self._backend_started = True
        try:
            await self.backend.start()
        except ClientError as exc:
            print(f"mcpline bridge: the server did not start: {exc}", file=sys.stderr, flush=True)
            raise
        print(f"mcpline bridge: serving {self.backend.describe()}", file=sys.stderr, flush=True)

    async def shutdown(self) -> None:
        """End the streams and requests (the app's shutdown), then every upstream."""
        try:
            await super().shutdown()
        finally:
            await self.backend.aclose()

    def _end_session(self, peer: Any) -> None:
        if isinstance(peer, Session) and self.sessions.open.get(peer.id) is peer:
            spawn(self.sessions.end(peer))


__all__ = ["BridgeApp", "BridgeServer"]
