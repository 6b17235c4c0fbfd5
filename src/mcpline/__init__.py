"""mcpline: the Model Context Protocol (2026-07-28, and 2025-11-25 beside it) over stdio, Unix
sockets, TCP and Streamable HTTP.

The errors load with the package; the server framework and the client load on first use of
one of their names (``from mcpline import Server`` or ``mcpline.Client``), so that a client
never imports the server and a tools-only server starts light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names
from ._version import __version__ as __version__
from .errors import (
    AuthError,
    ClientClosed,
    ClientError,
    ConnectionLost,
    Error,
    InputDeclined,
    JsonRpcError,
    MissingCapabilityError,
    ProtocolError,
    RequestTimeout,
    ResourceNotFoundError,
    ServerError,
    TaskCancelled,
    ToolError,
    VersionMismatch,
)

if TYPE_CHECKING:
    from .client import Client
    from .protocol.uritemplate import UriTemplate
    from .server.completion import Completion
    from .server.content import (
        ContentBlock,
        ToolResult,
        audio,
        embedded_blob,
        embedded_text,
        image,
        resource_link,
        text,
    )
    from .server.context import Context, ElicitResult
    from .server.depends import Depends
    from .server.mrtr import InputRequest, InputRequired, elicit, elicit_url, list_roots, sample
    from .server.prompts import assistant, user
    from .server.resources import PathEscapeError, safe_path
    from .server.server import Server
    from .server.signature.schema import McpHeader
    from .server.tasks.manager import Task

__all__ = [
    "AuthError",
    "Client",
    "ClientClosed",
    "ClientError",
    "Completion",
    "ConnectionLost",
    "ContentBlock",
    "Context",
    "Depends",
    "ElicitResult",
    "Error",
    "InputDeclined",
    "InputRequest",
    "InputRequired",
    "JsonRpcError",
    "McpHeader",
    "MissingCapabilityError",
    "PathEscapeError",
    "ProtocolError",
    "RequestTimeout",
    "ResourceNotFoundError",
    "Server",
    "ServerError",
    "Task",
    "TaskCancelled",
    "ToolError",
    "ToolResult",
    "UriTemplate",
    "VersionMismatch",
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
    "Server": ".server.server",
    "Context": ".server.context",
    "ElicitResult": ".server.context",
    "Depends": ".server.depends",
    "ToolResult": ".server.content",
    "ContentBlock": ".server.content",
    "audio": ".server.content",
    "embedded_blob": ".server.content",
    "embedded_text": ".server.content",
    "image": ".server.content",
    "resource_link": ".server.content",
    "text": ".server.content",
    "InputRequest": ".server.mrtr",
    "InputRequired": ".server.mrtr",
    "elicit": ".server.mrtr",
    "elicit_url": ".server.mrtr",
    "list_roots": ".server.mrtr",
    "sample": ".server.mrtr",
    "Completion": ".server.completion",
    "McpHeader": ".server.signature.schema",
    "assistant": ".server.prompts",
    "user": ".server.prompts",
    "PathEscapeError": ".server.resources",
    "safe_path": ".server.resources",
    "Task": ".server.tasks.handle",
}
"""Exports whose modules load on first access (the names `TYPE_CHECKING` imports above)."""


__getattr__ = lazy_names(__name__, _LAZY, globals())
