"""The bridge under bad input: servers that crash (once, in a loop, at start), a server that
floods its stdout, clients that leave mid-stream. It must stay up, keep its memory bounded,
and leave no process behind (every `bridge_http` checks the process table when it ends)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from mcpline import Client
from mcpline.errors import ClientError, ServerError

from ..transports.http_util import modern_headers, request_body
from .util import (
    BRIDGE_SERVER,
    MCPLINE,
    RAW_SERVER,
    Proc,
    bridge_http,
    connection,
    gone_within,
    path_of,
    python_server,
)

pytestmark = pytest.mark.timeout(180)

SERVER = python_server(BRIDGE_SERVER)
MIB = 1024 * 1024


def run(coro: Any, timeout: float = 90) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_a_crashed_server_is_replaced_and_its_call_is_not_sent_again(tmp_path: Path) -> None:
    async def main(url: str) -> None:
        async with Client.http(url) as c:
            first = (await c.call_tool("pid", {}))["structuredContent"]["result"]
            with pytest.raises(ServerError) as info:
                await c.call_tool("crash", {})
            assert info.value.code == -32603
            assert "tools/call is not idempotent, so it was not sent again" in info.value.message
            second = (await c.call_tool("pid", {}))["structuredContent"]["result"]
            assert second != first and not psutil.pid_exists(first)

    with bridge_http(*SERVER, options=["--pool", "1"], env={"BRIDGE_EVENTS": str(tmp_path)}) as (
        url,
        _,
    ):
        run(main(url))


def test_an_idempotent_request_is_sent_again_on_another_process(tmp_path: Path) -> None:
    async def main(url: str) -> str:
        async with Client.http(url) as c:
            read = await c.read_resource("bridge://flaky")
            return str(read["contents"][0]["text"])

    with bridge_http(*SERVER, options=["--pool", "2"], env={"BRIDGE_EVENTS": str(tmp_path)}) as (
        url,
        _,
    ):
        text = run(main(url))
    crashed = (tmp_path / "flaky.crashed").read_text()
    assert text.startswith("read by ") and text != f"read by {crashed}"


def test_a_server_that_crashes_in_a_loop_costs_bounded_work_and_memory() -> None:
    """Every process exits 0.3 s after it starts: requests fail or succeed, the bridge stays
    up, restarts back off, and its memory does not grow."""
    seen: set[int] = set()
    outcomes = {"ok": 0, "error": 0}

    async def main(url: str, proc: Proc) -> None:
        async with Client.http(url, max_restarts=0) as c:
            loop = asyncio.get_running_loop()
            end = loop.time() + 6
            while loop.time() < end:
                seen.update(p.pid for p in proc.descendants())
                try:
                    await c.call_tool("echo", {"text": "x"}, timeout=5)
                    outcomes["ok"] += 1
                except ClientError:
                    outcomes["error"] += 1
                await asyncio.sleep(0.05)

    raw = [sys.executable, str(RAW_SERVER)]
    with bridge_http(*raw, options=["--pool", "2"], env={"RAW_EXIT_AFTER": "0.3"}) as (url, proc):
        before = proc.rss()
        run(main(url, proc))
        assert proc.proc.poll() is None
        assert proc.rss() - before < 40 * MIB
        assert len(proc.descendants()) <= 5  # two slots (and a watchdog), nothing piling up
    assert outcomes["ok"] + outcomes["error"] > 10
    assert 4 <= len(seen) <= 40, seen  # replaced, but with backoff: no fork storm


def test_a_server_that_cannot_start_makes_the_bridge_exit_2() -> None:
    argv = [*MCPLINE, "bridge", "--http", "127.0.0.1:0", "--"]
    argv += [
        sys.executable,
        "-c",
        "import sys; print('no such thing', file=sys.stderr); sys.exit(3)",
    ]
    proc = Proc(argv)
    try:
        assert proc.proc.wait(60) == 2
        proc.wait_for("mcpline bridge: the server did not start")
    finally:
        proc.stop()


def test_a_server_flooding_its_stdout_does_not_flood_the_bridge() -> None:
    """200,000 garbage lines, one 6 MiB line (over the 4 MiB line limit) and 100,000 log
    notifications that no request asked for: the call is answered, memory stays bounded."""
    flood = {"lines": 200_000, "big": 6 * MIB, "notes": 100_000, "text": "after the flood"}
    logs: list[Any] = []

    async def main(url: str) -> None:
        async with Client.http(url) as c:
            r = await c.call_tool("flood", flood, timeout=60)
            assert r["content"][0]["text"] == "after the flood"
            r = await c.call_tool("echo", {"text": "fine"})
            assert r["content"][0]["text"] == "fine"
        async with Client.http(url, log_level="info", on_log=logs.append) as c:
            r = await c.call_tool("flood", {**flood, "big": 0}, timeout=60)
            assert r["content"][0]["text"] == "after the flood"

    raw = [sys.executable, str(RAW_SERVER)]
    with bridge_http(*raw, options=["--pool", "1"]) as (url, proc):
        before = proc.rss()
        run(main(url), timeout=150)
        grown = proc.rss() - before
        assert grown < 96 * MIB, grown
    assert 0 < len(logs) <= 100_000  # the request that asked for logs got them (or a bounded part)


def test_clients_leaving_mid_stream_cancel_their_calls_and_leak_nothing(tmp_path: Path) -> None:
    keys = [f"leave{i}" for i in range(30)]

    def leave(url: str, key: str) -> None:
        conn = connection(url)
        body = request_body(
            key, "tools/call", {"name": "tick", "arguments": {"key": key}}, progressToken=key
        )
        conn.request("POST", path_of(url), body=body, headers=modern_headers("tools/call", "tick"))
        resp = conn.getresponse()
        assert resp.getheader("content-type") == "text/event-stream"
        events = 0
        while events < 2:
            if resp.readline().startswith(b"data: "):
                events += 1
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()

    def cancelled(key: str) -> bool:
        path = tmp_path / f"{key}.events"
        return path.exists() and "cancelled" in path.read_text()

    with bridge_http(*SERVER, options=["--pool", "2"], env={"BRIDGE_EVENTS": str(tmp_path)}) as (
        url,
        proc,
    ):
        leave(url, "warmup")
        before = proc.rss()
        for key in keys:
            leave(url, key)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not all(cancelled(k) for k in keys):
            time.sleep(0.05)
        assert [k for k in keys if not cancelled(k)] == []
        assert proc.rss() - before < 20 * MIB
        assert len(psutil.Process(proc.pid).net_connections()) < 10

        async def still(url: str) -> str:
            async with Client.http(url) as c:
                return str((await c.call_tool("echo", {"text": "ok"}))["content"][0]["text"])

        assert run(still(url)) == "ok"


def test_shutdown_ends_streams_sessions_and_every_process(tmp_path: Path) -> None:
    """SIGTERM with a legacy session (a process of its own), an open listen and a call in
    flight: the listen gets its completion result, the bridge exits 0, nothing is left."""
    argv = [*MCPLINE, "bridge", "--http", "127.0.0.1:0", "--", *SERVER]
    proc = Proc(argv, {"BRIDGE_EVENTS": str(tmp_path)})
    url = proc.wait_for(r"listening on (http://\S+)")[1]
    proc.wait_for("mcpline bridge: serving")
    got: list[dict[str, Any]] = []

    def listen() -> None:
        conn = connection(url, timeout=30)
        body = request_body(
            "L", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        conn.request(
            "POST", path_of(url), body=body, headers=modern_headers("subscriptions/listen")
        )
        resp = conn.getresponse()
        for raw in iter(resp.readline, b""):
            if raw.startswith(b"data: "):
                got.append(json.loads(raw[6:]))

    async def main() -> None:
        async with Client.http(url, era="legacy") as legacy:
            await legacy.call_tool("pid", {})
            listener = asyncio.ensure_future(asyncio.to_thread(listen))
            await asyncio.sleep(0.5)
            family = proc.descendants()
            assert len(family) >= 3  # two pooled processes and the session's (+ a watchdog)
            proc.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(listener, 20)
            assert await asyncio.to_thread(proc.proc.wait, 20) == 0
            assert gone_within(family) == []

    try:
        run(main())
    finally:
        proc.stop()
    assert got[0]["method"] == "notifications/subscriptions/acknowledged"
    assert got[-1]["id"] == "L" and got[-1]["result"]["_meta"] == {
        "io.modelcontextprotocol/subscriptionId": "L"
    }


def test_a_killed_bridge_takes_its_processes_with_it() -> None:
    """SIGKILL leaves no chance to clean up: the host-death watchdog ends the processes."""
    argv = [*MCPLINE, "bridge", "--http", "127.0.0.1:0", "--pool", "2", "--", *SERVER]
    proc = Proc(argv)
    try:
        proc.wait_for("mcpline bridge: serving")
        family = proc.descendants()
        servers = [p for p in family if "bridge_server" in " ".join(p.cmdline())]
        assert len(servers) == 2
        proc.proc.kill()
        proc.proc.wait(10)
        assert gone_within(servers, 15) == []
    finally:
        proc.stop()


def test_a_legacy_session_whose_process_dies_ends_and_the_client_starts_anew(
    tmp_path: Path,
) -> None:
    """The session's state died with its process: the bridge ends the session, the client's
    next request gets 404 and mcpline's client opens a new session (a new process)."""

    async def main(url: str) -> None:
        async with Client.http(url, era="legacy") as c:
            first = (await c.call_tool("pid", {}))["structuredContent"]["result"]
            with pytest.raises(ServerError) as info:
                await c.call_tool("crash", {})
            assert "not sent again" in info.value.message
            deadline = time.monotonic() + 10
            second = first
            while second == first and time.monotonic() < deadline:
                with contextlib.suppress(ClientError):
                    second = (await c.call_tool("pid", {}))["structuredContent"]["result"]
                await asyncio.sleep(0.1)
            assert second != first and not psutil.pid_exists(first)

    with bridge_http(*SERVER, env={"BRIDGE_EVENTS": str(tmp_path)}) as (url, _):
        run(main(url))
