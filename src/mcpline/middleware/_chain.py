"""The middleware chain: ordered async callables around every request and notification.

A middleware is ``async (mctx, call_next) -> result``: it sees the request (`MiddlewareContext`)
and may answer (return a result without calling ``call_next``), refuse (raise
`mcpline.errors.JsonRpcError`, or any exception for a -32603) or pass on (``await
call_next(mctx)``, then look at or replace the result). `Middleware` is a base class whose
``on_*`` hooks are called by kind, as in FastMCP. The engine (`mcpline.server.engine.Engine`)
runs the chain for every transport and era; without middleware nothing of this module runs.

The chain runs once per request, not once per MRTR round: a later round of a modern request
skips it when its sealed ``requestState`` verifies (for the principal it was sealed for) and
says the chain already ran for this request (`Context.chain_ran`). A middleware that wants
every round says so (`Middleware.every_round`, or `every_round` on a function).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..jsonrpc import Notification
from ..server._options import DEFAULT_MAX_PENDING_NOTIFICATIONS
from ..spec import (
    MRTR_METHODS,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_TEMPLATES_LIST,
    TOOLS_CALL,
    TOOLS_LIST,
)

if TYPE_CHECKING:
    from ..jsonrpc import RequestId
    from ..protocol.state import StateSealer
    from ..server.auth.tokens import AccessToken
    from ..server.context import Context
    from ..server.engine import Engine, Exchange, Peer

log = logging.getLogger("mcpline.middleware")

CallNext = Callable[["MiddlewareContext"], Awaitable[Any]]
"""What a middleware calls to pass the request on: the rest of the chain, then the handler."""
MiddlewareFn = Callable[["MiddlewareContext", CallNext], Awaitable[Any]]
"""A middleware: ``async (mctx, call_next) -> result`` (``None`` for a notification)."""

KIND_HOOKS: dict[str, str] = {
    TOOLS_CALL: "on_call_tool",
    RESOURCES_READ: "on_read_resource",
    PROMPTS_GET: "on_get_prompt",
    TOOLS_LIST: "on_list_tools",
    RESOURCES_LIST: "on_list_resources",
    RESOURCES_TEMPLATES_LIST: "on_list_resource_templates",
    PROMPTS_LIST: "on_list_prompts",
}
"""The `Middleware` hook called for each method that has one of its own."""


class MiddlewareContext:
    """One request or notification as a middleware sees it."""

    __slots__ = (
        "method",
        "params",
        "type",
        "context",
        "principal",
        "request_id",
        "era",
        "peer",
        "started",
        "_state",
        "task",
        "retry",
    )

    def __init__(
        self,
        method: str,
        params: dict[str, Any],
        type: Literal["request", "notification"],
        *,
        context: Context | None = None,
        principal: Any = None,
        request_id: RequestId | None = None,
        era: str | None = None,
        peer: str = "",
        task: RequestId | None = None,
        retry: bool = False,
    ) -> None:
        self.method = method
        """The JSON-RPC method."""
        self.params = params
        """The request's params (``{}`` when it had none); read them, do not change them."""
        self.type = type
        """``"request"`` or ``"notification"``."""
        self.context = context
        """The handler's `mcpline.Context`; ``None`` for a notification and for a request
        refused before a handler was chosen (unknown method, bad ``_meta``)."""
        self.principal = principal
        """Who sent it, as the transport's authentication said (``None`` without one)."""
        self.request_id = request_id
        self.era = era
        """``"modern"`` (2026-07-28) or ``"legacy"`` (an initialize session); ``None`` for a
        notification and for a request refused before its era was known."""
        self.peer = peer
        """The name of the connection it came on (for log lines)."""
        self.started = time.monotonic()
        """When the chain started on it (`time.monotonic`)."""
        self._state: dict[str, Any] | None = None
        self.task = task
        """The task id when this is a task's tool call running in the background (the
        ``tools/call`` that created the task went through the chain already)."""
        self.retry = retry
        """Whether this is a later round of a modern MRTR request whose sealed
        ``requestState`` verified and says the chain ran for its first round: only the
        middlewares that run every round (`Middleware.every_round`) see one."""

    @property
    def state(self) -> dict[str, Any]:
        """Scratch space the middlewares of one request share."""
        if self._state is None:
            self._state = {}
        return self._state

    @property
    def name(self) -> str | None:
        """The tool or prompt named (``tools/call``, ``prompts/get``), else ``None``."""
        name = self.params.get("name")
        return name if isinstance(name, str) else None

    @property
    def uri(self) -> str | None:
        """The resource URI of ``resources/read``, else ``None``."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None

    @property
    def access_token(self) -> AccessToken | None:
        """The verified OAuth access token (`mcpline.Context.access_token`); ``None`` without
        one."""
        if self.principal is None:
            return None
        from ..server.auth.tokens import access_token_of

        return access_token_of(self.principal)

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The HTTP request's headers (`mcpline.Context.headers`); ``None`` elsewhere."""
        return None if self.context is None else self.context.headers

    def elapsed_ms(self) -> float:
        """Milliseconds since `started`."""
        return (time.monotonic() - self.started) * 1000


class Middleware:
    """A middleware with a hook per kind, called from the most general to the most specific:
    `on_message` (everything), then `on_request` or `on_notification`, then the method's own
    (`on_call_tool`, `on_read_resource`, `on_get_prompt`, `on_list_tools`,
    `on_list_resources`, `on_list_resource_templates`, `on_list_prompts`). Override the
    ones you need; each passes on by default. Only overridden hooks are called."""

    every_round: bool = False
    """Whether this middleware also runs on the later rounds of a modern MRTR request
    (``mctx.retry`` true); by default it runs once per request, on its first round."""

    async def on_message(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_notification(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_call_tool(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_read_resource(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_get_prompt(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_list_tools(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_list_resources(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_list_resource_templates(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    async def on_list_prompts(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)

    def hooks(self, method: str, kind: str) -> list[MiddlewareFn]:
        """The overridden hooks that apply to ``method`` (of ``kind``), outermost first."""
        names = ["on_message", "on_request" if kind == "request" else "on_notification"]
        own = KIND_HOOKS.get(method)
        if own is not None and kind == "request":
            names.append(own)
        cls = type(self)
        return [
            getattr(self, name)
            for name in names
            if getattr(cls, name) is not getattr(Middleware, name)
        ]

    async def __call__(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        """Run this middleware's hooks for ``mctx`` (what a `Chain` does for it)."""
        return await _through(self.hooks(mctx.method, mctx.type), mctx, call_next)


F = TypeVar("F", bound=Callable[..., Any])


def every_round(fn: F) -> F:
    """Mark a function middleware to run on every round of a modern MRTR request, not only
    on its first (what `Middleware.every_round` says for a class)."""
    setattr(fn, "every_round", True)  # noqa: B010 (a function has no declared attribute)
    return fn


def runs_every_round(item: Any) -> bool:
    """Whether the middleware ``item`` asked to run on every MRTR round."""
    return getattr(item, "every_round", False) is True


def _link(fn: MiddlewareFn, after: CallNext) -> CallNext:
    def call_next(mctx: MiddlewareContext) -> Awaitable[Any]:
        return fn(mctx, after)

    return call_next


def _through(plan: list[MiddlewareFn], mctx: MiddlewareContext, last: CallNext) -> Awaitable[Any]:
    after = last
    for fn in reversed(plan):
        after = _link(fn, after)
    return after(mctx)


class _Handler:
    """The end of the chain: the request's own handler, run at most once."""

    __slots__ = ("awaitable", "used")

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable
        self.used = False

    def __call__(self, mctx: MiddlewareContext) -> Awaitable[Any]:
        if self.used:
            raise RuntimeError(f"call_next was called twice for one {mctx.method} request")
        self.used = True
        return self.awaitable

    def discard(self) -> None:
        """A middleware answered without the handler: close it unrun."""
        if not self.used and inspect.iscoroutine(self.awaitable):
            self.awaitable.close()


def _shaped(result: dict[str, Any], era: str | None) -> dict[str, Any]:
    """A middleware's own answer in its era's shape: a legacy result has no modern fields,
    a modern one has a ``resultType``."""
    if era == "legacy":
        from ..server.legacy import legacy_result

        return legacy_result(result)
    if "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result


def check(fn: Any) -> MiddlewareFn:
    """``fn`` if it can be a middleware (a `Middleware` or an async callable of two
    arguments); `TypeError` otherwise."""
    if isinstance(fn, Middleware):
        return fn
    target: Any
    if not callable(fn):
        target = None
    elif inspect.isfunction(fn) or inspect.ismethod(fn):
        target = fn
    else:
        target = type(fn).__call__
    if target is None or not inspect.iscoroutinefunction(target):
        raise TypeError(
            f"a middleware is a Middleware or an async callable (mctx, call_next), not {fn!r}"
        )
    checked: MiddlewareFn = fn
    return checked


class Chain:
    """The ordered middlewares of one server, first added outermost.

    ``max_pending_notifications`` bounds the notifications waiting on the chain at once;
    past it a notification is handled without the chain (logged), never queued without end.
    ``sealer`` is the server's `StateSealer`: with it a later MRTR round whose sealed state
    verifies skips the middlewares that run once per request (see the module).
    """

    def __init__(
        self,
        max_pending_notifications: int = DEFAULT_MAX_PENDING_NOTIFICATIONS,
        sealer: StateSealer | None = None,
    ):
        if max_pending_notifications < 1:
            raise ValueError("max_pending_notifications must be positive")
        self.items: list[MiddlewareFn] = []
        self.max_pending_notifications = max_pending_notifications
        self.sealer = sealer
        self._plans: dict[tuple[str, str, bool], list[MiddlewareFn]] = {}
        self._notes: set[asyncio.Task[None]] = set()
        self._bypassed = 0

    def add(self, middleware: Any, *, outermost: bool = False) -> None:
        """Append ``middleware`` (innermost so far), or put it before all (``outermost``)."""
        if outermost:
            self.items.insert(0, check(middleware))
        else:
            self.items.append(check(middleware))
        self._plans.clear()

    def plan(self, method: str, kind: str, later: bool = False) -> list[MiddlewareFn]:
        """The callables run for ``method``: each `Middleware`'s overridden hooks in turn
        (on a ``later`` MRTR round only those of the middlewares that run every round)."""
        key = (kind, method if method in KIND_HOOKS else "", later)
        found = self._plans.get(key)
        if found is None:
            found = []
            for item in self.items:
                if later and not runs_every_round(item):
                    continue
                if isinstance(item, Middleware):
                    found += item.hooks(method, kind)
                else:
                    found.append(item)
            self._plans[key] = found
        return found

    def later_round(self, ctx: Context, params: Mapping[str, Any], principal: Any) -> bool:
        """Whether this modern MRTR request is a later round of one the chain already ran
        for: its ``requestState`` opens for this principal (then the handler takes it as
        opened) and says the chain ran, and states are single-use (a reusable one could
        skip the chain again and again). Anything else is a first round; a state that does
        not open is refused by the handler as usual."""
        sealer = self.sealer
        if sealer is None:
            return False
        from ..errors import StateError
        from ..server.owners import owner_key

        owner = owner_key(principal)
        try:
            state, asked = sealer.open(params["requestState"], ctx.method, params, owner)
        except StateError:
            return False
        ctx.take_state(state, asked)
        return sealer.ledger is not None and ctx.chain_ran

    # --- what the engine asks -------------------------------------------------------------

    async def request(
        self,
        exchange: Exchange,
        ctx: Context | None,
        awaitable: Awaitable[dict[str, Any]],
        *,
        task: RequestId | None = None,
    ) -> dict[str, Any]:
        """The result of ``exchange``'s request: ``awaitable`` (its handler) run through the
        chain. ``ctx`` is None when the request was refused before a handler was chosen
        (then ``awaitable`` raises that refusal); ``task`` is the task id of a task's run."""
        req = exchange.request
        binding = exchange.binding
        params = req.params if type(req.params) is dict else {}
        era = None if ctx is None else ("legacy" if ctx.legacy else "modern")
        principal = None if binding is None else binding.principal
        later = False
        if era == "modern" and task is None and req.method in MRTR_METHODS:
            assert ctx is not None
            if "requestState" in params:
                later = self.later_round(ctx, params, principal)
            if not later:
                ctx.note_chain()
        mctx = MiddlewareContext(
            req.method,
            params,
            "request",
            context=ctx,
            principal=principal,
            request_id=req.id,
            era=era,
            peer=exchange.peer.name,
            task=task,
            retry=later,
        )
        handler = _Handler(awaitable)
        try:
            result = await _through(self.plan(req.method, "request", later), mctx, handler)
        finally:
            handler.discard()
        if type(result) is not dict:
            raise TypeError(
                f"the middleware chain answered {req.method} with {type(result).__name__}, "
                "not a result object"
            )
        if not handler.used:
            return _shaped(result, era)
        return result

    def notification(
        self, peer: Peer, note: Notification, deliver: Callable[[Peer, Notification], None]
    ) -> None:
        """Run ``note`` through the chain in a task of ``peer``'s loop, ending in
        ``deliver(peer, note)``."""
        if len(self._notes) >= self.max_pending_notifications:
            self._bypassed += 1
            if self._bypassed == 1 or self._bypassed % 1000 == 0:
                log.warning(
                    "%d notifications wait on the middleware chain: %s handled without it "
                    "(%d so far)",
                    self.max_pending_notifications,
                    note.method,
                    self._bypassed,
                )
            deliver(peer, note)
            return
        params = note.params if type(note.params) is dict else {}
        mctx = MiddlewareContext(note.method, params, "notification", peer=peer.name)

        async def last(_: MiddlewareContext) -> None:
            deliver(peer, note)

        async def run() -> None:
            try:
                await _through(self.plan(note.method, "notification"), mctx, last)
            except Exception:
                log.exception("the middleware chain failed on notification %s", note.method)

        task = peer.loop.create_task(run())
        self._notes.add(task)
        task.add_done_callback(self._notes.discard)


def chain_of(
    engine: Engine,
    sealer: StateSealer | None = None,
    max_pending_notifications: int | None = None,
) -> Chain:
    """``engine``'s middleware chain, made empty on first use; the server's ``sealer`` and
    ``max_pending_notifications`` are given to it when set."""
    chain = engine.middleware
    if chain is None:
        chain = engine.middleware = Chain()
    if not isinstance(chain, Chain):
        raise TypeError(f"the engine's middleware is not a Chain: {chain!r}")
    if sealer is not None:
        chain.sealer = sealer
    if max_pending_notifications is not None:
        if max_pending_notifications < 1:
            raise ValueError("max_pending_notifications must be positive")
        chain.max_pending_notifications = max_pending_notifications
    return chain


__all__ = [
    "CallNext",
    "Chain",
    "chain_of",
    "DEFAULT_MAX_PENDING_NOTIFICATIONS",
    "every_round",
    "KIND_HOOKS",
    "Middleware",
    "MiddlewareContext",
    "MiddlewareFn",
    "runs_every_round",
]
