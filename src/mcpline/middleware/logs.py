"""Logging and timing middleware: one line per request (text or JSON), never on stdout."""

from __future__ import annotations

import json as _json
import logging
import sys
from typing import Any, TextIO

from ..errors import JsonRpcError
from ..server.mrtr import InputRequired
from ..server.tools import Deferred
from ..spec import INTERNAL_ERROR, TOOLS_CALL
from ._chain import CallNext, Middleware, MiddlewareContext

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


def outcome(
    mctx: MiddlewareContext, result: Any, exc: BaseException | None
) -> tuple[str, int | None]:
    """How a request ended: ``ok``, ``tool_error`` (an ``isError`` tool result),
    ``input_required``, ``task``, ``error`` (with its JSON-RPC code) or ``cancelled``."""
    if exc is not None:
        if isinstance(exc, JsonRpcError):
            return "error", exc.code
        if isinstance(exc, InputRequired):  # a task's run now waits for input
            return "input_required", None
        if isinstance(exc, Deferred):  # a task's body handed back a task handle
            return "task", None
        if isinstance(exc, Exception):
            return "error", INTERNAL_ERROR
        return "cancelled", None
    if type(result) is dict:
        kind = result.get("resultType")
        if kind in ("input_required", "task"):
            return str(kind), None
        if mctx.method == TOOLS_CALL and result.get("isError") is True:
            return "tool_error", None
    return "ok", None


class _Lines:
    """Where the lines of a middleware go: a `logging` logger, or a text stream (stderr by
    default, looked up at each write); stdout is refused."""

    def __init__(
        self, logger: logging.Logger | str | None, stream: TextIO | None, level: str
    ) -> None:
        if stream is not None and stream in (sys.stdout, sys.__stdout__):
            raise ValueError("middleware lines never go to stdout (a stdio server's protocol)")
        if level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}")
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.stream = stream
        self.level = LEVELS[level]

    def write(self, line: str) -> None:
        if self.logger is not None:
            self.logger.log(self.level, "%s", line)
            return
        stream = self.stream or sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass  # stderr is gone: nothing to tell it with


def _record(mctx: MiddlewareContext, result: Any, exc: BaseException | None) -> dict[str, Any]:
    how, code = outcome(mctx, result, exc)
    record: dict[str, Any] = {"event": mctx.type, "method": mctx.method}
    if mctx.request_id is not None:
        record["id"] = mctx.request_id
    target = mctx.name if mctx.name is not None else mctx.uri
    if target is not None and mctx.type == "request":
        record["target"] = target
    if mctx.era is not None:
        record["era"] = mctx.era
    record["peer"] = mctx.peer
    record["outcome"] = how
    if code is not None:
        record["code"] = code
    record["ms"] = round(mctx.elapsed_ms(), 3)
    return record


def _text(record: dict[str, Any]) -> str:
    head = f"{record['method']}"
    rest = " ".join(f"{k}={v}" for k, v in record.items() if k not in ("event", "method", "ms"))
    return f"{head} {rest} {record['ms']}ms"


class LoggingMiddleware(Middleware):
    """One line per request and notification once it ends: method, id, target (tool,
    prompt or URI), era, connection, outcome (and error code), milliseconds.

    ``json=True`` writes JSON lines. Lines go to ``logger`` (a `logging.Logger` or its
    name) at ``level`` when given, else to ``stream`` (default: stderr; stdout is refused).
    ``params=True`` adds the request's params cut to ``max_params_chars`` (off by default:
    they may hold user data)."""

    every_round = True

    def __init__(
        self,
        *,
        json: bool = False,
        logger: logging.Logger | str | None = None,
        stream: TextIO | None = None,
        level: str = "info",
        params: bool = False,
        max_params_chars: int = 1000,
    ) -> None:
        self.json = json
        self.lines = _Lines(logger, stream, level)
        self.params = params
        self.max_params_chars = max_params_chars

    async def on_message(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        try:
            result = await call_next(mctx)
        except BaseException as exc:
            self._emit(mctx, None, exc)
            raise
        self._emit(mctx, result, None)
        return result

    def _emit(self, mctx: MiddlewareContext, result: Any, exc: BaseException | None) -> None:
        record = _record(mctx, result, exc)
        if self.params:
            shown = {k: v for k, v in mctx.params.items() if k != "_meta"}
            text = _json.dumps(shown, default=repr)
            record["params"] = text[: self.max_params_chars]
        self.lines.write(_json.dumps(record, default=repr) if self.json else _text(record))


class TimingMiddleware(Middleware):
    """How long each request takes: a line per request (``timing tools/call echo 1.234ms``,
    or JSON with ``json=True``) to ``logger`` or ``stream`` as `LoggingMiddleware`, only for
    those slower than ``slow_ms`` when given; `stats` keeps count, total and maximum per
    method."""

    every_round = True

    def __init__(
        self,
        *,
        json: bool = False,
        logger: logging.Logger | str | None = None,
        stream: TextIO | None = None,
        level: str = "info",
        slow_ms: float | None = None,
    ) -> None:
        self.json = json
        self.lines = _Lines(logger, stream, level)
        self.slow_ms = slow_ms
        self._stats: dict[str, list[float]] = {}

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        try:
            return await call_next(mctx)
        finally:
            self._done(mctx)

    def _done(self, mctx: MiddlewareContext) -> None:
        ms = mctx.elapsed_ms()
        key = mctx.method if mctx.context is not None else "(refused)"
        kept = self._stats.get(key)
        if kept is None:
            kept = self._stats[key] = [0, 0.0, 0.0]
        kept[0] += 1
        kept[1] += ms
        kept[2] = max(kept[2], ms)
        if self.slow_ms is not None and ms < self.slow_ms:
            return
        target = mctx.name if mctx.name is not None else mctx.uri
        if self.json:
            record = {"event": "timing", "method": mctx.method, "ms": round(ms, 3)}
            if target is not None:
                record["target"] = target
            self.lines.write(_json.dumps(record))
        else:
            named = f" {target}" if target is not None else ""
            self.lines.write(f"timing {mctx.method}{named} {ms:.3f}ms")

    def stats(self) -> dict[str, dict[str, float]]:
        """Per method (``(refused)`` for requests refused before a handler was chosen):
        ``count``, ``total_ms`` and ``max_ms``."""
        return {
            method: {"count": int(c), "total_ms": total, "max_ms": top}
            for method, (c, total, top) in self._stats.items()
        }


__all__ = ["LoggingMiddleware", "TimingMiddleware", "outcome"]
