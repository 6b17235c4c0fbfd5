"""mcpline: the Model Context Protocol (2026-07-28) over stdio, Unix sockets and TCP."""

from __future__ import annotations

from typing import Any

from .jsonrpc import JsonRpcError
from .protocol.capabilities import MissingCapabilityError
from .protocol.uritemplate import UriTemplate
from .server.completion import Completion
from .server.content import (
    ToolError,
    ToolResult,
    audio,
    embedded_blob,
    embedded_text,
    image,
    resource_link,
    text,
)
from .server.context import Context
from .server.core import Server
from .server.mrtr import InputRequest, InputRequired, elicit, elicit_url, list_roots, sample
from .server.prompts import assistant, user
from .server.resources import ResourceNotFoundError

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Completion",
    "Context",
    "InputRequest",
    "InputRequired",
    "JsonRpcError",
    "MissingCapabilityError",
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
    "sample",
    "text",
    "user",
]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from .client import Client

        return Client
    raise AttributeError(name)
