"""What one HTTP response still has to write (`sse.Outbox`) and what all of them together
may hold (`sse.OutboundBudget`), alone: issue "safe to expose", M3."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import pytest

from mcpline.server.outbound import Kind
from mcpline.transports.http.sse import DRAINED_WRITE, OutboundBudget, Outbox

T = TypeVar("T")
K = DRAINED_WRITE
"""A queue this long is one its writer is not taking."""


def on_loop(build: Callable[[], T]) -> T:
    """``build()`` with a running loop (an outbox holds an `asyncio.Event`)."""

    async def main() -> T:
        return build()

    return asyncio.run(main())


def outboxes(budget: OutboundBudget, n: int, ended: list[int] | None = None) -> list[Outbox]:
    def make(i: int) -> Outbox:
        return Outbox(1 << 30, lambda: None if ended is None else ended.append(i), budget)

    return on_loop(lambda: [make(i) for i in range(n)])


def test_outboxes_share_the_budget_and_give_it_back() -> None:
    budget = OutboundBudget(100)
    a, b = outboxes(budget, 2)
    assert a.put(b"x" * 40, Kind.STREAM) and b.put(b"y" * 30, Kind.STREAM)
    assert budget.held == 70 and budget.outboxes == {a, b}
    assert [item[0] for item in a.take()] == [b"x" * 40]
    assert budget.held == 70  # taken, not yet written: still held
    a.take()  # the writer came back: the previous batch is written
    assert budget.held == 30
    b.release()
    assert budget.held == 0 and budget.outboxes == {a}
    a.release()
    assert budget.outboxes == set()


def test_the_outbox_with_most_queued_ends_first() -> None:
    budget = OutboundBudget(4 * K)
    stalled, slow, fresh = outboxes(budget, 3)
    assert stalled.put(b"s" * 2 * K, Kind.STREAM) and slow.put(b"w" * K, Kind.STREAM)
    assert fresh.put(b"f" * 2 * K, Kind.STREAM)  # over the budget: the biggest queue goes
    assert stalled.aborted and not slow.aborted
    assert budget.held == 3 * K and fresh.size == 2 * K


def test_a_short_queue_is_not_ended_for_another() -> None:
    budget = OutboundBudget(2 * K)
    ended: list[int] = []
    taking, asking = outboxes(budget, 2, ended)
    assert taking.put(b"t" * (K - 1), Kind.STREAM)
    assert not asking.put(b"a" * 2 * K, Kind.STREAM)  # cannot fit: its own listens end
    assert not taking.aborted and ended == [1]


def test_a_notice_that_cannot_fit_ends_its_own_listens() -> None:
    budget = OutboundBudget(100)
    ended: list[int] = []
    (writing,) = outboxes(budget, 1, ended)
    assert writing.put(b"x" * 90, Kind.STREAM)
    writing.take()  # in flight: nothing queued anywhere to end
    assert not writing.put(b"y" * 20, Kind.STREAM)
    assert ended == [0] and budget.held == 90


def test_a_small_reply_always_fits_and_a_large_one_does_not() -> None:
    budget = OutboundBudget(K)
    stuck, small, large = outboxes(budget, 3)
    assert stuck.put(b"x" * K, Kind.REPLY)
    stuck.take()  # written into a socket nobody reads: held, not queued
    assert small.put(b"{}", Kind.REPLY)  # readers who do not read cannot starve it
    assert budget.held == K + 2
    assert not large.put(b"z" * K, Kind.REPLY)
    assert large.aborted and not small.aborted  # a reply that cannot be sent ends its response


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_outbound_total_bytes"):
        OutboundBudget(0)


def test_a_budget_takes_what_fits_and_nothing_that_does_not() -> None:
    budget = OutboundBudget(100)
    assert budget.take(60) and budget.held == 60
    assert not budget.take(41) and budget.held == 60  # refused whole, nothing held
    assert budget.take(40) and budget.held == 100
    budget.give_back(100)
    assert budget.held == 0
