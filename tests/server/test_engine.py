"""The request engine without a connection: a peer that records what each exchange writes."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from typing import Any

import pytest

from mcpline import Context, Server
from mcpline.jsonrpc import Request
from mcpline.server.engine import MOVES, Exchange, Phase
from mcpline.server.outbound import Kind
from mcpline.server.peer import PeerState

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class RecordingPeer(PeerState):
    """The least a peer is: where messages go, and the phases each exchange went through."""

    def __init__(self) -> None:
        super().__init__("recording")
        self.messages: dict[Any, list[tuple[Kind, dict[str, Any]]]] = {}
        self.phases: dict[Any, list[Phase]] = {}

    def deliver(self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind) -> bool:
        assert json.loads(data) == message  # the message, and the same encoded
        self.messages.setdefault(exchange.id, []).append((kind, message))
        return True

    def send(self, data: bytes, kind: Kind) -> bool:
        self.messages.setdefault(None, []).append((kind, json.loads(data)))
        return True

    def phase_changed(self, exchange: Exchange, old: Phase) -> None:
        self.phases.setdefault(exchange.id, [old]).append(exchange.phase)


def make_server() -> Server:
    server = Server("engine", legacy=False)

    @server.tool()
    async def steps(n: int, ctx: Context) -> str:
        """Report n progress steps."""
        for i in range(n):
            ctx.report_progress(i + 1, n)
            await asyncio.sleep(0)
        return "done"

    @server.tool()
    async def forever() -> str:
        """Never ends."""
        await asyncio.sleep(3600)
        return "never"

    return server


def request(rid: Any, name: str, arguments: dict[str, Any], **meta: Any) -> Request:
    params = {"_meta": {**META, **meta}, "name": name, "arguments": arguments}
    return Request(rid, "tools/call", params)


def test_one_request_is_its_notifications_then_one_response() -> None:
    async def main() -> None:
        server = make_server()
        peer = RecordingPeer()
        exchange = Exchange(request(1, "steps", {"n": 3}, progressToken="t"), peer)
        server.runtime.engine.start(exchange)
        assert exchange.task is not None
        await exchange.task
        kinds = [k for k, _ in peer.messages[1]]
        assert kinds == [Kind.ADVISORY] * 3 + [Kind.REPLY]
        *notes, reply = [m for _, m in peer.messages[1]]
        assert [n["params"]["progress"] for n in notes] == [1, 2, 3]
        assert reply["result"]["content"][0]["text"] == "done"
        assert peer.phases[1] == [Phase.QUEUED, Phase.RUNNING, Phase.ANSWERED]

    asyncio.run(main())


def test_a_refused_request_is_answered_at_once_and_never_runs() -> None:
    async def main() -> None:
        server = make_server()
        peer = RecordingPeer()
        exchange = Exchange(Request(2, "tools/call", {"name": "steps"}), peer)  # no _meta
        server.runtime.engine.start(exchange)
        assert exchange.task is None and exchange.phase is Phase.ANSWERED
        [(kind, reply)] = peer.messages[2]
        assert kind is Kind.REPLY and reply["error"]["code"] == -32602
        assert peer.phases[2] == [Phase.QUEUED, Phase.ANSWERED]

    asyncio.run(main())


def test_a_cancelled_exchange_writes_nothing_more() -> None:
    async def main() -> None:
        server = make_server()
        peer = RecordingPeer()
        exchange = Exchange(request(3, "forever", {}), peer)
        server.runtime.engine.start(exchange)
        await asyncio.sleep(0.01)
        assert exchange.cancel() and not exchange.cancel()
        assert exchange.task is not None
        await exchange.task  # the engine ends the task quietly
        assert 3 not in peer.messages
        assert not exchange.send({"jsonrpc": "2.0", "method": "notifications/progress"})
        assert peer.phases[3] == [Phase.QUEUED, Phase.RUNNING, Phase.CANCELLED]

    asyncio.run(main())


def test_run_serves_a_request_in_the_calling_task() -> None:
    class WherePeer(RecordingPeer):
        """Notes the task each message is written from."""

        def __init__(self) -> None:
            super().__init__()
            self.tasks: list[asyncio.Task[Any] | None] = []

        def deliver(
            self, exchange: Exchange, message: dict[str, Any], data: bytes, kind: Kind
        ) -> bool:
            self.tasks.append(asyncio.current_task())
            return super().deliver(exchange, message, data, kind)

    async def main() -> tuple[list[Kind], list[Phase], bool, bool]:
        server = make_server()
        peer = WherePeer()
        exchange = Exchange(request(1, "steps", {"n": 2}, progressToken="t"), peer)
        await server.runtime.engine.run(exchange)
        kinds = [k for k, _ in peer.messages[1]]
        here = peer.tasks == [asyncio.current_task()] * 3
        return kinds, peer.phases[1], here, exchange.task is None

    kinds, phases, here, released = asyncio.run(main())
    assert kinds == [Kind.ADVISORY, Kind.ADVISORY, Kind.REPLY]
    assert phases == [Phase.QUEUED, Phase.RUNNING, Phase.ANSWERED]
    assert here  # the handler wrote its progress and its reply from the caller's task
    assert released  # ending the exchange now cancels nothing


def test_run_ends_the_exchanges_own_cancellation_and_the_task_goes_on() -> None:
    async def main() -> tuple[bool, int, bool]:
        server = make_server()
        peer = RecordingPeer()
        exchange = Exchange(request(2, "forever", {}), peer)

        async def serve() -> int:
            await server.runtime.engine.run(exchange)
            await asyncio.sleep(0)  # a later wait of the same task is not cut short
            task = asyncio.current_task()
            assert task is not None
            if sys.version_info >= (3, 11):
                return task.cancelling()
            return 0

        running = asyncio.ensure_future(serve())
        while exchange.phase is not Phase.RUNNING:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        ended = exchange.cancel()
        cancelling = await asyncio.wait_for(running, 10)
        return ended, cancelling, 2 in peer.messages

    assert asyncio.run(main()) == (True, 0, False)


def test_run_passes_on_a_cancellation_from_outside() -> None:
    async def main() -> tuple[bool, Phase]:
        server = make_server()
        peer = RecordingPeer()
        exchange = Exchange(request(3, "forever", {}), peer)
        running = asyncio.ensure_future(server.runtime.engine.run(exchange))
        while exchange.phase is not Phase.RUNNING:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        running.cancel()
        try:
            await asyncio.wait_for(running, 10)
        except asyncio.CancelledError:
            return True, exchange.phase
        return False, exchange.phase

    assert asyncio.run(main()) == (True, Phase.CANCELLED)


def test_an_answered_request_is_freed_without_the_cycle_collector() -> None:
    """A 5 MiB argument must not outlive its request until the next collection."""

    async def main() -> None:
        server = make_server()
        peer = RecordingPeer()
        gc.collect()
        gc.disable()
        try:
            exchange = Exchange(request(4, "steps", {"n": 1}), peer)
            server.runtime.engine.start(exchange)
            task = exchange.task
            assert task is not None
            await task
            assert exchange.phase is Phase.ANSWERED
            del exchange, task
            await asyncio.sleep(0)
            assert [o for o in gc.get_objects() if type(o) is Exchange] == []
        finally:
            gc.enable()

    asyncio.run(main())


def test_the_transition_function_refuses_what_the_table_forbids() -> None:
    class Null:
        def phase_changed(self, exchange: Exchange, old: Phase) -> None:
            pass

    for start, allowed in MOVES.items():
        for target in Phase:
            exchange = Exchange(Request(1, "m", {}), Null())  # type: ignore[arg-type]
            exchange.phase = start
            if target in allowed:
                exchange.move(target)
                assert exchange.phase is target
            else:
                with pytest.raises(RuntimeError):
                    exchange.move(target)
    assert not MOVES[Phase.ANSWERED] and not MOVES[Phase.CANCELLED]


def test_server_and_its_public_surface_stay_small() -> None:
    names = [n for n in dir(Server("s")) if not n.startswith("_")]
    assert len(names) < 30, names  # issue "real seams": under 30


def test_a_server_without_the_legacy_era_builds_none_of_it() -> None:
    code = (
        "import sys\n"
        "from mcpline import Server\n"
        "server = Server('modern', legacy=False)\n"
        "try:\n"
        "    server.legacy\n"
        "except RuntimeError as exc:\n"
        "    assert 'legacy=False' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('a legacy era was built')\n"
        "assert 'mcpline.server.legacy' not in sys.modules, sorted(sys.modules)\n"
        "assert Server('both').legacy.request_timeout > 0\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_close_hooks_run_in_order_awaited_past_one_that_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def main() -> None:
        peer = PeerState("p")

        async def later(p: Any) -> None:
            await asyncio.sleep(0)
            ran.append(f"awaited {p.name}")

        def broken(p: Any) -> None:
            raise RuntimeError("boom")

        peer.close_hooks += [broken, later, lambda p: ran.append("plain")]
        await peer.run_close_hooks()

    asyncio.run(main())
    assert ran == ["awaited p", "plain"]
    assert "close hook failed" in caplog.text


def test_an_overflow_hook_may_remove_itself() -> None:
    async def main() -> list[str]:
        peer = PeerState("p")
        ended: list[str] = []

        def once(p: Any) -> None:
            ended.append("once")
            p.overflow_hooks.remove(once)

        peer.overflow_hooks += [once, lambda p: ended.append("always")]
        peer.run_overflow_hooks()
        peer.run_overflow_hooks()
        return ended

    assert asyncio.run(main()) == ["once", "always", "always"]
