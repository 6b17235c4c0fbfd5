"""The Session's policy on what a server writes, fed as bytes: no process, no pipe."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mcpline.client.mrtr import InputHandlers, run_rounds
from mcpline.client.session import Session, header_channel
from mcpline.errors import ConnectionLost, ProtocolError, ServerError

LIMIT = 1024


class Wire:
    """A channel that keeps what the session writes."""

    label = "unit"

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any], line: bytes) -> None:
        self.out.append(json.loads(line))

    async def drain(self) -> None:
        pass

    async def aclose(self, within: float | None = None) -> None:
        pass

    def cancelled(self) -> list[Any]:
        return [
            m["params"]["requestId"]
            for m in self.out
            if m.get("method") == "notifications/cancelled"
        ]


class Host:
    def __init__(self) -> None:
        self.notifications: list[tuple[str, Any]] = []

    def on_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))

    async def on_request(self, method: str, params: Any) -> Any:
        await asyncio.sleep(10)
        return {}


def line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def answer(rid: Any, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"ok": True}, **extra}


Test = Callable[[Session, Wire, Host], Awaitable[None]]


def session_test(fn: Test, *, trace: Callable[[str, bytes], None] | None = None) -> None:
    async def main() -> None:
        host = Host()
        session = Session(
            host.on_notification, host.on_request, max_line_bytes=LIMIT, trace=trace, label="unit"
        )
        wire = Wire()
        session.channel = wire
        await fn(session, wire, host)

    asyncio.run(asyncio.wait_for(main(), 10))


async def send(session: Session, method: str = "tools/call", **kw: Any) -> asyncio.Task[Any]:
    """A request in flight (its id is the next counter value, from 1)."""
    task = asyncio.ensure_future(session.request(method, {}, **kw))
    await asyncio.sleep(0)
    return task


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def test_an_answer_resolves_its_request() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1, t2 = await send(s), await send(s)
        s.feed(line(answer(2))[:10])
        s.feed(
            line(answer(2))[10:]
            + line({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "no"}})
        )
        assert await t2 == {"ok": True}
        with pytest.raises(ServerError, match="no"):
            await t1
        assert s.answered

    session_test(body)


def test_an_over_long_answer_fails_its_request_when_it_crosses_the_limit() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1, t2 = await send(s), await send(s)
        head = b'{"jsonrpc":"2.0","id":1,"result":{"text":"'
        s.feed(head + b"x" * LIMIT)  # no newline yet
        await settle()
        assert t1.done() and not t2.done()
        with pytest.raises(ProtocolError, match="line limit"):
            await t1
        assert wire.cancelled() == []  # it was answered: nothing to cancel
        s.feed(b"x" * 10 * LIMIT + b'"}}\n')  # its end: no second verdict
        s.feed(line(answer(2)))
        assert await t2 == {"ok": True}

    session_test(body)


def test_an_over_long_line_that_names_no_id_fails_all_but_listens() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1, t2 = await send(s), await send(s)
        listen = await send(s, "subscriptions/listen", on_notification=lambda m, p: None)
        s.feed(b'{"jsonrpc":"2.0","result":{"text":"' + b"x" * 2 * LIMIT)
        await settle()
        for t in (t1, t2):
            with pytest.raises(ProtocolError, match="line limit"):
                await t
        assert sorted(wire.cancelled()) == [1, 2]
        assert not listen.done()
        t4 = await send(s)
        s.feed(b'"},"id":4}\n')  # the id comes last: the follow-up report is ignored
        await settle()
        assert not t4.done()
        s.feed(line(answer(4)))
        assert await t4 == {"ok": True}
        listen.cancel()

    session_test(body)


def test_an_over_long_line_that_arrives_whole_fails_the_request_its_tail_names() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1, t2 = await send(s), await send(s)
        s.feed(b'{"jsonrpc":"2.0","result":{"text":"' + b"x" * 2 * LIMIT + b'"},"id":2}\n')
        await settle()
        with pytest.raises(ProtocolError, match="line limit"):
            await t2
        assert not t1.done()
        s.feed(line(answer(1)))
        assert await t1 == {"ok": True}

    session_test(body)


def test_an_over_long_late_answer_fails_nothing() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1 = await send(s)
        s.feed(b'{"jsonrpc":"2.0","id":99,"result":"' + b"x" * 2 * LIMIT + b'"}\n')
        await settle()
        assert not t1.done()
        s.feed(line(answer(1)))
        assert await t1 == {"ok": True}

    session_test(body)


def test_an_over_long_notification_fails_nothing(caplog: pytest.LogCaptureFixture) -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1 = await send(s)
        with caplog.at_level(logging.WARNING, logger="mcpline.client"):
            s.feed(b'{"jsonrpc":"2.0","method":"notifications/message","params":"')
            s.feed(b"x" * 2 * LIMIT + b'"}\n')
        await settle()
        assert not t1.done() and host.notifications == []
        assert "notification of at least" in caplog.text
        s.feed(line(answer(1)))
        assert await t1 == {"ok": True}

    session_test(body)


@pytest.mark.parametrize("accept", [True, False])
def test_an_over_long_server_request_gets_a_parse_error_in_a_legacy_session(
    accept: bool,
) -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        s.accept_requests = accept
        t1 = await send(s)
        s.feed(b'{"jsonrpc":"2.0","id":"srv-1","method":"roots/list","params":"')
        s.feed(b"x" * 2 * LIMIT + b'"}\n')
        await settle()
        assert not t1.done()
        replies = [m for m in wire.out if "method" not in m]
        if accept:
            assert replies == [
                {
                    "jsonrpc": "2.0",
                    "id": "srv-1",
                    "error": {"code": -32700, "message": f"Parse error: over {LIMIT} bytes"},
                }
            ]
        else:
            assert replies == []
        t1.cancel()

    session_test(body)


def test_garbage_is_skipped_and_an_unusable_answer_fails_its_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1, t2 = await send(s), await send(s)
        with caplog.at_level(logging.WARNING, logger="mcpline.client"):
            s.feed(b"Traceback (most recent call last):\n[1, 2]\n")
        assert "not a JSON-RPC message" in caplog.text
        s.feed(b'{"jsonrpc":"2.0","id":1,"result":{"text":"\\ud800"}}\n')
        with pytest.raises(ProtocolError, match="could not be used"):
            await t1
        assert wire.cancelled() == []
        s.feed(line(answer(2)))
        assert await t2 == {"ok": True}

    session_test(body)


def test_a_duplicate_server_request_id_is_refused_without_an_id() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        s.accept_requests = True
        req = {"jsonrpc": "2.0", "id": 7, "method": "roots/list", "params": {}}
        s.feed(line(req) + line(req))
        await settle()
        assert wire.out == [
            {
                "jsonrpc": "2.0",
                "error": {
                    "code": -32600,
                    "message": "Invalid Request: a request with id 7 is already in flight",
                },
            }
        ]
        s.connection_lost(ConnectionLost("done"))

    session_test(body)


def test_server_requests_are_ignored_outside_a_legacy_session() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        s.feed(line({"jsonrpc": "2.0", "id": 7, "method": "roots/list"}))
        await settle()
        assert wire.out == []

    session_test(body)


def test_trace_sees_each_received_line() -> None:
    seen: list[tuple[str, bytes]] = []

    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1 = await send(s)
        s.feed(b"noise\n" + line(answer(1)))
        await t1

    session_test(body, trace=lambda d, b: seen.append((d, b)))
    assert [d for d, _ in seen] == ["send", "recv", "recv"]
    assert seen[1][1] == b"noise"


def test_the_end_of_output_fails_what_waits() -> None:
    async def body(s: Session, wire: Wire, host: Host) -> None:
        t1 = await send(s)
        s.feed(line(answer(1))[:-1])  # an unterminated last line still counts
        t2 = await send(s)
        s.eof("gone")
        assert await t1 == {"ok": True}
        with pytest.raises(ConnectionLost, match="gone"):
            await t2
        assert s.closed

    session_test(body)


def test_run_rounds_sends_on_the_session_until_the_input_is_in() -> None:
    """Each round is a new request on the session with the original params, the answers and
    the requestState as received; the progress callback goes with every request."""

    async def body(session: Session, wire: Wire, host: Host) -> None:
        handlers = InputHandlers(elicit=lambda params: {"action": "accept", "content": {}})
        rounds = asyncio.ensure_future(
            run_rounds(session, "tools/call", {"name": "t"}, handlers, 3, timeout=5.0)
        )
        await asyncio.sleep(0)
        first = wire.out[-1]
        assert first["params"] == {"name": "t"}
        ask = {"ask": {"method": "elicitation/create", "params": {"message": "?"}}}
        needs = {"resultType": "input_required", "inputRequests": ask, "requestState": "s1"}
        session.feed(line({"jsonrpc": "2.0", "id": first["id"], "result": needs}))
        for _ in range(5):
            await asyncio.sleep(0)
        second = wire.out[-1]
        assert second["id"] != first["id"] and second["params"]["requestState"] == "s1"
        assert second["params"]["inputResponses"]["ask"]["action"] == "accept"
        assert second["params"]["name"] == "t"
        session.feed(line(answer(second["id"])))
        assert await rounds == {"ok": True}

    session_test(body)


def test_the_session_keeps_no_http_state() -> None:
    """Tool headers and the agreed version are the HTTP channel's (`HeaderChannel`)."""

    async def body(session: Session, wire: Wire, host: Host) -> None:
        assert not hasattr(session, "tool_headers") and not hasattr(session, "agreed_version")
        assert header_channel(session.channel) is None and header_channel(None) is None

    session_test(body)
