"""Limits as middleware: requests per principal (a token bucket each) and the size of a
response."""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import JsonRpcError
from ..server.owners import owner_key
from ..server.tools import error_result
from ..spec import TOOLS_CALL
from ..wire import encode
from ._chain import CallNext, Middleware, MiddlewareContext

log = logging.getLogger("mcpline.middleware")

RATE_LIMITED = -32011
"""The error of a request over its caller's rate (MCP leaves -32000 to -32019 to
implementations); ``data.retryAfterMs`` says when one more would be admitted."""
RESPONSE_TOO_LARGE = -32012
"""The error of a response over `ResponseSizeLimitMiddleware`'s limit (a ``tools/call`` gets
an ``isError`` result instead)."""


def principal_key(mctx: MiddlewareContext) -> str:
    """The default rate-limit key: a digest of the principal (`owner_key`), or
    ``"anonymous"`` for every caller without one."""
    return owner_key(mctx.principal) if mctx.principal is not None else "anonymous"


class RateLimitMiddleware(Middleware):
    """At most ``rate`` requests a second per key, in bursts of up to ``burst`` (a token
    bucket per key). The key is the principal (``key(mctx)`` to choose another): callers
    without one share the ``"anonymous"`` bucket. ``methods`` limits only those methods
    (default: every request; notifications and the background runs of tasks, whose
    ``tools/call`` was counted, pass). Over the rate a request is refused with
    `RATE_LIMITED` (-32011) and ``data.retryAfterMs``. At most ``max_keys`` buckets are kept;
    one more forgets the least recently used (which starts full again)."""

    def __init__(
        self,
        rate: float = 10.0,
        burst: float | None = None,
        *,
        key: Callable[[MiddlewareContext], str] | None = None,
        methods: Iterable[str] | None = None,
        max_keys: int = 10_000,
    ) -> None:
        burst = max(rate, 1.0) if burst is None else burst
        if not (rate > 0 and math.isfinite(rate)) or burst < 1 or max_keys < 1:
            raise ValueError("rate must be positive and finite, burst and max_keys at least 1")
        self.rate = rate
        self.burst = burst
        self.key = key or principal_key
        self.methods = None if methods is None else frozenset(methods)
        self.max_keys = max_keys
        self.refused = 0
        """Requests refused so far."""
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    @property
    def keys(self) -> int:
        """Buckets kept (at most ``max_keys``)."""
        return len(self._buckets)

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        if mctx.task is None and (self.methods is None or mctx.method in self.methods):
            wait = self.take(self.key(mctx))
            if wait > 0:
                self.refused += 1
                retry_ms = math.ceil(wait * 1000)
                raise JsonRpcError(
                    RATE_LIMITED,
                    f"Too many requests: over {self.rate:g} a second; retry in {retry_ms} ms",
                    {"retryAfterMs": retry_ms},
                )
        return await call_next(mctx)

    def take(self, key: str, now: float | None = None) -> float:
        """Spend one token of ``key``'s bucket: 0 when there was one, else the seconds until
        there is."""
        now = time.monotonic() if now is None else now
        buckets = self._buckets
        found = buckets.pop(key, None)
        tokens, last = (self.burst, now) if found is None else found
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if tokens >= 1:
            buckets[key] = (tokens - 1, now)
            wait = 0.0
        else:
            buckets[key] = (tokens, now)
            wait = (1 - tokens) / self.rate
        while len(buckets) > self.max_keys:
            buckets.popitem(last=False)
        return wait


class ResponseSizeLimitMiddleware(Middleware):
    """Results larger than ``max_bytes`` (encoded JSON) never leave: a ``tools/call`` gets an
    ``isError`` result saying so (the model can try something smaller), anything else the
    error `RESPONSE_TOO_LARGE` (-32012); both are logged. ``methods`` limits only those (default:
    every request). Each result is encoded once more to be measured."""

    every_round = True

    def __init__(self, max_bytes: int = 1024 * 1024, *, methods: Iterable[str] | None = None):
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self.methods = None if methods is None else frozenset(methods)
        self.hit = 0
        """Results refused so far."""

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        result = await call_next(mctx)
        if self.methods is not None and mctx.method not in self.methods:
            return result
        try:
            size = len(encode(result))
        except TypeError:
            return result  # not JSON: the engine answers -32603 for it
        if size <= self.max_bytes:
            return result
        self.hit += 1
        what = f"{mctx.method} {mctx.name or mctx.uri or ''}".strip()
        log.warning(
            "the result of %s is %d bytes, over the limit of %d", what, size, self.max_bytes
        )
        why = f"the result is {size} bytes, over this server's limit of {self.max_bytes}"
        if mctx.method == TOOLS_CALL and mctx.era is not None:
            refused = error_result(f"Tool result too large: {why}")
            if mctx.era == "modern":
                refused["resultType"] = "complete"
            return refused
        raise JsonRpcError(RESPONSE_TOO_LARGE, f"Response too large: {why}", {"size": size})


__all__ = [
    "RATE_LIMITED",
    "RateLimitMiddleware",
    "RESPONSE_TOO_LARGE",
    "ResponseSizeLimitMiddleware",
    "principal_key",
]
