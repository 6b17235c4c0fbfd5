"""The mcpline client: launch or connect to any MCP server (modern or legacy) and use it
reliably. Start with `Client.stdio(command, args)` or `Client.connect(address)`."""

from __future__ import annotations

from ..errors import (
    ClientClosed,
    ClientError,
    ConnectionLost,
    InputDeclined,
    ProtocolError,
    RequestTimeout,
    ServerError,
    VersionMismatch,
)
from .client import Client, Listener, ServerNotification
from .era import ServerDescription
from .mrtr import InputHandlers

__all__ = [
    "Client",
    "ClientClosed",
    "ClientError",
    "ConnectionLost",
    "InputDeclined",
    "InputHandlers",
    "Listener",
    "ProtocolError",
    "RequestTimeout",
    "ServerDescription",
    "ServerError",
    "ServerNotification",
    "VersionMismatch",
]
