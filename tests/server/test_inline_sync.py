"""Where a plain ``def`` tool runs: worker threads until its calls prove short, then the event
loop; back to the threads for good after one overrun; ``inline=`` pins the choice."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Client, Context, Server, Task, ToolError, elicit
from mcpline.protocol.meta import modern_meta
from mcpline.server import _userfn
from mcpline.server.connection import Connection
from mcpline.spec import MODERN

LOOP = "MainThread"  # asyncio.run's loop runs here; sync calls off the loop run on workers


def thread_server() -> Server:
    server = Server("inline")

    @server.tool()
    def where(slow: bool = False) -> str:
        """The name of the thread the call ran on (after 0.2 s when slow)."""
        if slow:
            time.sleep(0.2)
        return threading.current_thread().name

    @server.tool(inline=True)
    def pinned_loop() -> str:
        """Always on the loop."""
        return threading.current_thread().name

    @server.tool(inline=False)
    def pinned_thread() -> str:
        """Always on a worker thread."""
        return threading.current_thread().name

    @server.tool()
    def with_context(ctx: Context) -> str:
        """Takes the context: it may wait on the loop, so it never runs there."""
        return threading.current_thread().name

    @server.tool()
    def refuse() -> str:
        """Fails at once, every time."""
        if threading.current_thread().name == LOOP:
            raise ToolError("refused on the loop")
        raise ToolError("refused on a thread")

    return server


def drive(server: Server, body: Callable[[Client], Any]) -> Any:
    async def main() -> Any:
        async with Client.memory(server, timeout=30) as client:
            return await body(client)

    return asyncio.run(main())


async def text(client: Client, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, arguments or {})
    value = result["content"][0]["text"]
    assert isinstance(value, str)
    return value


async def until_on_loop(client: Client, name: str) -> list[str]:
    """Call ``name`` until a call runs on the loop (at most 50 proving runs' worth)."""
    seen: list[str] = []
    for _ in range(50 * _userfn.PROVE_CALLS):
        seen.append(await text(client, name))
        if seen[-1].startswith(LOOP) or seen[-1] == "refused on the loop":
            return seen
    raise AssertionError(f"{name} never moved to the loop: {seen[-5:]}")


@pytest.fixture
def generous_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # A busy machine may pause a thread for a few ms: 50 ms keeps the tests' fast calls fast.
    monkeypatch.setattr(_userfn, "INLINE_BUDGET", 0.05)


@pytest.mark.usefixtures("generous_budget")
def test_a_short_sync_tool_runs_on_threads_first_then_on_the_loop() -> None:
    async def body(client: Client) -> list[str]:
        return await until_on_loop(client, "where")

    seen = drive(thread_server(), body)
    assert len(seen) > _userfn.PROVE_CALLS  # a first call cannot be known short
    assert all(name.startswith("mcpline-sync") for name in seen[: _userfn.PROVE_CALLS])


@pytest.mark.usefixtures("generous_budget")
def test_one_overrun_on_the_loop_sends_the_tool_back_to_threads_for_good() -> None:
    async def body(client: Client) -> tuple[str, float, list[str]]:
        await until_on_loop(client, "where")
        # The slow call runs on the loop (the one stall): a probe sent meanwhile waits for it.
        slow = asyncio.ensure_future(text(client, "where", {"slow": True}))
        await asyncio.sleep(0)
        started = time.monotonic()
        await client.request("server/discover")
        probe_wait = time.monotonic() - started
        stalled_on = await slow
        after = [await text(client, "where") for _ in range(3 * _userfn.PROVE_CALLS)]
        # Slow again, now on a thread: the loop answers a probe while it sleeps.
        slow = asyncio.ensure_future(text(client, "where", {"slow": True}))
        await client.request("server/discover")
        assert not slow.done()
        after.append(await slow)
        return stalled_on, probe_wait, after

    stalled_on, probe_wait, after = drive(thread_server(), body)
    assert stalled_on == LOOP
    assert probe_wait >= 0.1, probe_wait
    assert all(name.startswith("mcpline-sync") for name in after), after


def test_inline_pins_where_a_tool_runs() -> None:
    async def body(client: Client) -> tuple[list[str], list[str]]:
        loop = [await text(client, "pinned_loop") for _ in range(3)]
        threads = [await text(client, "pinned_thread") for _ in range(3 * _userfn.PROVE_CALLS)]
        return loop, threads

    loop, threads = drive(thread_server(), body)
    assert loop == [LOOP] * 3
    assert all(name.startswith("mcpline-sync") for name in threads)


@pytest.mark.usefixtures("generous_budget")
def test_a_tool_taking_the_context_stays_on_threads() -> None:
    async def body(client: Client) -> list[str]:
        return [await text(client, "with_context") for _ in range(3 * _userfn.PROVE_CALLS)]

    assert all(name.startswith("mcpline-sync") for name in drive(thread_server(), body))


@pytest.mark.usefixtures("generous_budget")
def test_a_tool_that_fails_fast_proves_short_too_and_still_fails_as_a_tool_error() -> None:
    async def body(client: Client) -> tuple[list[str], dict[str, Any]]:
        seen = await until_on_loop(client, "refuse")
        return seen, await client.call_tool("refuse", {})

    seen, last = drive(thread_server(), body)
    assert seen[0] == "refused on a thread"
    assert last["isError"] is True
    assert last["content"][0]["text"] == "refused on the loop"


MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark")


def task_server() -> Server:
    server = Server("inline-tasks")

    @server.tool()
    def mark() -> str:
        """Sets a context variable; says where it ran and what the variable held before."""
        before = MARK.get("unset")
        MARK.set("set")
        return f"{threading.current_thread().name} {before}"

    async def in_a_task(caller: asyncio.Task[Any] | None) -> str:
        own = asyncio.current_task()
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(5):  # needs the current task
                await asyncio.sleep(0)
        return f"{threading.current_thread().name} {own is not None and own is not caller}"

    @server.tool()
    def later() -> Any:
        """Returns an awaitable, which runs on the loop in a task of its own."""
        try:
            caller = asyncio.current_task()
        except RuntimeError:  # on a worker thread
            caller = None
        return in_a_task(caller)

    @server.tool()
    def handle() -> Any:
        """Answers with a task handle; a plain call gets its work's value."""
        try:
            caller = asyncio.current_task()
        except RuntimeError:  # on a worker thread
            caller = None
        return Task(in_a_task(caller))

    return server


def feed(server: Server, name: str, calls: int) -> list[str]:
    """``calls`` calls of ``name``, one at a time, fed to a real `Connection` from this one
    task (and so from one context, as a stdio reader feeds it)."""
    meta = modern_meta(MODERN, {})

    async def main() -> list[str]:
        out: list[bytes] = []
        async with server.runtime.services.running():
            conn = Connection(server, out.append)
            for i in range(calls):
                msg = {"name": name, "arguments": {}, "_meta": meta}
                line = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": msg}
                conn.data_received(json.dumps(line).encode() + b"\n")
                while conn.inflight:
                    await asyncio.sleep(0.001)
            await conn.close()
        return [json.loads(o)["result"]["content"][0]["text"] for o in out]

    return asyncio.run(main())


@pytest.mark.usefixtures("generous_budget")
def test_a_call_on_the_loop_sets_context_variables_for_itself_only() -> None:
    seen = feed(task_server(), "mark", 5 * _userfn.PROVE_CALLS)
    on_loop = [s for s in seen if s.startswith(LOOP)]
    assert len(on_loop) >= 5, seen
    assert on_loop == [f"{LOOP} unset"] * len(on_loop)


@pytest.mark.usefixtures("generous_budget")
def test_an_awaitable_a_sync_tool_returns_on_the_loop_runs_in_a_task_of_its_own() -> None:
    seen = feed(task_server(), "later", 5 * _userfn.PROVE_CALLS)
    assert len([s for s in seen if s.startswith(LOOP)]) >= 5, seen
    assert set(seen) == {f"{LOOP} True"}


@pytest.mark.usefixtures("generous_budget")
def test_the_work_of_a_task_handle_a_sync_tool_returns_on_the_loop_runs_in_a_task() -> None:
    seen = feed(task_server(), "handle", 5 * _userfn.PROVE_CALLS)
    assert set(seen) == {f"{LOOP} True"}


per_thread_counts = pytest.mark.skipif(
    not _userfn.COUNTS_WAITS, reason="voluntary context switches per thread: Linux only"
)


@pytest.fixture
def collections_timed() -> None:
    _userfn.Collector.watch()


@pytest.mark.usefixtures("collections_timed")
def test_a_call_that_waits_or_computes_past_the_budget_overran() -> None:
    before = _userfn.thread_usage()
    time.sleep(0.01)
    assert _userfn.overran(before)
    before = _userfn.thread_usage()
    while time.thread_time() - before[1] < 0.01:
        pass
    assert _userfn.overran(before)
    assert not _userfn.overran(_userfn.thread_usage())


@per_thread_counts
@pytest.mark.usefixtures("collections_timed")
def test_time_off_the_cpu_without_waiting_or_in_the_collector_is_not_an_overrun() -> None:
    wall, cpu, collecting, waits = _userfn.thread_usage()
    # A second of wall time in which this thread neither ran nor waited: it was preempted.
    assert not _userfn.overran((wall - 1.0, cpu, collecting, waits))
    # A second, nearly all of it CPU time in the garbage collector.
    assert not _userfn.overran((wall - 1.0, cpu - 0.9, collecting - 1.0, waits))
    assert _userfn.overran((wall - 1.0, cpu - 0.9, collecting, waits))


@per_thread_counts
def test_until_a_call_computes_past_the_budget_collections_are_not_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_userfn.Collector, "watching", False)
    monkeypatch.setattr(gc, "callbacks", [])
    wall, cpu, collecting, waits = _userfn.thread_usage()
    computed = (wall - 1.0, cpu - 0.9, collecting, waits)
    assert not _userfn.overran(computed)  # it may have been the collector: not judged
    assert gc.callbacks == [_userfn.Collector.note]  # timed from now on
    assert _userfn.overran(computed)


@pytest.mark.usefixtures("generous_budget")
def test_replies_given_while_a_chunk_is_read_leave_in_one_write_in_order() -> None:
    server = thread_server()
    meta = modern_meta(MODERN, {})

    def call(i: int) -> bytes:
        msg = {"name": "where", "arguments": {}, "_meta": meta}
        line = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": msg}
        return json.dumps(line).encode() + b"\n"

    async def main() -> list[bytes]:
        out: list[bytes] = []
        async with server.runtime.services.running():
            conn = Connection(server, out.append)
            for i in range(50 * _userfn.PROVE_CALLS):
                conn.data_received(call(i))
                while conn.inflight:
                    await asyncio.sleep(0.001)
                if LOOP in json.loads(out[-1])["result"]["content"][0]["text"]:
                    break
            out.clear()
            conn.data_received(b"".join(call(1000 + i) for i in range(10)))
            assert not conn.inflight  # all answered while the chunk was read
            await conn.close()
        return out

    out = asyncio.run(main())
    assert len(out) == 1
    replies = [json.loads(line) for line in out[0].splitlines()]
    assert [r["id"] for r in replies] == list(range(1000, 1010))
    assert {r["result"]["content"][0]["text"] for r in replies} == {LOOP}


def pinned_server() -> Server:
    server = Server("inline-pinned")

    @server.tool(inline=True)
    def greet(ctx: Context) -> str:
        """Asks for a name (MRTR), then greets it; says where it ran."""
        answer = ctx.ask("who", elicit("What is your name?", {"name": str}))
        return f"Hello, {answer['content']['name']}! ({threading.current_thread().name})"

    @server.tool(inline=True)
    def boom(n: int) -> str:
        """Fails with an unexpected error."""
        raise RuntimeError(f"boom {n}")

    return server


def answered_at_once(server: Server, params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tools/call in ``params``, fed to a real `Connection` in its own chunk: the reply
    of each has been written when `Connection.data_received` returns (no task, no loop
    pass)."""
    meta = modern_meta(MODERN, {"elicitation": {}})

    async def main() -> list[dict[str, Any]]:
        out: list[bytes] = []
        replies = []
        async with server.runtime.services.running():
            conn = Connection(server, out.append)
            for i, p in enumerate(params):
                line = {"jsonrpc": "2.0", "id": i, "method": "tools/call"}
                line["params"] = {**p, "_meta": meta}
                conn.data_received(json.dumps(line).encode() + b"\n")
                assert len(out) == 1 and not conn.inflight, (p, out)
                replies.append(json.loads(out.pop()))
            await conn.close()
        return replies

    return asyncio.run(main())


def test_a_tool_on_the_loop_is_answered_while_its_request_is_read() -> None:
    """Asking for input (then greeting with the answer, on the loop), failing, refusing bad
    arguments: every outcome of a call on the loop is written in the same step as its
    request was read, with the result the protocol asks for."""
    server = pinned_server()
    first, failed, refused = answered_at_once(
        server,
        [
            {"name": "greet", "arguments": {}},
            {"name": "boom", "arguments": {"n": 1}},
            {"name": "boom", "arguments": {"n": "one"}},
        ],
    )
    asked = first["result"]
    assert asked["resultType"] == "input_required", asked
    assert asked["inputRequests"]["who"]["method"] == "elicitation/create"
    retry: dict[str, Any] = {"name": "greet", "arguments": {}}
    retry["inputResponses"] = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    if "requestState" in asked:
        retry["requestState"] = asked["requestState"]
    (second,) = answered_at_once(server, [retry])
    assert second["result"]["content"][0]["text"] == f"Hello, Ada! ({LOOP})"
    assert failed["result"]["isError"] is True
    assert failed["result"]["content"][0]["text"] == "Tool 'boom' failed: RuntimeError: boom 1"
    assert refused["result"]["isError"] is True
    assert "Invalid arguments for tool 'boom'" in refused["result"]["content"][0]["text"]
