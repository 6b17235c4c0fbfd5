"""The mcpline client: launch or connect to any MCP server (modern or legacy) and use it
reliably. Start with `Client.stdio(command, args)`, `Client.connect(address)` or
`Client.http(url)`, or give `Client` a transport value:
``Client(StdioServer(command, args), timeout=10)``."""

from __future__ import annotations

from ..errors import (
    AuthError,
    ClientClosed,
    ClientError,
    ConnectionLost,
    InputDeclined,
    ProtocolError,
    RequestTimeout,
    ServerError,
    TaskCancelled,
    VersionMismatch,
)
from .client import Client, Listener, ServerNotification
from .era import ServerDescription
from .http import HttpServer
from .mrtr import InputHandlers
from .options import ClientOptions
from .tasks import TaskHandle
from .transports import SocketServer, StdioServer, Transport

__all__ = [
    "AuthError",
    "Client",
    "ClientClosed",
    "ClientError",
    "ClientOptions",
    "ConnectionLost",
    "HttpServer",
    "InputDeclined",
    "InputHandlers",
    "Listener",
    "ProtocolError",
    "RequestTimeout",
    "ServerDescription",
    "ServerError",
    "ServerNotification",
    "SocketServer",
    "StdioServer",
    "TaskCancelled",
    "TaskHandle",
    "Transport",
    "VersionMismatch",
]
