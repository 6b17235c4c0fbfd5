"""Eras: the ways a request can be spoken, and what each needs of the server.

The engine (`mcpline.server.engine.Engine`) hands every request to the modern era when it
carries modern ``_meta``; otherwise the other eras (the legacy ``initialize`` session,
`mcpline.server.legacy`) may claim it first, and the modern era answers the rest (with the
-32602 a request without ``_meta`` deserves). Peer events (responses, notifications) and
changes (lists, resources) go to every era in turn, in that one place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ..jsonrpc import Notification, Response
from ..protocol.meta import validate_request_meta
from .context import Context

if TYPE_CHECKING:
    from .engine import Exchange, Peer, Routed

Handler = Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]]


class Method(msgspec.Struct, frozen=True):
    """A request method: its handler and the server capability that must be advertised."""

    handler: Handler
    capability: str | None = None
    waits_for_lifespan: bool = True
    long_lived: bool = False
    """Stays open until ended (``subscriptions/listen``): not counted against max_in_flight."""


class EraHost(Protocol):
    """What an era may ask of the server: no more than this."""

    @property
    def info(self) -> dict[str, Any]:
        """The server's ``Implementation`` (name, version, …)."""
        ...

    @property
    def instructions(self) -> str | None: ...

    @property
    def lifespan(self) -> Any:
        """What the lifespan hook yielded (``ctx.lifespan``)."""
        ...

    def method(self, name: str) -> Method | None:
        """The built-in method serving ``name``, if any."""
        ...

    def offers(self, capability: str) -> bool: ...

    def capabilities(self) -> dict[str, Any]: ...

    def wait_ready(self) -> Awaitable[None]:
        """Until the lifespan hook has been entered (-32603 if it failed)."""
        ...


class Listens(Protocol):
    """Where list changes and resource updates reach the open ``subscriptions/listen``
    streams of a peer."""

    def list_changed(self, peer: Peer, kind: str) -> None: ...

    def resource_updated(self, peer: Peer, uri: str) -> None: ...


class ModernHost(EraHost, Protocol):
    """What the modern era asks of the server's method table, beyond `EraHost`."""

    @property
    def supported_versions(self) -> tuple[str, ...]: ...

    def modern_method(self, name: str) -> Method:
        """The method serving ``name``; -32601 when there is none."""
        ...

    def call(
        self, method: Method, ctx: Context, params: dict[str, Any]
    ) -> Awaitable[dict[str, Any]]:
        """Run ``method`` (after the lifespan hook) and finish its result."""
        ...

    def inline_call(
        self, method: Method, ctx: Context, params: dict[str, Any]
    ) -> Awaitable[dict[str, Any]] | None:
        """What runs the request in one step, outside a task (`Exchange.eager`), in place of
        `call`; None when it cannot."""
        ...

    def has_subscriptions(self) -> bool:
        """Whether a listen was ever opened (else there is nothing to notify)."""
        ...

    @property
    def subscriptions(self) -> Listens: ...


class Era(Protocol):
    """One way of speaking MCP, as the engine sees it."""

    def route(self, exchange: Exchange) -> Routed | None:
        """The context and the awaitable of the result, or None when the request is not this
        era's; raises `mcpline.errors.JsonRpcError` to answer with an error at once."""
        ...

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        """Handle a notification; False if it is not this era's."""
        ...

    def on_response(self, peer: Peer, resp: Response) -> bool:
        """Handle a response to a request this era sent; False if it is not one."""
        ...

    def list_changed(self, peer: Peer, kind: str) -> None:
        """The ``kind`` list (tools, prompts, resources) changed: tell ``peer`` if it wants."""
        ...

    def resource_updated(self, peer: Peer, uri: str) -> None:
        """``uri`` changed: tell ``peer`` if it subscribed."""
        ...


class ModernEra:
    """2026-07-28: every request stands alone, described by its ``_meta``."""

    def __init__(self, dispatch: ModernHost) -> None:
        self._dispatch = dispatch

    def route(self, exchange: Exchange) -> Routed:
        req = exchange.request
        d = self._dispatch
        binding = exchange.binding
        if binding is None:
            meta = validate_request_meta(req.params, d.supported_versions)
        else:
            meta = validate_request_meta(req.params, d.supported_versions, binding.check_version)
            binding.check_request(req)
        method = d.modern_method(req.method)
        ctx = Context(exchange, meta, d)
        params = req.params if type(req.params) is dict else {}
        inline = d.inline_call(method, ctx, params)
        if inline is None:
            return ctx, d.call(method, ctx, params), method.long_lived
        exchange.eager = True
        return ctx, inline, method.long_lived

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        return False

    def on_response(self, peer: Peer, resp: Response) -> bool:
        return False

    def list_changed(self, peer: Peer, kind: str) -> None:
        if self._dispatch.has_subscriptions():
            self._dispatch.subscriptions.list_changed(peer, kind)

    def resource_updated(self, peer: Peer, uri: str) -> None:
        if self._dispatch.has_subscriptions():
            self._dispatch.subscriptions.resource_updated(peer, uri)


class LazyEra:
    """An era built the first time a request for ``opens`` (``initialize``) arrives, or when
    `load` is called: until then no peer can have its state, so nothing is its business and
    its module has not been imported."""

    def __init__(self, opens: str, build: Callable[[], Era]) -> None:
        self.opens = opens
        self._build = build
        self.era: Era | None = None

    def load(self) -> Era:
        """The era, built now if it was not yet."""
        if self.era is None:
            self.era = self._build()
        return self.era

    def route(self, exchange: Exchange) -> Routed | None:
        era = self.era
        if era is None:
            if exchange.request.method != self.opens:
                return None
            era = self.load()
        return era.route(exchange)

    def on_notification(self, peer: Peer, note: Notification) -> bool:
        return self.era is not None and self.era.on_notification(peer, note)

    def on_response(self, peer: Peer, resp: Response) -> bool:
        return self.era is not None and self.era.on_response(peer, resp)

    def list_changed(self, peer: Peer, kind: str) -> None:
        if self.era is not None:
            self.era.list_changed(peer, kind)

    def resource_updated(self, peer: Peer, uri: str) -> None:
        if self.era is not None:
            self.era.resource_updated(peer, uri)


__all__ = [
    "Era",
    "EraHost",
    "Handler",
    "LazyEra",
    "Listens",
    "Method",
    "ModernEra",
    "ModernHost",
]
