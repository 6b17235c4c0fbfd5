"""mcpline: the Model Context Protocol (2026-07-28) over stdio, Unix sockets and TCP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import JsonRpcError, MissingCapabilityError, ResourceNotFoundError, ToolError
from .server.content import (
    ToolResult,
    audio,
    embedded_blob,
    embedded_text,
    image,
    resource_link,
    text,
)
from .server.context import Context
from .server.mrtr import InputRequest, InputRequired, elicit, elicit_url, list_roots, sample
from .server.server import Server

if TYPE_CHECKING:
    from .client import Client
    from .protocol.uritemplate import UriTemplate
    from .server.completion import Completion
    from .server.prompts import assistant, user
    from .server.resources import PathEscapeError, safe_path
    from .server.schema import McpHeader

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Completion",
    "Context",
    "InputRequest",
    "InputRequired",
    "JsonRpcError",
    "McpHeader",
    "MissingCapabilityError",
    "PathEscapeError",
    "ResourceNotFoundError",
    "Server",
    "ToolError",
    "ToolResult",
    "UriTemplate",
    "assistant",
    "audio",
    "embedded_blob",
    "elicit",
    "elicit_url",
    "embedded_text",
    "image",
    "list_roots",
    "resource_link",
    "safe_path",
    "sample",
    "text",
    "user",
]


_LAZY = {
    "Client": ".client",
    "UriTemplate": ".protocol.uritemplate",
    "Completion": ".server.completion",
    "McpHeader": ".server.schema",
    "assistant": ".server.prompts",
    "user": ".server.prompts",
    "PathEscapeError": ".server.resources",
    "safe_path": ".server.resources",
}
"""Exports whose modules load on first access (start-up of a tools-only server stays light)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpline' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
