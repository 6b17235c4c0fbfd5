"""The one inbound engine, driven with bytes and no event loop (both peers use it)."""

from __future__ import annotations

import asyncio
import json

import pytest

from mcpline.inbound import Inbound, Invalid, Notification, Oversized, Request, Response
from mcpline.jsonrpc import MISSING
from mcpline.wire import PREFIX_KEEP, SUFFIX_KEEP


def line(obj: object) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def test_constructed_and_fed_without_an_event_loop() -> None:
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()
    inbound = Inbound()
    events = inbound.feed(
        line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + line({"jsonrpc": "2.0", "id": 7, "result": {}})
        + b"not json\n"
    )
    assert [type(e) for e in events] == [Request, Notification, Response, Invalid]
    first = events[0]
    assert isinstance(first, Request)
    assert first == Request(1, "tools/list", first.params)
    bad = events[3]
    assert isinstance(bad, Invalid) and bad.line == b"not json"
    assert bad.reply is not None and bad.reply["error"]["code"] == -32700


def test_messages_split_across_chunks_come_out_once_in_order() -> None:
    stream = b"".join(line({"jsonrpc": "2.0", "id": i, "method": "m"}) for i in range(20))
    inbound = Inbound()
    events = [e for i in range(len(stream)) for e in inbound.feed(stream[i : i + 1])]
    assert [e.id for e in events if isinstance(e, Request)] == list(range(20))
    assert inbound.eof() == []


def test_a_final_unterminated_line_counts_at_eof() -> None:
    inbound = Inbound()
    assert inbound.feed(b'{"jsonrpc":"2.0","method":"x"}') == []
    assert inbound.eof() == [Notification("x", MISSING)]


def test_an_oversized_line_is_reported_when_it_crosses_the_limit_with_its_id() -> None:
    inbound = Inbound(100)
    head = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":"'
    first = inbound.feed(head + b"a" * 200)
    assert first == [Oversized("big", True, True, len(head) + 200, 100, False)]
    assert inbound.feed(b"a" * 1_000_000) == []  # dropped as it arrives, reported once
    assert inbound.buffered <= PREFIX_KEEP + SUFFIX_KEEP
    # the end of that line adds nothing: it was reported with its id already
    assert inbound.feed(b'"}}\n' + line({"jsonrpc": "2.0", "id": 2, "method": "m"})) == [
        Request(2, "m", MISSING)
    ]


def test_an_id_written_last_is_reported_once_more_when_the_line_ends() -> None:
    inbound = Inbound(100)
    first = inbound.feed(b'{"jsonrpc":"2.0","method":"tools/call","params":{"x":"' + b"a" * 200)
    assert len(first) == 1
    head_only = first[0]
    assert isinstance(head_only, Oversized)
    assert head_only.id is None and not head_only.complete
    end = inbound.feed(b'"},"id":41}\n')
    assert len(end) == 1
    last = end[0]
    assert isinstance(last, Oversized)
    assert (last.id, last.complete, last.followup) == (41, True, True)


def test_an_oversized_line_that_arrives_whole_is_reported_once() -> None:
    inbound = Inbound(50)
    events = inbound.feed(b'{"jsonrpc":"2.0","method":"m","params":"' + b"x" * 80 + b'","id":3}\n')
    assert len(events) == 1 and isinstance(events[0], Oversized)
    assert events == [Oversized(3, True, True, events[0].size, 50, True, False)]


def test_on_line_sees_each_complete_line_before_it_is_parsed() -> None:
    seen: list[bytes] = []
    inbound = Inbound(on_line=seen.append)
    inbound.feed(b'{"jsonrpc":"2.0","method":"a"}\r\n\n  \n[1]\n')
    assert seen == [b'{"jsonrpc":"2.0","method":"a"}', b"[1]"]
