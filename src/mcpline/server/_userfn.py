"""A user's function behind a tool, prompt, resource or completer, and the definition keys
those four share.

`UserFunction` knows where the function takes its `Context` and how to call it: an
``async def`` on the event loop; a plain ``def`` on a worker thread until it has shown itself
short, then on the loop (see `UserFunction`); an awaitable that a plain function returns is
awaited too.
"""

from __future__ import annotations

import gc
import inspect
import logging
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from time import perf_counter, thread_time
from typing import Any

from .context import Context
from .depends import Dependency, dependencies
from .mrtr import InputRequired

RunSync = Callable[[Callable[[], Any]], Awaitable[Any]]
"""Runs a blocking call on a worker thread (`Server.run_sync`)."""

_PLAIN_VALUES = frozenset({str, dict, list, int, float, bool, type(None)})
"""Return types that are never awaitable (checked before the slower `inspect.isawaitable`)."""

INLINE_BUDGET = 0.0005
"""Seconds a plain function may take per call and still run on the event loop."""
PROVE_CALLS = 32
"""Calls in a row on a worker thread, each within `INLINE_BUDGET`, before a plain function
runs on the event loop."""

log = logging.getLogger("mcpline.server")

if sys.platform == "linux":
    import resource

    COUNTS_WAITS = True

    def _cpu_and_waits() -> tuple[float, int]:
        """This thread's CPU time and voluntary context switches so far (one system call)."""
        used = resource.getrusage(resource.RUSAGE_THREAD)
        return used.ru_utime + used.ru_stime, used.ru_nvcsw

else:  # no per-thread count of context switches: the wall time alone judges
    COUNTS_WAITS = False

    def _cpu_and_waits() -> tuple[float, int]:
        """This thread's CPU time; its context switches are unknown here (0)."""
        return thread_time(), 0


class Collector:
    """Time the cyclic garbage collector took, which a call that happens to trigger it is
    not to blame for. Timed (`gc.callbacks`) once a call's CPU time first overran: no
    server pays for it before."""

    total = 0.0
    started = 0.0
    watching = False

    @classmethod
    def watch(cls) -> None:
        cls.watching = True
        if cls.note not in gc.callbacks:
            gc.callbacks.append(cls.note)

    @classmethod
    def note(cls, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            cls.started = perf_counter()
        else:
            cls.total += perf_counter() - cls.started


Usage = tuple[float, float, float, int]


def thread_usage() -> Usage:
    """Where this thread stands: wall time, its CPU time, the collector's time, and its
    voluntary context switches so far (0 where unknown)."""
    cpu, waits = _cpu_and_waits()
    return perf_counter(), cpu, Collector.total, waits


def overran(before: Usage) -> bool:
    """Whether a call that began at ``before`` (`thread_usage`) went past `INLINE_BUDGET` of
    its own doing: it waited (a voluntary context switch: sleep, I/O, a lock) or computed
    that long. A thread only kept off the CPU meanwhile (a busy machine), or collecting
    garbage, did not; the first call whose CPU time overran is given the benefit of the
    doubt (the collector may have taken it), and collections are timed from then on."""
    wall, cpu, collecting, waits = before
    collected = Collector.total - collecting
    if perf_counter() - wall - collected <= INLINE_BUDGET:
        return False
    cpu_now, waits_now = _cpu_and_waits()
    if not COUNTS_WAITS or waits_now > waits:
        return True
    if cpu_now - cpu - collected <= INLINE_BUDGET:
        return False
    if Collector.watching:
        return True
    Collector.watch()
    return False


def _carried(value: Any, ctx: Context) -> Any:
    """``value``; an `InputRequired` a function returned leaves with the context's kept
    answers and `Context.remember` values added to its state (`Context.carry`)."""
    if type(value) not in _PLAIN_VALUES and isinstance(value, InputRequired):
        value.state = ctx.carry(value.state)
    return value


def unsettled(value: Any) -> bool:
    """Whether what a function returned is an awaitable, still to `UserFunction.settle`."""
    return type(value) not in _PLAIN_VALUES and inspect.isawaitable(value)


def wants_context(hint: Any) -> bool:
    """Whether an annotation asks for the request's `Context` (``Context``,
    ``Context[MyState]``, or either ``| None``)."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        hint = typing.get_args(hint)[0]
        origin = typing.get_origin(hint)
    if origin is typing.Union or isinstance(hint, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) != 1:
            return False
        hint = args[0]
        origin = typing.get_origin(hint)
    if origin is not None:
        hint = origin
    return isinstance(hint, type) and issubclass(hint, Context)


def find_context_param(fn: Callable[..., Any]) -> str | None:
    """The parameter of ``fn`` annotated with `Context`, if any."""
    hints = typing.get_type_hints(fn, include_extras=True)
    for name in inspect.signature(fn).parameters:
        if wants_context(hints.get(name)):
            return name
    return None


class UserFunction:
    """How to call one user function.

    A plain ``def`` (that takes neither the `Context` nor a `mcpline.Depends`) is timed
    while it runs on a worker thread: after `PROVE_CALLS` calls in a row within
    `INLINE_BUDGET` each, it runs inline on the event loop, saving two thread switches per
    call. An inline call that overruns the budget (`overran`: by waiting or computing, not by
    being preempted) sends the function back to the worker threads for good, so a function
    that blocks stalls the loop at most once. ``inline`` pins the choice: True runs every
    call on the loop, False every call on a worker thread.
    """

    __slots__ = ("context_param", "depends", "fn", "inline", "is_async", "pinned", "_streak")

    def __init__(
        self,
        fn: Callable[..., Any],
        context_param: str | None,
        is_async: bool,
        depends: Mapping[str, Dependency],
        inline: bool | None = None,
    ) -> None:
        self.fn = fn
        self.context_param = context_param
        self.is_async = is_async
        self.depends = depends
        """Parameters filled by `mcpline.Depends` before each run."""
        self.pinned = inline is not None or context_param is not None or bool(depends)
        """Whether the thread choice is fixed (given; or a function taking the `Context`, or
        dependencies, which may wait on the loop, always gets a thread)."""
        self.inline = bool(inline) and not is_async
        """Whether calls of a plain function run on the event loop."""
        self._streak = 0

    @classmethod
    def of(
        cls,
        fn: Callable[..., Any],
        context_param: str | None = None,
        *,
        inline: bool | None = None,
    ) -> UserFunction:
        """``context_param`` when the caller already knows it (from a `Signature`), else
        found from the annotations."""
        param = context_param if context_param is not None else find_context_param(fn)
        depends = dependencies(fn, wants_context)
        return cls(fn, param, inspect.iscoroutinefunction(fn), depends, inline)

    @property
    def runs_now(self) -> bool:
        """Whether a call runs to its end where it is made (`call_now`): a plain function
        that runs on the event loop and has no dependencies to resolve first."""
        return self.inline and not self.depends

    def call_now(self, kwargs: dict[str, Any], ctx: Context) -> Any:
        """Call a function that `runs_now` here, on the event loop; what it returned, which
        may be an awaitable still to `settle`."""
        self._give_context(kwargs, ctx)
        try:
            value = self._on_loop(kwargs)
        except InputRequired as ir:
            ir.state = ctx.carry(ir.state)
            raise
        return _carried(value, ctx)

    async def call(self, kwargs: dict[str, Any], ctx: Context, run_sync: RunSync) -> Any:
        """Call with ``kwargs`` (and the context); return what the function returned.

        An `InputRequired` it raises or returns leaves with the context's kept answers and
        `Context.remember` values added to its state (see `Context.carry`)."""
        if self.runs_now:
            value = self.call_now(kwargs, ctx)
        else:
            self._give_context(kwargs, ctx)
            if self.depends:
                for name, dep in self.depends.items():
                    kwargs[name] = await dep.resolve(ctx, run_sync)
            fn = self.fn
            try:
                if self.is_async:
                    value = await fn(**kwargs)
                elif self.inline:
                    value = self._on_loop(kwargs)
                elif self.pinned:
                    value = await run_sync(lambda: fn(**kwargs))
                else:
                    value = await self._timed_on_thread(kwargs, run_sync)
            except InputRequired as ir:
                ir.state = ctx.carry(ir.state)
                raise
            value = _carried(value, ctx)
        return await self.settle(value, ctx) if unsettled(value) else value

    def _give_context(self, kwargs: dict[str, Any], ctx: Context) -> None:
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
            ctx.new_run()

    @staticmethod
    async def settle(pending: Awaitable[Any], ctx: Context) -> Any:
        """Await the awaitable a plain function returned (in a task of the request's own)."""
        await ctx.exchange.own_task()
        try:
            value = await pending
        except InputRequired as ir:
            ir.state = ctx.carry(ir.state)
            raise
        return _carried(value, ctx)

    def _on_loop(self, kwargs: dict[str, Any]) -> Any:
        """Call the plain function here, on the event loop: timed against `INLINE_BUDGET`
        unless its place is pinned."""
        if self.pinned:
            return self.fn(**kwargs)
        before = thread_usage()
        try:
            return self.fn(**kwargs)
        finally:
            if overran(before):
                self.inline = False
                self.pinned = True
                log.info(
                    "%s took %.1f ms on the event loop: it runs on worker threads from now on",
                    getattr(self.fn, "__qualname__", self.fn),
                    (perf_counter() - before[0]) * 1000,
                )

    async def _timed_on_thread(self, kwargs: dict[str, Any], run_sync: RunSync) -> Any:
        fn = self.fn
        short = False  # unless the worker says otherwise

        def timed() -> Any:
            nonlocal short
            before = thread_usage()
            try:
                return fn(**kwargs)
            finally:
                short = not overran(before)

        try:
            return await run_sync(timed)
        finally:
            if not short:
                self._streak = 0
            else:
                self._streak += 1
                if self._streak >= PROVE_CALLS and not self.pinned:
                    self.inline = True


def definition(
    head: dict[str, Any],
    *,
    title: str | None = None,
    description: str | None = None,
    body: dict[str, Any] | None = None,
    annotations: dict[str, Any] | None = None,
    icons: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A listed definition: ``head`` (name or URI), then the optional keys every kind shares
    (``title``, ``description``, its own ``body`` keys, ``annotations``, ``icons``, ``_meta``),
    each only when given."""
    out = dict(head)
    if title:
        out["title"] = title
    if description:
        out["description"] = description
    if body:
        out.update(body)
    if annotations:
        out["annotations"] = dict(annotations)
    if icons:
        out["icons"] = list(icons)
    if meta:
        out["_meta"] = dict(meta)
    return out
