"""`Client`: one MCP server (a subprocess or a socket address) used reliably from a host."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import (
    ClientClosed,
    ClientError,
    ConnectionLost,
    ProtocolError,
    RequestTimeout,
    ServerError,
)
from ..jsonrpc import RequestId
from ..spec import (
    LEGACY_VERSIONS,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    MODERN_VERSIONS,
    MRTR_METHODS,
    PYTHON_LOG_LEVEL,
)
from ..wire import DEFAULT_MAX_LINE_BYTES
from . import era as era_mod
from .era import LEGACY, MODERN, FallBack, ServerDescription, modern_meta
from .mrtr import InputHandler, InputHandlers, result_type, run_rounds
from .session import (
    MAX_SERVER_REQUESTS,
    CallbackTasks,
    NotificationCallback,
    ProgressCallback,
    Session,
    Trace,
)

log = logging.getLogger("mcpline.client")

CLIENT_INFO = {"name": "mcpline", "version": "0.1.0"}

IDEMPOTENT_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
"""Requests that are safe to send again on a restarted server."""


_UNSET: Any = object()
T = TypeVar("T")


@dataclass(frozen=True)
class ServerNotification:
    """A notification delivered on a listen stream. ``synthesized`` marks the stand-in
    acknowledgement of a legacy server, which has no ``subscriptions/listen``: it never
    crossed the wire."""

    method: str
    params: dict[str, Any]
    synthesized: bool = False

    def to_message(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": self.method, "params": self.params}


@dataclass
class _Link:
    session: Session
    channel: Any
    description: ServerDescription
    opened_at: float = 0.0

    @property
    def alive(self) -> bool:
        return not self.session.closed


class Client:
    """An MCP client for one server. Use `Client.stdio(...)` or `Client.connect(address)`.

    ``timeout`` is the per-request default (reset by progress); ``max_timeout`` is the
    hard maximum whatever progress says. ``era`` is ``"auto"`` (probe), ``"modern"`` or
    ``"legacy"``. ``on_elicit``/``on_sample``/``on_roots`` take the request params and
    return the result object; registering one declares the matching client capability.
    ``log_level`` asks for log notifications, delivered to ``on_log`` (or `logging`).
    A crashed server is restarted (sockets: reconnected) at most ``max_restarts`` times in
    a row, with exponential backoff from ``restart_backoff`` up to ``max_backoff`` seconds;
    a server that had been up for ``stable_after`` seconds before it died starts a new row.
    ``deadline`` (seconds, counted from the first request or `start`) bounds everything the
    client does for requests — starting the server, the era probe and fallback, restarts and
    the requests themselves — for one-shot use such as the command line; past it a request
    raises `RequestTimeout`. Shutdown is bounded by ``close_grace`` and ``term_grace``.
    A legacy server's own requests are handled at most ``max_server_requests`` at a time
    (more are answered -32603); `list_all` collects at most ``max_list_items`` items.
    """

    def __init__(
        self,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        address: str | None = None,
        token: str | None = None,
        client_info: dict[str, Any] | None = None,
        timeout: float = 60.0,
        max_timeout: float = 600.0,
        deadline: float | None = None,
        probe_timeout: float = 5.0,
        era: str = "auto",
        on_elicit: InputHandler | None = None,
        on_sample: InputHandler | None = None,
        on_roots: InputHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        log_level: str | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        on_notification: NotificationCallback | None = None,
        on_stderr: Callable[[str], None] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_restarts: int = 3,
        restart_backoff: float = 0.2,
        max_backoff: float = 5.0,
        stable_after: float = 30.0,
        close_grace: float = 2.0,
        term_grace: float = 2.0,
        eager: bool = False,
        max_rounds: int = 8,
        trace: Trace | None = None,
        watchdog: bool = True,
        max_server_requests: int = MAX_SERVER_REQUESTS,
        max_list_items: int = 100_000,
    ) -> None:
        if (command is None) == (address is None):
            raise ValueError("give exactly one of command= or address=")
        if era not in ("auto", MODERN, LEGACY):
            raise ValueError("era must be 'auto', 'modern' or 'legacy'")
        if log_level is not None and log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env else None
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.address = address
        self.token = token
        self.client_info = dict(client_info or CLIENT_INFO)
        self.timeout = timeout
        self.max_timeout = max_timeout
        self.deadline = deadline
        self._deadline_at: float | None = None
        self.probe_timeout = probe_timeout
        self.era = era
        self.handlers = InputHandlers(on_elicit, on_sample, on_roots, tuple(elicitation_modes))
        self.log_level = log_level
        self.on_log = on_log
        self.on_notification_cb = on_notification
        self.on_stderr = on_stderr
        self.max_line_bytes = max_line_bytes
        self.max_restarts = max_restarts
        self.restart_backoff = restart_backoff
        self.max_backoff = max_backoff
        self.stable_after = stable_after
        self.close_grace = close_grace
        self.term_grace = term_grace
        self.eager = eager
        self.max_rounds = max_rounds
        self.trace = trace
        self.watchdog = watchdog
        self.max_server_requests = max_server_requests
        self.max_list_items = max_list_items
        self._callbacks = CallbackTasks()
        self._ids = itertools.count(1)
        self._link: _Link | None = None
        self._opening: Any = None  # the channel whose handshake is under way
        self._description: ServerDescription | None = None
        self._start_lock: asyncio.Lock | None = None
        self._failures = 0
        self._last_loss: str = ""
        self._probe_deaths = 0
        self._closed = False
        self._tool_hints: dict[str, dict[str, Any]] = {}
        self._listeners: set[Listener] = set()
        self.restarts = 0
        """How many times the server was restarted (or reconnected) so far."""
        self.returncode: int | None = None
        """The exit status of the last server process once it ended (stdio only)."""

    @classmethod
    def stdio(cls, command: str, args: Sequence[str] = (), **options: Any) -> Client:
        """A client that launches ``command args`` and speaks over its stdin/stdout."""
        return cls(command=command, args=args, **options)

    @classmethod
    def connect(cls, address: str, **options: Any) -> Client:
        """A client for a server listening on ``unix:/path`` or ``tcp:HOST:PORT``.

        A TCP listener wants its token (``token=``, else ``$MCPLINE_TOKEN``, else the file
        the listener wrote for its address; see docs/sockets.md)."""
        return cls(address=address, **options)

    # --- lifecycle ----------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        if self.eager:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> ServerDescription:
        """Start the server (and learn its era) now rather than at the first request."""
        return (await self._within("start", self._ensure_link())).description

    async def _within(self, what: str, work: Awaitable[T]) -> T:
        """``work`` bounded by what is left of ``deadline`` (unbounded without one)."""
        if self.deadline is None:
            return await work
        loop = asyncio.get_running_loop()
        if self._deadline_at is None:
            self._deadline_at = loop.time() + self.deadline
        try:
            return await asyncio.wait_for(work, max(0.0, self._deadline_at - loop.time()))
        except asyncio.TimeoutError:
            stage = "" if self._link is not None else " (starting the server, learning its era)"
            raise RequestTimeout(
                f"{what} timed out{stage}: the client's deadline of {self.deadline:g}s passed"
            ) from None

    @property
    def description(self) -> ServerDescription | None:
        """What was learned about the server, once started."""
        return self._description

    @property
    def pid(self) -> int | None:
        """The server process id (stdio only, once started)."""
        link = self._link
        return getattr(link.channel, "pid", None) if link is not None else None

    async def aclose(self) -> None:
        """Close listens, then shut the server down per the binding (or close the socket)."""
        if self._closed:
            return
        self._closed = True
        for listener in list(self._listeners):
            await listener.aclose()
        link = self._link
        self._link = None
        opening = self._opening
        if opening is not None:  # a start in progress: stop it (its request sees ClientClosed)
            await opening.aclose()
        if link is not None:
            await link.channel.aclose()
            self.returncode = getattr(link.channel, "returncode", None)

    def _lock(self) -> asyncio.Lock:
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        return self._start_lock

    async def _ensure_link(self) -> _Link:
        link = self._link
        if link is not None and link.alive:
            return link
        async with self._lock():
            while True:
                if self._closed:
                    raise ClientClosed("the client is closed")
                link = self._link
                if link is not None and link.alive:
                    return link
                if link is not None:
                    self._link = None
                    if asyncio.get_running_loop().time() - link.opened_at >= self.stable_after:
                        self._failures = 0  # it ran fine for a while: a new series of restarts
                    reason = link.session.close_reason
                    self._last_loss = str(reason) if reason else "connection lost"
                    await link.channel.aclose()
                    await self._backoff()
                try:
                    self._link = await self._open_link()
                except ClientError as exc:
                    if self._closed:
                        raise ClientClosed("the client is closed") from exc
                    if not (isinstance(exc, ConnectionLost) and exc.retriable):
                        raise
                    self._last_loss = str(exc)
                    await self._backoff()
                    continue
                if self._closed:
                    # aclose() ran while this link was opening and could not see it.
                    link, self._link = self._link, None
                    await link.channel.aclose()
                    raise ClientClosed("the client is closed")
                return self._link

    async def _backoff(self) -> None:
        self._failures += 1
        if self._failures > self.max_restarts:
            self._failures = 0  # the next request starts a fresh series of attempts
            raise ConnectionLost(
                f"gave up after {self.max_restarts} restarts; last failure: {self._last_loss}",
                retriable=False,
            )
        self.restarts += 1
        delay = min(self.restart_backoff * 2 ** (self._failures - 1), self.max_backoff)
        log.warning("server unavailable (%s); retrying in %.2fs", self._last_loss, delay)
        await asyncio.sleep(delay)

    async def _open_link(self) -> _Link:
        label = self.address or os.path.basename(self.command or "server")
        session = Session(
            self,
            ids=self._ids,
            max_line_bytes=self.max_line_bytes,
            trace=self.trace,
            label=label,
            max_server_requests=self.max_server_requests,
        )
        channel: Any
        if self.address is not None:
            from ..transports.sockets import SocketChannel

            channel = await SocketChannel.connect(
                session, self.address, close_grace=self.close_grace, token=self.token
            )
        else:
            from .process import ProcessChannel

            assert self.command is not None
            channel = await ProcessChannel.start(
                session,
                self.command,
                self.args,
                env=self.env,
                inherit_env=self.inherit_env,
                cwd=self.cwd,
                on_stderr=self.on_stderr,
                close_grace=self.close_grace,
                term_grace=self.term_grace,
                watchdog=self.watchdog,
            )
        self._opening = channel
        try:
            description = await self._handshake(session)
        except BaseException:
            await channel.aclose()
            raise
        finally:
            self._opening = None
        return _Link(session, channel, description, asyncio.get_running_loop().time())

    async def _handshake(self, session: Session) -> ServerDescription:
        caps = self.handlers.capabilities()
        cached = self._description
        want = cached.era if cached is not None else self.era
        if want == MODERN and cached is not None:
            desc = cached
        elif want == LEGACY or (want == "auto" and self._probe_deaths >= 2):
            version = cached.protocol_version if cached is not None else None
            desc = await self._initialize(session, caps, version, reprobe=want == "auto")
        else:
            try:
                desc = await era_mod.probe(
                    session, caps=caps, info=self.client_info, timeout=self.probe_timeout
                )
            except FallBack as fb:
                if want == MODERN:
                    raise ProtocolError(
                        f"the server did not answer as a modern server: {fb}"
                    ) from None
                if fb.died:
                    # Restart: probe once more, then (a legacy server that exits on
                    # unknown traffic) go straight to initialize.
                    self._probe_deaths += 1
                    raise ConnectionLost(str(fb)) from None
                log.info("falling back to the legacy handshake: %s", fb)
                desc = await self._initialize(session, caps, fb.version, reprobe=fb.version is None)
        session.accept_requests = desc.era == LEGACY
        if desc.era == LEGACY and self.log_level is not None and "logging" in desc.capabilities:
            await session.request(
                "logging/setLevel", {"level": self.log_level}, timeout=self.timeout
            )
        self._description = desc
        return desc

    async def _initialize(
        self, session: Session, caps: dict[str, Any], version: str | None, *, reprobe: bool
    ) -> ServerDescription:
        """The legacy handshake; if the answer shows a modern server after all (a slow
        starter that missed the probe), probe again with the full request timeout."""
        session.accept_requests = True  # a legacy server may ping before initialize is answered
        try:
            return await era_mod.initialize(
                session, caps=caps, info=self.client_info, timeout=self.timeout, version=version
            )
        except ServerError as exc:
            if not (reprobe and era_mod.points_to_modern(exc)):
                raise
            log.info("initialize refused in a modern way (%s); probing again", exc)
            try:
                return await era_mod.probe(
                    session, caps=caps, info=self.client_info, timeout=self.timeout
                )
            except FallBack as fb:
                raise ProtocolError(f"the server answers neither era: {fb}") from None

    # --- what the session asks of us ------------------------------------------------------

    def on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/message" and isinstance(params, dict):
            if self.on_log is not None:
                res = self.on_log(params)
                if asyncio.iscoroutine(res):
                    self._callbacks.run(res, "on_log")
            else:
                level = PYTHON_LOG_LEVEL.get(str(params.get("level")), logging.INFO)
                logging.getLogger("mcpline.client.server_log").log(
                    level, "%s", params.get("data"), extra={"logger_name": params.get("logger")}
                )
            return
        if self._description is not None and self._description.era == LEGACY:
            for listener in list(self._listeners):
                listener._legacy_notification(method, params)
        if self.on_notification_cb is not None:
            self.on_notification_cb(method, params)
        else:
            log.debug("notification %s from the server", method)

    async def on_request(self, method: str, params: Any) -> Any:
        return await self.handlers.answer(method, params)

    # --- requests -------------------------------------------------------------------------

    def _params(self, link: _Link, params: dict[str, Any]) -> dict[str, Any]:
        if link.description.era != MODERN:
            return params
        p = dict(params)
        meta = dict(p.get("_meta") or {})
        meta.update(
            modern_meta(
                link.description.protocol_version, self.handlers.capabilities(), self.client_info
            )
        )
        if self.log_level is not None:
            meta[LOG_LEVEL_KEY] = self.log_level
        p["_meta"] = meta
        return p

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = _UNSET,
        max_timeout: float | None = _UNSET,
        on_progress: ProgressCallback | None = None,
        idempotent: bool | None = None,
    ) -> dict[str, Any]:
        """Send any request and return its (complete) result.

        Multi round-trip results are resolved through the input handlers. Idempotent
        requests (the default for discover, lists, reads, prompts/get and completion) are
        sent again on a restarted server if the server dies first; others raise a
        retriable `ConnectionLost`.
        """
        params = dict(params or {})
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        t = self.timeout if timeout is _UNSET else timeout
        mt = self.max_timeout if max_timeout is _UNSET else max_timeout
        return await self._within(
            method, self._request(method, params, t, mt, on_progress, idempotent)
        )

    async def _request(
        self,
        method: str,
        params: dict[str, Any],
        t: float | None,
        mt: float | None,
        on_progress: ProgressCallback | None,
        idempotent: bool,
    ) -> dict[str, Any]:
        resent = 0
        while True:
            link = await self._ensure_link()
            try:
                result = await self._once(link, method, params, t, mt, on_progress)
            except ConnectionLost as exc:
                if not (idempotent and exc.retriable) or self._closed:
                    raise
                resent += 1
                if resent > self.max_restarts:  # whatever the restart series says
                    raise ConnectionLost(
                        f"{method} was lost {resent} times with the server; gave up ({exc})",
                        retriable=False,
                    ) from exc
                log.info("%s lost with the server (%s); sending it again", method, exc)
                continue
            self._failures = 0
            return result

    async def _once(
        self,
        link: _Link,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        max_timeout: float | None,
        on_progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        async def send(p: dict[str, Any]) -> dict[str, Any]:
            return await link.session.request(  # type: ignore[no-any-return]
                method,
                self._params(link, p),
                timeout=timeout,
                max_timeout=max_timeout,
                on_progress=on_progress,
            )

        if method in MRTR_METHODS:
            return await run_rounds(send, method, params, self.handlers, self.max_rounds)
        result = await send(params)
        result_type(result, method)
        return result

    async def discover(self, *, refresh: bool = False) -> ServerDescription:
        """Era, chosen version, server info and capabilities (probing on first use)."""
        link = await self._within("server/discover", self._ensure_link())
        if refresh and link.description.era == MODERN:
            result = await self.request("server/discover")
            if not era_mod.is_discover_result(result):
                raise ProtocolError(
                    "server/discover returned something that is not a DiscoverResult: "
                    f"{result!r:.200}"
                )
            link.description = era_mod.describe_discover(result, link.description.protocol_version)
            self._description = link.description
        return link.description

    async def list_all(
        self,
        method: str,
        key: str,
        *,
        timeout: float | None = _UNSET,
        max_items: int | None = None,
    ) -> dict[str, Any]:
        """A paginated list with every page merged into one result (cursors followed).

        More than ``max_items`` items (default: the client's ``max_list_items``) in all is
        a `ProtocolError`.
        """
        limit = self.max_list_items if max_items is None else max_items
        items: list[Any] = []
        cursor: Any = None
        seen: set[str] = set()
        last: dict[str, Any] = {}
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            last = await self.request(method, params, timeout=timeout)
            page = last.get(key)
            if not isinstance(page, list):
                raise ProtocolError(f"{method}: result has no {key!r} list")
            items.extend(page)
            if len(items) > limit:
                raise ProtocolError(
                    f"{method}: the server listed more than {limit} {key} "
                    f"(max_list_items); stopped after {len(seen) + 1} pages"
                )
            cursor = last.get("nextCursor")
            if cursor is None:
                break
            if not isinstance(cursor, str) or cursor in seen or len(seen) >= 10_000:
                raise ProtocolError(
                    f"{method}: the server's nextCursor {cursor!r:.100} repeats or is invalid"
                )
            seen.add(cursor)
        merged = {k: v for k, v in last.items() if k != "nextCursor"}
        merged[key] = items
        return merged

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool (cursors followed). Remembers which tools are read-only/idempotent."""
        tools = (await self.list_all("tools/list", "tools"))["tools"]
        self._remember_tools(tools)
        return tools  # type: ignore[no-any-return]

    def _remember_tools(self, tools: list[Any]) -> None:
        self._tool_hints = {
            t["name"]: t.get("annotations") or {}
            for t in tools
            if isinstance(t, dict) and isinstance(t.get("name"), str)
        }

    def tool_is_idempotent(self, name: str) -> bool:
        hints = self._tool_hints.get(name) or {}
        return hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = _UNSET,
        max_timeout: float | None = _UNSET,
        on_progress: ProgressCallback | None = None,
        idempotent: bool | None = None,
    ) -> dict[str, Any]:
        """The CallToolResult (``isError: true`` is returned, not raised)."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if idempotent is None:
            idempotent = self.tool_is_idempotent(name)
        return await self.request(
            "tools/call",
            params,
            timeout=timeout,
            max_timeout=max_timeout,
            on_progress=on_progress,
            idempotent=idempotent,
        )

    async def list_resources(self) -> list[dict[str, Any]]:
        return (await self.list_all("resources/list", "resources"))["resources"]  # type: ignore[no-any-return]

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        merged = await self.list_all("resources/templates/list", "resourceTemplates")
        return merged["resourceTemplates"]  # type: ignore[no-any-return]

    async def read_resource(self, uri: str, *, timeout: float | None = _UNSET) -> dict[str, Any]:
        return await self.request("resources/read", {"uri": uri}, timeout=timeout)

    async def list_prompts(self) -> list[dict[str, Any]]:
        return (await self.list_all("prompts/list", "prompts"))["prompts"]  # type: ignore[no-any-return]

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = _UNSET
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("prompts/get", params, timeout=timeout)

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``completion/complete``; ``ref`` is a prompt or resource-template reference."""
        params: dict[str, Any] = {"ref": ref, "argument": argument}
        if context is not None:
            params["context"] = context
        return await self.request("completion/complete", params)

    def listen(
        self,
        *,
        tools: bool = True,
        prompts: bool = True,
        resources: bool = True,
        resource_uris: Sequence[str] = (),
        max_queue: int = 10_000,
    ) -> Listener:
        """An async iterator of list-changed / resource-updated notifications.

        The first item is the server's acknowledgement (what it agreed to send; for a legacy
        server, what its capabilities promise, marked ``synthesized``). The subscription is
        re-established after a restart or reconnect. At most ``max_queue`` notifications wait
        for the reader; past that the oldest is dropped (counted in `Listener.dropped`).
        """
        filt: dict[str, Any] = {}
        if tools:
            filt["toolsListChanged"] = True
        if prompts:
            filt["promptsListChanged"] = True
        if resources:
            filt["resourcesListChanged"] = True
        if resource_uris:
            filt["resourceSubscriptions"] = list(resource_uris)
        return Listener(self, filt, max_queue)


_END: Any = object()

_LEGACY_KINDS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}


class Listener:
    """A ``subscriptions/listen`` stream (legacy era: the session's unsolicited notifications)."""

    def __init__(
        self, client: Client, notifications: dict[str, Any], max_queue: int = 10_000
    ) -> None:
        self.client = client
        self.filter = notifications
        self.acknowledged: dict[str, Any] | None = None
        self.request_id: RequestId | None = None
        self.establishments = 0
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._max_queue = max_queue
        self.dropped = 0
        """Notifications dropped, oldest first, because the reader fell behind."""
        self._task: asyncio.Task[None] | None = None
        self._legacy_active = False

    def __aiter__(self) -> AsyncIterator[ServerNotification]:
        self._start()
        return self

    async def __aenter__(self) -> Listener:
        self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _start(self) -> None:
        if self._task is None:
            if self.client._closed:
                raise ClientClosed("the client is closed")
            self.client._listeners.add(self)
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def __anext__(self) -> ServerNotification:
        self._start()
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.put_nowait(_END)
            raise item
        return item  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Stop listening (``notifications/cancelled`` is sent for the listen request)."""
        self.client._listeners.discard(self)
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ClientError):
                await task
        self._queue.put_nowait(_END)

    def _put(self, item: Any) -> None:
        if self._queue.qsize() >= self._max_queue:
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "listen queue full (%d): dropped %d notifications so far, oldest first",
                    self._max_queue,
                    self.dropped,
                )
        self._queue.put_nowait(item)

    def _deliver(self, method: str, params: Any, *, synthesized: bool = False) -> None:
        params = params if isinstance(params, dict) else {}
        if method == "notifications/subscriptions/acknowledged":
            ack = params.get("notifications")
            self.acknowledged = ack if isinstance(ack, dict) else {}
        self._put(ServerNotification(method, params, synthesized))

    def _legacy_notification(self, method: str, params: Any) -> None:
        if not self._legacy_active:
            return
        kind = _LEGACY_KINDS.get(method)
        if (
            kind is not None
            and self.filter.get(kind)
            or method == "notifications/resources/updated"
            and self.filter.get("resourceSubscriptions")
        ):
            self._deliver(method, params)

    async def _run(self) -> None:
        client = self.client
        try:
            while True:
                link = await client._ensure_link()
                self.establishments += 1
                try:
                    if link.description.era == MODERN:
                        await self._listen_modern(link)
                        self._put(_END)  # the server closed the stream gracefully
                        return
                    await self._listen_legacy(link)
                except ConnectionLost as exc:
                    if not exc.retriable or client._closed:
                        raise
                    log.info("listen stream lost (%s); re-establishing it", exc)
        except Exception as exc:  # a ClientError, or anything unexpected: the reader sees it
            self._put(exc)

    async def _listen_modern(self, link: _Link) -> None:
        def sent(rid: RequestId) -> None:
            self.request_id = rid

        params = self.client._params(link, {"notifications": self.filter})
        result = await link.session.request(
            "subscriptions/listen",
            params,
            timeout=None,
            max_timeout=None,
            on_notification=self._deliver,
            on_sent=sent,
        )
        result_type(result, "subscriptions/listen")

    async def _listen_legacy(self, link: _Link) -> None:
        caps = link.description.capabilities
        honoured: dict[str, Any] = {}
        for kind, cap in (
            ("toolsListChanged", "tools"),
            ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"),
        ):
            if (
                self.filter.get(kind)
                and isinstance(caps.get(cap), dict)
                and caps[cap].get("listChanged")
            ):
                honoured[kind] = True
        uris = self.filter.get("resourceSubscriptions") or []
        res_caps = caps.get("resources")
        if uris and isinstance(res_caps, dict) and res_caps.get("subscribe"):
            done = []
            for uri in uris:
                try:
                    await link.session.request(
                        "resources/subscribe", {"uri": uri}, timeout=self.client.timeout
                    )
                    done.append(uri)
                except ServerError as exc:
                    log.info("resources/subscribe %s refused: %s", uri, exc)
            if done:
                honoured["resourceSubscriptions"] = done
        self._legacy_active = True
        self._deliver(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured},
            synthesized=True,
        )
        try:
            lost = await asyncio.shield(link.session.lost)
        finally:
            self._legacy_active = False
        raise lost


__all__ = [
    "CLIENT_INFO",
    "Client",
    "Listener",
    "ServerNotification",
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
]
