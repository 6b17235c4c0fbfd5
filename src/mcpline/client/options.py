"""`ClientOptions`: what a `Client` does whatever its transport (timeouts, restarts, limits,
callbacks)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from .._keywords import check_keywords
from ..protocol import MAX_INPUT_ROUNDS
from ..spec import LOG_LEVELS
from ..wire import DEFAULT_MAX_LINE_BYTES
from .era import LEGACY, MODERN
from .mrtr import InputHandler
from .session import MAX_OUTBOUND_BYTES, MAX_SERVER_REQUESTS, NotificationCallback, Trace

LogCallback = Callable[[dict[str, Any]], Any]
"""``on_log(params)`` for each ``notifications/message``; may be a coroutine function."""

if TYPE_CHECKING:
    pass

ERAS = ("auto", MODERN, LEGACY)


class ClientKeywords(TypedDict, total=False):
    """The keyword options of `Client(...)`, ``Client.memory`` and the other constructors:
    `ClientOptions`' fields, which say what each does and hold the defaults."""

    client_info: Mapping[str, Any] | None
    timeout: float
    max_timeout: float
    deadline: float | None
    probe_timeout: float
    era: str
    on_elicit: InputHandler | None
    on_sample: InputHandler | None
    on_roots: InputHandler | None
    elicitation_modes: Sequence[str]
    log_level: str | None
    on_log: LogCallback | None
    on_notification: NotificationCallback | None
    trace: Trace | None
    max_restarts: int
    restart_backoff: float
    max_backoff: float
    stable_after: float
    eager: bool
    max_line_bytes: int
    max_rounds: int
    max_server_requests: int
    max_list_items: int
    tasks: bool
    max_outbound_bytes: int
    middleware: Sequence[Any]


class StdioKeywords(ClientKeywords, total=False):
    """`Client.stdio`'s options: the `Client` ones and `StdioServer`'s."""

    env: Mapping[str, str] | None
    inherit_env: bool
    cwd: str | os.PathLike[str] | None
    on_stderr: Callable[[str], None] | None
    close_grace: float
    term_grace: float
    watchdog: bool


class SocketKeywords(ClientKeywords, total=False):
    """`Client.connect`'s options: the `Client` ones and `SocketServer`'s."""

    token: str | None
    close_grace: float


class HttpKeywords(ClientKeywords, total=False):
    """`Client.http`'s options: the `Client` ones and `HttpServer`'s."""

    connect_timeout: float
    max_connections: int
    max_redirects: int
    verify: bool | str
    close_grace: float
    follow_cross_origin_redirects: bool


@dataclass(frozen=True)
class ClientOptions:
    """A client's settings, fixed at construction (``client.options``).

    ``timeout`` is the per-request default (reset by progress); ``max_timeout`` is the
    hard maximum whatever progress says. ``deadline`` (seconds, counted from the first
    request or `Client.start`) bounds everything the client does for requests — starting
    the server, the era probe and fallback, restarts and the requests themselves — for
    one-shot use such as the command line. ``era`` is ``"auto"`` (probe with
    ``probe_timeout``), ``"modern"`` or ``"legacy"``. ``client_info`` defaults to mcpline's
    name and installed version.

    ``on_elicit``/``on_sample``/``on_roots`` take the request params and return the result
    object; registering one declares the matching client capability (``elicitation_modes``
    for elicitation). ``log_level`` asks for log notifications, delivered to ``on_log`` (or
    `logging`); other notifications go to ``on_notification``; ``trace(direction, line)``
    sees every line sent and received.

    A crashed server is restarted (sockets: reconnected) at most ``max_restarts`` times in
    a row, with exponential backoff from ``restart_backoff`` up to ``max_backoff`` seconds;
    a server that had been up for ``stable_after`` seconds before it died starts a new row.
    ``eager`` starts the server on ``async with`` rather than at the first request.

    Limits: lines of at most ``max_line_bytes``; at most ``max_rounds`` input rounds per
    request; a legacy server's own requests handled at most ``max_server_requests`` at a
    time (more are answered -32603); `Client.list_all` collects at most ``max_list_items``;
    once ``max_outbound_bytes`` written bytes wait for a server that does not read them, the
    connection fails (`ConnectionLost` naming the limit; docs/backpressure.md).

    ``tasks`` declares the tasks extension on modern requests: a server may then answer a
    tool call with a task, which the client follows (see `mcpline.client.tasks`).
    """

    client_info: Mapping[str, Any] | None = None
    timeout: float = 60.0
    max_timeout: float = 600.0
    deadline: float | None = None
    probe_timeout: float = 5.0
    era: str = "auto"
    on_elicit: InputHandler | None = None
    on_sample: InputHandler | None = None
    on_roots: InputHandler | None = None
    elicitation_modes: Sequence[str] = ("form",)
    log_level: str | None = None
    on_log: LogCallback | None = None
    on_notification: NotificationCallback | None = None
    trace: Trace | None = None
    max_restarts: int = 3
    restart_backoff: float = 0.2
    max_backoff: float = 5.0
    stable_after: float = 30.0
    eager: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_rounds: int = MAX_INPUT_ROUNDS
    max_server_requests: int = MAX_SERVER_REQUESTS
    max_list_items: int = 100_000
    tasks: bool = True
    max_outbound_bytes: int = MAX_OUTBOUND_BYTES
    middleware: Sequence[Any] = ()
    """Async callables ``(call, call_next)`` around every request, first outermost (see
    `mcpline.middleware.client`)."""

    def __post_init__(self) -> None:
        if self.era not in ERAS:
            raise ValueError("era must be 'auto', 'modern' or 'legacy'")
        if self.log_level is not None and self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")
        if self.max_outbound_bytes < 1:
            raise ValueError("max_outbound_bytes must be positive")
        object.__setattr__(self, "elicitation_modes", tuple(self.elicitation_modes))
        if self.middleware:
            from ..middleware.client import check

            object.__setattr__(self, "middleware", check(self.middleware))


__all__ = [
    "check_keywords",
    "ClientKeywords",
    "ClientOptions",
    "HttpKeywords",
    "LogCallback",
    "SocketKeywords",
    "StdioKeywords",
]
