"""A server that floods the client: its requests, notifications and list pages are bounded,
and calls that end early leave no traceback behind."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
from typing import Any

import pytest

from mcpline.client import Client, ConnectionLost, ProtocolError, RequestTimeout

from ..proc import FIXTURES
from .util import run

FLOOD = FIXTURES / "flood_client_server.py"


def client(**kw: Any) -> Client:
    kw.setdefault("close_grace", 0.5)
    kw.setdefault("term_grace", 0.5)
    return Client.stdio(sys.executable, [str(FLOOD)], era="legacy", **kw)


def summary(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])


class Concurrency:
    """An input handler that counts how many of its calls run at once."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.now = 0
        self.peak = 0
        self.calls = 0

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.now -= 1
        return {"action": "decline"} if "message" in params else {"roots": []}


def test_server_requests_beyond_the_bound_are_refused() -> None:
    handler = Concurrency(0.3)

    async def main() -> Any:
        async with client(on_elicit=handler, on_roots=handler, max_server_requests=8) as c:
            return summary(await c.call_tool("requests", {"count": 300}, timeout=30))

    got = run(main())
    assert got["unanswered"] == 0
    assert got["results"] + got["errors"]["-32603"] == 300 and got["results"] >= 8
    assert handler.peak <= 8 and handler.calls < 300
    assert any("already handling 8 requests" in m for m in got["messages"]), got


def test_duplicate_server_request_id_is_refused_without_an_id() -> None:
    """The duplicate's error must not carry the id: the request in flight answers with it."""

    async def main() -> Any:
        async with client(on_elicit=Concurrency(1.0)) as c:
            return summary(await c.call_tool("duplicate", timeout=30))

    got = run(main())
    assert [a.get("result") for a in got["dup_answers"]] == [{"action": "decline"}]
    [anon] = got["anonymous"]
    assert anon["error"]["code"] == -32600 and 'id "dup"' in anon["error"]["message"]


def test_notifications_from_a_flooding_server_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """A listen nobody reads keeps at most max_queue notifications (oldest dropped); async
    log callbacks run at most a bounded number at once; the warnings are few."""
    logged = Concurrency(5.0)

    async def main() -> tuple[int, int, int, int]:
        async with client(on_log=logged, log_level="info") as c:
            listener = c.listen(max_queue=100)
            await listener.__anext__()  # the acknowledgement: the listen is active
            await c.call_tool("notes", {"count": 3000}, timeout=30)
            await asyncio.sleep(0.2)
            return listener._queue.qsize(), listener.dropped, logged.peak, logged.calls

    with caplog.at_level(logging.WARNING, logger="mcpline"):
        queued, dropped, peak, calls = run(main())
    assert queued <= 100 and dropped >= 2900
    assert peak <= 256 and calls < 3000
    assert len(caplog.records) < 10, [r.getMessage() for r in caplog.records[:10]]


def test_list_all_stops_at_max_items() -> None:
    """The fixture's tools/list pages never end; list_all gives up at the item bound."""

    async def main() -> None:
        async with client(max_list_items=5000) as c:
            with pytest.raises(ProtocolError, match="more than 5000 tools"):
                await c.list_all("tools/list", "tools", timeout=10)
            with pytest.raises(ProtocolError, match="more than 10 tools"):
                await c.list_all("tools/list", "tools", max_items=10)

    run(main())


def test_ending_calls_leave_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    """Timeout, cancellation, close and a server crash, each while the client is handling
    the server's requests: nothing reaches asyncio's exception handler, logging or stderr."""
    problems: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if record.exc_info or "never retrieved" in text or "Traceback" in text:
                problems.append(f"{record.name}: {text}")

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, ctx: problems.append(f"exception handler: {ctx.get('message')}")
        )
        slow = Concurrency(2.0)
        async with client(on_elicit=slow, on_roots=slow, max_server_requests=8) as c:
            with pytest.raises(RequestTimeout):
                await c.call_tool("requests", {"count": 40}, timeout=0.5)
            task = asyncio.ensure_future(c.call_tool("requests", {"count": 40}))
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            pending = asyncio.ensure_future(c.call_tool("requests", {"count": 40}))
            await asyncio.sleep(0.5)
        with pytest.raises(ConnectionLost):
            await pending
        quick = Concurrency(0.3)  # done after the exit, before stdout closes
        async with client(on_elicit=quick, on_roots=quick, max_restarts=0) as c:
            with pytest.raises(ConnectionLost):
                await c.call_tool("crash", {"count": 40}, timeout=10)
            await asyncio.sleep(1)

    catch = Catch()
    logging.getLogger().addHandler(catch)
    try:
        run(main())
        gc.collect()
    finally:
        logging.getLogger().removeHandler(catch)
    err = capfd.readouterr().err
    assert not problems, problems
    assert "Traceback" not in err and "never retrieved" not in err, err
