"""Dependency injection in the FastAPI manner: ``def tool(db: DB = Depends(get_db))``.

A parameter whose default is `Depends` is not an argument the client sends (it is left out of
the input schema): before each run of the handler, its dependency is called and the value
passed. A dependency may take the request's `Context` (a parameter annotated ``Context``)
and other dependencies (parameters defaulting to `Depends`), may be ``async def``, and may
be replaced for tests with `override`.

``Depends(fn, once=True)`` runs ``fn`` once per request however often the handler re-runs
after a question (MRTR): its value is kept with `Context.remember` (so it must be JSON data;
a modern client carries it in the sealed ``requestState``). Without ``once`` a dependency
runs before every run of the handler.
"""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import Context

RunSync = Callable[[Callable[[], Any]], Awaitable[Any]]
"""Runs a blocking call on a worker thread (the server's)."""
IsContext = Callable[[Any], bool]
"""Whether an annotation asks for the request's `Context` (`mcpline.server._userfn`'s
``wants_context``, handed in so that this module imports none of the server's)."""

_OVERRIDES: dict[Callable[..., Any], Callable[..., Any]] = {}


class Dependency:
    """A parameter default asking for ``fn``'s value (what `Depends` makes; see the module)."""

    __slots__ = ("fn", "once", "_plan", "_is_context")

    def __init__(self, fn: Callable[..., Any], *, once: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"Depends takes a function, not {fn!r}")
        self.fn = fn
        self.once = once
        self._plan: tuple[str | None, dict[str, Dependency]] | None = None
        self._is_context: IsContext = _no_context

    def __repr__(self) -> str:
        once = ", once=True" if self.once else ""
        return f"Depends({getattr(self.fn, '__qualname__', self.fn)!r}{once})"

    def _parameters(self, fn: Callable[..., Any]) -> tuple[str | None, dict[str, Dependency]]:
        """Where ``fn`` takes the context, and its own dependencies."""
        wants_context = self._is_context
        hints = typing.get_type_hints(fn, include_extras=True)
        ctx_param: str | None = None
        nested: dict[str, Dependency] = {}
        for name, p in inspect.signature(fn).parameters.items():
            if isinstance(p.default, Dependency):
                nested[name] = p.default
            elif wants_context(hints.get(name)):
                ctx_param = name
            elif p.default is inspect.Parameter.empty:
                raise TypeError(
                    f"dependency {fn.__qualname__}: parameter {name!r} is neither a Context "
                    "nor a Depends(...), and has no default"
                )
        return ctx_param, nested

    def check(self, is_context: IsContext) -> None:
        """Work out (once) where ``fn`` takes the context (``is_context`` tells from an
        annotation) and its own dependencies, checking them; `TypeError` for a parameter
        nothing can fill."""
        if self._plan is None:
            self._is_context = is_context
            self._plan = self._parameters(self.fn)
            for dep in self._plan[1].values():
                dep.check(is_context)

    async def resolve(self, ctx: Context, run_sync: RunSync) -> Any:
        """The dependency's value for this run of the handler."""
        fn = _OVERRIDES.get(self.fn, self.fn)
        if self.once:
            key = f"mcpline.depends:{getattr(self.fn, '__module__', '')}." + getattr(
                self.fn, "__qualname__", repr(self.fn)
            )

            async def compute() -> Any:
                return await self._call(fn, ctx, run_sync)

            return await ctx.remember(key, compute)
        return await self._call(fn, ctx, run_sync)

    async def _call(self, fn: Callable[..., Any], ctx: Context, run_sync: RunSync) -> Any:
        if fn is self.fn and self._plan is not None:
            ctx_param, nested = self._plan
        else:
            ctx_param, nested = self._parameters(fn)
        kwargs: dict[str, Any] = {
            name: await dep.resolve(ctx, run_sync) for name, dep in nested.items()
        }
        if ctx_param is not None:
            kwargs[ctx_param] = ctx
        if inspect.iscoroutinefunction(fn):
            return await fn(**kwargs)
        value = await run_sync(lambda: fn(**kwargs))
        if inspect.isawaitable(value):
            value = await value
        return value


def Depends(fn: Callable[..., Any], *, once: bool = False) -> Any:
    """A parameter default asking for ``fn``'s value: ``db: DB = Depends(get_db)``. Typed as
    ``Any``, as FastAPI's is, so that it fits the parameter's own annotation; it is a
    `Dependency`."""
    return Dependency(fn, once=once)


@contextlib.contextmanager
def override(fn: Callable[..., Any], replacement: Callable[..., Any]) -> Iterator[None]:
    """Within the block, every ``Depends(fn)`` calls ``replacement`` instead (for tests;
    process-wide)."""
    before = _OVERRIDES.get(fn)
    _OVERRIDES[fn] = replacement
    try:
        yield
    finally:
        if before is None:
            _OVERRIDES.pop(fn, None)
        else:
            _OVERRIDES[fn] = before


def dependencies(fn: Callable[..., Any], is_context: IsContext) -> dict[str, Dependency]:
    """The parameters of ``fn`` that default to `Depends`, each dependency's own parameters
    checked (`TypeError` for one that is neither a context, a dependency nor defaulted)."""
    found = {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if isinstance(p.default, Dependency)
    }
    for dep in found.values():
        dep.check(is_context)
    return found


def _no_context(hint: Any) -> bool:
    return False


__all__ = ["Dependency", "dependencies", "Depends", "override"]
