"""`Server`: what is registered, what is advertised, and how it is run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from ..protocol.state import MemoryNonceLedger, NonceLedger, StateSealer
from ..spec import INITIALIZE
from ._options import (
    PromptDefinition,
    PromptOptions,
    ResourceDefinition,
    ResourceOptions,
    ServerKeywords,
    ServerOptions,
    ToolDefinition,
    ToolOptions,
    check_keywords,
    server_options,
)
from .engine import Engine
from .eras import LazyEra, ModernEra
from .methods import Dispatcher
from .registry import Registry
from .runtime import Runtime
from .scopes import check_scopes
from .services import Services
from .tools import Tool, make_tool

# Resources (URI templates), prompts and completions load on first use, so a tools-only
# server does not pay for them at start-up.
if TYPE_CHECKING:
    from ..transports.http import HttpApp
    from .legacy import LegacyEra
    from .prompts import Prompt
    from .resources import Resource
    from .scale.bus import Change, NotificationBus

    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

F = TypeVar("F", bound=Callable[..., Any])

TOOL_DEFINITION = ToolDefinition.__optional_keys__
RESOURCE_DEFINITION = ResourceDefinition.__optional_keys__
PROMPT_DEFINITION = PromptDefinition.__optional_keys__


class Server:
    """An MCP server. Register tools with `tool`, then `run()`.

    Its options, by what they are about (all keyword-only but ``name`` and ``version``; kept
    in `options`):

    * **Who it is** (``server/discover``, ``initialize``): ``name``, ``version``, ``title``,
      ``description``, ``instructions``, ``website_url``, ``icons``;
      ``server_info_in_results`` adds ``serverInfo`` to each result's ``_meta``.
    * **Lists and caching**: ``page_size`` bounds list pages; ``list_ttl_ms`` and
      ``cache_scope`` are the caching hints of list results, ``read_ttl_ms`` and
      ``read_cache_scope`` those of ``resources/read``, ``discover_ttl_ms`` that of
      ``server/discover``.
    * **Limits and shutdown**: ``max_in_flight`` pauses reading when that many requests
      are running; ``max_line_bytes`` is the longest line read; ``max_outbound_bytes``
      bounds what waits for a peer that does not read (see `mcpline.server.outbound`);
      ``sync_workers`` threads run ``def`` handlers; ``shutdown_grace`` is how long in-flight work
      may finish after stdin closes.
    * **Lifespan**: ``lifespan`` is an async context manager factory whose value handlers
      see as ``ctx.lifespan`` (requests other than ``server/discover`` wait until it is
      entered).
    * **Input rounds (MRTR)**: ``state_key`` and ``state_ttl`` seal ``requestState``,
      accepted once each unless ``state_single_use=False``; pass a shared `NonceLedger`
      there for replicas (see `mcpline.protocol.state`).
    * **Eras and arguments**: ``legacy`` also serves clients that open with ``initialize``
      (see `mcpline.server.legacy`); ``strict_arguments`` is every tool's default for
      ``strict`` (see `tool`).
    * **Several processes**: ``bus`` carries list changes and resource updates to the other
      processes of this server (see `mcpline.server.scale.bus`); without one they reach this
      process's peers only (`mcpline.server.scale.attach` gives a server both after
      construction, before it serves).
    * **Tasks** (the tasks extension, see `mcpline.server.tasks.manager`): ``task_store`` keeps
      them: a store, or ``"memory"``, ``"sqlite:PATH"`` or a Redis URL (default
      ``$MCPLINE_TASK_STORE``, else memory); passing one also advertises the extension. A
      task lives ``task_ttl_ms`` (None: no limit) and clients are asked to poll every
      ``task_poll_interval_ms``. ``task_quota`` bounds what tasks keep per principal and in
      all (a `mcpline.server.tasks.quota.TaskQuota` or its spec; default
      ``$MCPLINE_TASK_QUOTA``, else the defaults).
    * **Middleware**: ``middleware`` runs around every request and notification, first
      outermost (see `add_middleware` and `mcpline.middleware`); at most
      ``max_pending_notifications`` client notifications wait on it at once (default 1024;
      past it one is handled without the chain, with a warning on stderr).
    """

    def __init__(
        self, name: str, version: str = "0.0.0", **options: Unpack[ServerKeywords]
    ) -> None:
        check_keywords(ServerKeywords, options, "Server()")
        self.options = server_options(options)
        self.name = name
        self.version = version
        """Your server's version (``serverInfo.version``)."""
        self.info: dict[str, Any] = {"name": name, "version": version}
        """The ``Implementation`` this server presents as ``serverInfo``."""
        optional_info = (
            ("title", options.get("title")),
            ("description", options.get("description")),
            ("websiteUrl", options.get("website_url")),
            ("icons", options.get("icons")),
        )
        for key, value in optional_info:
            if value:
                self.info[key] = value
        self.registry = Registry()
        """What this server serves and advertises (its decorators write it)."""
        single_use = options.get("state_single_use", True)
        ledger = (
            (MemoryNonceLedger() if single_use else None)
            if isinstance(single_use, bool)
            else single_use
        )
        bus = self._bus = options.get("bus")
        lifespan = options.get("lifespan")
        workers = self.options.sync_workers
        self._services = Services(self, lifespan, workers, bus, self._apply_change)
        state_key, state_ttl = options.get("state_key"), options.get("state_ttl", 900.0)
        sealer = StateSealer(state_key, scope=name, ttl=state_ttl, ledger=ledger)
        """Seals MRTR ``requestState``: key from ``state_key``, else ``$MCPLINE_STATE_KEY``,
        else random per process (states then die with the process)."""
        self._sealer = sealer
        legacy = options.get("legacy", True)
        self._dispatch = Dispatcher(
            self.registry, self.info, self.options, self._services, sealer, legacy=legacy
        )
        self._legacy = LazyEra(INITIALIZE, self._legacy_era) if legacy else None
        engine = Engine(ModernEra(self._dispatch), [] if self._legacy is None else [self._legacy])
        self._dispatch.engine = engine
        self.runtime = Runtime(engine, self._services, self.options, self.registry)
        """What transports serve this server through (`mcpline.server.runtime`)."""
        for item in options.get("middleware", ()):
            self.add_middleware(item)

    @property
    def legacy(self) -> LegacyEra:
        """The legacy (``initialize``) era: set its ``server_info``, ``on_set_level`` and
        ``on_subscribe`` here. It is built on first use (here, or a peer's first
        ``initialize``). A server built with ``legacy=False`` has none: `RuntimeError`."""
        if self._legacy is None:
            raise RuntimeError("this server was built with legacy=False: it has no legacy era")
        return cast("LegacyEra", self._legacy.load())

    def _legacy_era(self) -> LegacyEra:
        """The legacy era, built when a peer first sends ``initialize`` (or on `legacy`)."""
        from .legacy import LegacyEra

        return LegacyEra(self._dispatch)

    def add_middleware(self, middleware: Any) -> None:
        """Add ``middleware`` (a `mcpline.middleware.Middleware` or an async callable
        ``(mctx, call_next)``) inside those added before it; see docs/middleware.md."""
        from ..middleware._chain import chain_of

        bound = self.options.max_pending_notifications
        chain_of(self.runtime.engine, self._sealer, bound).add(middleware)

    # --- registration ------------------------------------------------------------------

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(self, name: str | None = None, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool(
        self, name: str | F | None = None, **options: Unpack[ToolOptions]
    ) -> F | Callable[[F], F]:
        """Decorator: register a function as a tool (``@server.tool`` or ``@server.tool(...)``).

        The input schema comes from the type hints (or ``input_schema``), the description
        from the docstring; a typed return gives ``outputSchema`` and ``structuredContent``.
        ``annotations`` takes spec keys or ``read_only``/``destructive``/``idempotent``/
        ``open_world``/``title``. A ``hidden`` tool can be called but is not listed.
        Arguments that break the input schema only because a number, boolean, array or
        object came as its JSON text (``"5"``) are read as that value unless ``strict``
        (default: the server's ``strict_arguments``); see docs/tools.md.
        ``task=True`` (or ``"optional"``) runs each call as a task for a client that declares
        the tasks extension; ``task="required"`` refuses other clients with -32021 (legacy
        sessions still get a normal call). See `mcpline.server.tasks.manager`.
        ``scopes``: the OAuth scopes a caller's verified token must hold (HTTP 403
        ``insufficient_scope`` otherwise; see `mcpline.server.scopes`).
        ``inline``: where a plain ``def`` runs; by default on worker threads until its calls
        prove short, then on the event loop (True: always the loop, False: always a thread;
        see docs/tools.md).
        """
        if callable(name):
            self.add_tool(name)
            return name
        check_keywords(ToolOptions, options, "tool()")

        def register(fn: F) -> F:
            self.add_tool(fn, name=name, **options)
            return fn

        return register

    def add_tool(
        self, fn: Callable[..., Any], *, name: str | None = None, **options: Unpack[ToolOptions]
    ) -> Tool:
        """Register ``fn`` as a tool (same options as `tool`); replaces nothing silently."""
        check_keywords(ToolOptions, options, "add_tool()")
        hidden = options.get("hidden", False)
        strict = options.get("strict")
        mode = _task_mode(options.get("task"))
        required = check_scopes(options.get("scopes"))
        if strict is None:
            strict = self.options.strict_arguments
        spec = cast("ToolDefinition", {k: v for k, v in options.items() if k in TOOL_DEFINITION})
        tool = make_tool(fn, name=name, strict=strict, inline=options.get("inline"), **spec)
        self.registry.add_tool(tool, task=mode, hidden=hidden)
        self.registry.scopes.set("tool", tool.name, required)
        if not hidden:
            self.list_changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; raises `KeyError` when there is none by that name."""
        if self.registry.remove_tool(name):
            self.list_changed("tools")

    @property
    def tools(self) -> dict[str, Tool]:
        """Registered tools by name (hidden ones too); each `Tool`'s ``definition`` is what
        ``tools/list`` sends."""
        return dict(self.registry.tools)

    # --- resources, prompts, completions ----------------------------------------------------

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Decorator: serve ``uri`` with a function; ``{var}`` in ``uri`` makes a template.

        Options: ``name``, ``title``, ``description`` (default: the docstring),
        ``mime_type``, ``annotations``, ``icons``, ``size``, ``meta``, the caching
        hints of its reads ``ttl_ms``/``cache_scope``, and the OAuth ``scopes`` a caller
        needs (see `tool`). See `mcpline.server.resources`.

        Variables arrive pct-decoded. Path-segment variables (``{name}``, ``{.x}``, ``{/x}``,
        ``{/x*}``, ``{;x}``) never contain ``/`` or ``\\``: a URI with ``%2F`` in one is not
        found. ``{+path}``, ``{#x}`` and query variables may hold ``../..``: turn them into
        file paths with ``mcpline.safe_path(root, path)``, which raises `PathEscapeError`
        (answered as resource-not-found) for anything outside ``root``.
        """
        check_keywords(ResourceOptions, options, "resource()")

        def register(fn: F) -> F:
            self.add_resource(uri, fn, **options)
            return fn

        return register

    def add_resource(
        self,
        uri: str,
        fn: Callable[..., Any] | str | bytes,
        **options: Unpack[ResourceOptions],
    ) -> Resource:
        """Register a resource or template (``fn`` may be constant ``str``/``bytes``)."""
        from .resources import make_resource

        check_keywords(ResourceOptions, options, "add_resource()")
        required = check_scopes(options.get("scopes"))
        spec = {k: v for k, v in options.items() if k in RESOURCE_DEFINITION}
        res = make_resource(uri, fn, **cast("ResourceDefinition", spec))
        self.registry.add_resource(res)
        self.registry.scopes.set("resource", res.uri, required)
        self.list_changed("resources")
        return res

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template by URI/template; `KeyError` if there is none."""
        self.registry.remove_resource(uri)
        self.list_changed("resources")

    @property
    def resources(self) -> dict[str, Resource]:
        """Registered static resources and templates, by URI / template text."""
        if not self.registry.has_resources():
            return {}
        found = self.registry.resources
        return {**found.static, **found.templates}

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(
        self, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> Callable[[F], F]: ...

    def prompt(
        self, name: str | F | None = None, **options: Unpack[PromptOptions]
    ) -> F | Callable[[F], F]:
        """Decorator: register a prompt (``@server.prompt`` or ``@server.prompt(...)``).

        Options: ``title``, ``description`` (default: the docstring), ``argument_titles``,
        ``icons``, ``meta``, ``scopes`` (see `tool`). See `mcpline.server.prompts`.
        """
        if callable(name):
            self.add_prompt(name)
            return name
        check_keywords(PromptOptions, options, "prompt()")

        def register(fn: F) -> F:
            self.add_prompt(fn, name=name, **options)
            return fn

        return register

    def add_prompt(
        self, fn: Callable[..., Any], *, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> Prompt:
        """Register ``fn`` as a prompt (``name`` and the options of `prompt`); a second
        prompt of the same name is a `ValueError`."""
        from .prompts import make_prompt

        check_keywords(PromptOptions, options, "add_prompt()")
        required = check_scopes(options.get("scopes"))
        spec = {k: v for k, v in options.items() if k in PROMPT_DEFINITION}
        prompt = make_prompt(fn, name=name, **cast("PromptDefinition", spec))
        self.registry.add_prompt(prompt)
        self.registry.scopes.set("prompt", prompt.name, required)
        self.list_changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; `KeyError` when there is none by that name."""
        self.registry.remove_prompt(name)
        self.list_changed("prompts")

    @property
    def prompts(self) -> dict[str, Prompt]:
        """Registered prompts by name; each `Prompt`'s ``definition`` is what ``prompts/list``
        sends."""
        return dict(self.registry.prompts)

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
            self.registry.completions.add(fn, prompt=prompt, resource=resource, argument=argument)
            return fn

        return register

    # --- scale-out: the bus and the nonce ledger (see mcpline.server.scale.attach) -----------

    @property
    def bus(self) -> NotificationBus | None:
        """The notification bus (``Server(bus=...)``) that carries list changes and resource
        updates to this server's other processes; None: this process's peers only. Set it
        before serving (`RuntimeError` while the server serves)."""
        return self._bus

    @bus.setter
    def bus(self, bus: NotificationBus | None) -> None:
        self._services.set_bus(bus)
        self._bus = bus

    @property
    def nonce_ledger(self) -> NonceLedger | None:
        """Where used ``requestState`` nonces are recorded (``Server(state_single_use=...)``;
        None: a state may be replayed). Set it before serving (`RuntimeError` while the server
        serves)."""
        return self._sealer.ledger

    @nonce_ledger.setter
    def nonce_ledger(self, ledger: NonceLedger | None) -> None:
        if self._services.serving:
            raise RuntimeError("a server's nonce ledger cannot change while it serves")
        self._sealer.ledger = ledger

    # --- change notifications ------------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """Tell every peer that a list (``tools``, ``prompts``, ``resources``) changed.

        Listens that asked for it (and legacy sessions) are notified, here and, through the
        server's bus, in its other processes; safe from any thread.
        """
        self.runtime.engine.list_changed(kind)
        if self._bus is not None:
            from .scale.bus import Change

            self._bus.publish(Change("list_changed", kind))

    def resource_updated(self, uri: str) -> None:
        """Report that ``uri`` changed: ``notifications/resources/updated`` to every listen
        subscribed to it (or to a parent of it), and to legacy sessions subscribed to it,
        here and through the server's bus; safe to call from any thread."""
        self.runtime.engine.resource_updated(uri)
        if self._bus is not None:
            from .scale.bus import Change

            self._bus.publish(Change("resource_updated", uri))

    def _apply_change(self, change: Change) -> None:
        """A change another process published: tell this process's peers."""
        if change.kind == "resource_updated":
            self.runtime.engine.resource_updated(change.value)
        elif self._dispatch.offers(change.value):
            self.runtime.engine.list_changed(change.value)

    # --- what we advertise ---------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The ``ServerCapabilities`` this server advertises, from what is registered."""
        return self._dispatch.capabilities()

    # --- running -----------------------------------------------------------------------------

    async def run_sync(self, fn: Callable[[], Any]) -> Any:
        """Run blocking code on one of the server's worker threads."""
        return await self._services.submit(fn)

    def http_app(self, path: str = "/mcp", **options: Any) -> HttpApp:
        """This server as an ASGI 3 application serving MCP over Streamable HTTP at ``path``
        (mount it in any ASGI server or framework). ``options`` are those of
        `mcpline.transports.http.HttpApp`: ``allowed_origins``, ``allowed_hosts``,
        ``verify_token``, ``resource_metadata``, size and time limits. See docs/http.md."""
        from ..transports.http import HttpApp

        return HttpApp(self, path, **options)

    def run(
        self,
        transport: str = "stdio",
        *,
        host: str | None = None,
        port: int | None = None,
        path: str | None = None,
        **options: Any,
    ) -> None:
        """Serve until the client goes away. ``transport`` is an address of a row of
        `mcpline.transports.table`: ``"stdio"`` (default), ``"unix:/path"``,
        ``"tcp:HOST:PORT"`` or ``"http://HOST:PORT[/PATH]"`` (Streamable HTTP, at ``/mcp`` by
        default, with uvicorn from the ``mcpline[http]`` extra; ``options`` go to
        `http_app`); ``options`` are that transport's, and any other address is a
        `ValueError`. FastMCP's ``"http"``/``"streamable-http"`` with
        ``host=`` (127.0.0.1), ``port=`` (8000) and ``path=`` (``/mcp``) mean the same;
        ``"sse"`` (the HTTP+SSE transport of 2024-11-05) is not served (`ValueError`).

        On stdio, ``run()`` takes stdout for the protocol and points ``print()`` at stderr. It
        cannot recall what was printed before it was called: a ``print()`` at import time or
        a library banner reaches the client as a corrupt message. Start the file with
        ``mcpline run FILE``, which takes stdout before importing it, or print to stderr (or
        use ``logging``) until ``run()``."""
        from ..transports.table import transport_for

        address = run_address(transport, host, port, path)
        transport_for(address).serve(self, address, **options)


FASTMCP_HTTP = ("http", "streamable-http")
"""FastMCP's names for Streamable HTTP in ``run(transport=...)``."""


def run_address(
    transport: str, host: str | None = None, port: int | None = None, path: str | None = None
) -> str:
    """The address `Server.run` serves: ``transport`` itself, or the ``http://`` URL of
    FastMCP's ``run("http", host=, port=, path=)``; `ValueError` for what mcpline does not
    serve or arguments that contradict each other."""
    if transport == "sse":
        raise ValueError(
            "mcpline does not serve the HTTP+SSE transport of 2024-11-05 (FastMCP's "
            "transport='sse'): serve Streamable HTTP, which clients of both eras speak, with "
            "server.run('http', host='127.0.0.1', port=8000) or "
            "server.run('http://127.0.0.1:8000/mcp')"
        )
    if transport in FASTMCP_HTTP:
        host = host or "127.0.0.1"
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        endpoint = "/" + (path or "/mcp").lstrip("/")
        return f"http://{shown}:{8000 if port is None else port}{endpoint}"
    if host is not None or port is not None or path is not None:
        raise ValueError(
            f"run({transport!r}) takes no host=, port= or path=: pass them in the address, "
            "server.run('http://HOST:PORT/mcp'), or use server.run('http', host=..., port=...)"
        )
    return transport


def _task_mode(task: bool | str | None) -> str | None:
    """The ``task=`` option as ``"optional"``/``"required"``/None (`ValueError` otherwise)."""
    if task is None or task is False:
        return None
    if task is True or task == "optional":
        return "optional"
    if task == "required":
        return "required"
    raise ValueError("task must be True, False, 'optional' or 'required'")


__all__ = [
    "F",
    "run_address",
    "Server",
    "ServerOptions",
]
