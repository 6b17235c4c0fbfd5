"""The Redis bus between real server processes on one real redis-server.

Processes A and B (and a legacy session C) run `tests/fixtures/bus_server.py` on the same
channel. A change made by a ``tools/call`` on B reaches A's listen and C's session once, and
B's own listen once; a Redis restart is survived.
"""

from __future__ import annotations

import contextlib
import json
import queue
import time
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess
from ..redis_server import RedisServer
from .test_legacy import initialize, legacy_request
from .test_listen import ACK, SUB, TOOLS_CHANGED, UPDATED

Spawn = Callable[..., ServerProcess]
SERVER = FIXTURES / "bus_server.py"
QUIET = 1.0
"""How long to watch for anything extra (nothing should come)."""


def start(spawn: Spawn, redis: RedisServer | None, channel: str = "bus-test") -> ServerProcess:
    env = {"MCPLINE_TEST_REDIS_URL": redis.url if redis else "", "MCPLINE_TEST_CHANNEL": channel}
    return spawn(SERVER, env=env)


def state(p: ServerProcess, seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What ``p``'s bus says; the notifications written meanwhile are added to ``seen``."""
    text, notes = call(p, "bus_state")
    if seen is not None:
        seen += notes
    result: dict[str, Any] = json.loads(text)
    return result


def call(p: ServerProcess, tool: str, /, **arguments: Any) -> tuple[str, list[dict[str, Any]]]:
    """A tools/call: (its text, the notifications written before its response)."""
    msg = p.request_msg("tools/call", {"name": tool, "arguments": arguments})
    p.send(msg)
    resp, seen = p.read_until(msg["id"])
    assert "result" in resp and not resp["result"].get("isError"), resp
    return resp["result"]["content"][0]["text"], seen


def listen(p: ServerProcess, id: Any, **filter: Any) -> None:
    p.send(p.request_msg("subscriptions/listen", {"notifications": filter}, id=id))
    ack = p.read()
    assert ack["method"] == ACK and ack["params"]["_meta"][SUB] == id, ack


def collect(
    p: ServerProcess,
    until: Callable[[list[dict[str, Any]]], bool],
    got: list[dict[str, Any]] | None = None,
    timeout: float = 15.0,
) -> list[dict[str, Any]]:
    """``got`` and the messages ``p`` writes until ``until`` holds of them all, then for
    `QUIET` seconds more."""
    got = list(got or [])
    deadline = time.monotonic() + timeout
    while not until(got):
        left = deadline - time.monotonic()
        assert left > 0, f"timed out; got {got}"
        with contextlib.suppress(queue.Empty):
            got.append(p.read(left))
    return got + quiet(p)


def quiet(p: ServerProcess, seconds: float = QUIET) -> list[dict[str, Any]]:
    """Whatever ``p`` writes within ``seconds``."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            got.append(p.read(left))
        except queue.Empty:
            break
    return got


def count(msgs: list[dict[str, Any]], method: str, **params: Any) -> int:
    return sum(
        1
        for m in msgs
        if m.get("method") == method and all(m["params"].get(k) == v for k, v in params.items())
    )


def has(method: str, n: int = 1, **params: Any) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda msgs: count(msgs, method, **params) >= n


def test_a_change_on_one_process_reaches_the_listens_of_all(
    spawn: Spawn, redis_server: RedisServer
) -> None:
    a, b = start(spawn, redis_server), start(spawn, redis_server)
    assert state(a)["connected"] and state(b)["connected"]
    filt = {"toolsListChanged": True, "resourceSubscriptions": ["item://a"]}
    listen(a, "on-a", **filt)
    listen(b, "on-b", **filt)

    thread, before = call(b, "add_tool", name="made_on_b")
    assert thread.startswith("mcpline-sync")  # published from a worker thread
    on_b = before + quiet(b)
    assert count(on_b, TOOLS_CHANGED) == 1, on_b  # the publisher's own listen: exactly once
    on_a = collect(a, has(TOOLS_CHANGED))
    assert count(on_a, TOOLS_CHANGED) == 1, on_a
    assert on_a[0]["params"]["_meta"][SUB] == "on-a"

    # the registry is per process: A was told to fetch again, and lists what A has
    names_a = [t["name"] for t in a.request("tools/list")["result"]["tools"]]
    names_b = [t["name"] for t in b.request("tools/list")["result"]["tools"]]
    assert "made_on_b" in names_b and "made_on_b" not in names_a

    _, before = call(b, "touch", uri="item://a")
    on_b = before + quiet(b)
    assert count(on_b, UPDATED, uri="item://a") == 1, on_b
    on_a = collect(a, has(UPDATED))
    assert count(on_a, UPDATED, uri="item://a") == 1 and len(on_a) == 1, on_a

    _, before = call(b, "touch", uri="item://b")  # nobody subscribed to it
    assert quiet(a) == [] and before + quiet(b) == []

    _, before = call(b, "remove_tool", name="made_on_b")  # from the loop this time
    assert count(before + quiet(b), TOOLS_CHANGED) == 1
    assert count(collect(a, has(TOOLS_CHANGED)), TOOLS_CHANGED) == 1


def test_a_legacy_session_hears_of_a_change_on_another_process(
    spawn: Spawn, redis_server: RedisServer
) -> None:
    b = start(spawn, redis_server)
    c = start(spawn, redis_server)
    initialize(c)
    rid = legacy_request(c, "resources/subscribe", {"uri": "item://a"})
    assert c.read_until(rid)[0]["result"] == {}
    assert state(b)["connected"]
    call(b, "add_tool", name="for_c")
    call(b, "touch", uri="item://a")
    on_c = collect(c, lambda m: has(TOOLS_CHANGED)(m) and has(UPDATED)(m))
    assert count(on_c, TOOLS_CHANGED) == 1 and count(on_c, UPDATED, uri="item://a") == 1, on_c


def test_other_channels_are_other_servers(spawn: Spawn, redis_server: RedisServer) -> None:
    a, b = start(spawn, redis_server, "one"), start(spawn, redis_server, "two")
    listen(a, "one", toolsListChanged=True)
    assert state(a)["connected"] and state(b)["connected"]
    call(b, "add_tool", name="elsewhere")
    assert quiet(a) == []


def test_a_redis_restart_is_survived(spawn: Spawn, redis_server: RedisServer) -> None:
    a, b = start(spawn, redis_server), start(spawn, redis_server)
    listen(a, "a", toolsListChanged=True)
    listen(b, "b", toolsListChanged=True)
    call(b, "add_tool", name="before")
    assert count(collect(a, has(TOOLS_CHANGED)), TOOLS_CHANGED) == 1

    redis_server.stop()
    _, before = call(b, "add_tool", name="while_down")  # B's own listen still hears of it
    on_b = collect(b, has(TOOLS_CHANGED), before)
    assert count(on_b, TOOLS_CHANGED) == 1, on_b
    on_a: list[dict[str, Any]] = []
    deadline = time.monotonic() + 45
    while state(a, on_a)["connected"] or state(b, on_b)["connected"]:
        assert time.monotonic() < deadline, "the bus did not notice that Redis is gone"
        time.sleep(0.05)
    assert count(on_a, TOOLS_CHANGED) == 0 and count(on_b, TOOLS_CHANGED) == 1

    redis_server.start()
    on_a, on_b = [], []
    deadline = time.monotonic() + 45
    while not (state(a, on_a)["connected"] and state(b, on_b)["connected"]):
        assert time.monotonic() < deadline, "the bus did not reconnect"
        time.sleep(0.05)
    assert state(a, on_a)["outages"] == 1 and state(b, on_b)["outages"] == 1
    # Back: each listen is told to fetch again (what other processes changed meanwhile was
    # missed), and B's queued change may reach A too; then changes flow as before.
    assert count(collect(a, has(TOOLS_CHANGED), on_a), TOOLS_CHANGED) in (1, 2)
    assert count(collect(b, has(TOOLS_CHANGED), on_b), TOOLS_CHANGED) == 1
    _, before = call(b, "add_tool", name="after")
    assert count(collect(a, has(TOOLS_CHANGED)), TOOLS_CHANGED) == 1
    assert count(collect(b, has(TOOLS_CHANGED), before), TOOLS_CHANGED) == 1

    for p in (a, b):
        assert p.stderr.count("cannot reach") == 1, p.stderr  # one warning per outage
        assert "connected to" in p.stderr and "again" in p.stderr


def test_a_stdio_server_without_a_bus_does_not_import_redis(spawn: Spawn) -> None:
    p = start(spawn, None)
    assert state(p)["redis_imported"] is False


@pytest.mark.parametrize("where", ["worker thread", "loop"])
def test_without_redis_a_listen_still_hears_of_local_changes(spawn: Spawn, where: str) -> None:
    p = start(spawn, None)
    listen(p, "l", toolsListChanged=True)
    tool = "add_tool" if where == "worker thread" else "remove_tool"
    if tool == "remove_tool":
        call(p, "add_tool", name="x")
        quiet(p)
    _, before = call(p, tool, name="x")
    assert count(before + quiet(p), TOOLS_CHANGED) == 1
