"""Errors raised by the client. Local failures carry no JSON-RPC code, so that they can
never be mistaken for an error the server sent."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base class of every error the client raises."""


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


class InputDeclined(ClientError):
    """A multi round-trip request needed an input the host could not or would not provide."""


class ClientClosed(ClientError):
    """The client was closed."""
