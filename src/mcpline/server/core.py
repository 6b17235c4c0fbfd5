"""`Server`: what is registered, what is advertised, and which handler serves a request."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, overload

import msgspec

from ..errors import JsonRpcError
from ..jsonrpc import MISSING, Request, Response
from ..protocol.meta import RequestMeta, validate_request_meta
from ..protocol.state import MemoryNonceLedger, NonceLedger, StateSealer
from ..spec import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_VERSIONS,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    MRTR_METHODS,
    SERVER_INFO_KEY,
)
from ..wire import DEFAULT_MAX_LINE_BYTES
from .context import Context
from .mrtr import InputRequired, refuse, run_modern
from .outbound import DEFAULT_MAX_OUTBOUND_BYTES
from .tools import Tool, invoke, make_tool
from .workers import WorkerPool

# Resources (URI templates), prompts, completions and subscriptions load on first use, so a
# tools-only server does not pay for them at start-up.
if TYPE_CHECKING:
    from .completion import Completions
    from .prompts import Prompt
    from .resources import Resource, Resources
    from .runtime import Connection
    from .subscriptions import Subscriptions

log = logging.getLogger("mcpline.server")

F = TypeVar("F", bound=Callable[..., Any])
Handler = Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]]
Routed = tuple[Context, Awaitable[dict[str, Any]]]

LEGACY_ONLY_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)


class Method(msgspec.Struct, frozen=True):
    """A request method: its handler and the server capability that must be advertised."""

    handler: Handler
    capability: str | None = None
    waits_for_lifespan: bool = True
    long_lived: bool = False
    """Stays open until ended (``subscriptions/listen``): not counted against max_in_flight."""


def encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: Any, limit: int) -> int:
    """The offset a cursor stands for; -32602 for anything we did not issue."""
    if not isinstance(cursor, str):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: cursor must be a string")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, num = raw.partition(":")
        offset = int(num)
    except (ValueError, UnicodeDecodeError):
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: unknown cursor") from None
    if prefix != kind or not 0 < offset <= limit or encode_cursor(kind, offset) != cursor:
        raise JsonRpcError(INVALID_PARAMS, "Invalid params: unknown or expired cursor")
    return offset


class Server:
    """An MCP server. Register tools with `tool`, then `run()`.

    ``page_size`` bounds list pages; ``list_ttl_ms``/``cache_scope`` are the caching hints
    on list results; ``max_in_flight`` pauses reading when that many requests are running;
    ``shutdown_grace`` is how long in-flight work may finish after stdin closes;
    ``max_outbound_bytes`` bounds what waits for a peer that does not read (see
    `mcpline.server.outbound`);
    ``lifespan`` is an async context manager factory whose value handlers see as
    ``ctx.lifespan`` (requests other than ``server/discover`` wait until it is entered).
    ``state_key``/``state_ttl`` seal MRTR ``requestState``, accepted once each unless
    ``state_single_use=False``; pass a shared `NonceLedger` there for replicas (see
    `mcpline.protocol.state`);
    ``legacy`` also serves clients that open with ``initialize`` (see `mcpline.server.legacy`).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[dict[str, Any]] | None = None,
        page_size: int = 100,
        list_ttl_ms: int = 0,
        cache_scope: str = "public",
        discover_ttl_ms: int = 0,
        max_in_flight: int = 256,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_outbound_bytes: int = DEFAULT_MAX_OUTBOUND_BYTES,
        shutdown_grace: float = 0.5,
        sync_workers: int = 32,
        lifespan: Callable[[Server], contextlib.AbstractAsyncContextManager[Any]] | None = None,
        server_info_in_results: bool = True,
        state_key: bytes | str | None = None,
        state_ttl: float = 900.0,
        state_single_use: bool | NonceLedger = True,
        legacy: bool = True,
        read_ttl_ms: int = 0,
        read_cache_scope: str = "private",
    ) -> None:
        if cache_scope not in ("public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        if read_cache_scope not in ("public", "private"):
            raise ValueError("read_cache_scope must be 'public' or 'private'")
        if list_ttl_ms < 0 or discover_ttl_ms < 0 or read_ttl_ms < 0:
            raise ValueError("ttl must be >= 0")
        if page_size < 1 or max_in_flight < 1 or max_outbound_bytes < 1:
            raise ValueError("page_size, max_in_flight and max_outbound_bytes must be positive")
        self.name = name
        self.version = version
        self.info: dict[str, Any] = {"name": name, "version": version}
        optional_info = (
            ("title", title),
            ("description", description),
            ("websiteUrl", website_url),
            ("icons", icons),
        )
        for key, value in optional_info:
            if value:
                self.info[key] = value
        self.instructions = instructions
        self.page_size = page_size
        self.list_ttl_ms = list_ttl_ms
        self.cache_scope = cache_scope
        self.discover_ttl_ms = discover_ttl_ms
        self.max_in_flight = max_in_flight
        self.max_line_bytes = max_line_bytes
        self.max_outbound_bytes = max_outbound_bytes
        self.shutdown_grace = shutdown_grace
        self.sync_workers = sync_workers
        self.server_info_in_results = server_info_in_results
        self.supported_versions: tuple[str, ...] = MODERN_VERSIONS
        self._lifespan = lifespan
        self.lifespan_state: Any = None
        self._ready: asyncio.Event | None = None
        self._startup_failed = False
        self._workers: WorkerPool | None = None
        self._tools: dict[str, Tool] = {}
        self._tools_enabled = False
        self._hidden_tools: set[str] = set()
        self._listed_tools: list[dict[str, Any]] | None = None
        """`tools/list` order, built once per change of the registry (not once per page)."""
        self.read_ttl_ms = read_ttl_ms
        self.read_cache_scope = read_cache_scope
        """Default caching hints of ``resources/read`` results (per resource: ``ttl_ms=``)."""
        self._resources_enabled = False
        self._prompts: dict[str, Prompt] = {}
        self._prompts_enabled = False
        self.resource_updated_hook: Callable[[Connection, str], None] | None = None
        """Called on the connection's loop for every `resource_updated` (after listens)."""
        self.connections: set[Connection] = set()
        self.methods: dict[str, Method] = {
            "server/discover": Method(self._discover, None, waits_for_lifespan=False),
            "tools/list": Method(self._tools_list, "tools"),
            "tools/call": Method(self._tools_call, "tools"),
            "resources/list": Method(self._resources_list, "resources"),
            "resources/templates/list": Method(self._templates_list, "resources"),
            "resources/read": Method(self._resources_read, "resources"),
            "prompts/list": Method(self._prompts_list, "prompts"),
            "prompts/get": Method(self._prompts_get, "prompts"),
            "completion/complete": Method(self._complete, "completions"),
            "subscriptions/listen": Method(
                self._listen, None, waits_for_lifespan=False, long_lived=True
            ),
        }
        self.notification_hooks: dict[str, Callable[[Connection, Any], None]] = {}
        self.response_hook: Callable[[Connection, Response], bool] | None = None
        self.list_changed_hook: Callable[[Connection, str], None] | None = None
        self.era_router: Callable[[Connection, Request], Routed | None] | None = None
        """Lets another era (the legacy handshake) claim a request before modern routing."""
        ledger = (
            (MemoryNonceLedger() if state_single_use else None)
            if isinstance(state_single_use, bool)
            else state_single_use
        )
        self.state_sealer = StateSealer(state_key, scope=name, ttl=state_ttl, ledger=ledger)
        """Seals MRTR ``requestState``: key from ``state_key``, else ``$MCPLINE_STATE_KEY``,
        else random per process (states then die with the process)."""
        self.legacy: Any = None
        """The legacy (``initialize``) era, unless ``legacy=False``."""
        if legacy:
            from .legacy import LegacyEra

            self.legacy = LegacyEra(self)

    # --- feature registries, built on first use ------------------------------------------

    @cached_property
    def _resources(self) -> Resources:
        from .resources import Resources

        return Resources()

    @cached_property
    def _completions(self) -> Completions:
        from .completion import Completions

        return Completions()

    @cached_property
    def subscriptions(self) -> Subscriptions:
        """Open ``subscriptions/listen`` streams and what they get notified of."""
        from .subscriptions import Subscriptions

        return Subscriptions(self)

    def _built(self, name: str) -> bool:
        """Whether the lazily built registry ``name`` exists yet (nothing to do if not)."""
        return name in self.__dict__

    async def _listen(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return await self.subscriptions.listen(ctx, params)

    # --- registration ------------------------------------------------------------------

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        hidden: bool = False,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        hidden: bool = False,
    ) -> F | Callable[[F], F]:
        """Decorator: register a function as a tool (``@server.tool`` or ``@server.tool(...)``).

        The input schema comes from the type hints (or ``input_schema``), the description
        from the docstring; a typed return gives ``outputSchema`` and ``structuredContent``.
        ``annotations`` takes spec keys or ``read_only``/``destructive``/``idempotent``/
        ``open_world``/``title``. A ``hidden`` tool can be called but is not listed.
        """
        if callable(name):
            self.add_tool(name)
            return name

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                input_schema=input_schema,
                output_schema=output_schema,
                structured_output=structured_output,
                annotations=annotations,
                icons=icons,
                meta=meta,
                hidden=hidden,
            )
            return fn

        return register

    def add_tool(self, fn: Callable[..., Any], *, hidden: bool = False, **options: Any) -> Tool:
        """Register ``fn`` as a tool (same options as `tool`); replaces nothing silently."""
        tool = make_tool(fn, **options)
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._listed_tools = None
        if hidden:
            self._hidden_tools.add(tool.name)
        self._tools_enabled = True
        if not hidden:
            self.list_changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; raises `KeyError` when there is none by that name."""
        del self._tools[name]
        self._listed_tools = None
        if name in self._hidden_tools:
            self._hidden_tools.discard(name)
        else:
            self.list_changed("tools")

    @property
    def tools(self) -> dict[str, Tool]:
        return dict(self._tools)

    # --- resources, prompts, completions ----------------------------------------------------

    def resource(self, uri: str, **options: Any) -> Callable[[F], F]:
        """Decorator: serve ``uri`` with a function; ``{var}`` in ``uri`` makes a template.

        Options: ``name``, ``title``, ``description`` (default: the docstring),
        ``mime_type``, ``annotations``, ``icons``, ``size``, ``meta``, and the caching
        hints of its reads ``ttl_ms``/``cache_scope``. See `mcpline.server.resources`.

        Variables arrive pct-decoded. Path-segment variables (``{name}``, ``{.x}``, ``{/x}``,
        ``{/x*}``, ``{;x}``) never contain ``/`` or ``\\``: a URI with ``%2F`` in one is not
        found. ``{+path}``, ``{#x}`` and query variables may hold ``../..``: turn them into
        file paths with ``mcpline.safe_path(root, path)``, which raises `PathEscapeError`
        (answered as resource-not-found) for anything outside ``root``.
        """

        def register(fn: F) -> F:
            self.add_resource(uri, fn, **options)
            return fn

        return register

    def add_resource(
        self, uri: str, fn: Callable[..., Any] | str | bytes, **options: Any
    ) -> Resource:
        """Register a resource or template (``fn`` may be constant ``str``/``bytes``)."""
        from .resources import make_resource

        res = make_resource(uri, fn, **options)
        self._resources.add(res)
        self._resources_enabled = True
        self.list_changed("resources")
        return res

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template by URI/template; `KeyError` if there is none."""
        self._resources.remove(uri)
        self.list_changed("resources")

    def resource_template(self, uri_template: str, **options: Any) -> Callable[[F], F]:
        """Same as `resource`, insisting that ``uri_template`` has ``{variables}``."""
        if "{" not in uri_template:
            raise ValueError(f"{uri_template!r} has no {{variables}}; use server.resource()")
        return self.resource(uri_template, **options)

    @property
    def resources(self) -> dict[str, Resource]:
        """Registered static resources and templates, by URI / template text."""
        return {**self._resources.static, **self._resources.templates}

    def watchable(self, uri: str) -> bool:
        """Whether a listen may subscribe to ``uri`` (a resource we serve, or a parent)."""
        return self._resources.watchable(uri)

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(self, name: str | None = None, **options: Any) -> Callable[[F], F]: ...

    def prompt(self, name: str | F | None = None, **options: Any) -> F | Callable[[F], F]:
        """Decorator: register a prompt (``@server.prompt`` or ``@server.prompt(...)``).

        Options: ``title``, ``description`` (default: the docstring), ``argument_titles``,
        ``icons``, ``meta``. See `mcpline.server.prompts`.
        """
        if callable(name):
            self.add_prompt(name)
            return name

        def register(fn: F) -> F:
            self.add_prompt(fn, name=name, **options)
            return fn

        return register

    def add_prompt(self, fn: Callable[..., Any], **options: Any) -> Prompt:
        from .prompts import make_prompt

        prompt = make_prompt(fn, **options)
        if prompt.name in self._prompts:
            raise ValueError(f"a prompt named {prompt.name!r} is already registered")
        self._prompts[prompt.name] = prompt
        self._prompts_enabled = True
        self.list_changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; `KeyError` when there is none by that name."""
        del self._prompts[name]
        self.list_changed("prompts")

    @property
    def prompts(self) -> dict[str, Prompt]:
        return dict(self._prompts)

    def completion(
        self,
        *,
        prompt: str | None = None,
        resource: str | None = None,
        argument: str | None = None,
    ) -> Callable[[F], F]:
        """Decorator: a completer for ``completion/complete``.

        ``prompt=``/``resource=`` (a template) and ``argument=`` narrow what it completes;
        without them it is the catch-all. See `mcpline.server.completion`.
        """

        def register(fn: F) -> F:
            self._completions.add(fn, prompt=prompt, resource=resource, argument=argument)
            return fn

        return register

    # --- change notifications ------------------------------------------------------------------

    def _on_loops(self, fn: Callable[[Connection], None]) -> None:
        """Run ``fn(conn)`` for every connection, on that connection's loop thread."""
        here = threading.get_ident()
        for conn in list(self.connections):
            if conn.loop_thread == here:
                fn(conn)
            else:
                conn.loop.call_soon_threadsafe(fn, conn)

    def list_changed(self, kind: str) -> None:
        """Tell every connection that a list (``tools``, ``prompts``, ``resources``) changed.

        Listens that asked for it get the notification; safe to call from any thread.
        """

        def deliver(conn: Connection) -> None:
            if self._built("subscriptions"):  # else no listen was ever opened
                self.subscriptions.list_changed(conn, kind)
            conn.list_changed(kind)

        self._on_loops(deliver)

    def resource_updated(self, uri: str) -> None:
        """Report that ``uri`` changed: ``notifications/resources/updated`` to every listen
        subscribed to it (or to a parent of it); safe to call from any thread."""

        def deliver(conn: Connection) -> None:
            if self._built("subscriptions"):  # else no listen was ever opened
                self.subscriptions.resource_updated(conn, uri)
            if self.resource_updated_hook is not None:
                self.resource_updated_hook(conn, uri)

        self._on_loops(deliver)
        conns = list(self.connections)
        if self.legacy is not None and conns:
            # Legacy sessions subscribed with resources/subscribe (they span connections).
            if conns[0].loop_thread == threading.get_ident():
                self.legacy.resource_updated(uri)
            else:
                conns[0].loop.call_soon_threadsafe(self.legacy.resource_updated, uri)

    # --- what we advertise ---------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if self._tools_enabled:
            caps["tools"] = {"listChanged": True}
        if self._prompts_enabled:
            caps["prompts"] = {"listChanged": True}
        if self._resources_enabled:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if (self._built("_completions") and self._completions) or self._auto_completions():
            caps["completions"] = {}
        caps["logging"] = {}
        return caps

    def offers(self, capability: str) -> bool:
        """Whether `capabilities` advertises ``capability`` (cheap for the common ones, since
        every request asks)."""
        if capability == "tools":
            return self._tools_enabled
        if capability == "prompts":
            return self._prompts_enabled
        if capability == "resources":
            return self._resources_enabled
        return capability in self.capabilities()

    def _auto_completions(self) -> bool:
        """Whether some prompt argument or template variable completes itself (an enum)."""
        if not self._prompts and not self._built("_resources"):
            return False
        from . import completion as _completion

        for prompt in self._prompts.values():
            schema = prompt.signature.schema
            if any(_completion.choices_for(schema, a) for a in prompt.arguments):
                return True
        for res in self._resources.templates.values():
            tschema = res.signature.schema if res.signature else None
            names = res.template.variables if res.template else ()
            if any(_completion.choices_for(tschema, v) for v in names):
                return True
        return False

    def finish_result(self, result: dict[str, Any]) -> dict[str, Any]:
        """Stamp a modern result with ``resultType`` and our serverInfo."""
        result.setdefault("resultType", "complete")
        if self.server_info_in_results:
            meta = result.get("_meta")
            if meta is None:
                result["_meta"] = {SERVER_INFO_KEY: self.info}
            elif SERVER_INFO_KEY not in meta:
                result["_meta"] = {**meta, SERVER_INFO_KEY: self.info}
        return result

    # --- routing (pure decisions) --------------------------------------------------------

    def route(self, req: Request) -> tuple[RequestMeta, Method]:
        """Validate ``_meta`` and find the method, in the spec's order; raises `JsonRpcError`."""
        meta = validate_request_meta(req.params, self.supported_versions)
        method = self.methods.get(req.method)
        if method is None:
            if req.method in LEGACY_ONLY_METHODS:
                why = (
                    f"Method not found: {req.method} is not part of MCP "
                    f"{', '.join(self.supported_versions)}"
                )
                if self.legacy is not None:
                    why += (
                        "; it is served only in an initialize session "
                        f"({', '.join(LEGACY_VERSIONS)}), i.e. to requests without modern _meta"
                    )
                raise JsonRpcError(METHOD_NOT_FOUND, why)
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {req.method}")
        if method.capability is not None and not self.offers(method.capability):
            raise JsonRpcError(
                METHOD_NOT_FOUND,
                f"Method not found: {req.method} (this server does not offer {method.capability})",
            )
        return meta, method

    def dispatch(self, conn: Connection, req: Request) -> Routed:
        """The context and the awaitable that will produce the result; raises `JsonRpcError`
        for requests answered with an error straight away."""
        if self.era_router is not None:
            routed = self.era_router(conn, req)
            if routed is not None:
                return routed
        meta, method = self.route(req)
        ctx = Context(conn, req.id, req.method, meta)
        if method.long_lived:
            ctx.extra["long_lived"] = True
        params = req.params if isinstance(req.params, dict) else {}
        return ctx, self._call(method, ctx, params)

    async def _call(self, method: Method, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        if method.waits_for_lifespan and (
            self._startup_failed or self._ready is None or not self._ready.is_set()
        ):
            await self.wait_ready()
        if ctx.method in MRTR_METHODS:
            result = await run_modern(method.handler, ctx, params, self.state_sealer)
        else:
            try:
                result = await method.handler(ctx, params)
            except InputRequired:
                raise refuse(ctx.method) from None
        return self.finish_result(result)

    # --- lifespan and threads -------------------------------------------------------------

    async def wait_ready(self) -> None:
        """Wait for the lifespan hook to be entered; -32603 if it failed."""
        if self._ready is not None:
            await self._ready.wait()
        if self._startup_failed:
            raise JsonRpcError(INTERNAL_ERROR, "Internal error: the server failed to start")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Enter the lifespan hook in the background and own the worker threads."""
        self._workers = WorkerPool(self.sync_workers, "mcpline-sync")
        self._ready = asyncio.Event()
        task: asyncio.Task[None] | None = None
        stop = asyncio.Event()
        if self._lifespan is None:
            self._ready.set()
        else:
            task = asyncio.get_running_loop().create_task(self._run_lifespan(stop))
        try:
            yield
        finally:
            stop.set()
            if task is not None:
                if not self._ready.is_set():
                    task.cancel()  # still starting: do not make the exit wait for it
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(task, 5)
            self._workers.shutdown()

    async def _run_lifespan(self, stop: asyncio.Event) -> None:
        assert self._lifespan is not None and self._ready is not None
        try:
            async with self._lifespan(self) as state:
                self.lifespan_state = state
                self._ready.set()
                await stop.wait()
        except Exception:
            log.exception("lifespan hook failed")
            if not self._ready.is_set():
                self._startup_failed = True
                self._ready.set()

    async def run_sync(self, fn: Callable[[], Any]) -> Any:
        """Run blocking code on a worker thread."""
        return await self._submit(fn)

    def _submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """`run_sync` without its coroutine frame: the future of ``fn`` on a worker thread."""
        if self._workers is None:  # called outside `running()`: start a pool lazily
            self._workers = WorkerPool(self.sync_workers, "mcpline-sync")
        return self._workers.submit(fn)

    @property
    def busy_threads(self) -> int:
        """Sync handlers still running on worker threads (cancelled ones included)."""
        return self._workers.running if self._workers is not None else 0

    # --- handlers ---------------------------------------------------------------------------

    async def _discover(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(self.supported_versions),
            "capabilities": self.capabilities(),
            "ttlMs": self.discover_ttl_ms,
            "cacheScope": self.cache_scope,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def paginate(
        self, kind: str, items: list[Any], params: dict[str, Any]
    ) -> tuple[list[Any], str | None]:
        """One page of ``items`` and the cursor of the next (None at the end).

        No cursor (or ``null``) means the first page; any cursor we did not issue for
        ``kind`` is -32602."""
        cursor = params.get("cursor", MISSING)
        if cursor is MISSING or cursor is None:
            start = 0
        else:
            start = decode_cursor(kind, cursor, len(items))
        end = start + self.page_size
        return items[start:end], (encode_cursor(kind, end) if end < len(items) else None)

    def list_result(self, key: str, page: list[Any], next_cursor: str | None) -> dict[str, Any]:
        result: dict[str, Any] = {
            key: page,
            "ttlMs": self.list_ttl_ms,
            "cacheScope": self.cache_scope,
        }
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _tools_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        listed = self._listed_tools
        if listed is None:
            hidden = self._hidden_tools
            listed = [t.definition for t in self._tools.values() if t.name not in hidden]
            self._listed_tools = listed
        page, nxt = self.paginate("tools", listed, params)
        return self.list_result("tools", page, nxt)

    async def _tools_call(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, "Invalid params: tools/call needs a string 'name'")
        arguments = params.get("arguments", {})
        if type(arguments) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        tool = self._tools.get(name)
        if tool is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name!r}", {"name": name})
        return await invoke(tool, arguments, ctx, self._submit)

    async def _resources_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        listed = [r.definition for r in self._resources.static.values()]
        page, nxt = self.paginate("resources", listed, params)
        return self.list_result("resources", page, nxt)

    async def _templates_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        listed = [r.definition for r in self._resources.templates.values()]
        page, nxt = self.paginate("templates", listed, params)
        return self.list_result("resourceTemplates", page, nxt)

    async def _resources_read(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        from . import resources as _resources

        uri = _resources.check_uri_param(params)
        res, kwargs = self._resources.resolve(uri)
        contents = await _resources.read(res, uri, kwargs, ctx, self.run_sync)
        return _resources.read_result(res, contents, self.read_ttl_ms, self.read_cache_scope)

    async def _prompts_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        page, nxt = self.paginate("prompts", [p.definition for p in self._prompts.values()], params)
        return self.list_result("prompts", page, nxt)

    async def _prompts_get(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        from . import prompts as _prompts

        name = _prompts.check_name_param(params)
        prompt = self._prompts.get(name)
        if prompt is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {name!r}", {"name": name})
        return await _prompts.render(prompt, params.get("arguments"), ctx, self.run_sync)

    async def _complete(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        from . import completion as _completion

        query = _completion.parse_query(params)
        names = _completion.known_arguments(
            query.kind, query.target, self._prompts, self._resources.templates
        )
        if query.argument not in names:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Invalid params: {query.target!r} has no argument {query.argument!r}",
            )
        completer = self._completions.find(query.kind, query.target, query.argument)
        if completer is not None:
            found = await _completion.run(completer, query, ctx, self.run_sync)
            return {"completion": found}
        if query.kind == "ref/prompt":
            schema: dict[str, Any] | None = self._prompts[query.target].signature.schema
        else:
            sig = self._resources.templates[query.target].signature
            schema = sig.schema if sig else None
        choices = _completion.choices_for(schema, query.argument) or []
        return {"completion": _completion.shape(_completion.prefix_filter(choices, query.value))}

    # --- running -----------------------------------------------------------------------------

    def run(self, transport: str = "stdio", **options: Any) -> None:
        """Serve until the client goes away. ``transport`` is ``"stdio"`` (default),
        ``"unix:/path"`` or ``"tcp:HOST:PORT"``.

        On stdio, ``run()`` takes stdout for the protocol and points ``print()`` at stderr. It
        cannot recall what was printed before it was called: a ``print()`` at import time or
        a library banner reaches the client as a corrupt message. Start the file with
        ``mcpline run FILE``, which takes stdout before importing it, or print to stderr (or
        use ``logging``) until ``run()``."""
        if transport == "stdio":
            from ..transports.stdio import serve_stdio

            serve_stdio(self, **options)
        else:
            from ..transports.sockets import serve_address

            serve_address(self, transport, **options)
