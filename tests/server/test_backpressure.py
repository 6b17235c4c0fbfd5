"""The outbound bound, against real server processes whose peer stops reading (and the bound
on legacy requests to the client, through the in-memory raw driver)."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .. import wirecheck
from ..proc import FIXTURES, ServerProcess, meta
from .test_legacy import initialize, legacy_request

pytestmark = pytest.mark.linux_only(
    reason="memory from /proc, select on pipes, killpg, Unix sockets"
)

FLOOD = FIXTURES / "flood_server.py"
MIB = 1024 * 1024
RSS_LIMIT_KB = 100 * 1024
FLOOD_SECONDS = 15
SUB = "io.modelcontextprotocol/subscriptionId"
ACK = "notifications/subscriptions/acknowledged"


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a live process, in kB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def request(rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    p = dict(params or {})
    p["_meta"] = {**meta(), **p.get("_meta", {})}
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}
    return json.dumps(msg).encode() + b"\n"


def legacy(rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode() + b"\n"


class Stalled:
    """A server process whose stdout we read only when we choose to."""

    def __init__(self, tmp: Path, *args: str, **env: str) -> None:
        self.err = open(tmp / "stderr", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, str(FLOOD), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            env={**os.environ, **env},
            start_new_session=True,
        )
        assert self.proc.stdin and self.proc.stdout
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.pending = b""
        self.ready: deque[bytes] = deque()

    def send(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def lines(self, timeout: float) -> Iterator[bytes]:
        """Lines from stdout until EOF, or until ``timeout`` seconds without data."""
        while True:
            while self.ready:
                yield self.ready.popleft()
            readable, _, _ = select.select([self.fd], [], [], timeout)
            if not readable:
                return
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return
            *lines, self.pending = (self.pending + chunk).split(b"\n")
            self.ready.extend(lines)

    def read_until(
        self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30.0
    ) -> list[Any]:
        """Every message up to and including the first that satisfies ``pred``."""
        seen = []
        for line in self.lines(timeout):
            msg = json.loads(line)
            seen.append(msg)
            if pred(msg):
                return seen
        raise AssertionError(f"not found in {len(seen)} messages; last: {seen[-3:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)
        self.err.close()


@pytest.fixture
def stalled(tmp_path: Path) -> Iterator[Callable[..., Stalled]]:
    made: list[Stalled] = []

    def make(*args: str, **env: str) -> Stalled:
        s = Stalled(tmp_path, *args, **env)
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()


def size(messages: list[dict[str, Any]]) -> int:
    """Bytes on the wire, give or take key order."""
    return sum(len(json.dumps(m, separators=(",", ":"))) + 1 for m in messages)


KERNEL = MIB
"""What pipe and socket buffers may hold beyond our bound (the kernel has taken it)."""


def answer_to(rid: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda m: "method" not in m and m.get("id") == rid


def valid(messages: list[dict[str, Any]], methods: dict[Any, str], version: str) -> None:
    """Every reply, and the first and last notifications, follow the schema."""
    notes = [m for m in messages if "method" in m]
    for m in [m for m in messages if "method" not in m] + notes[:3] + notes[-3:]:
        method = methods.get(m.get("id")) if "method" not in m else None
        assert not wirecheck.check_message(m, method=method, version=version), m


def test_listen_flood_to_a_peer_that_stops_reading_stays_bounded(
    stalled: Callable[..., Stalled],
) -> None:
    """15 s of notifications from a thread, nobody reading: RSS stays under 100 MiB, the
    listen ends (its graceful completion follows the ~16 MiB already queued), the reply
    written before the stall is there, and the connection still serves.

    Without the bound (``FLOOD_MAX_OUT`` of 10 GiB) the server passes 100 MiB after 2.5-4 s
    on a quiet 2-core machine and 7.6 s under a load of 6: 15 s fails it on a machine three
    times slower."""
    s = stalled()
    listen = {
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["flood://data"]}
    }
    s.send(request("L", "subscriptions/listen", listen))
    assert s.read_until(lambda m: m.get("method") == ACK, 20)
    s.send(request(1, "tools/call", {"name": "flood", "arguments": {"seconds": FLOOD_SECONDS}}))
    peak = 0
    deadline = time.monotonic() + FLOOD_SECONDS
    while time.monotonic() < deadline:
        assert s.proc.poll() is None, "the server exited"
        mem = memory_kb(s.proc.pid)
        peak = max(peak, mem["VmRSS"])
        time.sleep(0.5)
    hwm = memory_kb(s.proc.pid)["VmHWM"]
    assert peak < RSS_LIMIT_KB and hwm < RSS_LIMIT_KB, (peak, hwm)
    s.send(request(2, "tools/call", {"name": "echo", "arguments": {"text": "alive"}}))
    seen = s.read_until(answer_to(2), 30)
    replies = {m["id"]: m for m in seen if "method" not in m}
    assert replies[1]["result"]["content"][0]["text"] == "flooding"
    assert replies[2]["result"]["content"][0]["text"] == "alive"
    assert replies["L"]["result"]["resultType"] == "complete"  # the listen ended gracefully
    tagged = [m for m in seen if m.get("params", {}).get("_meta", {}).get(SUB) == "L"]
    assert tagged and size(tagged) <= 16 * MIB + KERNEL
    end = seen.index(replies["L"])
    assert all(m.get("method") is None or m["method"] == ACK for m in seen[end:]), seen[end:][:5]
    valid(seen, {"L": "subscriptions/listen", 1: "tools/call", 2: "tools/call"}, wirecheck.MODERN)


def test_legacy_session_flood_disconnects_a_peer_that_stops_reading(
    stalled: Callable[..., Stalled],
) -> None:
    """A legacy session's list changes have no stream to end: the peer is disconnected, and
    what was written before the stall (initialize, the tool's reply) is still there."""
    s = stalled(FLOOD_MAX_OUT=str(MIB))
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    s.send(legacy(0, "initialize", params))
    s.read_until(answer_to(0), 20)
    s.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    s.send(legacy(1, "resources/subscribe", {"uri": "flood://data"}))
    s.send(legacy(2, "tools/call", {"name": "flood"}))
    peak = 0
    deadline = time.monotonic() + 20
    while s.proc.poll() is None and time.monotonic() < deadline:
        try:
            mem = memory_kb(s.proc.pid)
        except (FileNotFoundError, ProcessLookupError):
            break
        peak = max(peak, mem.get("VmHWM", 0))
        time.sleep(0.1)
    seen = [json.loads(line) for line in s.lines(10)]  # up to EOF: the server closed stdout
    assert s.proc.wait(10) == 0
    assert peak < RSS_LIMIT_KB, peak
    replies = {m["id"]: m for m in seen if "method" not in m}
    assert replies[1]["result"] == {}
    assert replies[2]["result"]["content"][0]["text"] == "flooding"
    notes = [m for m in seen if "method" in m]
    assert notes and size(notes) <= MIB + KERNEL
    valid(seen, {1: "resources/subscribe", 2: "tools/call"}, wirecheck.LEGACY)


def test_listen_flood_over_a_socket_that_is_never_read(
    stalled: Callable[..., Stalled], tmp_path: Path
) -> None:
    path = tmp_path / "flood.sock"
    s = stalled("--listen", f"unix:{path}", FLOOD_MAX_OUT=str(MIB))
    deadline = time.monotonic() + 20
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    notifications = {"toolsListChanged": True, "resourceSubscriptions": ["flood://data"]}
    listen = {"notifications": notifications}
    sock.sendall(
        request("L", "subscriptions/listen", listen) + request(1, "tools/call", {"name": "flood"})
    )
    peak = 0
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        peak = max(peak, memory_kb(s.proc.pid)["VmRSS"])
        time.sleep(0.2)
    assert peak < RSS_LIMIT_KB, peak
    sock.sendall(request(2, "tools/call", {"name": "echo", "arguments": {"text": "alive"}}))
    sock.settimeout(30)
    buf = b""
    seen: list[dict[str, Any]] = []
    while not any(m.get("id") == 2 and "method" not in m for m in seen):
        chunk = sock.recv(1 << 20)
        assert chunk, "the server closed the socket"
        buf += chunk
        *lines, buf = buf.split(b"\n")
        seen += [json.loads(line) for line in lines]
    sock.close()
    replies = {m["id"]: m for m in seen if "method" not in m}
    assert replies[1]["result"]["content"][0]["text"] == "flooding"
    assert replies["L"]["result"]["resultType"] == "complete"
    kinds = ("notifications/tools/list_changed", "notifications/resources/updated")
    notes = [m for m in seen if m.get("method") in kinds]
    assert notes and size(notes) <= MIB + KERNEL
    valid(seen, {"L": "subscriptions/listen", 1: "tools/call", 2: "tools/call"}, wirecheck.MODERN)


def test_progress_over_the_bound_is_dropped_and_the_reply_still_comes(
    stalled: Callable[..., Stalled],
) -> None:
    s = stalled(FLOOD_MAX_OUT=str(256 * 1024))
    args = {
        "name": "chatter",
        "arguments": {"count": 4000, "size": 1000},
        "_meta": {"progressToken": "p"},
    }
    s.send(request(1, "tools/call", args))
    time.sleep(3)  # nobody reads while the tool runs
    seen = s.read_until(answer_to(1), 30)
    progress = [m for m in seen if m.get("method") == "notifications/progress"]
    assert seen[-1]["result"]["content"][0]["text"] == "sent 4000"
    assert 0 < len(progress) < 4000
    s.send(request(2, "tools/call", {"name": "echo", "arguments": {"text": "alive"}}))
    assert s.read_until(answer_to(2), 20)[-1]["result"]["content"][0]["text"] == "alive"
    valid(seen, {1: "tools/call"}, wirecheck.MODERN)


@pytest.mark.driver("memory")
def test_legacy_requests_to_the_client_are_bounded(
    spawn: Callable[..., ServerProcess],
) -> None:
    """Past max_outstanding unanswered elicitations, the tool that wants one more fails."""
    p = spawn(FLOOD, env={"FLOOD_MAX_OUTSTANDING": "3"})
    initialize(p, {"elicitation": {}})
    calls = [legacy_request(p, "tools/call", {"name": "ask"}) for _ in range(4)]
    asked: list[dict[str, Any]] = []
    refused = None
    while len(asked) < 3 or refused is None:
        msg = p.read()
        if msg.get("method") == "elicitation/create":
            asked.append(msg)
        elif msg.get("id") in calls:
            refused = msg
    assert refused["result"]["isError"] is True
    assert "limit 3" in refused["result"]["content"][0]["text"]
    for req in asked:
        p.send({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}})
    done = [p.read() for _ in range(3)]
    assert sorted(m["id"] for m in done) == sorted(c for c in calls if c != refused["id"])
    assert all(m["result"]["content"][0]["text"] == "answered decline" for m in done)
