"""A user's function behind a tool, prompt, resource or completer, and the definition keys
those four share.

`UserFunction` knows where the function takes its `Context` and how to call it: an
``async def`` on the event loop, a plain ``def`` on a worker thread (never on the loop), and
an awaitable that a plain function returns is awaited too.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .context import Context
from .depends import Depends, dependencies
from .mrtr import InputRequired

RunSync = Callable[[Callable[[], Any]], Awaitable[Any]]
"""Runs a blocking call on a worker thread (`Server.run_sync`)."""

_PLAIN_VALUES = frozenset({str, dict, list, int, float, bool, type(None)})
"""Return types that are never awaitable (checked before the slower `inspect.isawaitable`)."""


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


@dataclass(frozen=True)
class UserFunction:
    """How to call one user function."""

    fn: Callable[..., Any]
    context_param: str | None
    is_async: bool
    depends: Mapping[str, Depends]
    """Parameters filled by `mcpline.Depends` before each run."""

    @classmethod
    def of(cls, fn: Callable[..., Any], context_param: str | None = None) -> UserFunction:
        """``context_param`` when the caller already knows it (from a `Signature`), else
        found from the annotations."""
        param = context_param if context_param is not None else find_context_param(fn)
        return cls(fn, param, inspect.iscoroutinefunction(fn), dependencies(fn, wants_context))

    async def call(self, kwargs: dict[str, Any], ctx: Context, run_sync: RunSync) -> Any:
        """Call with ``kwargs`` (and the context); return what the function returned.

        An `InputRequired` it raises or returns leaves with the context's kept answers and
        `Context.remember` values added to its state (see `Context.carry`)."""
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
            ctx.new_run()
        if self.depends:
            for name, dep in self.depends.items():
                kwargs[name] = await dep.resolve(ctx, run_sync)
        fn = self.fn
        try:
            if self.is_async:
                value = await fn(**kwargs)
            else:
                value = await run_sync(lambda: fn(**kwargs))
            if type(value) not in _PLAIN_VALUES:
                if inspect.isawaitable(value):
                    value = await value
                if isinstance(value, InputRequired):
                    value.state = ctx.carry(value.state)
        except InputRequired as ir:
            ir.state = ctx.carry(ir.state)
            raise
        return value


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
