"""The client's middleware chain: ordered async callables around every request a `Client`
sends (``Client(middleware=[...])``), with the server's shape: ``async (call, call_next)``.

A client middleware sees the method and params before they are sent (it may change the
params: they are this request's own copy), and the result or error after; it may answer
without sending, raise, or send more than once (`RetryMiddleware`). It wraps one request
with all its MRTR rounds and, for a task, its creation (not the polling).
"""

from __future__ import annotations

import asyncio
import inspect
import json as _json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TextIO

from ..errors import ConnectionLost, RequestTimeout, ServerError
from ..spec import IDEMPOTENT_METHODS
from .logs import _Lines

log = logging.getLogger("mcpline.client")


class ClientCall:
    """One request as a client middleware sees it."""

    __slots__ = ("method", "params", "started", "attempt")

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        self.method = method
        """The JSON-RPC method."""
        self.params = params
        """The params to send (this request's own copy: a middleware may change them)."""
        self.started = time.monotonic()
        self.attempt = 1
        """Which sending this is (`RetryMiddleware` counts)."""

    @property
    def name(self) -> str | None:
        """The tool or prompt named, else ``None``."""
        name = self.params.get("name")
        return name if isinstance(name, str) else None

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000


ClientCallNext = Callable[[ClientCall], Awaitable[dict[str, Any]]]
ClientMiddleware = Callable[[ClientCall, ClientCallNext], Awaitable[dict[str, Any]]]
"""``async (call, call_next) -> result``."""


async def run(
    chain: Sequence[ClientMiddleware],
    call: ClientCall,
    send: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """``call`` through ``chain`` (first outermost), ending in ``send(params)``."""

    def step(i: int) -> ClientCallNext:
        if i == len(chain):
            return lambda c: send(c.params)
        fn = chain[i]
        after = step(i + 1)
        return lambda c: fn(c, after)

    return await step(0)(call)


def check(chain: Iterable[Any]) -> tuple[ClientMiddleware, ...]:
    """``chain`` as a tuple; `TypeError` for anything not an async callable."""
    out = []
    for fn in chain:
        target: Any = None
        if callable(fn) and not isinstance(fn, type):
            plain = inspect.isfunction(fn) or inspect.ismethod(fn)
            target = fn if plain else type(fn).__call__
        if target is None or not inspect.iscoroutinefunction(target):
            raise TypeError(f"a client middleware is an async callable (call, call_next): {fn!r}")
        out.append(fn)
    return tuple(out)


class LoggingClientMiddleware:
    """One line per request once answered: method, target, attempt, outcome, milliseconds
    (``json=True``: JSON lines); to ``logger`` when given, else ``stream`` or stderr."""

    def __init__(
        self,
        *,
        json: bool = False,
        logger: logging.Logger | str | None = None,
        stream: TextIO | None = None,
        level: str = "info",
    ) -> None:
        self.json = json
        self.lines = _Lines(logger, stream, level)

    async def __call__(self, call: ClientCall, call_next: ClientCallNext) -> dict[str, Any]:
        outcome, code = "ok", None
        try:
            result = await call_next(call)
            if result.get("isError") is True:
                outcome = "tool_error"
            return result
        except ServerError as exc:
            outcome, code = "error", exc.code
            raise
        except BaseException as exc:
            outcome = type(exc).__name__
            raise
        finally:
            record: dict[str, Any] = {"event": "client request", "method": call.method}
            if call.name is not None:
                record["target"] = call.name
            record["outcome"] = outcome
            if code is not None:
                record["code"] = code
            record["ms"] = round(call.elapsed_ms(), 3)
            if self.json:
                self.lines.write(_json.dumps(record))
            else:
                rest = " ".join(f"{k}={v}" for k, v in record.items() if k not in ("event", "ms"))
                self.lines.write(f"client {rest} {record['ms']}ms")


class RetryMiddleware:
    """Send a request again when the link failed (`ConnectionLost`, `RequestTimeout`) or the
    server answered one of ``codes``: at most ``attempts`` sendings in all, waiting
    ``backoff`` seconds, doubled each time. Only ``methods`` are retried (default: the
    idempotent ones: discover, lists, reads, prompts, completion); a ``tools/call`` is not,
    unless named."""

    def __init__(
        self,
        attempts: int = 3,
        *,
        backoff: float = 0.2,
        codes: Iterable[int] = (),
        methods: Iterable[str] | None = None,
    ) -> None:
        if attempts < 1 or backoff < 0:
            raise ValueError("attempts must be at least 1 and backoff not negative")
        self.attempts = attempts
        self.backoff = backoff
        self.codes = frozenset(codes)
        self.methods = IDEMPOTENT_METHODS if methods is None else frozenset(methods)

    async def __call__(self, call: ClientCall, call_next: ClientCallNext) -> dict[str, Any]:
        wait = self.backoff
        while True:
            try:
                return await call_next(call)
            except (ConnectionLost, RequestTimeout, ServerError) as exc:
                retriable = not isinstance(exc, ServerError) or exc.code in self.codes
                if not retriable or call.method not in self.methods:
                    raise
                if call.attempt >= self.attempts:
                    raise
                log.info("retrying %s after %s (attempt %d)", call.method, exc, call.attempt + 1)
            call.attempt += 1
            await asyncio.sleep(wait)
            wait *= 2


__all__ = [
    "ClientCall",
    "ClientCallNext",
    "ClientMiddleware",
    "LoggingClientMiddleware",
    "RetryMiddleware",
    "check",
    "run",
]
