"""Protocol revisions this package speaks."""

from __future__ import annotations

import logging

MODERN = "2026-07-28"
MODERN_VERSIONS: tuple[str, ...] = (MODERN,)
"""Per-request (`_meta`) revisions, newest first."""

LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")
"""`initialize`-handshake revisions, newest first."""

META_PREFIX = "io.modelcontextprotocol/"
PROTOCOL_VERSION_KEY = META_PREFIX + "protocolVersion"
CLIENT_CAPABILITIES_KEY = META_PREFIX + "clientCapabilities"
CLIENT_INFO_KEY = META_PREFIX + "clientInfo"
LOG_LEVEL_KEY = META_PREFIX + "logLevel"
SERVER_INFO_KEY = META_PREFIX + "serverInfo"
SUBSCRIPTION_ID_KEY = META_PREFIX + "subscriptionId"

MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The only methods whose result may be an InputRequiredResult."""

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
