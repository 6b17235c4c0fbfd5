"""The notification bus in one process: `Change`, how `Server` uses a bus, `RedisBus` and
`RedisNonceLedger` against a real redis-server, and that redis-py loads only when used."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpline import Server
from mcpline.server.scale.bus import Change, Deliver
from mcpline.server.scale.redis_bus import RedisBus, RedisNonceLedger, redact

from ..redis_server import RedisServer, free_port, redis_binary

# --- Change -------------------------------------------------------------------------------


def test_change_encoding_is_compact_and_round_trips() -> None:
    change = Change("list_changed", "tools")
    assert change.encode() == b'{"kind":"list_changed","value":"tools"}'
    assert Change.decode(change.encode()) == change
    uri = Change("resource_updated", "file:///tmp/ä b.txt")
    assert Change.decode(uri.encode().decode()) == uri
    assert hash(uri) == hash(Change("resource_updated", "file:///tmp/ä b.txt"))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b'["list_changed","tools"]',
        b'{"kind":"list_changed"}',
        b'{"kind":"list_changed","value":"tools","extra":1}',
        b'{"kind":"list_changed","value":"widgets"}',
        b'{"kind":"resource_updated","value":""}',
        b'{"kind":"resource_updated","value":7}',
        b'{"kind":"deleted","value":"x"}',
    ],
)
def test_change_decode_refuses_anything_else(data: bytes) -> None:
    with pytest.raises(ValueError):
        Change.decode(data)


def test_change_refuses_unknown_kinds_and_lists() -> None:
    with pytest.raises(ValueError):
        Change("list_changed", "widgets")
    with pytest.raises(ValueError):
        Change("updated", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Change("resource_updated", "")


# --- Server with a bus, without a loop ------------------------------------------------------


class RecordingBus:
    """A bus that records what it is given and lets the test play other processes."""

    def __init__(self) -> None:
        self.published: list[Change] = []
        self.deliver: Deliver | None = None
        self.scope = ""
        self.closed = 0

    async def start(self, deliver: Deliver, scope: str) -> None:
        self.deliver, self.scope = deliver, scope

    def publish(self, change: Change) -> None:
        self.published.append(change)

    async def aclose(self) -> None:
        self.closed += 1


def recording_engine(server: Server) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    server.runtime.engine.list_changed = lambda kind: seen.append(("list", kind))  # type: ignore[method-assign]
    server.runtime.engine.resource_updated = lambda uri: seen.append(("uri", uri))  # type: ignore[method-assign]
    return seen


def test_registration_publishes_without_a_loop() -> None:
    bus = RecordingBus()
    server = Server("s", bus=bus)

    @server.tool
    def one() -> str:
        """One."""
        return "1"

    server.add_prompt(lambda: "p", name="p", description="p")
    server.remove_tool("one")
    assert bus.published == [
        Change("list_changed", "tools"),
        Change("list_changed", "prompts"),
        Change("list_changed", "tools"),
    ]


def test_a_local_change_reaches_the_engine_once_and_the_bus_once() -> None:
    bus = RecordingBus()
    server = Server("s", bus=bus)
    server.add_resource("item://a", "A")
    seen = recording_engine(server)
    bus.published.clear()
    server.list_changed("resources")
    server.resource_updated("item://a")
    assert seen == [("list", "resources"), ("uri", "item://a")]
    assert bus.published == [
        Change("list_changed", "resources"),
        Change("resource_updated", "item://a"),
    ]


def test_a_remote_change_reaches_the_engine_and_is_not_published_again() -> None:
    bus = RecordingBus()
    server = Server("s", bus=bus)
    server.add_tool(lambda: "x", name="x", description="x")
    seen = recording_engine(server)
    bus.published.clear()
    server._apply_change(Change("list_changed", "tools"))
    server._apply_change(Change("resource_updated", "item://z"))
    server._apply_change(Change("list_changed", "prompts"))  # this server offers no prompts
    assert seen == [("list", "tools"), ("uri", "item://z")]
    assert bus.published == []


def test_without_a_bus_a_change_goes_straight_to_the_engine() -> None:
    server = Server("s")
    seen = recording_engine(server)
    server.list_changed("tools")
    assert seen == [("list", "tools")]
    assert server._bus is None


def test_the_bus_runs_with_the_services() -> None:
    bus = RecordingBus()
    server = Server("named", bus=bus)
    server.add_tool(lambda: "x", name="x", description="x")
    seen = recording_engine(server)

    async def main() -> None:
        async with server.runtime.services.running():
            assert bus.deliver is not None and bus.scope == "named"
            bus.deliver(Change("list_changed", "tools"))
        assert bus.closed == 1

    asyncio.run(main())
    assert seen == [("list", "tools")]


# --- RedisBus against a real redis-server ---------------------------------------------------


class Inbox:
    """Collects what a bus delivers, with the thread it ran on."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.threads: set[int] = set()

    def __call__(self, change: Change) -> None:
        self.changes.append(change)
        self.threads.add(threading.get_ident())

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.changes) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(self.changes) >= count, self.changes


def run(coro: Callable[[], Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro(), 60))


def test_redis_bus_delivers_to_others_and_skips_its_own_echo(redis_server: RedisServer) -> None:
    async def main() -> None:
        a, b = RedisBus(redis_server.url), RedisBus(redis_server.url)
        got_a, got_b = Inbox(), Inbox()
        await a.start(got_a, "unit")
        await b.start(got_b, "unit")
        assert a.connected and b.connected and a.origin != b.origin
        a.publish(Change("list_changed", "tools"))
        a.publish(Change("resource_updated", "item://a"))
        await got_b.wait_for(2)
        b.publish(Change("list_changed", "prompts"))
        await got_a.wait_for(1)
        await asyncio.sleep(0.2)
        assert got_b.changes == [
            Change("list_changed", "tools"),
            Change("resource_updated", "item://a"),
        ]
        assert got_a.changes == [Change("list_changed", "prompts")]
        assert got_a.threads == {threading.get_ident()}  # delivered on the server's loop
        await a.aclose()
        await b.aclose()

    run(main)


def test_redis_bus_channels_separate_servers(redis_server: RedisServer) -> None:
    async def main() -> None:
        a, other = RedisBus(redis_server.url), RedisBus(redis_server.url)
        same = RedisBus(redis_server.url, "mcpline:one")
        got_other, got_same = Inbox(), Inbox()
        await a.start(Inbox(), "one")
        await other.start(got_other, "two")
        await same.start(got_same, "ignored: the channel is given")
        a.publish(Change("list_changed", "tools"))
        await got_same.wait_for(1)
        await asyncio.sleep(0.2)
        assert got_other.changes == []
        for bus in (a, other, same):
            await bus.aclose()

    run(main)


def test_redis_bus_publish_from_many_threads(redis_server: RedisServer) -> None:
    threads, each = 8, 150

    async def main() -> None:
        a, b = RedisBus(redis_server.url, max_pending=threads * each), RedisBus(redis_server.url)
        got = Inbox()
        await a.start(Inbox(), "threads")
        await b.start(got, "threads")
        go = threading.Barrier(threads)

        def publisher(n: int) -> None:
            go.wait()
            for i in range(each):
                a.publish(Change("resource_updated", f"item://{n}/{i}"))

        workers = [threading.Thread(target=publisher, args=(n,)) for n in range(threads)]
        for w in workers:
            w.start()
        while any(w.is_alive() for w in workers):
            await asyncio.sleep(0.01)  # the loop keeps running while the threads publish
        await got.wait_for(threads * each, timeout=30)
        await asyncio.sleep(0.2)
        uris = [c.value for c in got.changes]
        assert len(uris) == threads * each
        assert set(uris) == {f"item://{n}/{i}" for n in range(threads) for i in range(each)}
        assert a.pending == 0
        await a.aclose()
        await b.aclose()

    run(main)


def test_redis_bus_coalesces_repeats_while_queued() -> None:
    bus = RedisBus(f"redis://127.0.0.1:{free_port()}/0", start_wait=0.2)

    async def main() -> None:
        await bus.start(Inbox(), "down")
        for _ in range(100):
            bus.publish(Change("list_changed", "tools"))
        assert bus.pending == 1
        await bus.aclose()

    run(main)


def test_redis_bus_publish_before_start_and_after_close_is_dropped() -> None:
    bus = RedisBus("redis://127.0.0.1:1/0")
    bus.publish(Change("list_changed", "tools"))  # no loop anywhere: no error, nothing kept
    assert bus.pending == 0

    async def main() -> None:
        bus.start_wait = 0.1
        await bus.start(Inbox(), "x")
        await bus.aclose()
        bus.publish(Change("list_changed", "tools"))
        assert bus.pending == 0

    run(main)


def test_redis_bus_unreachable_is_bounded_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = RedisBus(
        f"redis://:secret@127.0.0.1:{free_port()}/0",
        max_pending=100,
        backoff=(0.01, 0.02),
        start_wait=0.2,
    )

    async def main() -> None:
        started = time.monotonic()
        await bus.start(Inbox(), "down")
        assert time.monotonic() - started < 15  # start does not wait for Redis to come back
        assert not bus.connected
        for i in range(5000):
            bus.publish(Change("resource_updated", f"item://{i}"))
        assert bus.pending == 100
        await asyncio.sleep(0.5)  # many reconnection attempts meanwhile
        assert bus.outages == 1
        await bus.aclose()

    with caplog.at_level(logging.WARNING, logger="mcpline.server.scale.bus"):
        run(main)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("cannot reach" in m for m in messages) == 1, messages
    assert sum("dropping new ones" in m for m in messages) == 1, messages
    assert not any("secret" in m for m in messages), messages


@pytest.mark.linux_only(reason="provisions redis-server from Debian packages")
def test_redis_bus_reports_what_it_dropped_once_redis_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    later = RedisServer(redis_binary(), tmp_path, port)

    async def main() -> None:
        a = RedisBus(later.url, max_pending=2, backoff=(0.02, 0.1), start_wait=0.1)
        b = RedisBus(later.url, backoff=(0.02, 0.1), start_wait=0.1)
        got = Inbox()
        await a.start(Inbox(), "drops")
        await b.start(got, "drops")
        for i in range(5):
            a.publish(Change("resource_updated", f"item://{i}"))
        assert a.pending == 2
        await asyncio.get_running_loop().run_in_executor(None, later.start)
        while not (a.connected and b.connected) or a.pending:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        await a.aclose()
        await b.aclose()

    try:
        with caplog.at_level(logging.WARNING, logger="mcpline.server.scale.bus"):
            run(main)
    finally:
        later.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert sum("3 changes were dropped" in m for m in messages) == 1, messages


def test_redis_bus_survives_a_restart_and_resyncs(redis_server: RedisServer) -> None:
    async def main() -> None:
        a = RedisBus(redis_server.url, backoff=(0.02, 0.2))
        b = RedisBus(redis_server.url, backoff=(0.02, 0.2))
        got_a, got_b = Inbox(), Inbox()
        await a.start(got_a, "restart")
        await b.start(got_b, "restart")
        await asyncio.get_running_loop().run_in_executor(None, redis_server.stop)
        b.publish(Change("resource_updated", "item://while-down"))  # kept until Redis is back
        await asyncio.sleep(0.3)
        assert not a.connected and a.outages == 1
        await asyncio.get_running_loop().run_in_executor(None, redis_server.start)
        deadline = time.monotonic() + 15
        while not (a.connected and b.connected) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert a.connected and b.connected
        resync = [Change("list_changed", k) for k in ("tools", "prompts", "resources")]
        await got_b.wait_for(3)
        assert got_b.changes == resync  # told its own peers to fetch the lists again
        b.publish(Change("list_changed", "tools"))
        await got_a.wait_for(4)
        await asyncio.sleep(0.2)
        assert got_a.changes[:3] == resync
        assert Change("list_changed", "tools") in got_a.changes[3:]
        # the change queued while Redis was down may be lost if it was sent before the other
        # process resubscribed; nothing arrives twice
        assert len(got_a.changes) - 3 <= 2
        await a.aclose()
        await b.aclose()

    run(main)


def test_redis_bus_refuses_a_malformed_url_at_start() -> None:
    async def main() -> None:
        bus = RedisBus("http://127.0.0.1:1/")
        with pytest.raises(ValueError):
            await bus.start(Inbox(), "x")
        await bus.aclose()

    run(main)


def test_redact() -> None:
    assert redact("redis://:pw@h:1/0") == "redis://:***@h:1/0"
    assert redact("redis://user:pw@h/0") == "redis://user:***@h/0"
    assert redact("redis://h:6379/0") == "redis://h:6379/0"


# --- RedisNonceLedger --------------------------------------------------------------------------


def test_redis_nonce_ledger_claims_once_across_replicas(redis_server: RedisServer) -> None:
    one, two = RedisNonceLedger(redis_server.url), RedisNonceLedger(redis_server.url)
    expiry = int(time.time()) + 60
    assert one.claim("n1", expiry) is True
    assert one.claim("n1", expiry) is False
    assert two.claim("n1", expiry) is False
    assert two.claim("n2", expiry) is True
    import redis

    client = redis.Redis.from_url(redis_server.url)
    assert 0 < client.pttl("mcpline:nonce:n1") <= 60_000
    client.close()


def test_redis_nonce_ledger_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    ledger = RedisNonceLedger(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    with caplog.at_level(logging.WARNING, logger="mcpline.server.scale.bus"):
        assert ledger.claim("n", int(time.time()) + 60) is False
        assert ledger.claim("m", int(time.time()) + 60) is False
    assert sum("cannot reach" in r.getMessage() for r in caplog.records) == 1


def test_sealed_state_is_single_use_across_replicas(redis_server: RedisServer) -> None:
    from mcpline.errors import StateError
    from mcpline.protocol.state import StateSealer

    key = "k" * 32
    replicas = [
        StateSealer(key, scope="s", ledger=RedisNonceLedger(redis_server.url)) for _ in range(2)
    ]
    token = replicas[0].seal("tools/call", {"name": "t"}, {"step": 1})
    assert replicas[1].open(token, "tools/call", {"name": "t"})[0] == {"step": 1}
    with pytest.raises(StateError, match="already used"):
        replicas[0].open(token, "tools/call", {"name": "t"})


# --- redis-py loads only when used ----------------------------------------------------------


def test_importing_mcpline_does_not_import_redis_nor_the_bus() -> None:
    code = (
        "import sys, mcpline\n"
        "from mcpline import Server\n"
        "Server('x').add_tool(lambda: 1, name='t', description='t')\n"
        "assert 'mcpline.server.scale.bus' not in sys.modules\n"
        "import mcpline.server.scale.bus, mcpline.server.scale.redis_bus\n"
        "assert 'redis' not in sys.modules, sorted(m for m in sys.modules if 'redis' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
