"""Client defects found in review, each pinned by a real-process test."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import Client, ClientClosed, ConnectionLost, ProtocolError, RequestTimeout

from .util import Fake, kill_if_alive, run, wait_dead


def fake_client(fake: Fake, **kw: Any) -> Client:
    return Client.stdio(**fake.client_kwargs(**kw))


@pytest.mark.linux_only(reason="reads /proc to see the server gone")
def test_aclose_while_the_server_is_starting_leaves_no_process(tmp_path: Path) -> None:
    """aclose() during the handshake used to miss the half-open link: the request then
    completed on a closed client and the server process was never shut down."""
    fake = Fake(tmp_path, "slow-start")  # 1.5 s before it reads anything

    async def main() -> None:
        c = fake_client(fake, close_grace=0.5, term_grace=0.5)
        request = asyncio.ensure_future(c.list_tools())
        deadline = time.monotonic() + 10
        while not fake.pidfile.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await c.aclose()
        with pytest.raises(ClientClosed):
            await asyncio.wait_for(request, 15)

    try:
        run(main())
        assert wait_dead(fake.pid(), 5), "the server outlived the closed client"
    finally:
        if fake.pidfile.exists():
            kill_if_alive(fake.pid())


def test_line_over_the_limit_without_newline_fails_at_once(tmp_path: Path) -> None:
    """A line that crosses max_line_bytes and never ends must fail the request when it
    crosses the limit, not leave it waiting for a newline (or the timeout)."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, max_line_bytes=1 << 20, close_grace=0.2, term_grace=0.5) as c:
            await c.discover()
            t0 = time.monotonic()
            with pytest.raises(ProtocolError, match="line limit"):
                await c.call_tool("bigstall", {"mb": 4}, timeout=20)
            assert time.monotonic() - t0 < 15

    run(main())


def test_unreadable_answer_fails_its_request_instead_of_hanging(tmp_path: Path) -> None:
    """An answer we cannot decode (here a lone-surrogate escape) whose id is readable fails
    that request with a clear error at once; the session stays usable."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake) as c:
            t0 = time.monotonic()
            with pytest.raises(ProtocolError, match="could not be used"):
                await c.call_tool("surrogate", {}, timeout=20)
            assert time.monotonic() - t0 < 15
            assert (await c.call_tool("echo", {"ok": 1}))["content"]

    run(main())


def test_listen_survives_occasional_crashes(tmp_path: Path) -> None:
    """Restarts are bounded *in a row*: a server that ran fine for a while before dying
    must not use up the budget, or a long-running listen dies after a few crashes."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.05, max_restarts=1, stable_after=0.3) as c:
            listener = c.listen()
            async with listener:
                it = listener.__aiter__()
                for _ in range(3):
                    note = await asyncio.wait_for(it.__anext__(), 15)
                    assert note.method == "notifications/subscriptions/acknowledged"
                    note = await asyncio.wait_for(it.__anext__(), 15)
                    assert note.method == "notifications/tools/list_changed"
                    await asyncio.sleep(0.4)  # the server has been up for a while
                    with pytest.raises(ConnectionLost):
                        await c.call_tool("die", {})
                note = await asyncio.wait_for(it.__anext__(), 15)
                assert note.method == "notifications/subscriptions/acknowledged"
                assert listener.establishments == 4

    run(main())


def test_crash_loop_after_each_listen_ack_is_still_bounded(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "listen-crash")

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.01, max_restarts=2, stable_after=30) as c:
            listener = c.listen()
            async with listener:
                with pytest.raises(ConnectionLost, match="gave up after 2 restarts"):
                    async for _ in listener:
                        pass

    run(main())
    listens = [m for m in fake.received() if m.get("method") == "subscriptions/listen"]
    assert len(listens) == 3


def test_oversized_notification_does_not_fail_the_requests(tmp_path: Path) -> None:
    """An over-long line that is a notification (its start says so) is dropped; it is
    no answer, so the requests in flight go on."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, max_line_bytes=1 << 20) as c:
            r = await c.call_tool("hugenote", {"mb": 4}, timeout=20)
            assert r["content"][0]["text"] == "after the note"

    run(main())


def test_oversized_late_answer_fails_nothing_else(tmp_path: Path) -> None:
    """An over-long answer to a request that already timed out must not fail the other
    requests in flight."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, max_line_bytes=1 << 20) as c:
            await c.discover()
            with pytest.raises(RequestTimeout):
                await c.call_tool("latehuge", {"delay": 1.0, "mb": 4}, timeout=0.3)
            r = await c.call_tool("latehuge", {"delay": 2.0, "mb": 0}, timeout=20)
            assert r["content"][0]["text"] == "late"

    run(main())


def test_oversized_answer_fails_just_its_request(tmp_path: Path) -> None:
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, max_line_bytes=1 << 20) as c:
            await c.discover()
            other = asyncio.ensure_future(
                c.call_tool("latehuge", {"delay": 2.0, "mb": 0}, timeout=20)
            )
            with pytest.raises(ProtocolError, match="line limit"):
                await c.call_tool("latehuge", {"delay": 0.5, "mb": 4}, timeout=20)
            assert (await other)["content"][0]["text"] == "late"

    run(main())


def test_legacy_server_may_ping_before_answering_initialize(tmp_path: Path) -> None:
    """The legacy lifecycle lets a server ping before initialization completes; the
    client must answer it rather than ignore it (the server would wait forever)."""
    fake = Fake(tmp_path, "legacy,ping-first")

    async def main() -> None:
        async with fake_client(fake) as c:
            d = await c.discover()
            assert d.era == "legacy"

    run(main())
    pongs = [m for m in fake.received() if m.get("id") == "s1" and "method" not in m]
    assert pongs == [{"jsonrpc": "2.0", "id": "s1", "result": {}}]


def test_a_request_that_kills_every_server_is_resent_a_bounded_number_of_times(
    tmp_path: Path,
) -> None:
    """Even when each server had been up long enough to start a new series of restarts,
    one idempotent request is not resent forever."""
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.01, max_restarts=2, stable_after=0.05) as c:
            with pytest.raises(ConnectionLost, match="gave up") as ei:
                await c.call_tool("die", {"after": 0.2}, idempotent=True, timeout=10)
            assert not ei.value.retriable

    run(main(), timeout=30)
    assert fake.methods().count("tools/call") == 3
