r"""The options of a `Server` and of what it registers, each declared once.

`ServerOptions` is how a `Server` lists, caches, bounds and shuts down. The keyword options
of `Server(...)`, ``@server.tool``, ``@server.resource`` and ``@server.prompt`` are declared
here as `TypedDict`\ s that the signatures unpack (``**options: Unpack[ToolOptions]``), so
that type checkers and editors know each name and its type; `check_keywords` refuses, at
run time, a name that is none of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec

from .._keywords import check_keywords
from ..spec import MODERN_VERSIONS
from ..wire import DEFAULT_MAX_LINE_BYTES
from .outbound import DEFAULT_MAX_OUTBOUND_BYTES

DEFAULT_MAX_PENDING_NOTIFICATIONS = 1024
"""Client notifications that may wait on the middleware chain at once, per server."""

if TYPE_CHECKING:
    from ..protocol.state import NonceLedger
    from .scale.bus import NotificationBus
    from .services import LifespanHook
    from .tasks.quota import TaskQuota
    from .tasks.store import TaskStore

    TaskStoreOption = TaskStore | str | None
    TaskQuotaOption = TaskQuota | str | None
else:  # what `ServerOptions`' signature shows (help, inspect) without loading the tasks
    TaskStoreOption = TaskQuotaOption = Any


class ToolDefinition(TypedDict, total=False):
    """What a tool's definition (``tools/list``) is made of, besides its name."""

    title: str | None
    description: str | None
    """Default: the function's docstring."""
    input_schema: dict[str, Any] | None
    """Default: made from the parameters' type hints."""
    output_schema: dict[str, Any] | None
    """Default: made from the return type hint (``structured_output=False``: none)."""
    structured_output: bool | None
    annotations: dict[str, Any] | None
    """Spec keys, or ``read_only``/``destructive``/``idempotent``/``open_world``/``title``."""
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None


class ToolOptions(ToolDefinition, total=False):
    """The options of ``@server.tool`` and `Server.add_tool` (see `Server.tool`)."""

    hidden: bool
    """Callable but not listed (default False)."""
    strict: bool | None
    """No reading of ``"5"`` as 5 (default: the server's ``strict_arguments``)."""
    task: bool | str | None
    """``True``/``"optional"`` or ``"required"``: run calls as tasks."""
    scopes: Iterable[str] | None
    """The OAuth scopes a caller's token must hold."""
    inline: bool | None
    """Where a plain ``def`` runs: True on the event loop, False on a worker thread, None
    (default) on threads until its calls prove short."""


class ResourceDefinition(TypedDict, total=False):
    """What a resource's (or template's) definition is made of, and its read hints."""

    name: str | None
    title: str | None
    description: str | None
    """Default: the function's docstring."""
    mime_type: str | None
    annotations: dict[str, Any] | None
    icons: list[dict[str, Any]] | None
    size: int | None
    meta: dict[str, Any] | None
    ttl_ms: int | None
    """The caching hint of its reads (default: the server's ``read_ttl_ms``)."""
    cache_scope: str | None
    """``"public"`` or ``"private"`` (default: the server's ``read_cache_scope``)."""


class ResourceOptions(ResourceDefinition, total=False):
    """The options of ``@server.resource`` and `Server.add_resource`."""

    scopes: Iterable[str] | None
    """The OAuth scopes a caller's token must hold."""


class PromptDefinition(TypedDict, total=False):
    """What a prompt's definition (``prompts/list``) is made of, besides its name."""

    title: str | None
    description: str | None
    """Default: the function's docstring."""
    argument_titles: dict[str, str] | None
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None


class PromptOptions(PromptDefinition, total=False):
    """The options of ``@server.prompt`` and `Server.add_prompt`."""

    scopes: Iterable[str] | None
    """The OAuth scopes a caller's token must hold."""


class ServerOptions(msgspec.Struct, frozen=True):
    """How a `Server` lists, caches, bounds and shuts down (its constructor's options).

    A frozen `msgspec.Struct`: ``__struct_fields__`` names its fields."""

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
    task_store: TaskStoreOption = None
    """Where tasks live (see `mcpline.server.tasks.manager`); None: ``$MCPLINE_TASK_STORE``, else
    memory."""
    task_ttl_ms: int | None = 3_600_000
    task_poll_interval_ms: int = 1000
    task_quota: TaskQuotaOption = None
    """What tasks may keep (see `mcpline.server.tasks.quota`); None: ``$MCPLINE_TASK_QUOTA``,
    else the defaults."""
    max_pending_notifications: int = DEFAULT_MAX_PENDING_NOTIFICATIONS
    """Client notifications that may wait on the middleware chain at once; past it one is
    handled without the chain, with a warning on stderr (see docs/middleware.md)."""

    def __post_init__(self) -> None:
        if self.cache_scope not in ("public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        if self.read_cache_scope not in ("public", "private"):
            raise ValueError("read_cache_scope must be 'public' or 'private'")
        if self.list_ttl_ms < 0 or self.discover_ttl_ms < 0 or self.read_ttl_ms < 0:
            raise ValueError("ttl must be >= 0")
        if self.page_size < 1 or self.max_in_flight < 1 or self.max_outbound_bytes < 1:
            raise ValueError("page_size, max_in_flight and max_outbound_bytes must be positive")
        if self.max_pending_notifications < 1:
            raise ValueError("max_pending_notifications must be positive")
        ttl = self.task_ttl_ms
        if (ttl is not None and ttl < 1) or self.task_poll_interval_ms < 1:
            raise ValueError("task_ttl_ms (or None) and task_poll_interval_ms must be positive")


class ServerKeywords(TypedDict, total=False):
    """The keyword options of `Server(...)` (see `Server` for what each is about). Those
    named as `ServerOptions` fields are kept there, with their defaults."""

    title: str | None
    description: str | None
    instructions: str | None
    website_url: str | None
    icons: list[dict[str, Any]] | None
    page_size: int
    list_ttl_ms: int
    cache_scope: str
    discover_ttl_ms: int
    max_in_flight: int
    max_line_bytes: int
    max_outbound_bytes: int
    shutdown_grace: float
    sync_workers: int
    lifespan: LifespanHook | None
    server_info_in_results: bool
    state_key: bytes | str | None
    """Default: ``$MCPLINE_STATE_KEY``, else random per process."""
    state_ttl: float
    """Seconds a sealed ``requestState`` lives (default 900)."""
    state_single_use: bool | NonceLedger
    """Default True (a process-local ledger)."""
    legacy: bool
    """Also serve 2025-11-25 clients (default True)."""
    read_ttl_ms: int
    read_cache_scope: str
    bus: NotificationBus | None
    strict_arguments: bool
    task_store: TaskStore | str | None
    task_ttl_ms: int | None
    task_poll_interval_ms: int
    task_quota: TaskQuota | str | None
    middleware: Iterable[Any]
    """Run around every request and notification, first outermost (see
    `mcpline.middleware`)."""
    max_pending_notifications: int
    """Client notifications waiting on the middleware chain at once (default 1024); past it
    one is handled without the chain, logged."""


OPTION_FIELDS = frozenset(ServerOptions.__struct_fields__)
"""The names of `ServerOptions`' fields."""


def server_options(keywords: Mapping[str, Any]) -> ServerOptions:
    """The `ServerOptions` of `Server` keywords (the others are the server's own)."""
    return ServerOptions(**{k: v for k, v in keywords.items() if k in OPTION_FIELDS})


__all__ = [
    "check_keywords",
    "OPTION_FIELDS",
    "PromptDefinition",
    "PromptOptions",
    "ResourceDefinition",
    "ResourceOptions",
    "server_options",
    "ServerKeywords",
    "ServerOptions",
    "ToolDefinition",
    "ToolOptions",
]
