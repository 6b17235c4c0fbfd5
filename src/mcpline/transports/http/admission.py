"""The admission ladder of the HTTP transport: which requests and connections are let in.

A **rung** is a pure function of plain values (numbers, strings, `Headers`) that returns a
`Refusal`, the answer to send, or None to let the request go on. Rungs never touch ASGI or a
socket, so each is tested alone; the app climbs them in order, chaining with ``or``::

    refusal = header_size(headers.size, limit) or host(gate, headers.get("host"), bound)
    if refusal is not None:
        await refuse(send, refusal, extra)  # mcpline.transports.http.app.refuse
        return

Counters whose decisions are rungs live here too: `BodyBudget` (bytes of request bodies
held at once, across every request) decides with `over_budget`. The connection guard of
`mcpline.transports.http.connections` decides with `connection_limit`.

`refuse` sends ``refusal.status`` with a JSON-RPC error body (``refusal.code``,
``refusal.message``) and ``refusal.headers`` (plus ``Connection: close`` when ``close``).
To add a rung: write ``def name(values...) -> Refusal | None`` with a docstring naming its
status, test it in ``tests/transports/test_http_admission.py``, and chain it where the
request has the values it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...spec import INTERNAL_ERROR, INVALID_REQUEST
from .headers import accepts, is_json
from .security import Gatekeeper, challenge

RETRY_AFTER_SECONDS = 1
"""What a 503 of a momentary limit (bodies in flight, connections) asks the client to wait."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """The answer to a request that is not admitted: an HTTP ``status`` whose body is a
    JSON-RPC error (``code``, ``message``), extra response ``headers``, and whether the
    connection closes after it (``close``: the request body is left unread)."""

    status: int
    message: str
    code: int = INVALID_REQUEST
    headers: tuple[tuple[bytes, bytes], ...] = ()
    close: bool = False

    def response_headers(self) -> list[tuple[bytes, bytes]]:
        """`headers`, with ``connection: close`` when the connection is to close."""
        out = list(self.headers)
        if self.close:
            out.append((b"connection", b"close"))
        return out


def busy(message: str, *, close: bool = False) -> Refusal:
    """503 Service Unavailable with ``Retry-After`` (a momentary limit was reached)."""
    retry = str(RETRY_AFTER_SECONDS).encode("ascii")
    return Refusal(
        503,
        f"Service Unavailable: {message}",
        INTERNAL_ERROR,
        ((b"retry-after", retry),),
        close,
    )


# --- rungs --------------------------------------------------------------------------------


def header_size(size: int, limit: int) -> Refusal | None:
    """431 when the header block (``size`` bytes) is over ``limit`` bytes."""
    if size <= limit:
        return None
    return Refusal(431, f"Request Header Fields Too Large: over {limit} bytes")


def origin(gate: Gatekeeper, value: str | None, bound: tuple[str, int] | None) -> Refusal | None:
    """403 when an ``Origin`` is sent and ``gate`` does not allow it on this ``bound``
    address (DNS rebinding and cross-site browsers)."""
    if value is None or gate.origin_allowed(value, bound):
        return None
    return Refusal(403, f"Forbidden: Origin {value[:80]!r} is not allowed (see allowed_origins)")


def host(gate: Gatekeeper, value: str | None, bound: tuple[str, int] | None) -> Refusal | None:
    """421 when ``gate`` does not serve this ``Host`` on this ``bound`` address."""
    if gate.host_allowed(value, bound):
        return None
    shown = (value or "")[:80]
    return Refusal(
        421, f"Misdirected Request: Host {shown!r} is not served here (see allowed_hosts)"
    )


def method(name: str, allow: bytes) -> Refusal | None:
    """405 (`not_allowed`) for a method other than GET, POST and DELETE."""
    return None if name in ("GET", "POST", "DELETE") else not_allowed(allow)


def not_allowed(allow: bytes) -> Refusal:
    """405 Method Not Allowed, with ``Allow: allow``."""
    why = f"Method Not Allowed: this endpoint takes {allow.decode()}" + (
        "" if allow == b"POST" else " (GET and DELETE need a 2025-11-25 Mcp-Session-Id)"
    )
    return Refusal(405, why, headers=((b"allow", allow),))


def unauthorized(
    token: str | None, principal: Any, resource_metadata: dict[str, Any] | None
) -> Refusal | None:
    """401 with a ``WWW-Authenticate`` challenge (naming ``resource_metadata``) when no
    bearer ``token`` came, or the verifier gave no ``principal`` for it."""
    if principal is not None:
        return None
    error = None if token is None else "invalid_token"
    why = "Unauthorized: " + (
        "a bearer token is required" if token is None else "the token was refused"
    )
    www = challenge(resource_metadata, error).encode("latin-1")
    return Refusal(401, why, headers=((b"www-authenticate", www),))


def content_type(value: str | None) -> Refusal | None:
    """415 unless the body is declared ``application/json``."""
    if is_json(value):
        return None
    return Refusal(415, "Unsupported Media Type: the body must be Content-Type: application/json")


def accept(value: str | None) -> Refusal | None:
    """406 unless ``Accept`` lists both ``application/json`` and ``text/event-stream``."""
    if accepts(value, "application/json") and accepts(value, "text/event-stream"):
        return None
    return Refusal(406, "Not Acceptable: Accept must list application/json and text/event-stream")


def declared_length(value: str | None) -> int | None:
    """The body length a ``Content-Length`` value declares (None when absent or not a
    number: the HTTP server frames the body, and the reader counts it)."""
    if value is None:
        return None
    text = value.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def body_size(size: int, limit: int) -> Refusal | None:
    """413 (`too_large`) when a body of ``size`` bytes (declared or read so far) is over
    ``limit``."""
    return None if size <= limit else too_large(limit)


def too_large(limit: int) -> Refusal:
    """413 Payload Too Large, the connection closed (the rest of the body is not read)."""
    return Refusal(413, f"Payload Too Large: the body exceeds {limit} bytes", close=True)


def over_budget(held: int, more: int, budget: int) -> Refusal | None:
    """503 (Retry-After, connection closed) when ``more`` body bytes would take the bytes of
    request bodies held at once, across every request, from ``held`` over ``budget``."""
    if held + more <= budget:
        return None
    return busy(
        f"request bodies in flight would exceed {budget} bytes (max_body_total_bytes); retry",
        close=True,
    )


def connection_limit(open_connections: int, limit: int) -> Refusal | None:
    """503 (Retry-After, connection closed) when ``open_connections``, counting the new one,
    is over ``limit``."""
    if open_connections <= limit:
        return None
    return busy(f"{limit} connections are open (max_connections)", close=True)


# --- counters -----------------------------------------------------------------------------


class BodyBudget:
    """Bytes of request bodies held at once, across every request, at most ``limit``.

    Each request takes a `Hold`, grows it to the bytes it is about to read (its declared
    ``Content-Length`` first, then what a chunked body brings) and releases it when the
    request is answered. Not thread-safe: one per event loop.
    """

    __slots__ = ("held", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("max_body_total_bytes must be positive")
        self.limit = limit
        self.held = 0
        """Bytes held now, by every `Hold`."""

    def hold(self) -> Hold:
        """A new, empty hold on this budget."""
        return Hold(self)


class Hold:
    """The bytes of one request body held against a `BodyBudget`."""

    __slots__ = ("budget", "size")

    def __init__(self, budget: BodyBudget) -> None:
        self.budget = budget
        self.size = 0

    def grow(self, size: int) -> Refusal | None:
        """Hold ``size`` bytes in all (never fewer than now), or refuse (`over_budget`) and
        hold as before."""
        more = size - self.size
        if more <= 0:
            return None
        budget = self.budget
        refusal = over_budget(budget.held, more, budget.limit)
        if refusal is None:
            budget.held += more
            self.size = size
        return refusal

    def release(self) -> None:
        """Give every held byte back (again is harmless)."""
        self.budget.held -= self.size
        self.size = 0


__all__ = [
    "accept",
    "body_size",
    "BodyBudget",
    "busy",
    "connection_limit",
    "content_type",
    "declared_length",
    "header_size",
    "Hold",
    "host",
    "method",
    "not_allowed",
    "origin",
    "over_budget",
    "Refusal",
    "RETRY_AFTER_SECONDS",
    "too_large",
    "unauthorized",
]
