"""Every error mcpline raises, under one base class::

    Error
    ├── JsonRpcError            answered on the wire as a JSON-RPC error (code, message, data)
    │   ├── InvalidParams           -32602
    │   │   ├── ResourceNotFoundError   no resource has this URI (``data.uri``)
    │   │   └── StateError              a ``requestState`` that failed verification
    │   ├── MethodNotFound          -32601
    │   ├── MissingCapabilityError  -32021: the request lacks a client capability it needs
    │   └── InternalError           -32603: the server's own failure
    ├── ToolError               a tool's failure, returned as ``isError: true`` with its message
    └── ClientError             raised by the client; never carries a code of its own
        ├── ServerError             the server answered with a JSON-RPC error (its code)
        ├── ProtocolError           the server broke the protocol
        │   └── VersionMismatch         no protocol version in common
        ├── RequestTimeout          no answer in time (the request was cancelled)
        ├── ConnectionLost          the process exited or the socket closed first
        ├── AuthError               authorization with the server's authorization server failed
        ├── InputDeclined           an input the host could not or would not give
        ├── TaskCancelled           the task a tool call became was cancelled
        └── ClientClosed            the client was closed

`wire_error` is the one mapping from an exception to the error a peer is sent.
"""

from __future__ import annotations

import logging
from typing import Any

from .spec import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_RESOURCE_NOT_FOUND,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)

log = logging.getLogger("mcpline.server")


class Error(Exception):
    """Base class of every error mcpline raises."""


class JsonRpcError(Error):
    """An error that becomes a JSON-RPC error response."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class InvalidParams(JsonRpcError):
    """-32602: the request's parameters are wrong; ``message`` says how."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class MethodNotFound(JsonRpcError):
    """-32601: this server has no such method (or does not offer its capability)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(METHOD_NOT_FOUND, message, data)


class InternalError(JsonRpcError):
    """-32603: the server failed; the message says what failed, never how (no traceback)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)


class ResourceNotFoundError(InvalidParams):
    """-32602 with ``data: {"uri": …}``: no resource has this URI.

    Raise it from a template function when the variables name nothing. (A legacy session is
    answered -32002, as its revisions specify.)
    """

    def __init__(self, uri: str, message: str | None = None) -> None:
        super().__init__(message or f"Resource not found: {uri}", {"uri": uri})
        self.uri = uri


class StateError(InvalidParams):
    """-32602: a ``requestState`` that failed verification; the handler never sees it."""

    def __init__(self, why: str) -> None:
        super().__init__(f"Invalid params: requestState {why}")


class MissingCapabilityError(JsonRpcError):
    """-32021: the request lacks a client capability that processing it needs."""

    def __init__(self, required: dict[str, Any], message: str | None = None) -> None:
        names = ", ".join(sorted(required)) or "?"
        super().__init__(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            message or f"Missing required client capability: {names}",
            {"requiredCapabilities": required},
        )


class ToolError(Error):
    """Raise from a tool body to return ``isError: true`` with exactly this message."""


def wire_error(exc: BaseException, method: str, *, legacy: bool = False) -> JsonRpcError:
    """The error a peer is sent for ``exc`` raised while serving ``method``.

    A `JsonRpcError` is sent as it is, but for a legacy (``initialize``) session a missing
    resource is -32002, as its revisions specify. Anything else is our own failure: it is
    logged with its traceback (stderr only) and the peer gets -32603 naming the method.
    """
    if isinstance(exc, JsonRpcError):
        if legacy and isinstance(exc, ResourceNotFoundError):
            return JsonRpcError(LEGACY_RESOURCE_NOT_FOUND, exc.message, exc.data)
        return exc
    log.error("internal error while handling %s", method, exc_info=exc)
    return InternalError(f"Internal error while handling {method}")


# --- the client's errors -----------------------------------------------------------------


class ClientError(Error):
    """Base class of every error the client raises. Local failures carry no JSON-RPC code,
    so that they can never be mistaken for an error the server sent."""


class ServerError(ClientError):
    """The server answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None, *, method: str = "") -> None:
        where = f"{method}: " if method else ""
        super().__init__(f"{where}server error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @classmethod
    def from_error(cls, error: Any, method: str = "") -> ServerError:
        if isinstance(error, dict):
            code = error.get("code")
            message = error.get("message")
            return cls(
                code if type(code) is int else 0,
                message if isinstance(message, str) else repr(message),
                error.get("data"),
                method=method,
            )
        return cls(0, f"malformed error object {error!r}", method=method)


class ProtocolError(ClientError):
    """The server broke the protocol (bad result shape, unknown resultType, over-long line…)."""


class VersionMismatch(ProtocolError):
    """Client and server have no protocol version in common."""

    def __init__(
        self, ours: list[str] | tuple[str, ...], theirs: list[str] | tuple[str, ...]
    ) -> None:
        super().__init__(
            "no protocol version in common: this client speaks "
            f"{', '.join(ours) or 'nothing'}; the server speaks "
            f"{', '.join(map(str, theirs)) or 'nothing'}"
        )
        self.ours = list(ours)
        self.theirs = list(theirs)


class RequestTimeout(ClientError):
    """No answer in time; the request was cancelled and a late answer will be ignored."""


class ConnectionLost(ClientError):
    """The server process exited or the socket closed before the answer arrived.

    ``retriable`` is true when sending the request again (on a new process) makes sense.
    """

    def __init__(self, message: str, *, retriable: bool = True) -> None:
        super().__init__(message)
        self.retriable = retriable


class NothingListening(ConnectionLost):
    """Nothing accepts connections at the server's address (refused, or no socket file).

    The client reports it at once when it never reached the server; once it has, it is
    retried like any loss (the server may be restarting).
    """


class AuthError(ClientError):
    """Authorization failed: discovery, registration, the user's consent or the token
    endpoint (HTTP only). The message never holds a token or a client secret."""


class InputDeclined(ClientError):
    """A multi round-trip request needed an input the host could not or would not provide."""


class TaskCancelled(ClientError):
    """The task the server made of a call ended ``cancelled`` (tasks extension)."""


class ClientClosed(ClientError):
    """The client was closed."""


__all__ = [
    "AuthError",
    "ClientClosed",
    "ClientError",
    "ConnectionLost",
    "Error",
    "InputDeclined",
    "InternalError",
    "InvalidParams",
    "JsonRpcError",
    "MethodNotFound",
    "MissingCapabilityError",
    "ProtocolError",
    "RequestTimeout",
    "ResourceNotFoundError",
    "ServerError",
    "StateError",
    "TaskCancelled",
    "ToolError",
    "VersionMismatch",
    "wire_error",
]
