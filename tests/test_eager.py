"""`mcpline.eager`: an awaitable's first step run by hand, the rest resumed in a task."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from mcpline.eager import Waiting, first_step, resume


async def at_once(value: int) -> int:
    return value * 2


async def after(event: asyncio.Event, value: int) -> int:
    await event.wait()
    return value + 1


async def fails_at_once() -> int:
    raise ValueError("no")


def test_an_awaitable_that_does_not_wait_gives_its_result() -> None:
    assert first_step(at_once(21)) == 42


def test_an_awaitable_that_raises_at_once_raises_from_the_first_step() -> None:
    with pytest.raises(ValueError, match="no"):
        first_step(fails_at_once())


def test_one_that_waits_is_resumed_in_a_task_to_its_result() -> None:
    async def main() -> tuple[bool, int]:
        event = asyncio.Event()
        got = first_step(after(event, 1))
        assert isinstance(got, Waiting)
        task = asyncio.ensure_future(resume(got.steps, got.yielded))
        await asyncio.sleep(0)
        waiting = not task.done()
        event.set()
        return waiting, await asyncio.wait_for(task, 10)

    assert asyncio.run(main()) == (True, 2)


def test_a_cancellation_reaches_the_resumed_awaitable() -> None:
    seen: list[str] = []

    async def guarded(event: asyncio.Event) -> int:
        try:
            await event.wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return 0

    async def main() -> Any:
        got = first_step(guarded(asyncio.Event()))
        assert isinstance(got, Waiting)
        task = asyncio.ensure_future(resume(got.steps, got.yielded))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["cancelled"]


def test_a_future_is_stepped_too() -> None:
    async def main() -> int:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        got = first_step(future)
        assert isinstance(got, Waiting)
        task = asyncio.ensure_future(resume(got.steps, got.yielded))
        future.set_result(7)
        return await asyncio.wait_for(task, 10)

    assert asyncio.run(main()) == 7


VAR: contextvars.ContextVar[int] = contextvars.ContextVar("var", default=0)


def test_steps_run_in_the_context_given() -> None:
    async def sets(event: asyncio.Event) -> int:
        VAR.set(1)
        await event.wait()
        VAR.set(VAR.get() + 1)
        return VAR.get()

    async def main() -> tuple[int, int, int]:
        event = asyncio.Event()
        context = contextvars.copy_context()
        got = first_step(sets(event), context)
        assert isinstance(got, Waiting)
        task = asyncio.ensure_future(resume(got.steps, got.yielded, context))
        await asyncio.sleep(0)
        event.set()
        result = await asyncio.wait_for(task, 10)
        return result, VAR.get(), context[VAR]

    assert asyncio.run(main()) == (2, 0, 2)
