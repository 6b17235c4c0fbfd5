"""The outbound-bound policy, and `Connection` applying it to a transport that holds bytes."""

from __future__ import annotations

import asyncio

import pytest

from mcpline import Server
from mcpline.jsonrpc import notification, result_response
from mcpline.server.connection import Connection
from mcpline.server.outbound import Action, Kind, decide

LIMIT = 1000


@pytest.mark.parametrize(
    ("kind", "buffered", "size", "action"),
    [
        (Kind.STREAM, 900, 100, Action.SEND),  # fits exactly
        (Kind.REPLY, 999, 5000, Action.SEND),  # one reply may cross the limit
        (Kind.REPLY, 1000, 5000, Action.SEND),
        (Kind.REPLY, 1001, 1, Action.DISCONNECT),  # but not two
        (Kind.ADVISORY, 950, 100, Action.DROP),
        (Kind.PEER_REQUEST, 950, 100, Action.REFUSE),
        (Kind.STREAM, 950, 100, Action.END_STREAMS),
        (Kind.SESSION, 950, 100, Action.DISCONNECT),
        (Kind.SESSION, 0, 2000, Action.DISCONNECT),  # too big even for an empty buffer
    ],
)
def test_decide(kind: Kind, buffered: int, size: int, action: Action) -> None:
    assert decide(kind, buffered, size, LIMIT) is action


class Transport:
    """Takes lines and keeps ``held`` bytes of them unwritten, as a stalled pipe does."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.held = 0
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.lines.append(data)
        self.held += len(data)


def connection(transport: Transport) -> Connection:
    server = Server("bound", max_outbound_bytes=LIMIT)
    return Connection(
        server,
        transport.write,
        buffered=lambda: transport.held,
        abort=lambda: setattr(transport, "aborted", True),
    )


def test_replies_cross_the_bound_once_then_the_connection_closes() -> None:
    async def main() -> None:
        t = Transport()
        conn = connection(t)
        big = result_response(1, {"text": "x" * 1500})
        assert conn.send(big)
        assert not conn.closing.is_set()
        assert not conn.send(result_response(2, {}))
        assert t.aborted and conn.closing.is_set() and conn.write_failed
        assert len(t.lines) == 1

    asyncio.run(main())


def test_advisory_notifications_over_the_bound_are_dropped() -> None:
    async def main() -> None:
        t = Transport()
        conn = connection(t)
        note = notification("notifications/progress", {"progressToken": 1, "progress": 1})
        sent = sum(conn.send(note, Kind.ADVISORY) for _ in range(100))
        assert 0 < sent < 100 and conn.dropped == 100 - sent
        assert t.held <= LIMIT and not t.aborted and not conn.closing.is_set()
        assert conn.send(result_response(1, {}))  # the reply still goes out

    asyncio.run(main())


def test_stream_overflow_runs_the_overflow_hooks_once_per_notification() -> None:
    async def main() -> None:
        t = Transport()
        conn = connection(t)
        ended: list[Connection] = []
        conn.overflow_hooks.append(ended.append)
        note = notification("notifications/tools/list_changed", {})
        while conn.send(note, Kind.STREAM):
            pass
        assert ended == [conn] and t.held <= LIMIT and not t.aborted

    asyncio.run(main())
