"""Middleware: an ordered chain of async callables around every request and notification a
server serves, on every transport and in both eras (see docs/middleware.md).

Add them with ``Server(middleware=[...])`` or `mcpline.Server.add_middleware`; the first
added is the outermost. A middleware is a `Middleware` (hooks by kind, as in FastMCP) or
any ``async def mw(mctx, call_next)``.
"""

from __future__ import annotations

from ._chain import (
    CallNext,
    Chain,
    Middleware,
    MiddlewareContext,
    MiddlewareFn,
    every_round,
)
from .caching import ResponseCacheMiddleware
from .limits import (
    RATE_LIMITED,
    RESPONSE_TOO_LARGE,
    RateLimitMiddleware,
    ResponseSizeLimitMiddleware,
)
from .logs import LoggingMiddleware, TimingMiddleware
from .masking import ErrorMaskingMiddleware

__all__ = [
    "CallNext",
    "Chain",
    "ErrorMaskingMiddleware",
    "every_round",
    "LoggingMiddleware",
    "Middleware",
    "MiddlewareContext",
    "MiddlewareFn",
    "RATE_LIMITED",
    "RateLimitMiddleware",
    "RESPONSE_TOO_LARGE",
    "ResponseCacheMiddleware",
    "ResponseSizeLimitMiddleware",
    "TimingMiddleware",
]
