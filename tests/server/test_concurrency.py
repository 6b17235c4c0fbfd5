"""Concurrency, cancellation and backpressure through the raw driver (in memory; over a real
pipe where the process or its pipe is the point)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

CORE = FIXTURES / "core_server.py"
Spawn = Callable[..., ServerProcess]


def call_msg(p: ServerProcess, name: str, arguments: dict[str, Any], id: Any) -> dict[str, Any]:
    return p.request_msg("tools/call", {"name": name, "arguments": arguments}, id=id)


def test_twenty_slow_tools_run_together(spawn: Spawn) -> None:
    p = spawn(CORE)
    p.request("server/discover")  # warm
    start = time.monotonic()
    for i in range(20):
        p.send(call_msg(p, "sleep", {"ms": 500}, i))
    got = {p.read(timeout=10)["id"] for _ in range(20)}
    elapsed = time.monotonic() - start
    assert got == set(range(20))
    # Serially this would take 10 s; together about 0.5 s (a 3x slower machine: under 3 s).
    assert elapsed < 8.0, elapsed


def test_sync_tools_run_off_the_loop(spawn: Spawn) -> None:
    p = spawn(CORE)
    p.send(call_msg(p, "sync_sleep", {"ms": 4000}, "blocking"))
    time.sleep(0.1)
    # The loop is free while the sync tool blocks its worker thread: the probe is answered
    # before the blocking call (a blocked loop would answer it after).
    p.send(p.request_msg("server/discover", id="probe"))
    first = p.read(timeout=30)
    assert first["id"] == "probe" and "result" in first, first
    resp, _ = p.read_until("blocking")
    thread = resp["result"]["content"][0]["text"]
    assert thread != "MainThread" and thread.startswith("mcpline-sync")
    # Several sync tools also overlap.
    t0 = time.monotonic()
    for i in range(8):
        p.send(call_msg(p, "sync_sleep", {"ms": 1500}, f"s{i}"))
    assert {p.read(timeout=30)["id"] for _ in range(8)} == {f"s{i}" for i in range(8)}
    assert time.monotonic() - t0 < 9.0  # serially 12 s; together 1.5 s


@pytest.mark.driver("process")  # the exit status, then what the closed stdout held
def test_cancelled_tool_is_never_answered_and_server_keeps_serving(spawn: Spawn) -> None:
    p = spawn(CORE)
    p.send(call_msg(p, "sleep", {"ms": 3000}, "slow"))
    p.send(call_msg(p, "sync_sleep", {"ms": 3000}, "slow-sync"))
    time.sleep(0.2)
    for rid in ("slow", "slow-sync"):
        p.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": rid, "reason": "user gave up"},
            }
        )
    # Keeps serving meanwhile.
    for i in range(5):
        r = p.call("echo", {"text": f"still here {i}"})
        assert r["result"]["content"][0]["text"] == f"still here {i}"
    # Wait past the point where both would have finished, then prove nothing came for them:
    # the next message after a fresh request is that request's reply.
    time.sleep(3.3)
    p.send(p.request_msg("server/discover", id="fence"))
    fence = p.read()
    assert fence["id"] == "fence", fence
    p.close_stdin()
    p.wait()
    ids = [m.get("id") for m in p.drain()]
    assert "slow" not in ids and "slow-sync" not in ids


def test_cancel_racing_completion_never_double_answers(spawn: Spawn) -> None:
    p = spawn(CORE)
    n = 200
    for i in range(n):
        p.send(call_msg(p, "sleep", {"ms": 5 + i % 10}, i))
        if i % 2:
            p.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}
            )
    p.send(p.request_msg("server/discover", id="fence"))
    time.sleep(0.5)
    p.send(p.request_msg("server/discover", id="fence2"))
    seen: list[Any] = []
    while True:
        m = p.read()
        if m.get("id") == "fence2":
            break
        seen.append(m.get("id"))
    counts = Counter(seen)
    assert all(c == 1 for c in counts.values()), counts.most_common(3)
    assert {i for i in range(n) if i % 2 == 0} <= set(counts)


def test_thousand_pipelined_requests_each_answered_once(spawn: Spawn) -> None:
    p = spawn(CORE)
    n = 1000
    lines = []
    for i in range(n):
        rid: Any = i if i % 2 else f"s{i}"
        msg = call_msg(p, "echo", {"text": f"m{i}"}, rid)
        p.methods[rid] = "tools/call"
        lines.append(msg)
    p.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    answers: dict[Any, str] = {}
    for _ in range(n):
        m = p.read(timeout=20)
        key = m["id"]
        assert key not in answers, f"{key!r} answered twice"
        answers[key] = m["result"]["content"][0]["text"]
    for i in range(n):
        rid = i if i % 2 else f"s{i}"
        assert answers[rid] == f"m{i}"


@pytest.mark.driver("process")  # the stdio transport pauses the pipe
def test_max_in_flight_pauses_reading_but_loses_nothing(spawn: Spawn) -> None:
    p = spawn(CORE, env={"CORE_MAX_IN_FLIGHT": "4"})
    n = 40
    batch = []
    for i in range(n):
        m = call_msg(p, "sleep", {"ms": 100}, i)
        p.methods[i] = "tools/call"
        batch.append(json.dumps(m).encode() + b"\n")
    t0 = time.monotonic()
    p.send_raw(b"".join(batch))  # one write: the server reads it in one chunk
    got = []
    for _ in range(n):
        got.append(p.read(timeout=20)["id"])
    elapsed = time.monotonic() - t0
    assert sorted(got) == list(range(n))
    # At most 4 run at once: 40 x 100 ms needs at least 10 rounds (~1 s); all 40 at once
    # would take ~0.1 s.
    assert elapsed >= 0.9, elapsed
    # A cancel for a request still waiting for a slot removes it before it starts.
    for i in range(100, 112):
        p.send(call_msg(p, "sleep", {"ms": 150}, i))
    p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 111}})
    ids = [p.read(timeout=20)["id"] for _ in range(11)]
    assert sorted(ids) == list(range(100, 111))
    fence = p.request("server/discover", id="fence")
    assert fence["id"] == "fence"


def test_progress_and_logs_only_for_requests_that_asked(spawn: Spawn) -> None:
    """Same tool, concurrently, once with progressToken and once without: only one gets
    notifications, and they carry its token."""
    p = spawn(CORE)
    with_token = p.request_msg(
        "tools/call",
        {"name": "progress", "arguments": {"steps": 5}},
        id="with",
        progressToken="tok-1",
    )
    without = p.request_msg(
        "tools/call", {"name": "progress", "arguments": {"steps": 5}}, id="without"
    )
    p.send(without)
    p.send(with_token)
    notes = []
    done: set[object] = set()
    while len(done) < 2:
        m = p.read()
        if "id" in m:
            done.add(m["id"])
        else:
            notes.append(m)
    assert all(n["method"] == "notifications/progress" for n in notes), notes
    assert all(n["params"]["progressToken"] == "tok-1" for n in notes)
    assert [n["params"]["progress"] for n in notes] == [1, 2, 3, 4, 5]
