"""`FixedDelayTimers` and the body deadline built on it (`respond.read_body`), on a real loop."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import Any

import pytest

from mcpline.transports.http import respond
from mcpline.transports.http.admission import BodyBudget
from mcpline.transports.http.timers import FixedDelayTimers

DELAY = 0.05


def test_timers_run_in_start_order_no_sooner_than_their_delay() -> None:
    async def main() -> tuple[list[str], list[float], list[float], int]:
        loop = asyncio.get_running_loop()
        timers = FixedDelayTimers(DELAY)
        ran: list[str] = []
        at: list[float] = []
        started: list[float] = []

        def runs(name: str) -> Callable[[], None]:
            def run() -> None:
                ran.append(name)
                at.append(loop.time())

            return run

        for name in ("a", "b"):
            started.append(loop.time())
            timers.start(runs(name))
            await asyncio.sleep(DELAY / 2)
        while len(ran) < 2:
            await asyncio.sleep(0.01)
        return ran, started, at, len(timers.pending)

    ran, started, at, pending = asyncio.run(main())
    assert ran == ["a", "b"]
    assert all(done >= start + DELAY - 0.001 for start, done in zip(started, at, strict=True))
    assert pending == 0


def test_a_cancelled_timer_never_runs_and_cancel_tells_whether_it_had_run() -> None:
    async def main() -> tuple[list[str], bool, bool, bool]:
        timers = FixedDelayTimers(DELAY)
        ran: list[str] = []
        first = timers.start(lambda: ran.append("first"))
        second = timers.start(lambda: ran.append("second"))
        cancelled = timers.cancel(first)
        while not ran:
            await asyncio.sleep(0.01)
        return ran, cancelled, timers.cancel(first), timers.cancel(second)

    ran, cancelled, again, after_run = asyncio.run(main())
    assert ran == ["second"]
    assert cancelled is True
    assert again is False and after_run is False


def test_a_failing_callback_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def boom() -> None:
        raise RuntimeError("boom")

    async def main() -> list[int]:
        timers = FixedDelayTimers(DELAY)
        ran: list[int] = []
        timers.start(boom)
        timers.start(lambda: ran.append(1))
        while not ran:
            await asyncio.sleep(0.01)
        return ran

    with caplog.at_level(logging.ERROR, "mcpline.server"):
        assert asyncio.run(main()) == [1]
    assert "a timer's callback failed" in caplog.text


def test_timers_follow_the_app_to_a_new_loop() -> None:
    timers = FixedDelayTimers(DELAY)

    async def once(leave_one: bool) -> bool:
        done = asyncio.Event()
        timers.start(done.set)
        await asyncio.wait_for(done.wait(), 30)
        if leave_one:
            timers.start(lambda: None)  # still pending when this loop ends
        return True

    assert asyncio.run(once(leave_one=True))
    assert asyncio.run(once(leave_one=False))


def test_a_delay_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        FixedDelayTimers(0)


class Trickle:
    """An ASGI ``receive`` whose body never completes: one chunk, then silence."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            return {"type": "http.request", "body": b"{", "more_body": True}
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


def test_a_body_that_does_not_come_in_time_is_a_body_timeout() -> None:
    async def main() -> None:
        hold = BodyBudget(1024).hold()
        await respond.read_body(Trickle(), 1024, hold, FixedDelayTimers(DELAY))

    with pytest.raises(respond.BodyTimeout):
        asyncio.run(main())


def test_a_body_that_comes_whole_leaves_no_timer_behind() -> None:
    async def main() -> tuple[bytes, int]:
        async def whole() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        timers = FixedDelayTimers(DELAY)
        data = await respond.read_body(whole, 1024, BodyBudget(1024).hold(), timers)
        return data, len(timers.pending)

    assert asyncio.run(main()) == (b"{}", 0)


def test_cancelling_the_reader_is_a_cancellation_not_a_timeout() -> None:
    async def main() -> str:
        timers = FixedDelayTimers(3600)
        reader = asyncio.ensure_future(
            respond.read_body(Trickle(), 1024, BodyBudget(1024).hold(), timers)
        )
        await asyncio.sleep(0.01)
        reader.cancel()
        try:
            await reader
        except asyncio.CancelledError:
            return f"cancelled, {len(timers.pending)} pending"
        except respond.BodyTimeout:
            return "timeout"
        return "read"

    assert asyncio.run(main()) == "cancelled, 0 pending"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.uncancel is 3.11+")
def test_a_cancellation_that_meets_the_deadline_is_still_a_cancellation() -> None:
    async def main() -> str:
        timers = FixedDelayTimers(DELAY)
        reader = asyncio.ensure_future(
            respond.read_body(Trickle(), 1024, BodyBudget(1024).hold(), timers)
        )
        while not timers.pending:
            await asyncio.sleep(0)
        reader.cancel()  # the request's own cancellation, before the deadline…
        (key,) = timers.pending
        _, expire = timers.pending.pop(key)
        expire()  # …and the deadline, in the same loop turn
        try:
            await reader
        except asyncio.CancelledError:
            return "cancelled"
        except respond.BodyTimeout:
            return "timeout"
        return "read"

    assert asyncio.run(main()) == "cancelled"


class Late:
    """An ASGI ``receive`` whose whole body comes once ``arrive`` is set (first call waits)."""

    def __init__(self) -> None:
        self.arrive = asyncio.Event()

    async def __call__(self) -> dict[str, Any]:
        await self.arrive.wait()
        return {"type": "http.request", "body": b"[1]", "more_body": False}


def test_a_body_still_on_its_way_is_read_under_the_deadline() -> None:
    async def main() -> tuple[bytes, int, int]:
        timers = FixedDelayTimers(3600)
        late = Late()
        reader = asyncio.ensure_future(
            respond.read_body(late, 1024, BodyBudget(1024).hold(), timers)
        )
        while not timers.pending:  # the first receive waits: the deadline is armed
            await asyncio.sleep(0)
        armed = len(timers.pending)
        late.arrive.set()
        data = await asyncio.wait_for(reader, 10)
        return data, armed, len(timers.pending)

    assert asyncio.run(main()) == (b"[1]", 1, 0)


def test_a_body_that_never_starts_is_a_body_timeout() -> None:
    async def main() -> None:
        await respond.read_body(Late(), 1024, BodyBudget(1024).hold(), FixedDelayTimers(DELAY))

    with pytest.raises(respond.BodyTimeout):
        asyncio.run(main())


class Counted(FixedDelayTimers):
    """Timers that count how many were started."""

    def __init__(self, delay: float) -> None:
        super().__init__(delay)
        self.started = 0

    def start(self, callback: Callable[[], object]) -> int:
        self.started += 1
        return super().start(callback)


def test_a_disconnection_before_the_body_is_reported_at_once() -> None:
    timers = Counted(3600)

    async def main() -> None:
        async def gone() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        await respond.read_body(gone, 1024, BodyBudget(1024).hold(), timers)

    with pytest.raises(respond.Disconnected):
        asyncio.run(main())
    assert timers.started == 0 and not timers.pending  # no deadline was armed for it
