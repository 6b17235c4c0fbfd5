"""`Client`: one MCP server, reached through a transport, used reliably from a host."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .. import jsonrpc
from .._version import version
from ..errors import (
    ClientClosed,
    ClientError,
    ConnectionLost,
    ProtocolError,
    RequestTimeout,
    ServerError,
)
from ..jsonrpc import RequestId
from ..protocol.meta import modern_meta
from ..spec import (
    ACKNOWLEDGED,
    COMPLETE,
    DISCOVER,
    HEADER_MISMATCH,
    IDEMPOTENT_METHODS,
    INITIALIZE,
    LIST_CHANGED,
    LISTEN,
    MESSAGE,
    MRTR_METHODS,
    PROMPTS_GET,
    PROMPTS_LIST,
    PYTHON_LOG_LEVEL,
    RESOURCE_UPDATED,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    SET_LEVEL,
    SUBSCRIBE,
    TASKS_EXTENSION,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ..wire import DEFAULT_MAX_LINE_BYTES
from . import era as era_mod
from .era import LEGACY, MODERN, FallBack, ServerDescription
from .mrtr import InputHandler, InputHandlers, result_type, run_rounds
from .options import ClientOptions, LogCallback
from .session import (
    MAX_SERVER_REQUESTS,
    CallbackTasks,
    Channel,
    NotificationCallback,
    ProgressCallback,
    Session,
    Trace,
)
from .tasks import StatusCallback, TaskHandle, is_task
from .transports import SocketServer, StdioServer, Transport

if TYPE_CHECKING:
    from ..server.server import Server
    from .oauth import OAuth

log = logging.getLogger("mcpline.client")

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
        return jsonrpc.notification(self.method, self.params)


@dataclass
class _Link:
    session: Session
    channel: Channel
    description: ServerDescription
    opened_at: float = 0.0
    meta: dict[str, Any] | None = None
    """The ``_meta`` of this connection's modern requests (the same for each of them)."""

    @property
    def alive(self) -> bool:
        return not self.session.closed


def _split(transport: type[Any], options: dict[str, Any], *given: str) -> dict[str, Any]:
    """Take out of ``options`` the fields of the ``transport`` dataclass (but ``given``)."""
    names = {f.name for f in dataclasses.fields(transport)} - set(given)
    return {name: options.pop(name) for name in list(options) if name in names}


class Client:
    """An MCP client for one server: ``Client(transport, **options)``.

    The transport says how to reach the server: `StdioServer` (launch a command) or
    `SocketServer` (connect to an address), or any other `Transport`; `Client.stdio` and
    `Client.connect` build those from keyword arguments. The options (see `ClientOptions`,
    kept as ``client.options``) are the same whatever the transport: timeouts and the
    deadline, the era, input and log callbacks, the restart policy and limits.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: Mapping[str, Any] | None = None,
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
        on_log: LogCallback | None = None,
        on_notification: NotificationCallback | None = None,
        trace: Trace | None = None,
        max_restarts: int = 3,
        restart_backoff: float = 0.2,
        max_backoff: float = 5.0,
        stable_after: float = 30.0,
        eager: bool = False,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_rounds: int = 8,
        max_server_requests: int = MAX_SERVER_REQUESTS,
        max_list_items: int = 100_000,
        tasks: bool = True,
    ) -> None:
        self.transport = transport
        """How the server is reached (and reached again after a crash)."""
        self.options = ClientOptions(
            client_info=client_info,
            timeout=timeout,
            max_timeout=max_timeout,
            deadline=deadline,
            probe_timeout=probe_timeout,
            era=era,
            on_elicit=on_elicit,
            on_sample=on_sample,
            on_roots=on_roots,
            elicitation_modes=elicitation_modes,
            log_level=log_level,
            on_log=on_log,
            on_notification=on_notification,
            trace=trace,
            max_restarts=max_restarts,
            restart_backoff=restart_backoff,
            max_backoff=max_backoff,
            stable_after=stable_after,
            eager=eager,
            max_line_bytes=max_line_bytes,
            max_rounds=max_rounds,
            max_server_requests=max_server_requests,
            max_list_items=max_list_items,
            tasks=tasks,
        )
        o = self.options
        self._handlers = InputHandlers(o.on_elicit, o.on_sample, o.on_roots, o.elicitation_modes)
        self._info: dict[str, Any] | None = dict(o.client_info) if o.client_info else None
        self._deadline_at: float | None = None
        self._callbacks = CallbackTasks()
        self._ids = itertools.count(1)
        self._link: _Link | None = None
        self._opening: Channel | None = None
        """The channel whose handshake is under way."""
        self._description: ServerDescription | None = None
        self._start_lock: asyncio.Lock | None = None
        self._failures = 0
        self._last_loss: str = ""
        self._probe_deaths = 0
        self._closed = False
        self._tool_hints: dict[str, dict[str, Any]] = {}
        self._tool_headers: dict[str, Any] = {}
        """Each listed tool's ``x-mcp-header`` parameters (an HTTP channel mirrors them)."""
        self._listeners: set[Listener] = set()
        self.restarts = 0
        """How many times the server was restarted (or reconnected) so far."""
        self.returncode: int | None = None
        """The exit status of the last server process once it ended (stdio only)."""

    @classmethod
    def stdio(cls, command: str, args: Sequence[str] = (), **options: Any) -> Client:
        """A client that launches ``command args`` and speaks over its stdin/stdout.

        ``options`` are those of `StdioServer` (``env``, ``inherit_env``, ``cwd``,
        ``on_stderr``, ``close_grace``, ``term_grace``, ``watchdog``) and of `Client`."""
        server = _split(StdioServer, options, "command", "args")
        return cls(StdioServer(command, args, **server), **options)

    @classmethod
    def connect(cls, address: str, **options: Any) -> Client:
        """A client for a server listening on ``unix:/path`` or ``tcp:HOST:PORT``.

        ``options`` are those of `SocketServer` (``token``, ``close_grace``) and of
        `Client`. A TCP listener wants its token (``token=``, else ``$MCPLINE_TOKEN``, else
        the file the listener wrote for its address; see docs/sockets.md)."""
        server = _split(SocketServer, options, "address")
        return cls(SocketServer(address, **server), **options)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: OAuth | None = None,
        **options: Any,
    ) -> Client:
        """A client for the Streamable HTTP endpoint ``url`` (``http://…/mcp``), either era.

        ``headers`` go on every request; ``auth`` (an `mcpline.client.oauth.OAuth`) handles
        servers that want OAuth 2.1. ``options`` are those of `HttpServer`
        (``connect_timeout``, ``max_redirects``, ``verify``, ``close_grace``) and of
        `Client`. Needs the ``http`` extra (``pip install 'mcpline[http]'``)."""
        from .http import HttpServer

        server = _split(HttpServer, options, "url", "headers", "auth")
        return cls(HttpServer(url, dict(headers or {}), auth, **server), **options)

    @classmethod
    def memory(cls, server: Server, **options: Any) -> Client:
        """A client for ``server`` in this process: no process and no pipe, the fast way to
        test a server (see `mcpline.client.memory`). ``options`` are those of `Client`."""
        from .memory import MemoryServer

        return cls(MemoryServer(server), **options)

    # --- lifecycle ----------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        if self.options.eager:
            await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> ServerDescription:
        """Start the server (and learn its era) now rather than at the first request."""
        return (await self._within("start", self._ensure_link())).description

    async def _within(self, what: str, work: Awaitable[T]) -> T:
        """``work`` bounded by what is left of ``deadline`` (unbounded without one)."""
        deadline = self.options.deadline
        if deadline is None:
            return await work
        loop = asyncio.get_running_loop()
        if self._deadline_at is None:
            self._deadline_at = loop.time() + deadline
        try:
            return await asyncio.wait_for(work, max(0.0, self._deadline_at - loop.time()))
        except asyncio.TimeoutError:
            stage = "" if self._link is not None else " (starting the server, learning its era)"
            raise RequestTimeout(
                f"{what} timed out{stage}: the client's deadline of {deadline:g}s passed"
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
                    if (
                        asyncio.get_running_loop().time() - link.opened_at
                        >= self.options.stable_after
                    ):
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
        o = self.options
        self._failures += 1
        if self._failures > o.max_restarts:
            self._failures = 0  # the next request starts a fresh series of attempts
            raise ConnectionLost(
                f"gave up after {o.max_restarts} restarts; last failure: {self._last_loss}",
                retriable=False,
            )
        self.restarts += 1
        delay = min(o.restart_backoff * 2 ** (self._failures - 1), o.max_backoff)
        log.warning("server unavailable (%s); retrying in %.2fs", self._last_loss, delay)
        await asyncio.sleep(delay)

    async def _open_link(self) -> _Link:
        o = self.options
        session = Session(
            self._on_notification,
            self._handlers.answer,
            ids=self._ids,
            max_line_bytes=o.max_line_bytes,
            trace=o.trace,
            label=self.transport.label,
            max_server_requests=o.max_server_requests,
        )
        session.tool_headers = self._tool_headers
        channel = await self.transport.open(session)
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
        caps = self._handlers.capabilities()
        cached = self._description
        want = cached.era if cached is not None else self.options.era
        if want == MODERN and cached is not None:
            desc = cached
        elif want == LEGACY or (want == "auto" and self._probe_deaths >= 2):
            version = cached.protocol_version if cached is not None else None
            desc = await self._initialize(session, caps, version, reprobe=want == "auto")
        else:
            try:
                desc = await era_mod.probe(
                    session,
                    caps=self._modern_caps(),
                    info=self._client_info(),
                    timeout=self.options.probe_timeout,
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
        level = self.options.log_level
        if desc.era == LEGACY and level is not None and "logging" in desc.capabilities:
            await session.request(SET_LEVEL, {"level": level}, timeout=self.options.timeout)
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
                session,
                caps=caps,
                info=self._client_info(),
                timeout=self.options.timeout,
                version=version,
            )
        except ServerError as exc:
            if not (reprobe and era_mod.points_to_modern(exc)):
                raise
            log.info("%s refused in a modern way (%s); probing again", INITIALIZE, exc)
            try:
                return await era_mod.probe(
                    session,
                    caps=self._modern_caps(),
                    info=self._client_info(),
                    timeout=self.options.timeout,
                )
            except FallBack as fb:
                raise ProtocolError(f"the server answers neither era: {fb}") from None

    # --- what the session hands on --------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        if method == MESSAGE and isinstance(params, dict):
            if self.options.on_log is not None:
                res = self.options.on_log(params)
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
        if self.options.on_notification is not None:
            self.options.on_notification(method, params)
        else:
            log.debug("notification %s from the server", method)

    # --- requests -------------------------------------------------------------------------

    def _client_info(self) -> dict[str, Any]:
        """``client_info``, by default mcpline's name and installed version: read when the
        first request needs it, once the server is starting (loading the package metadata
        takes longer than importing the client)."""
        if self._info is None:
            self._info = {"name": "mcpline", "version": version()}
        return self._info

    def _modern_caps(self) -> dict[str, Any]:
        """The client capabilities of a modern request: the input callbacks' and, unless
        ``tasks=False``, the tasks extension."""
        caps = self._handlers.capabilities()
        if self.options.tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def _params(self, link: _Link, params: dict[str, Any]) -> dict[str, Any]:
        if link.description.era != MODERN:
            return params
        if link.meta is None:
            link.meta = modern_meta(
                link.description.protocol_version,
                self._modern_caps(),
                self._client_info(),
                log_level=self.options.log_level,
            )
        p = dict(params)
        meta = dict(p.get("_meta") or {})
        meta.update(link.meta)
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

        Multi round-trip results are resolved through the input handlers, and a task the
        server makes of a ``tools/call`` is followed to its end (see `call_tool`).
        Idempotent requests (the default for discover, lists, reads, prompts/get and
        completion) are sent again on a restarted server if the server dies first; others
        raise a retriable `ConnectionLost`.
        """
        result = await self._send(method, params, timeout, max_timeout, on_progress, idempotent)
        if is_task(result):
            mt = self.options.max_timeout if max_timeout is _UNSET else max_timeout
            return await TaskHandle.created(self, result).result(timeout=mt)
        return result

    async def _send(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        max_timeout: float | None,
        on_progress: ProgressCallback | None,
        idempotent: bool | None,
    ) -> dict[str, Any]:
        """One request and its input rounds; a task handle is returned as it came."""
        params = dict(params or {})
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        t = self.options.timeout if timeout is _UNSET else timeout
        mt = self.options.max_timeout if max_timeout is _UNSET else max_timeout
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
                if resent > self.options.max_restarts:  # whatever the restart series says
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
            return await run_rounds(send, method, params, self._handlers, self.options.max_rounds)
        result = await send(params)
        result_type(result, method)
        return result

    async def discover(self, *, refresh: bool = False) -> ServerDescription:
        """Era, chosen version, server info and capabilities (probing on first use)."""
        link = await self._within(DISCOVER, self._ensure_link())
        if refresh and link.description.era == MODERN:
            result = await self.request(DISCOVER)
            if not era_mod.is_discover_result(result):
                raise ProtocolError(
                    f"{DISCOVER} returned something that is not a DiscoverResult: {result!r:.200}"
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
        limit = self.options.max_list_items if max_items is None else max_items
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
        """Every tool (cursors followed). Remembers which tools are read-only/idempotent.

        Over HTTP, a tool whose ``x-mcp-header`` annotations break the spec's constraints
        is left out, with a warning naming it and why."""
        tools = (await self.list_all(TOOLS_LIST, "tools"))["tools"]
        if getattr(self.transport, "mirrors_tool_headers", False):
            tools = self._check_header_params(tools)
        self._remember_tools(tools)
        return tools  # type: ignore[no-any-return]

    def _check_header_params(self, tools: list[Any]) -> list[Any]:
        from ..protocol.headers import InvalidHeaderAnnotation, header_params

        kept = []
        found: dict[str, Any] = {}
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            try:
                params = header_params(tool.get("inputSchema") if isinstance(tool, dict) else None)
            except InvalidHeaderAnnotation as exc:
                log.warning("tool %r left out: %s", name, exc)
                continue
            kept.append(tool)
            if params and isinstance(name, str):
                found[name] = params
        self._tool_headers.clear()
        self._tool_headers.update(found)
        return kept

    def _remember_tools(self, tools: list[Any]) -> None:
        self._tool_hints = {
            t["name"]: t.get("annotations") or {}
            for t in tools
            if isinstance(t, dict) and isinstance(t.get("name"), str)
        }

    def _tool_is_idempotent(self, name: str) -> bool:
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
        on_task: StatusCallback | None = None,
        listen: bool = False,
    ) -> dict[str, Any]:
        """The CallToolResult (``isError: true`` is returned, not raised).

        When the server makes a task of the call, the task is followed to its end (at the
        server's poll interval, or by its ``notifications/tasks`` with ``listen=True``),
        its input requests answered through the input callbacks, and its result returned;
        ``on_task`` sees each new state. A ``failed`` task raises `ServerError`, a cancelled
        one `TaskCancelled`; ``max_timeout`` bounds the whole wait (then the task is
        cancelled and `RequestTimeout` raised). ``timeout`` bounds each request.
        """
        handle = await self.start_tool(
            name,
            arguments,
            timeout=timeout,
            max_timeout=max_timeout,
            on_progress=on_progress,
            idempotent=idempotent,
        )
        mt = self.options.max_timeout if max_timeout is _UNSET else max_timeout
        return await handle.result(timeout=mt, on_status=on_task, listen=listen)

    async def start_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = _UNSET,
        max_timeout: float | None = _UNSET,
        on_progress: ProgressCallback | None = None,
        idempotent: bool | None = None,
    ) -> TaskHandle:
        """Call a tool without waiting for a task it becomes: the `TaskHandle` (its
        ``status()``, ``result()``, ``cancel()``; keep ``task_id`` to `TaskHandle.resume`
        it later).
        A call the server answers at once gives a handle that is already ``completed``."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if idempotent is None:
            idempotent = self._tool_is_idempotent(name)
        send = (TOOLS_CALL, params, timeout, max_timeout, on_progress, idempotent)
        try:
            result = await self._send(*send)
        except ServerError as exc:
            if exc.code != HEADER_MISMATCH:
                raise
            # Our Mcp-Param-* headers disagree with the server: its tool definitions may
            # have changed since we listed them. List them again and retry once.
            log.info("%s %s: %s; listing the tools again", TOOLS_CALL, name, exc)
            await self.list_tools()
            result = await self._send(*send)
        if is_task(result):
            return TaskHandle.created(self, result)
        return TaskHandle.finished(self, result)

    async def list_resources(self) -> list[dict[str, Any]]:
        return (await self.list_all(RESOURCES_LIST, "resources"))["resources"]  # type: ignore[no-any-return]

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        merged = await self.list_all(RESOURCES_TEMPLATES_LIST, "resourceTemplates")
        return merged["resourceTemplates"]  # type: ignore[no-any-return]

    async def read_resource(self, uri: str, *, timeout: float | None = _UNSET) -> dict[str, Any]:
        return await self.request(RESOURCES_READ, {"uri": uri}, timeout=timeout)

    async def list_prompts(self) -> list[dict[str, Any]]:
        return (await self.list_all(PROMPTS_LIST, "prompts"))["prompts"]  # type: ignore[no-any-return]

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout: float | None = _UNSET
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request(PROMPTS_GET, params, timeout=timeout)

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, Any], context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``completion/complete``; ``ref`` is a prompt or resource-template reference."""
        params: dict[str, Any] = {"ref": ref, "argument": argument}
        if context is not None:
            params["context"] = context
        return await self.request(COMPLETE, params)

    def listen(
        self,
        *,
        tools: bool = True,
        prompts: bool = True,
        resources: bool = True,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        max_queue: int = 10_000,
    ) -> Listener:
        """An async iterator of list-changed / resource-updated notifications (and, for
        ``task_ids``, ``notifications/tasks``: each a task's full state).

        The first item is the server's acknowledgement (what it agreed to send; for a legacy
        server, what its capabilities promise, marked ``synthesized``). The subscription is
        re-established after a restart or reconnect. At most ``max_queue`` notifications wait
        for the reader; past that the oldest is dropped (counted in `Listener.dropped`).
        """
        filt: dict[str, Any] = {}
        for kind, wanted in (("tools", tools), ("prompts", prompts), ("resources", resources)):
            if wanted:
                filt[LIST_CHANGED[kind][0]] = True
        if resource_uris:
            filt["resourceSubscriptions"] = list(resource_uris)
        if task_ids:
            filt["taskIds"] = list(task_ids)
        return Listener(self, filt, max_queue)


_END: Any = object()

_LEGACY_KINDS = {notification: flag for flag, notification in LIST_CHANGED.values()}
"""A legacy server's list-changed notification → the listen filter flag that asks for it."""


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
        if method == ACKNOWLEDGED:
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
            or method == RESOURCE_UPDATED
            and self.filter.get("resourceSubscriptions")
        ):
            self._deliver(method, params)

    async def _run(self) -> None:
        client = self.client
        loop = asyncio.get_running_loop()
        quick = 0
        try:
            while True:
                link = await client._ensure_link()
                self.establishments += 1
                began = loop.time()
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
                    # A stream the server keeps ending at once (HTTP) is retried with backoff.
                    o = client.options
                    quick = quick + 1 if loop.time() - began < o.stable_after else 0
                    if quick > 1:
                        await asyncio.sleep(
                            min(o.restart_backoff * 2 ** (quick - 2), o.max_backoff)
                        )
        except Exception as exc:  # a ClientError, or anything unexpected: the reader sees it
            self._put(exc)

    async def _listen_modern(self, link: _Link) -> None:
        def sent(rid: RequestId) -> None:
            self.request_id = rid

        params = self.client._params(link, {"notifications": self.filter})
        result = await link.session.request(
            LISTEN,
            params,
            timeout=None,
            max_timeout=None,
            on_notification=self._deliver,
            on_sent=sent,
        )
        result_type(result, LISTEN)

    async def _listen_legacy(self, link: _Link) -> None:
        caps = link.description.capabilities
        honoured: dict[str, Any] = {}
        for cap, (kind, _) in LIST_CHANGED.items():
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
                        SUBSCRIBE, {"uri": uri}, timeout=self.client.options.timeout
                    )
                    done.append(uri)
                except ServerError as exc:
                    log.info("%s %s refused: %s", SUBSCRIBE, uri, exc)
            if done:
                honoured["resourceSubscriptions"] = done
        self._legacy_active = True
        self._deliver(
            ACKNOWLEDGED,
            {"notifications": honoured},
            synthesized=True,
        )
        try:
            lost = await asyncio.shield(link.session.lost)
        finally:
            self._legacy_active = False
        raise lost


__all__ = ["Client", "Listener", "ServerNotification"]
