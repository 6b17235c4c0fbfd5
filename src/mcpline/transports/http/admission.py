"""The admission ladder of the HTTP transport: which requests and connections are let in.

A **rung** is a pure function of plain values (numbers, strings, `Headers`) that returns a
`Refusal`, the answer to send, or None to let the request go on. Rungs never touch ASGI or a
socket, so each is tested alone; the app climbs them in order, chaining with ``or``::

    refusal = header_size(headers.size, limit) or host(gate, headers.get("host"), bound)
    if refusal is not None:
        await respond.refuse(send, refusal, extra)  # mcpline.transports.http.respond
        return

Counters whose decisions are rungs live here too: `BodyBudget` (bytes of request bodies
held at once, across every request) decides with `over_budget`; `Shares` (requests and
listens in progress, per client and in all) with `over_share`. The connection guard of
`mcpline.transports.http.connections` decides with `connection_limit`.

A **client** is who a share belongs to (`client_key`): its principal when ``verify_token``
gave one, else its remote address.

`refuse` sends ``refusal.status`` with a JSON-RPC error body (``refusal.code``,
``refusal.message``) and ``refusal.headers`` (plus ``Connection: close`` when ``close``).
To add a rung: write ``def name(values...) -> Refusal | None`` with a docstring naming its
status, test it in ``tests/transports/test_http_admission.py``, and chain it where the
request has the values it needs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ...spec import INTERNAL_ERROR, INVALID_REQUEST
from .headers import accepts, is_json
from .security import Gatekeeper

RETRY_AFTER_SECONDS = 1
"""What a 503 of a momentary limit (bodies in flight, connections) asks the client to wait."""

LIMIT_HITS: Counter[str] = Counter()
"""How often each limit of this process answered at its bound, by option name (what
``/metrics`` shows); `hit` counts one."""


def hit(limit: str) -> None:
    """Count one answer of ``limit`` (an option name, such as ``max_body_bytes``) at its
    bound."""
    LIMIT_HITS[limit] += 1


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
    limit: str = ""
    """The option whose bound this is (counted by `hit`), "" for a refusal of no limit."""

    def __post_init__(self) -> None:
        if self.limit:
            hit(self.limit)

    def response_headers(self) -> list[tuple[bytes, bytes]]:
        """`headers`, with ``connection: close`` when the connection is to close."""
        out = list(self.headers)
        if self.close:
            out.append((b"connection", b"close"))
        return out


def busy(message: str, *, close: bool = False, limit: str = "") -> Refusal:
    """503 Service Unavailable with ``Retry-After`` (a momentary limit was reached)."""
    retry = str(RETRY_AFTER_SECONDS).encode("ascii")
    return Refusal(
        503,
        f"Service Unavailable: {message}",
        INTERNAL_ERROR,
        ((b"retry-after", retry),),
        close,
        limit,
    )


# --- rungs --------------------------------------------------------------------------------


def header_size(size: int, limit: int) -> Refusal | None:
    """431 when the header block (``size`` bytes) is over ``limit`` bytes."""
    if size <= limit:
        return None
    return Refusal(
        431, f"Request Header Fields Too Large: over {limit} bytes", limit="max_header_bytes"
    )


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
    return Refusal(
        413,
        f"Payload Too Large: the body exceeds {limit} bytes",
        close=True,
        limit="max_body_bytes",
    )


def over_budget(held: int, more: int, budget: int) -> Refusal | None:
    """503 (Retry-After, connection closed) when ``more`` body bytes would take the bytes of
    request bodies held at once, across every request, from ``held`` over ``budget``."""
    if held + more <= budget:
        return None
    return busy(
        f"request bodies in flight would exceed {budget} bytes (max_body_total_bytes); retry",
        close=True,
        limit="max_body_total_bytes",
    )


def connection_limit(open_connections: int, limit: int) -> Refusal | None:
    """503 (Retry-After, connection closed) when ``open_connections``, counting the new one,
    is over ``limit``."""
    if open_connections <= limit:
        return None
    return busy(
        f"{limit} connections are open (max_connections)", close=True, limit="max_connections"
    )


def over_share(what: str, used: int, limit: int, option: str, *, client: bool) -> Refusal | None:
    """None while ``used`` (before this one) is under ``limit``; else 429 Too Many Requests
    for a ``client``'s own share, 503 for the server's total, both with ``Retry-After``."""
    if used < limit:
        return None
    retry = ((b"retry-after", str(RETRY_AFTER_SECONDS).encode("ascii")),)
    if client:
        why = f"Too Many Requests: this client has {used} {what} ({option}); retry later"
        return Refusal(429, why, INTERNAL_ERROR, retry, limit=option)
    why = f"Service Unavailable: the server has {used} {what} ({option}); retry later"
    return Refusal(503, why, INTERNAL_ERROR, retry, limit=option)


def client_key(principal_key: str | None, address: Any) -> str:
    """Who a share belongs to: ``principal_key`` (a digest of the principal) when there is
    one, else the remote host of ASGI's ``scope["client"]`` (``address``; all clients without
    one, a Unix socket say, share one key)."""
    if principal_key:
        return "principal " + principal_key
    if isinstance(address, (tuple, list)) and address:
        return f"address {address[0]}"
    return "address ?"


# --- counters -----------------------------------------------------------------------------


class Shares:
    """Requests in progress (listens among them), per client and in all.

    ``admit`` counts one request of a client, or refuses it (`over_share`): over ``total``
    requests for the whole server (503), over ``per_client`` requests or ``listens_per_client``
    listens for that client (429). ``release`` gives it back. Not thread-safe: one per event
    loop."""

    __slots__ = ("in_progress", "listens", "listens_per_client", "per_client", "requests", "total")

    def __init__(self, total: int, per_client: int, listens_per_client: int) -> None:
        for name, value in (
            ("max_requests", total),
            ("max_requests_per_client", per_client),
            ("max_listens_per_client", listens_per_client),
        ):
            if value < 1:
                raise ValueError(f"{name} must be positive")
        self.total = total
        self.per_client = per_client
        self.listens_per_client = listens_per_client
        self.in_progress = 0
        """Requests in progress, every client's."""
        self.requests: dict[str, int] = {}
        """Requests in progress per client (absent: none)."""
        self.listens: dict[str, int] = {}
        """Listens open per client (absent: none)."""

    def admit(self, client: str, listen: bool) -> Refusal | None:
        """Count one request (a ``listen``, or not) of ``client``; or the refusal, counting
        nothing."""
        used = self.requests.get(client, 0)
        if (
            self.in_progress < self.total
            and used < self.per_client
            and (not listen or self.listens.get(client, 0) < self.listens_per_client)
        ):
            self.in_progress += 1
            self.requests[client] = used + 1
            if listen:
                self.listens[client] = self.listens.get(client, 0) + 1
            return None
        return (
            over_share(
                "requests in progress", self.in_progress, self.total, "max_requests", client=False
            )
            or over_share(
                "requests in progress",
                used,
                self.per_client,
                "max_requests_per_client",
                client=True,
            )
            or over_share(
                "listens open",
                self.listens.get(client, 0),
                self.listens_per_client,
                "max_listens_per_client",
                client=True,
            )
        )

    def release(self, client: str, listen: bool) -> None:
        """Give back what `admit` counted for one request."""
        self.in_progress -= 1
        _decrement(self.requests, client)
        if listen:
            _decrement(self.listens, client)


class RateLimit:
    """Events per client (new sessions, say): a bucket of ``burst`` tokens per client,
    refilled at ``rate`` per second. ``take`` spends one, or refuses (429, ``Retry-After``
    the seconds until the next token). At most ``max_clients`` buckets are kept: past it
    the buckets that are full again go, then the oldest. Not thread-safe."""

    __slots__ = ("buckets", "burst", "max_clients", "rate")

    def __init__(self, rate: float, burst: int, max_clients: int = 4096) -> None:
        if not (rate > 0 and burst >= 1 and max_clients >= 1):
            raise ValueError("a rate limit needs a positive rate, burst and client count")
        self.rate = rate
        self.burst = burst
        self.max_clients = max_clients
        self.buckets: dict[str, tuple[float, float]] = {}
        """Per client: the tokens left, and when they were counted."""

    def take(self, client: str, now: float, what: str = "new sessions") -> Refusal | None:
        """Spend one of ``client``'s tokens at time ``now`` (seconds), or the refusal."""
        tokens, then = self.buckets.pop(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        if tokens < 1:
            self.buckets[client] = (tokens, now)
            wait = max(1, math.ceil((1 - tokens) / self.rate))
            why = (
                f"Too Many Requests: this client opens {what} faster than {self.rate:g} a "
                f"second; retry in {wait} s"
            )
            retry = ((b"retry-after", str(wait).encode()),)
            return Refusal(429, why, INTERNAL_ERROR, retry, limit="session_rate")
        self.buckets[client] = (tokens - 1, now)
        if len(self.buckets) > self.max_clients:
            self._prune(now)
        return None

    def _prune(self, now: float) -> None:
        full = [
            key
            for key, (tokens, then) in self.buckets.items()
            if tokens + (now - then) * self.rate >= self.burst
        ]
        for key in full:
            del self.buckets[key]
        while len(self.buckets) > self.max_clients:
            del self.buckets[next(iter(self.buckets))]


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]


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
    "client_key",
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
    "hit",
    "LIMIT_HITS",
    "over_share",
    "RateLimit",
    "Refusal",
    "RETRY_AFTER_SECONDS",
    "Shares",
    "too_large",
]
