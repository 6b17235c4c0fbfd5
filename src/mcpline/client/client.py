"""`Client`: one MCP server, reached through a transport, used reliably from a host."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import ProtocolError, RequestTimeout, ServerError
from ..spec import (
    COMPLETE,
    DISCOVER,
    HEADER_MISMATCH,
    IDEMPOTENT_METHODS,
    LIST_CHANGED,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    TOOLS_CALL,
    TOOLS_LIST,
)
from . import era as era_mod
from ._link import LinkKeeper
from ._listener import Listener, ServerNotification
from .era import MODERN, ServerDescription
from .mrtr import InputHandlers
from .options import (
    ClientKeywords,
    ClientOptions,
    HttpKeywords,
    SocketKeywords,
    StdioKeywords,
    check_keywords,
)
from .session import (
    ProgressCallback,
)
from .tasks import StatusCallback, TaskHandle, is_task
from .transports import SocketServer, StdioServer, Transport

if TYPE_CHECKING:
    from ..server.server import Server
    from .oauth import OAuth

    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

log = logging.getLogger("mcpline.client")

_UNSET: Any = object()
T = TypeVar("T")


def _split(
    transport: type[Any], options: Mapping[str, Any], *given: str
) -> tuple[dict[str, Any], ClientKeywords]:
    """``options`` as the fields of the ``transport`` dataclass (but ``given``) and the
    `Client`'s."""
    names = {f.name for f in dataclasses.fields(transport)} - set(given)
    mine = {k: v for k, v in options.items() if k in names}
    rest = {k: v for k, v in options.items() if k not in names}
    return mine, cast("ClientKeywords", rest)


class Client:
    """An MCP client for one server: ``Client(transport, **options)``.

    The transport says how to reach the server: `StdioServer` (launch a command) or
    `SocketServer` (connect to an address), or any other `Transport`; `Client.stdio` and
    `Client.connect` build those from keyword arguments. The options (see `ClientOptions`,
    kept as ``client.options``) are the same whatever the transport: timeouts and the
    deadline, the era, input and log callbacks, the restart policy and limits.
    """

    def __init__(self, transport: Transport, **options: Unpack[ClientKeywords]) -> None:
        check_keywords(ClientKeywords, options, "Client()")
        self.transport = transport
        """How the server is reached (and reached again after a crash)."""
        self.options = ClientOptions(**options)
        o = self.options
        self.links = LinkKeeper(
            transport,
            o,
            InputHandlers(o.on_elicit, o.on_sample, o.on_roots, o.elicitation_modes),
            dict(o.client_info) if o.client_info else None,
        )
        """The link to the server, kept open (opened again after a crash, with backoff)."""
        self._deadline_at: float | None = None
        self._tool_hints: dict[str, dict[str, Any]] = {}
        self.returncode: int | None = None
        """The exit status of the last server process once it ended (stdio only)."""

    @classmethod
    def stdio(
        cls, command: str, args: Sequence[str] = (), **options: Unpack[StdioKeywords]
    ) -> Client:
        """A client that launches ``command args`` and speaks over its stdin/stdout.

        ``options`` are those of `StdioServer` (``env``, ``inherit_env``, ``cwd``,
        ``on_stderr``, ``close_grace``, ``term_grace``, ``watchdog``) and of `Client`."""
        check_keywords(StdioKeywords, options, "Client.stdio()")
        server, rest = _split(StdioServer, options, "command", "args")
        return cls(StdioServer(command, args, **server), **rest)

    @classmethod
    def connect(cls, address: str, **options: Unpack[SocketKeywords]) -> Client:
        """A client for a server listening on ``unix:/path`` or ``tcp:HOST:PORT``.

        ``options`` are those of `SocketServer` (``token``, ``close_grace``) and of
        `Client`. A TCP listener wants its token (``token=``, else ``$MCPLINE_TOKEN``, else
        the file the listener wrote for its address; see docs/sockets.md)."""
        check_keywords(SocketKeywords, options, "Client.connect()")
        server, rest = _split(SocketServer, options, "address")
        return cls(SocketServer(address, **server), **rest)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: OAuth | None = None,
        **options: Unpack[HttpKeywords],
    ) -> Client:
        """A client for the Streamable HTTP endpoint ``url`` (``http://…/mcp``), either era.

        ``headers`` go on every request; ``auth`` (an `mcpline.client.oauth.OAuth`) handles
        servers that want OAuth 2.1. ``options`` are those of `HttpServer`
        (``connect_timeout``, ``max_redirects``, ``verify``, ``close_grace``) and of
        `Client`. Needs the ``http`` extra (``pip install 'mcpline[http]'``)."""
        from .http import HttpServer

        check_keywords(HttpKeywords, options, "Client.http()")
        server, rest = _split(HttpServer, options, "url", "headers", "auth")
        return cls(HttpServer(url, dict(headers or {}), auth, **server), **rest)

    @classmethod
    def memory(cls, server: Server, **options: Unpack[ClientKeywords]) -> Client:
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
        return (await self._within("start", self.links.ensure())).description

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
            stage = (
                "" if self.links.link is not None else " (starting the server, learning its era)"
            )
            raise RequestTimeout(
                f"{what} timed out{stage}: the client's deadline of {deadline:g}s passed"
            ) from None

    @property
    def description(self) -> ServerDescription | None:
        """What was learned about the server, once started."""
        return self.links.description

    @property
    def restarts(self) -> int:
        """How many times the server was restarted (or reconnected) so far."""
        return self.links.restarts

    @property
    def pid(self) -> int | None:
        """The server process id (stdio only, once started)."""
        link = self.links.link
        return getattr(link.channel, "pid", None) if link is not None else None

    async def aclose(self, within: float | None = None) -> None:
        """Close listens, then shut the server down per the binding (or close the socket).

        ``within`` (seconds) shortens the transport's graces to fit (a caller whose deadline
        has passed gives little): a process server still running then is killed."""
        if self.links.closed:
            return
        returncode = await self.links.aclose(within)
        if returncode is not None:
            self.returncode = returncode

    # --- requests -------------------------------------------------------------------------

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
        t, mt = self._timeouts(timeout, max_timeout)
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        result = await self._send(method, dict(params or {}), t, mt, on_progress, idempotent)
        if is_task(result):
            return await TaskHandle.created(self, result).result(timeout=mt)
        return result

    def _timeouts(
        self, timeout: float | None, max_timeout: float | None
    ) -> tuple[float | None, float | None]:
        """``timeout`` and ``max_timeout``, the client's own where not given."""
        o = self.options
        return (
            o.timeout if timeout is _UNSET else timeout,
            o.max_timeout if max_timeout is _UNSET else max_timeout,
        )

    async def _send(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | None,
        max_timeout: float | None,
        on_progress: ProgressCallback | None,
        idempotent: bool,
    ) -> dict[str, Any]:
        """One request and its input rounds (through the middleware, if any); a task handle
        is returned as it came."""

        def send(sent: dict[str, Any]) -> Awaitable[dict[str, Any]]:
            return self._within(
                method,
                self.links.request(method, sent, timeout, max_timeout, on_progress, idempotent),
            )

        if not self.options.middleware:
            return await send(params)
        from ..middleware.client import ClientCall, run

        return await run(self.options.middleware, ClientCall(method, params), send)

    async def discover(self, *, refresh: bool = False) -> ServerDescription:
        """Era, chosen version, server info and capabilities (probing on first use)."""
        link = await self._within(DISCOVER, self.links.ensure())
        if refresh and link.description.era == MODERN:
            result = await self.request(DISCOVER)
            if not era_mod.is_discover_result(result):
                raise ProtocolError(
                    f"{DISCOVER} returned something that is not a DiscoverResult: {result!r:.200}"
                )
            link.description = era_mod.describe_discover(result, link.description.protocol_version)
            self.links.description = link.description
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
        self.links.tool_headers.clear()
        self.links.tool_headers.update(found)
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
        t, mt = self._timeouts(timeout, max_timeout)
        result = await self._tools_call(name, arguments, t, mt, on_progress, idempotent)
        if not is_task(result):
            return result  # type: ignore[no-any-return]
        handle = TaskHandle.created(self, result)
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
        t, mt = self._timeouts(timeout, max_timeout)
        result = await self._tools_call(name, arguments, t, mt, on_progress, idempotent)
        if is_task(result):
            return TaskHandle.created(self, result)
        return TaskHandle.finished(self, result)

    async def _tools_call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        timeout: float | None,
        max_timeout: float | None,
        on_progress: ProgressCallback | None,
        idempotent: bool | None,
    ) -> Any:
        """One ``tools/call`` (listing the tools again and retrying once on HeaderMismatch);
        its result as sent, a task or not."""
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
        return result

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


__all__ = ["Client", "Listener", "ServerNotification"]
