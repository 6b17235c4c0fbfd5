"""Awaitables run a first step by hand: most finish there, and skip what waiting would cost.

`first_step` runs an awaitable up to where it first waits; `resume` goes on with one that did,
inside the awaiting task, as ``await`` would have. The engine runs a request's first step
before giving it a task (`mcpline.server.engine.Engine.start`); the HTTP transport reads a
body that has already arrived before arming its deadline, and runs a POST's first step before
it registers the request and arms its watch timer (`mcpline.transports.http.modern.serve`).
"""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable, Generator
from contextvars import Context
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Steps(Protocol):
    """What an awaitable's ``__await__`` (or a coroutine) is driven with."""

    def send(self, value: Any, /) -> Any: ...

    def throw(self, exc: BaseException, /) -> Any: ...

    def close(self) -> None: ...


class Waiting:
    """An awaitable that stopped at its first wait: its ``steps`` and what it yielded."""

    __slots__ = ("steps", "yielded")

    def __init__(self, steps: Steps, yielded: Any) -> None:
        self.steps = steps
        self.yielded = yielded


def first_step(awaitable: Awaitable[T], context: Context | None = None) -> T | Waiting:
    """Run ``awaitable`` up to where it first waits (in ``context``, if given): its result
    when it finished there (its exception when it raised), else a `Waiting` to `resume`
    inside a task."""
    steps = awaitable.__await__()
    try:
        yielded = steps.send(None) if context is None else context.run(steps.send, None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    return Waiting(steps, yielded)


@types.coroutine
def resume(steps: Steps, yielded: Any, context: Context | None = None) -> Generator[Any, Any, Any]:
    """Go on with ``steps``, which already ran up to yielding ``yielded``, as ``yield from``
    would: what a task sends or throws in goes to ``steps`` (each step run in ``context``,
    if given: the awaitable keeps its context variables to itself), and its result is the
    result."""
    while True:
        step: Callable[[Any], Any]
        given: Any
        try:
            sent = yield yielded
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:
            step, given = steps.throw, exc
        else:
            step, given = steps.send, sent
        # What was yielded (a future that failed, say) and what it gave must not stay in
        # this frame, which the traceback of an exception passing through keeps: a cycle.
        yielded = sent = None
        try:
            yielded = step(given) if context is None else context.run(step, given)
        except StopIteration as done:
            return done.value
        finally:
            given = None


__all__ = ["Steps", "Waiting", "first_step", "resume"]
