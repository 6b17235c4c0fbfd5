"""`ServerOptions`: how a `Server` lists, caches, bounds and shuts down."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..spec import MODERN_VERSIONS
from ..wire import DEFAULT_MAX_LINE_BYTES
from .outbound import DEFAULT_MAX_OUTBOUND_BYTES

if TYPE_CHECKING:
    from .tasks.quota import TaskQuota
    from .tasks.store import TaskStore


@dataclass(frozen=True)
class ServerOptions:
    """How a `Server` lists, caches, bounds and shuts down (its constructor's options)."""

    instructions: str | None = None
    page_size: int = 100
    list_ttl_ms: int = 0
    cache_scope: str = "public"
    discover_ttl_ms: int = 0
    read_ttl_ms: int = 0
    read_cache_scope: str = "private"
    max_in_flight: int = 256
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_outbound_bytes: int = DEFAULT_MAX_OUTBOUND_BYTES
    shutdown_grace: float = 0.5
    sync_workers: int = 32
    server_info_in_results: bool = True
    versions: tuple[str, ...] = MODERN_VERSIONS
    """The modern revisions served (``supportedVersions``)."""
    strict_arguments: bool = False
    """Tools take arguments exactly as ``inputSchema`` says (no ``"5"`` for an integer)."""
    task_store: TaskStore | str | None = None
    """Where tasks live (see `mcpline.server.tasks.manager`); None: ``$MCPLINE_TASK_STORE``, else
    memory."""
    task_ttl_ms: int | None = 3_600_000
    task_poll_interval_ms: int = 1000
    task_quota: TaskQuota | str | None = None
    """What tasks may keep (see `mcpline.server.tasks.quota`); None: ``$MCPLINE_TASK_QUOTA``,
    else the defaults."""

    def __post_init__(self) -> None:
        if self.cache_scope not in ("public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        if self.read_cache_scope not in ("public", "private"):
            raise ValueError("read_cache_scope must be 'public' or 'private'")
        if self.list_ttl_ms < 0 or self.discover_ttl_ms < 0 or self.read_ttl_ms < 0:
            raise ValueError("ttl must be >= 0")
        if self.page_size < 1 or self.max_in_flight < 1 or self.max_outbound_bytes < 1:
            raise ValueError("page_size, max_in_flight and max_outbound_bytes must be positive")
        ttl = self.task_ttl_ms
        if (ttl is not None and ttl < 1) or self.task_poll_interval_ms < 1:
            raise ValueError("task_ttl_ms (or None) and task_poll_interval_ms must be positive")


__all__ = ["ServerOptions"]
