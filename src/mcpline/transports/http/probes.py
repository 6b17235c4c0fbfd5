"""The HTTP app's operational endpoints: ``/healthz``, ``/readyz`` and ``/metrics``.

``/healthz`` answers 200 while the process serves. ``/readyz`` answers 200 once the app has
started (the server's lifespan hook entered) while its bus, if it has one that reports a
connection, is connected, and 503 otherwise (before start-up, while shutting down, while
the bus is down). Neither says anything about the server but that, so neither is behind
``Host``/``Origin`` checks or tokens (load balancers probe them by address). ``/metrics``
(only when asked for) is the Prometheus text of `mcpline.observability.metrics`, with the
app's own gauges, and passes the same ``Host``/``Origin`` checks and bearer token as the
MCP endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from . import admission, auth_gate, respond
from .headers import Headers

if TYPE_CHECKING:
    from ...observability.metrics import Family, RequestMetrics
    from .app import HttpApp

Probe = Callable[[dict[str, Any], respond.Send], Awaitable[None]]
"""An endpoint: ``(scope, send)``; it reads no body."""

TEXT = [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")]
METRICS_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


class Probes:
    """The endpoints of one app, by path (see the module)."""

    def __init__(self, app: HttpApp, *, health: bool, metrics: bool) -> None:
        self.app = app
        self.started = False
        """Whether the app's start-up has run (set by its ``on_startup`` hook)."""
        self.metrics: RequestMetrics | None = None
        self.routes: dict[str, Probe] = {}
        if health:
            self.routes["/healthz"] = self.healthz
            self.routes["/readyz"] = self.readyz
            app.on_startup.append(self._started)
        if metrics:
            from ...middleware._chain import chain_of
            from ...observability.metrics import RequestMetrics

            self.metrics = RequestMetrics()
            bound = app.server.options.max_pending_notifications
            chain_of(app.engine, None, bound).add(self.metrics, outermost=True)
            self.routes["/metrics"] = self.serve_metrics

    def _started(self, app: HttpApp) -> None:
        self.started = True

    async def healthz(self, scope: dict[str, Any], send: respond.Send) -> None:
        if not await _readable(scope, send):
            return
        await _text(send, 200, b"ok\n")

    def unready(self) -> str | None:
        """Why the app is not ready, or None when it is."""
        services = self.app.server.runtime.services
        if not self.started or not services.ready:
            return "starting"
        if self.app.stopping:
            return "stopping"
        bus = services.bus
        if bus is not None and getattr(bus, "connected", True) is False:
            return "bus unreachable"
        return None

    async def readyz(self, scope: dict[str, Any], send: respond.Send) -> None:
        if not await _readable(scope, send):
            return
        why = self.unready()
        if why is None:
            await _text(send, 200, b"ready\n")
        else:
            await _text(send, 503, f"not ready: {why}\n".encode())

    async def serve_metrics(self, scope: dict[str, Any], send: respond.Send) -> None:
        if not await _readable(scope, send):
            return
        app = self.app
        headers = Headers(scope.get("headers", ()))
        refusal = app.screen(scope, headers)
        if refusal is not None:
            await respond.refuse(send, refusal)
            return
        if app.verify_token is not None:
            principal = await auth_gate.authenticate(
                app.verify_token, scope, headers, app.resource_metadata, send, []
            )
            if principal is None:
                return
        await respond.start(
            send, 200, [(b"content-type", METRICS_TYPE), (b"cache-control", b"no-store")]
        )
        await respond.body(send, self.text())

    def text(self) -> bytes:
        """The metrics page."""
        from ...observability.metrics import render

        families = [] if self.metrics is None else self.metrics.families()
        return render([*families, *self.app_families()])

    def app_families(self) -> list[Family]:
        """The app's own gauges: requests in progress, listens, legacy sessions, limits."""
        from ...observability.metrics import Family

        app = self.app
        limits = {
            "max_body_bytes": app.max_body_bytes,
            "max_body_total_bytes": app.bodies.limit,
            "max_header_bytes": app.max_header_bytes,
            "max_outbound_total_bytes": app.outbound.limit,
            "max_requests": app.shares.total,
            "max_requests_per_client": app.shares.per_client,
            "max_listens_per_client": app.shares.listens_per_client,
            "max_sessions": app.sessions.limit,
            "max_sessions_per_client": app.sessions.per_client,
            "body_timeout": app.body_timeout,
        }
        hits = dict.fromkeys(limits, 0)
        hits.update(admission.LIMIT_HITS)
        return [
            Family(
                "mcpline_http_requests_in_progress",
                "gauge",
                "HTTP POSTs being served now.",
                [("mcpline_http_requests_in_progress", {}, app.shares.in_progress)],
            ),
            Family(
                "mcpline_listens_open",
                "gauge",
                "subscriptions/listen streams open now.",
                [("mcpline_listens_open", {}, sum(app.shares.listens.values()))],
            ),
            Family(
                "mcpline_legacy_sessions",
                "gauge",
                "Legacy (initialize) HTTP sessions open now.",
                [("mcpline_legacy_sessions", {}, len(app.sessions.open))],
            ),
            Family(
                "mcpline_limit",
                "gauge",
                "The configured bound of each limit (bytes, counts or seconds).",
                [("mcpline_limit", {"limit": k}, v) for k, v in sorted(limits.items())],
            ),
            Family(
                "mcpline_limit_hits_total",
                "counter",
                "Requests and connections answered at a limit's bound, by limit (this process).",
                [("mcpline_limit_hits_total", {"limit": k}, v) for k, v in sorted(hits.items())],
            ),
        ]


async def _readable(scope: dict[str, Any], send: respond.Send) -> bool:
    """GET and HEAD only (405 otherwise)."""
    if scope["method"] in ("GET", "HEAD"):
        return True
    await respond.empty(send, 405, [(b"allow", b"GET, HEAD")])
    return False


async def _text(send: respond.Send, status: int, body: bytes) -> None:
    await respond.start(send, status, TEXT)
    await respond.body(send, body)


__all__ = ["Probe", "Probes"]
