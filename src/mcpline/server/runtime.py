"""`Runtime`: what a transport needs of a `mcpline.Server` to serve it.

Every transport (stdio, Unix socket and TCP listeners, the HTTP app, `Client.memory`) and
the bridge receive a server's runtime and use these four names only: they enter
``services.running()`` for as long as they serve, hand each peer's requests to ``engine``,
and read ``options`` and ``registry``. A server built around another engine (the bridge's
forwarding one) gives its runtime that engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from ._options import ServerOptions
    from .engine import Engine
    from .registry import Registry
    from .services import Services


class Runtime(NamedTuple):
    """The serving side of one server."""

    engine: Engine
    """Where requests, notifications and responses of every peer go."""
    services: Services
    """The lifespan hook, worker threads and bus: ``async with services.running()`` while
    serving."""
    options: ServerOptions
    """The server's options (limits, caching hints, versions)."""
    registry: Registry
    """What the server serves (read only)."""


class Served(Protocol):
    """What a transport reads of the server it serves (a `mcpline.Server` is one): its
    `Runtime`, and the options and registry that runtime holds."""

    @property
    def runtime(self) -> Runtime: ...

    @property
    def options(self) -> ServerOptions: ...

    @property
    def registry(self) -> Registry: ...


__all__ = ["Runtime", "Served"]
