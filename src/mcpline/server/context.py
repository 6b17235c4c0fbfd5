"""What a handler knows about the request it is serving, and how it talks back."""

from __future__ import annotations

import logging
import math
import threading
from typing import TYPE_CHECKING, Any

from ..jsonrpc import MISSING, notification
from ..protocol.capabilities import has_capability, require_capability
from ..protocol.meta import RequestMeta
from ..spec import LOG_LEVEL_RANK, MESSAGE, PROGRESS, PYTHON_LOG_LEVEL

if TYPE_CHECKING:
    from .engine import Exchange
    from .eras import EraHost
    from .mrtr import InputRequest


def _finite(value: Any) -> bool:
    """A JSON number: int or float, not bool, not NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


class Context:
    """Per-request context. ``report_progress`` and ``log`` are safe from sync tools' threads.

    Nothing is ever written for a request after its response or its cancellation.
    """

    __slots__ = (
        "request_id",
        "method",
        "meta",
        "_exchange",
        "_host",
        "_loop",
        "_loop_thread",
        "_last_progress",
        "input_responses",
        "state",
        "asked",
        "legacy_version",
    )

    def __init__(self, exchange: Exchange, meta: RequestMeta | None, host: EraHost) -> None:
        self.request_id = exchange.request.id
        self.method = exchange.request.method
        self.meta = meta
        self._exchange = exchange
        self._host = host
        peer = exchange.peer
        self._loop = peer.loop
        self._loop_thread = peer.loop_thread
        self._last_progress: float | None = None
        self.input_responses: dict[str, dict[str, Any]] = {}
        """MRTR: the client's answers on a retry (``inputResponses``), checked to be objects."""
        self.state: Any = None
        """MRTR: the state you passed to `InputRequired` in the previous round (verified)."""
        self.asked: dict[str, str] = {}
        """MRTR: input key → method of the requests recorded in the sealed state."""
        self.legacy_version: str | None = None
        """The negotiated revision when this request belongs to a legacy (initialize) session."""

    @property
    def legacy(self) -> bool:
        """Whether this request belongs to a legacy (``initialize``) session."""
        return self.legacy_version is not None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.meta.client_capabilities if self.meta else {}

    @property
    def client_info(self) -> dict[str, Any] | None:
        return self.meta.client_info if self.meta else None

    @property
    def cancelled(self) -> bool:
        """True once the request was cancelled or answered: nothing more reaches the client."""
        return not self._exchange.open

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan hook yielded (``None`` without one)."""
        return self._host.lifespan

    @property
    def principal(self) -> Any:
        """Who sent this request, as the transport's token check said: over HTTP, what
        ``verify_token`` returned for its bearer token; ``None`` elsewhere."""
        binding = self._exchange.binding
        return None if binding is None else binding.principal

    def close_sse_stream(self) -> None:
        """End the HTTP event stream of this request now, before its result, in a legacy
        (2025-11-25) HTTP session: the client reconnects with ``Last-Event-ID`` and gets the
        rest. Does nothing elsewhere (stdio, sockets, modern requests)."""
        binding = self._exchange.binding
        if binding is not None:
            self._call(binding.close_stream)

    def has_capability(self, path: str) -> bool:
        """Whether this request declared a client capability, e.g. ``"sampling"``."""
        return has_capability(self.client_capabilities, path)

    def require_capability(self, path: str) -> None:
        """Raise -32021 unless this request declared ``path`` (e.g. ``"elicitation.url"``)."""
        require_capability(self.client_capabilities, path)

    def can_ask(self, request: InputRequest) -> bool:
        """Whether this request's client declared what ``request`` needs (MRTR)."""
        from .mrtr import can_ask

        return can_ask(self.client_capabilities, request, self.legacy_version)

    def ask(self, key: str, request: InputRequest, state: Any = MISSING) -> dict[str, Any]:
        """The client's answer to ``request`` (under ``key``), or raise `InputRequired` for it.

        ``state`` (default: the current `state`) comes back as ``ctx.state`` on the retry.
        A wrong answer is never asked for again and never returned: it is -32602 for a modern
        client and an ``isError`` result for a legacy one (see `mcpline.server.mrtr.ask`).
        """
        from .mrtr import ask

        return ask(self, key, request, state)

    def ask_all(
        self, requests: dict[str, InputRequest], state: Any = MISSING
    ) -> dict[str, dict[str, Any]]:
        """Answers to every request, or raise `InputRequired` for all of them."""
        from .mrtr import ask_all

        return ask_all(self, requests, state)

    def _call(self, fn: Any, *args: Any) -> None:
        if threading.get_ident() == self._loop_thread:
            fn(*args)
        else:
            self._loop.call_soon_threadsafe(fn, *args)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send `notifications/progress` if the request asked for it (a ``progressToken``).

        Values must increase; a value that does not is dropped with a warning on stderr.
        """
        self._call(self._progress, progress, total, message)

    def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        token = self.meta.progress_token if self.meta else None
        if token is None or not self._exchange.open:
            return
        if not _finite(progress) or (total is not None and not _finite(total)):
            logging.getLogger("mcpline").warning(
                "progress for request %r must be a finite number (progress=%r, total=%r); not sent",
                self.request_id,
                progress,
                total,
            )
            return
        if self._last_progress is not None and not progress > self._last_progress:
            logging.getLogger("mcpline").warning(
                "progress for request %r must increase (%s after %s); not sent",
                self.request_id,
                progress,
                self._last_progress,
            )
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._exchange.send(notification(PROGRESS, params))

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Log for this request: a `notifications/message` when the request's ``logLevel``
        admits ``level``, otherwise a record on stderr through `logging`."""
        if level not in LOG_LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}")
        self._call(self._log, level, data, logger)

    def _log(self, level: str, data: Any, logger: str | None) -> None:
        if not self._exchange.open:
            return
        name = logger or self._host.info["name"]
        if self.meta is not None and self.meta.wants_log(level):
            params: dict[str, Any] = {"level": level, "logger": name, "data": data}
            self._exchange.send(notification(MESSAGE, params))
        else:
            logging.getLogger(name).log(PYTHON_LOG_LEVEL[level], "%s", data)

    def debug(self, data: Any) -> None:
        self.log("debug", data)

    def info(self, data: Any) -> None:
        self.log("info", data)

    def warning(self, data: Any) -> None:
        self.log("warning", data)

    def error(self, data: Any) -> None:
        self.log("error", data)


__all__ = [
    "Context",
]
