"""Sealing of MRTR ``requestState``, sans-I/O.

A sealed state is ``base64url(payload) + "." + hex(HMAC-SHA256(key, context + base64url(payload)))``
where the payload is compact JSON::

    {"v": 2, "m": method, "d": digest of the salient params, "o": the owner (who asked),
     "x": expiry (unix s), "n": nonce, "s": the handler's state, "k": {input key: input method}}

The MAC is checked over the exact bytes received, with `hmac.compare_digest`, before
anything is decoded; decoding is then strict (no padding, no stray characters, exact keys).
A state is accepted only by the same deployment (key + server name), for the same method
and the same salient params (e.g. tool name and arguments), from the same owner (the
server passes a digest of the request's principal: a state sealed for one authenticated
caller is refused from another), before its expiry.

Key: ``Server(state_key=...)``, else the ``MCPLINE_STATE_KEY`` environment variable, else a
random per-process key — then states die with the process (a retry after a restart gets
-32602 and the client starts over). Give replicas the same key to let them share states.

The state is authenticated, not encrypted: the client can read it, so keep secrets out of it.

Replay: each sealed state carries a random nonce. With a `NonceLedger` (the server's default)
a state is accepted once: opening it records the nonce until the state expires, and a second
use is -32602. The default `MemoryNonceLedger` sees only this process, so replicas that share
a key must share a ledger too (any object with `NonceLedger.claim`) or a state can be
replayed once per replica. Without a ledger (``Server(state_single_use=False)``) a state is
reusable until it expires, on the same method and params only.
"""

from __future__ import annotations

import base64
import heapq
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import msgspec

from ..errors import StateError

STATE_KEY_ENV = "MCPLINE_STATE_KEY"
MIN_KEY_BYTES = 16
MAX_STATE_CHARS = 64 * 1024
"""A sealed state longer than this is refused (both when sealing and when opening)."""

_FORMAT = r"[A-Za-z0-9_-]+\.[0-9a-f]{64}"
"""A sealed state (compiled by `re` on first use, not at import)."""
_PAYLOAD_KEYS = frozenset({"v", "m", "d", "o", "x", "n", "s", "k"})
_encoder = msgspec.json.Encoder(order="sorted")
_decoder = msgspec.json.Decoder()
EXCLUDED_PARAMS = frozenset({"_meta", "inputResponses", "requestState"})
"""Params that are not part of the request's identity (the digest covers all the others)."""


class NonceLedger(Protocol):
    """Records which sealed states were used, so that each is accepted once."""

    def claim(self, nonce: str, expiry: int) -> bool:
        """Record ``nonce`` until ``expiry`` (unix s); False when it was already claimed or
        cannot be recorded (the state is then refused)."""
        ...


class MemoryNonceLedger:
    """A `NonceLedger` for one process, holding at most ``max_entries`` unexpired nonces.

    When full of unexpired nonces it refuses new claims (fails closed) rather than forget
    one that could then be replayed.
    """

    def __init__(self, max_entries: int = 100_000, clock: Callable[[], float] = time.time):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._clock = clock
        self._expiry: dict[str, int] = {}
        self._queue: list[tuple[int, str]] = []

    def __len__(self) -> int:
        return len(self._expiry)

    def claim(self, nonce: str, expiry: int) -> bool:
        now = self._clock()
        queue = self._queue
        while queue and queue[0][0] <= now:
            _, old = heapq.heappop(queue)
            self._expiry.pop(old, None)
        if nonce in self._expiry or len(self._expiry) >= self.max_entries:
            return False
        self._expiry[nonce] = expiry
        heapq.heappush(queue, (expiry, nonce))
        return True


def params_digest(params: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``params`` minus `EXCLUDED_PARAMS`."""
    salient = {k: v for k, v in params.items() if k not in EXCLUDED_PARAMS}
    try:
        data = _encoder.encode(salient)
    except (
        TypeError,
        ValueError,
        OverflowError,
    ) as exc:  # not JSON data (cannot come off the wire)
        raise ValueError(f"params are not JSON data: {exc}") from None
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _b64decode(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64encode(raw) != text:  # non-canonical trailing bits
        raise ValueError("non-canonical base64")
    return raw


def resolve_key(key: bytes | str | None) -> tuple[bytes, bool]:
    """The key bytes and whether they are stable (configured) rather than per-process random."""
    if key is None:
        env = os.environ.get(STATE_KEY_ENV)
        if env:
            key = env
    if key is None:
        return os.urandom(32), False  # what secrets.token_bytes does, without its imports
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if len(raw) < MIN_KEY_BYTES:
        raise ValueError(
            f"the requestState key must be at least {MIN_KEY_BYTES} bytes "
            f"(Server(state_key=...) or ${STATE_KEY_ENV})"
        )
    return raw, True


def env_key_problem() -> str | None:
    """Why ``$MCPLINE_STATE_KEY`` cannot be used (set but too short), else None: for a
    command line to refuse it before it imports anything that would build a sealer."""
    try:
        resolve_key(None)
    except ValueError as exc:
        return str(exc)
    return None


class StateSealer:
    """Seals and opens ``requestState`` strings for one deployment.

    ``key``: bytes or text of at least 16 bytes; ``None`` reads ``$MCPLINE_STATE_KEY`` and
    falls back to a random per-process key. ``scope`` (e.g. the server name) separates
    deployments that share a key. ``ttl`` is the lifetime of a state in seconds. With a
    ``ledger`` each state opens once (see the module docstring).
    """

    def __init__(
        self,
        key: bytes | str | None = None,
        *,
        scope: str = "",
        ttl: float = 900.0,
        clock: Callable[[], float] = time.time,
        ledger: NonceLedger | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError("state ttl must be positive")
        self._raw, self.stable = resolve_key(key)
        self._scope = scope
        self._key: bytes | None = None
        self.ttl = ttl
        self._clock = clock
        self.ledger = ledger

    def _mac(self, body: bytes) -> str:
        # hashlib/hmac load on the first seal or open, not with the server.
        import hashlib
        import hmac

        if self._key is None:
            # Derive a dedicated MAC key so the configured secret is used for nothing else.
            self._key = hmac.new(
                self._raw, b"mcpline requestState v1\x00" + self._scope.encode(), hashlib.sha256
            ).digest()
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()

    def seal(
        self,
        method: str,
        params: Mapping[str, Any],
        state: Any,
        input_methods: Mapping[str, str] | None = None,
        *,
        owner: str = "",
        ttl: float | None = None,
    ) -> str:
        """A sealed token binding ``state`` to ``method``, the salient ``params`` and
        ``owner`` (who may send it back; "" for anyone unauthenticated).

        ``input_methods`` (input key → method) lets the retry's ``inputResponses`` be checked
        against what was asked. Raises `ValueError` if ``state`` is not JSON-encodable or the
        token would exceed `MAX_STATE_CHARS`.
        """
        payload = {
            "v": 2,
            "m": method,
            "d": params_digest(params),
            "o": owner,
            "x": math.ceil(self._clock() + (self.ttl if ttl is None else ttl)),
            "n": os.urandom(8).hex(),  # = secrets.token_hex(8)
            "s": state,
            "k": dict(input_methods or {}),
        }
        try:
            body = _b64encode(_encoder.encode(payload))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"requestState must be JSON data: {exc}") from None
        token = f"{body}.{self._mac(body.encode('ascii'))}"
        if len(token) > MAX_STATE_CHARS:
            raise ValueError(
                f"sealed requestState is {len(token)} characters (limit {MAX_STATE_CHARS})"
            )
        return token

    def open(
        self, token: Any, method: str, params: Mapping[str, Any], owner: str = ""
    ) -> tuple[Any, dict[str, str]]:
        """Verify ``token`` for this request from ``owner``; return (state, input methods).

        Raises `StateError` (-32602) for anything but an intact, unexpired token issued by this
        deployment for the same method, salient params and owner, and, with a ledger, not
        used before.
        """
        if type(token) is not str:
            raise StateError("must be a string")
        if len(token) > MAX_STATE_CHARS or not re.fullmatch(_FORMAT, token):
            raise StateError("is malformed or was not issued by this server")
        body, _, mac = token.rpartition(".")
        import hmac

        if not hmac.compare_digest(self._mac(body.encode("ascii")), mac):
            raise StateError("failed its integrity check (tampered, or sealed with another key)")
        try:
            payload = _decoder.decode(_b64decode(body))
        except (ValueError, msgspec.DecodeError):
            raise StateError("is malformed") from None
        if type(payload) is not dict or payload.keys() != _PAYLOAD_KEYS or payload["v"] != 2:
            raise StateError("has an unknown format")
        expiry, inputs = payload["x"], payload["k"]
        if (
            type(expiry) is not int
            or type(inputs) is not dict
            or not all(type(v) is str for v in inputs.values())
        ):
            raise StateError("has an unknown format")
        if payload["m"] != method:
            raise StateError(f"was issued for {payload['m']!r}, not {method!r}")
        if not hmac.compare_digest(str(payload["d"]), params_digest(params)):
            raise StateError("was issued for a request with other parameters")
        if type(payload["o"]) is not str or not hmac.compare_digest(payload["o"], owner):
            raise StateError("was issued to another client")
        if self._clock() >= expiry:
            raise StateError("has expired; start the request again without it")
        if self.ledger is not None and not self.ledger.claim(str(payload["n"]), expiry):
            raise StateError("was already used (each is accepted once); start again without it")
        return payload["s"], inputs


__all__ = [
    "env_key_problem",
    "EXCLUDED_PARAMS",
    "MAX_STATE_CHARS",
    "MemoryNonceLedger",
    "MIN_KEY_BYTES",
    "NonceLedger",
    "params_digest",
    "resolve_key",
    "STATE_KEY_ENV",
    "StateSealer",
]
