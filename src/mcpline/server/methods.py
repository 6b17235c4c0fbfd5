"""The built-in methods of a server: their handlers, capabilities, pagination and results.

`Dispatcher` answers what the eras ask of a server (`mcpline.server.eras.EraHost` and
`mcpline.server.eras.ModernHost`): which method serves a name, what is offered, and how a
modern result is finished; its handlers read the `Server`'s registry. Listens and tasks,
which it builds, see it only as what they name of it
(`mcpline.server.subscriptions.ListenHost`, `mcpline.server.tasks.runs.TaskHost`).
"""

from __future__ import annotations

import base64
from collections.abc import Coroutine
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams, MethodNotFound, MissingCapabilityError
from ..jsonrpc import MISSING
from ..protocol.capabilities import accepts_tasks
from ..protocol.state import StateSealer
from ..spec import (
    COMPLETE,
    DISCOVER,
    LEGACY_ONLY_METHODS,
    LEGACY_VERSIONS,
    LISTEN,
    MRTR_METHODS,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    SERVER_INFO_KEY,
    TASKS_CANCEL,
    TASKS_EXTENSION,
    TASKS_GET,
    TASKS_UPDATE,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ._userfn import unsettled
from .context import Context
from .eras import Method
from .mrtr import InputRequired, input_required_result, prepare, refuse, run_modern
from .registry import LISTED_KINDS
from .tools import Deferred, Tool, failed, invoke, outcome, prepare_call

if TYPE_CHECKING:
    from ._options import ServerOptions
    from .engine import Engine
    from .registry import Registry
    from .scopes import Kind
    from .services import Services
    from .subscriptions import Subscriptions
    from .tasks.manager import TaskManager


def _takes_tasks(ctx: Context) -> bool:
    """Whether a request may be answered with a task: modern, declaring the extension."""
    return not ctx.legacy and accepts_tasks(ctx.client_capabilities)


def encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode().rstrip("=")


def decode_cursor(kind: str, cursor: Any, limit: int) -> int:
    """The offset a cursor stands for; -32602 for anything we did not issue."""
    if not isinstance(cursor, str):
        raise InvalidParams("Invalid params: cursor must be a string")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, num = raw.partition(":")
        offset = int(num)
    except (ValueError, UnicodeDecodeError):
        raise InvalidParams("Invalid params: unknown cursor") from None
    if prefix != kind or not 0 < offset <= limit or encode_cursor(kind, offset) != cursor:
        raise InvalidParams("Invalid params: unknown or expired cursor")
    return offset


class Dispatcher:
    """The method table of one server and the built-in handlers behind it."""

    def __init__(
        self,
        registry: Registry,
        info: dict[str, Any],
        options: ServerOptions,
        services: Services,
        sealer: StateSealer,
        *,
        legacy: bool,
    ) -> None:
        self.registry = registry
        """What the server serves (read only)."""
        self.info = info
        """The server's ``Implementation`` (``serverInfo``)."""
        self.engine: Engine
        """The engine serving this table (set by its server once both are built)."""
        self.options = options
        self.services = services
        self.sealer = sealer
        self.legacy = legacy
        """Whether a legacy era serves requests without modern ``_meta`` (for error texts)."""
        self.supported_versions = options.versions
        self.methods: dict[str, Method] = {
            DISCOVER: Method(self._discover, None, waits_for_lifespan=False),
            TOOLS_LIST: Method(self._tools_list, "tools"),
            TOOLS_CALL: Method(self._tools_call, "tools"),
            RESOURCES_LIST: Method(self._resources_list, "resources"),
            RESOURCES_TEMPLATES_LIST: Method(self._templates_list, "resources"),
            RESOURCES_READ: Method(self._resources_read, "resources"),
            PROMPTS_LIST: Method(self._prompts_list, "prompts"),
            PROMPTS_GET: Method(self._prompts_get, "prompts"),
            COMPLETE: Method(self._complete, "completions"),
            LISTEN: Method(self._listen, None, waits_for_lifespan=False, long_lived=True),
            TASKS_GET: Method(self._tasks_get, "tasks"),
            TASKS_UPDATE: Method(self._tasks_update, "tasks"),
            TASKS_CANCEL: Method(self._tasks_cancel, "tasks"),
        }

    # --- what the eras ask ------------------------------------------------------------

    @property
    def instructions(self) -> str | None:
        return self.options.instructions

    @property
    def lifespan(self) -> Any:
        return self.services.value

    def method(self, name: str) -> Method | None:
        return self.methods.get(name)

    def modern_method(self, name: str) -> Method:
        """The method serving ``name`` for a modern request; -32601 when there is none."""
        method = self.methods.get(name)
        if method is None:
            if name in LEGACY_ONLY_METHODS:
                why = (
                    f"Method not found: {name} is not part of MCP "
                    f"{', '.join(self.supported_versions)}"
                )
                if self.legacy:
                    why += (
                        "; it is served only in an initialize session "
                        f"({', '.join(LEGACY_VERSIONS)}), i.e. to requests without modern _meta"
                    )
                raise MethodNotFound(why)
            raise MethodNotFound(f"Method not found: {name}")
        if method.capability is not None and not self.offers(method.capability):
            raise MethodNotFound(
                f"Method not found: {name} (this server does not offer {method.capability})"
            )
        return method

    def capabilities(self) -> dict[str, Any]:
        """The ``ServerCapabilities`` advertised: the registry's, and the tasks extension."""
        return self.registry.capabilities(tasks=self.tasks_offered())

    def offers(self, capability: str) -> bool:
        """Whether `capabilities` advertises ``capability`` (cheap for the common ones, since
        every request asks)."""
        if capability in LISTED_KINDS:
            return capability in self.registry.offered
        if capability == "tasks":
            return self.tasks_offered()
        return capability in self.capabilities()

    def tasks_offered(self) -> bool:
        """Whether the tasks extension is offered: a tool with ``task=``, a ``task_store``,
        or a task already handled (a body returned ``mcpline.Task``)."""
        return (
            bool(self.registry.task_tools)
            or self.options.task_store is not None
            or self.has_tasks()
        )

    async def wait_ready(self) -> None:
        await self.services.wait_ready()

    @cached_property
    def subscriptions(self) -> Subscriptions:
        """Open ``subscriptions/listen`` streams and what they get notified of."""
        from .subscriptions import Subscriptions

        return Subscriptions(self)

    def has_subscriptions(self) -> bool:
        """Whether a listen was ever opened (else there is nothing to notify)."""
        return "subscriptions" in self.__dict__

    @cached_property
    def tasks(self) -> TaskManager:
        """The tasks extension's runtime (built, with its store, on first use)."""
        from .tasks.manager import TaskManager, resolve_store

        return TaskManager(self, resolve_store(self.options.task_store))

    def has_tasks(self) -> bool:
        """Whether a task was ever handled (else no tasks machinery is loaded)."""
        return "tasks" in self.__dict__

    def watchable(self, uri: str) -> bool:
        return self.registry.watchable(uri)

    # --- running a modern request ----------------------------------------------------------

    def inline_call(
        self, method: Method, ctx: Context, params: dict[str, Any]
    ) -> Coroutine[Any, Any, dict[str, Any]] | None:
        """What runs a modern request in one step, outside a task (`Exchange.eager`), or
        None: a call of a plain tool whose body `runs_now` on the event loop, once the server
        is ready (see `_call_inline`)."""
        if method is not self.methods.get(TOOLS_CALL):
            return None
        name = params.get("name")
        tool = self.registry.tools.get(name) if type(name) is str else None
        if tool is None or not tool.body.runs_now or name in self.registry.task_tools:
            return None
        arguments = params.get("arguments", {})
        if type(arguments) is not dict or not self.services.ready:
            return None
        return self._call_inline(tool, arguments, ctx, params)

    async def call(self, method: Method, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """Run ``method`` for a modern request (after the lifespan hook) and finish its result."""
        if method.waits_for_lifespan and not self.services.ready:
            await self.services.wait_ready()
        if ctx.method in MRTR_METHODS:
            result = await run_modern(method.handler, ctx, params, self.sealer)
        else:
            try:
                result = await method.handler(ctx, params)
            except InputRequired:
                raise refuse(ctx.method) from None
        return self.finish_result(result)

    def finish_result(self, result: dict[str, Any]) -> dict[str, Any]:
        """Stamp a modern result with ``resultType`` and our serverInfo."""
        result.setdefault("resultType", "complete")
        if self.options.server_info_in_results:
            meta = result.get("_meta")
            if meta is None:
                result["_meta"] = {SERVER_INFO_KEY: self.info}
            elif SERVER_INFO_KEY not in meta:
                result["_meta"] = {**meta, SERVER_INFO_KEY: self.info}
        return result

    # --- pagination ------------------------------------------------------------------------

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
        end = start + self.options.page_size
        return items[start:end], (encode_cursor(kind, end) if end < len(items) else None)

    def list_result(
        self, key: str, page: list[Any], next_cursor: str | None, private: bool = False
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            key: page,
            "ttlMs": self.options.list_ttl_ms,
            "cacheScope": "private" if private else self.options.cache_scope,
        }
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    # --- handlers ---------------------------------------------------------------------------

    async def _discover(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(self.supported_versions),
            "capabilities": self.capabilities(),
            "ttlMs": self.options.discover_ttl_ms,
            "cacheScope": self.options.cache_scope,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    async def _listen(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return await self.subscriptions.listen(ctx, params)

    async def _tools_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        listed = self.registry.listed_tools()
        private = self._for_caller(ctx)
        if private:
            listed = [d for d in listed if self._allows(ctx, "tool", d["name"])]
        page, nxt = self.paginate("tools", listed, params)
        return self.list_result("tools", page, nxt, private)

    def _for_caller(self, ctx: Context) -> bool:
        """Whether listings are filtered by the caller's scopes (a verified principal, and
        scope rules): such a listing is also ``cacheScope: private``."""
        return bool(self.registry.scopes) and ctx.principal is not None

    def _allows(self, ctx: Context, kind: Kind, name: str) -> bool:
        return self.registry.scopes.allows(ctx.principal, kind, name)

    async def _tools_call(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("Invalid params: tools/call needs a string 'name'")
        arguments = params.get("arguments", {})
        if type(arguments) is not dict:
            raise InvalidParams("Invalid params: 'arguments' must be an object")
        tool = self.registry.tools.get(name)
        if tool is None:
            raise InvalidParams(f"Unknown tool: {name!r}", {"name": name})
        mode = self.registry.task_tools.get(name)
        if mode is not None:
            if _takes_tasks(ctx):
                return await self.tasks.call_tool(tool, arguments, ctx)
            if mode == "required" and not ctx.legacy:
                raise MissingCapabilityError(
                    {"extensions": {TASKS_EXTENSION: {}}},
                    f"Missing required client capability: tool {name!r} runs only as a task; "
                    f"declare the {TASKS_EXTENSION} extension in the request's client "
                    "capabilities",
                )
        try:
            return await invoke(tool, arguments, ctx, self.services.submit)
        except Deferred as handle:  # the body returned a task handle (mcpline.Task)
            return await self._adopt(tool, handle, ctx)

    async def _adopt(self, tool: Tool, handle: Deferred, ctx: Context) -> dict[str, Any]:
        """The result of a tools/call whose body returned a task handle (`mcpline.Task`):
        a task when the client takes tasks, else the handle's own result."""
        await ctx.exchange.own_task()
        if _takes_tasks(ctx):
            return await self.tasks.adopt(tool, handle, ctx)
        from .tasks.handle import Task, shaped

        if not isinstance(handle, Task):
            try:
                raise handle
            finally:
                del handle  # this frame is in its traceback: holding it would make a cycle
        return await shaped(tool, handle, self.services.submit)  # a plain call

    async def _call_inline(
        self, tool: Tool, arguments: dict[str, Any], ctx: Context, params: dict[str, Any]
    ) -> dict[str, Any]:
        """`call` of tools/call (through `run_modern`, `_tools_call` and `invoke`) in one
        coroutine, for a tool whose body `runs_now`: it ends in its first step unless the
        body returned an awaitable or a task handle. The same steps, in the same order."""
        try:
            prepare(ctx, params, self.sealer)
            kwargs, refused = prepare_call(tool, arguments)
            if kwargs is None:
                assert refused is not None
                return self.finish_result(refused)
            body = tool.body
            try:
                try:
                    value = body.call_now(kwargs, ctx)
                    if unsettled(value):
                        value = await body.settle(value, ctx)
                    result = outcome(tool, value)
                except Exception as exc:
                    failure = failed(tool, exc)
                    if failure is None:
                        raise
                    result = failure
                finally:
                    # a returned InputRequired or handle, which `outcome` raised, holds this
                    # frame in its traceback: kept here, it would make a cycle
                    value = None
            except Deferred as handle:
                result = await self._adopt(tool, handle, ctx)
        except InputRequired as ir:
            result = input_required_result(ctx, params, ir, self.sealer)
        return self.finish_result(result)

    async def _tasks_get(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return await self.tasks.get(ctx, params)

    async def _tasks_update(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return await self.tasks.update(ctx, params)

    async def _tasks_cancel(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return await self.tasks.cancel(ctx, params)

    async def _resources_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        found = self.registry.resources.static.values()
        private = self._for_caller(ctx)
        listed = [
            r.definition for r in found if not private or self._allows(ctx, "resource", r.uri)
        ]
        page, nxt = self.paginate("resources", listed, params)
        return self.list_result("resources", page, nxt, private)

    async def _templates_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        found = self.registry.resources.templates.values()
        private = self._for_caller(ctx)
        listed = [
            r.definition for r in found if not private or self._allows(ctx, "resource", r.uri)
        ]
        page, nxt = self.paginate("templates", listed, params)
        return self.list_result("resourceTemplates", page, nxt, private)

    async def _resources_read(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        from . import resources as _resources

        uri = _resources.check_uri_param(params)
        res, kwargs = self.registry.resources.resolve(uri)
        contents = await _resources.read(res, uri, kwargs, ctx, self.services.submit)
        return _resources.read_result(
            res, contents, self.options.read_ttl_ms, self.options.read_cache_scope
        )

    async def _prompts_list(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        found = self.registry.prompts.values()
        private = self._for_caller(ctx)
        listed = [p.definition for p in found if not private or self._allows(ctx, "prompt", p.name)]
        page, nxt = self.paginate("prompts", listed, params)
        return self.list_result("prompts", page, nxt, private)

    async def _prompts_get(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        from . import prompts as _prompts

        name = _prompts.check_name_param(params)
        prompt = self.registry.prompts.get(name)
        if prompt is None:
            raise InvalidParams(f"Unknown prompt: {name!r}", {"name": name})
        return await _prompts.render(prompt, params.get("arguments"), ctx, self.services.submit)

    async def _complete(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        from . import completion as _completion

        registry = self.registry
        query = _completion.parse_query(params)
        names = _completion.known_arguments(
            query.kind, query.target, registry.prompts, registry.resources.templates
        )
        if query.argument not in names:
            raise InvalidParams(
                f"Invalid params: {query.target!r} has no argument {query.argument!r}"
            )
        completer = registry.completions.find(query.kind, query.target, query.argument)
        if completer is not None:
            found = await _completion.run(completer, query, ctx, self.services.submit)
            return {"completion": found}
        if query.kind == "ref/prompt":
            schema: dict[str, Any] | None = registry.prompts[query.target].signature.schema
        else:
            sig = registry.resources.templates[query.target].signature
            schema = sig.schema if sig else None
        choices = _completion.choices_for(schema, query.argument) or []
        return {"completion": _completion.shape(_completion.prefix_filter(choices, query.value))}
