"""The names the MCP specification defines, in one place: revisions, ``_meta`` keys, method
names and the named sets of methods, notification methods, error codes and log levels.

Nothing here does anything; every other module spells these through this one.
"""

from __future__ import annotations

import logging

# --- revisions -------------------------------------------------------------------------------

MODERN = "2026-07-28"
MODERN_VERSIONS: tuple[str, ...] = (MODERN,)
"""Per-request (`_meta`) revisions, newest first."""

LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")
"""`initialize`-handshake revisions, newest first."""

LEGACY_ELICITATION_FROM = "2025-06-18"
"""The first legacy revision with elicitation."""
LEGACY_URL_ELICITATION_FROM = "2025-11-25"
"""The first legacy revision with URL-mode elicitation."""
LEGACY_SSE_PRIMING_FROM = "2025-11-25"
"""The first legacy revision whose HTTP event streams open with a priming event (SEP-1699)."""

# --- _meta keys ------------------------------------------------------------------------------

META_PREFIX = "io.modelcontextprotocol/"
PROTOCOL_VERSION_KEY = META_PREFIX + "protocolVersion"
CLIENT_CAPABILITIES_KEY = META_PREFIX + "clientCapabilities"
CLIENT_INFO_KEY = META_PREFIX + "clientInfo"
LOG_LEVEL_KEY = META_PREFIX + "logLevel"
SERVER_INFO_KEY = META_PREFIX + "serverInfo"
SUBSCRIPTION_ID_KEY = META_PREFIX + "subscriptionId"
PROGRESS_TOKEN_KEY = "progressToken"

# --- extensions ------------------------------------------------------------------------------

TASKS_EXTENSION = META_PREFIX + "tasks"
"""The tasks extension (SEP-2663): its key under ``capabilities.extensions`` on both sides."""

# --- requests --------------------------------------------------------------------------------

DISCOVER = "server/discover"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
RESOURCES_LIST = "resources/list"
RESOURCES_TEMPLATES_LIST = "resources/templates/list"
RESOURCES_READ = "resources/read"
PROMPTS_LIST = "prompts/list"
PROMPTS_GET = "prompts/get"
COMPLETE = "completion/complete"
LISTEN = "subscriptions/listen"

TASKS_GET = "tasks/get"
TASKS_UPDATE = "tasks/update"
TASKS_CANCEL = "tasks/cancel"

INITIALIZE = "initialize"
PING = "ping"
SET_LEVEL = "logging/setLevel"
SUBSCRIBE = "resources/subscribe"
UNSUBSCRIBE = "resources/unsubscribe"

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"

# --- notifications ---------------------------------------------------------------------------

CANCELLED = "notifications/cancelled"
PROGRESS = "notifications/progress"
MESSAGE = "notifications/message"
INITIALIZED = "notifications/initialized"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
RESOURCE_UPDATED = "notifications/resources/updated"
TASK_STATUS = "notifications/tasks"
"""Tasks extension: a task's full state, on a listen that asked for its ``taskIds``."""

LIST_CHANGED: dict[str, tuple[str, str]] = {
    "tools": ("toolsListChanged", TOOLS_LIST_CHANGED),
    "prompts": ("promptsListChanged", PROMPTS_LIST_CHANGED),
    "resources": ("resourcesListChanged", RESOURCES_LIST_CHANGED),
}
"""The list kinds: kind → (its ``subscriptions/listen`` filter flag, its notification)."""

LISTS: dict[str, tuple[str, str]] = {
    "tools": (TOOLS_LIST, "tools"),
    "prompts": (PROMPTS_LIST, "prompts"),
    "resources": (RESOURCES_LIST, "resources"),
    "resourceTemplates": (RESOURCES_TEMPLATES_LIST, "resourceTemplates"),
}
"""Paginated lists: name → (method, the result key that holds the items)."""

# --- named sets of methods -------------------------------------------------------------------

MRTR_METHODS = frozenset({TOOLS_CALL, PROMPTS_GET, RESOURCES_READ})
"""The only methods whose result may be an InputRequiredResult."""

CACHEABLE_METHODS = frozenset(
    {DISCOVER, TOOLS_LIST, PROMPTS_LIST, RESOURCES_LIST, RESOURCES_TEMPLATES_LIST, RESOURCES_READ}
)
"""Methods whose results carry the caching hints ``ttlMs`` and ``cacheScope``."""

IDEMPOTENT_METHODS = CACHEABLE_METHODS | {PROMPTS_GET, COMPLETE}
"""Requests that are safe to send again (a client resends them on a restarted server).
``tools/call`` is not: a tool says so with ``readOnlyHint``/``idempotentHint``."""

LEGACY_ONLY_METHODS = frozenset({INITIALIZE, PING, SET_LEVEL, SUBSCRIBE, UNSUBSCRIBE})
"""Requests that exist only in an ``initialize`` session (-32601 with modern ``_meta``)."""

TASK_METHODS = frozenset({TASKS_GET, TASKS_UPDATE, TASKS_CANCEL})
"""The methods of the tasks extension (each names its task in ``params.taskId``)."""

TASK_AUGMENTABLE_METHODS = frozenset({TOOLS_CALL})
"""Requests a server may answer with a ``CreateTaskResult`` (tasks extension)."""

MODERN_ONLY_METHODS = frozenset({DISCOVER, LISTEN}) | TASK_METHODS
"""Requests that do not exist in an ``initialize`` session (the tasks extension is not
defined for the legacy revisions)."""

INPUT_METHODS = frozenset({ELICIT, SAMPLE, ROOTS})
"""What a server may ask a client for (inside an InputRequiredResult, or, in a legacy session,
as requests of its own)."""

# --- result types ---------------------------------------------------------------------------

RESULT_TASK = "task"
"""Tasks extension: the ``resultType`` of a ``CreateTaskResult``."""

TASK_STATUSES: tuple[str, ...] = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL_TASK_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""Once a task reaches one of these it never changes again."""

# --- error codes -----------------------------------------------------------------------------

PARSE_ERROR = -32700
"""JSON-RPC: the line is not JSON (or not UTF-8, or too large or deep to read)."""
INVALID_REQUEST = -32600
"""JSON-RPC: JSON, but not a valid request object (batch, bad id, wrong ``jsonrpc``)."""
METHOD_NOT_FOUND = -32601
"""JSON-RPC: no such method here, or its capability is not offered."""
INVALID_PARAMS = -32602
"""JSON-RPC: the params are wrong, ``_meta`` included; also unknown tools and resources."""
INTERNAL_ERROR = -32603
"""JSON-RPC: the server failed."""
HEADER_MISMATCH = -32020
"""MCP (HTTP): a mirrored header (``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) is missing
or disagrees with the body."""
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
"""MCP: processing the request needs a client capability it did not declare."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""MCP: the request's protocol version is not one this server speaks
(``data.supported``/``data.requested``)."""
LEGACY_RESOURCE_NOT_FOUND = -32002
"""MCP 2025-11-25 and earlier: no resource has this URI. The modern era uses -32602."""
USER_REJECTED = -1
"""MCP 2025-11-25 and earlier (client/sampling#error-handling): the user rejected a server's
request; mcpline's client answers any declined legacy input request with it."""

MODERN_ERROR_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)
"""Errors only a modern server sends: to a probing client they mean "modern"."""

# --- names and logging -----------------------------------------------------------------------

TOOL_NAME_MAX = 128
"""Tool names SHOULD be 1 to 128 characters of ``A-Z a-z 0-9 _ - .`` (server/tools#tool-names);
the server refuses others at registration and ``mcpline check`` warns about them."""

LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
LOG_LEVEL_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}

PYTHON_LOG_LEVEL = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
"""The `logging` level each MCP log level maps to."""


__all__ = [
    "ACKNOWLEDGED",
    "CACHEABLE_METHODS",
    "CANCELLED",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "COMPLETE",
    "DISCOVER",
    "ELICIT",
    "HEADER_MISMATCH",
    "IDEMPOTENT_METHODS",
    "INITIALIZE",
    "INITIALIZED",
    "INPUT_METHODS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LEGACY_ELICITATION_FROM",
    "LEGACY_ONLY_METHODS",
    "LEGACY_RESOURCE_NOT_FOUND",
    "LEGACY_SSE_PRIMING_FROM",
    "LEGACY_URL_ELICITATION_FROM",
    "LEGACY_VERSIONS",
    "LIST_CHANGED",
    "LISTEN",
    "LISTS",
    "LOG_LEVEL_KEY",
    "LOG_LEVEL_RANK",
    "LOG_LEVELS",
    "MESSAGE",
    "META_PREFIX",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN",
    "MODERN_ERROR_CODES",
    "MODERN_ONLY_METHODS",
    "MODERN_VERSIONS",
    "MRTR_METHODS",
    "PARSE_ERROR",
    "PING",
    "PROGRESS",
    "PROGRESS_TOKEN_KEY",
    "PROMPTS_GET",
    "PROMPTS_LIST",
    "PROMPTS_LIST_CHANGED",
    "PROTOCOL_VERSION_KEY",
    "PYTHON_LOG_LEVEL",
    "RESOURCE_UPDATED",
    "RESOURCES_LIST",
    "RESOURCES_LIST_CHANGED",
    "RESOURCES_READ",
    "RESOURCES_TEMPLATES_LIST",
    "RESULT_TASK",
    "ROOTS",
    "SAMPLE",
    "SERVER_INFO_KEY",
    "SET_LEVEL",
    "SUBSCRIBE",
    "SUBSCRIPTION_ID_KEY",
    "TASK_AUGMENTABLE_METHODS",
    "TASK_METHODS",
    "TASK_STATUS",
    "TASK_STATUSES",
    "TASKS_CANCEL",
    "TASKS_EXTENSION",
    "TASKS_GET",
    "TASKS_UPDATE",
    "TERMINAL_TASK_STATUSES",
    "TOOL_NAME_MAX",
    "TOOLS_CALL",
    "TOOLS_LIST",
    "TOOLS_LIST_CHANGED",
    "UNSUBSCRIBE",
    "UNSUPPORTED_PROTOCOL_VERSION",
]
