"""The client against real server processes: ours, and small misbehaving fakes."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import (
    Client,
    ConnectionLost,
    ProtocolError,
    RequestTimeout,
    ServerError,
    VersionMismatch,
)

from .util import QUICKSTART, Fake, run

PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"


def fake_client(fake: Fake, **kw: Any) -> Client:
    return Client.stdio(**fake.client_kwargs(**kw))


# --- modern ---------------------------------------------------------------------------


def test_modern_server_discover_list_call() -> None:
    async def main() -> None:
        async with Client.stdio(sys.executable, [str(QUICKSTART)]) as client:
            assert client.pid is None  # lazy: nothing started yet
            d = await client.discover()
            assert client.pid is not None
            assert d.era == "modern" and d.protocol_version == "2026-07-28"
            assert d.server_info["name"] == "calculator"
            assert "tools" in d.capabilities
            tools = await client.list_tools()
            assert [t["name"] for t in tools] == ["add", "divide"]
            ok = await client.call_tool("add", {"a": 2, "b": 3})
            assert ok["structuredContent"] == {"result": 5.0} and not ok.get("isError")
            bad = await client.call_tool("divide", {"a": 1, "b": 0})
            assert bad["isError"] is True and "zero" in bad["content"][0]["text"]
            with pytest.raises(ServerError) as ei:
                await client.call_tool("nope", {})
            assert ei.value.code == -32602

    run(main())


def test_every_request_carries_meta_and_cursors_are_followed(tmp_path: Path) -> None:
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(
            fake, on_elicit=lambda p: {"action": "decline"}, log_level="info"
        ) as c:
            tools = await c.list_tools()
            assert len(tools) == 10  # two pages
            await c.call_tool("echo", {"x": 1})

    run(main())
    reqs = [m for m in fake.received() if "id" in m]
    assert [m["method"] for m in reqs] == [
        "server/discover",
        "tools/list",
        "tools/list",
        "tools/call",
    ]
    for m in reqs:
        meta = m["params"]["_meta"]
        assert meta[PV] == "2026-07-28"
        assert meta[CAPS] == {
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        }
        assert meta[INFO]["name"] == "mcpline"
    assert reqs[2]["params"]["cursor"] == "page2"
    assert reqs[3]["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
    assert len({m["id"] for m in reqs}) == len(reqs)


def test_unsupported_version_is_retried_and_stays_modern(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "reject-first")

    async def main() -> None:
        async with fake_client(fake) as c:
            assert (await c.discover()).era == "modern"

    run(main())
    reqs = [m for m in fake.received() if "id" in m]
    assert [m["method"] for m in reqs] == ["server/discover", "server/discover"]
    assert reqs[0]["id"] != reqs[1]["id"]


def test_recognised_modern_error_on_discover_stays_modern(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "refuse-discover")

    async def main() -> None:
        async with fake_client(fake) as c:
            assert (await c.discover()).era == "modern"
            assert (await c.call_tool("echo", {}))["content"]

    run(main())
    assert "initialize" not in fake.methods()


def test_no_mutual_version_is_a_clear_error_without_initialize(tmp_path: Path) -> None:
    fake = Fake(tmp_path, FAKE_SUPPORTED="2099-01-01")

    async def main() -> None:
        async with fake_client(fake) as c:
            with pytest.raises(VersionMismatch) as ei:
                await c.discover()
            text = str(ei.value)
            assert "2026-07-28" in text and "2099-01-01" in text and "2025-11-25" in text

    run(main())
    assert "initialize" not in fake.methods()


@pytest.mark.parametrize("flags", ["modern", "legacy"])
def test_log_notifications_reach_the_callback(tmp_path: Path, flags: str) -> None:
    fake = Fake(tmp_path, flags)
    logs: list[dict[str, Any]] = []

    async def main() -> None:
        async with fake_client(fake, log_level="info", on_log=logs.append) as c:
            r = await c.call_tool("log", {"say": "hi"})
            assert r["content"][0]["text"] == "level=info"

    run(main())
    assert logs == [{"level": "info", "logger": "fake", "data": {"said": "hi"}}]
    if flags == "legacy":
        assert "logging/setLevel" in fake.methods()


def test_many_concurrent_requests_on_one_process() -> None:
    async def main() -> None:
        async with Client.stdio(sys.executable, [str(QUICKSTART)]) as c:
            calls = [c.call_tool("add", {"a": i, "b": i}) for i in range(200)]
            results = await asyncio.gather(*calls)
            assert [r["structuredContent"]["result"] for r in results] == [
                2.0 * i for i in range(200)
            ]

    run(main())


# --- legacy ---------------------------------------------------------------------------


def test_legacy_server_method_not_found_falls_back(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy")

    async def main() -> None:
        async with fake_client(fake) as c:
            d = await c.discover()
            assert d.era == "legacy" and d.protocol_version == "2025-11-25"
            assert d.server_info["name"] == "fake-legacy"
            r = await c.call_tool("echo", {"a": 1})
            assert "resultType" not in r  # absent resultType = complete
            assert json.loads(r["content"][0]["text"]) == {"a": 1}

    run(main())
    methods = fake.methods()
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    init = fake.received()[1]
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert "_meta" not in fake.received()[3]["params"]  # legacy requests carry no modern _meta


def test_silent_legacy_server_falls_back_after_probe_timeout(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy,silent")

    async def main() -> None:
        async with fake_client(fake, probe_timeout=0.5) as c:
            t0 = time.monotonic()
            d = await c.discover()
            assert d.era == "legacy"
            assert time.monotonic() - t0 >= 0.45

    run(main())
    msgs = fake.received()
    assert msgs[0]["method"] == "server/discover"
    assert msgs[1]["method"] == "notifications/cancelled"
    assert msgs[1]["params"]["requestId"] == msgs[0]["id"]
    assert msgs[2]["method"] == "initialize"


def test_slow_modern_server_that_misses_the_probe_is_probed_again(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "slow-start")

    async def main() -> None:
        async with fake_client(fake, probe_timeout=0.5) as c:
            assert (await c.discover()).era == "modern"
            assert (await c.call_tool("echo", {}))["content"]

    run(main())
    methods = [m for m in fake.methods() if m != "<response>"]
    assert methods[:4] == [
        "server/discover",
        "notifications/cancelled",
        "initialize",
        "server/discover",
    ]
    assert "notifications/initialized" not in methods


def test_legacy_negotiates_down(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy", FAKE_LEGACY_VERSION="2025-06-18")

    async def main() -> None:
        async with fake_client(fake) as c:
            assert (await c.discover()).protocol_version == "2025-06-18"

    run(main())


def test_legacy_unknown_version_is_refused(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy", FAKE_LEGACY_VERSION="2023-01-01")

    async def main() -> None:
        async with fake_client(fake) as c:
            with pytest.raises(VersionMismatch, match="2023-01-01"):
                await c.discover()

    run(main())


def test_legacy_server_that_exits_on_unknown_traffic(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy,exit-preinit")

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.05) as c:
            d = await c.discover()
            assert d.era == "legacy"
            assert c.restarts == 2
            assert (await c.call_tool("echo", {}))["content"]

    run(main())


def test_legacy_server_requests_use_the_host_handlers(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy")
    seen: list[str] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    def roots(params: dict[str, Any]) -> dict[str, Any]:
        return {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    async def main() -> None:
        async with fake_client(fake, on_elicit=elicit, on_roots=roots, on_sample=sample) as c:
            r = await c.call_tool("ask", {})
            got = json.loads(r["content"][0]["text"])
            assert got["ping"] == {}
            assert got["elicit"] == {"action": "accept", "content": {"name": "Ada"}}
            assert got["roots"] == {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}
            assert got["sample"]["model"] == "m" and "resultType" not in got["sample"]

    run(main())
    assert seen == ["Your name?"]
    init = next(m for m in fake.received() if m.get("method") == "initialize")
    assert init["params"]["capabilities"] == {
        "elicitation": {"form": {}},
        "sampling": {},
        "roots": {"listChanged": False},
    }


def test_legacy_server_request_without_a_handler_gets_method_not_found(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy")

    async def main() -> None:
        async with fake_client(fake) as c:
            got = json.loads((await c.call_tool("ask", {}))["content"][0]["text"])
            assert got["ping"] == {}
            assert got["elicit"]["code"] == got["sample"]["code"] == got["roots"]["code"] == -32601

    run(main())


def test_legacy_listen_delivers_unsolicited_list_changes(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy")

    async def main() -> None:
        c = fake_client(fake)
        async with c, c.listen(prompts=False, resources=False) as listener:
            it = listener.__aiter__()
            ack = await it.__anext__()
            assert ack.method == "notifications/subscriptions/acknowledged"
            assert listener.acknowledged == {"toolsListChanged": True}
            await c.call_tool("change", {})
            note = await asyncio.wait_for(it.__anext__(), 5)
            assert note.method == "notifications/tools/list_changed"

    run(main())
    assert "subscriptions/listen" not in fake.methods()


# --- MRTR -----------------------------------------------------------------------------


def test_mrtr_retry_echoes_request_state_with_a_new_id(tmp_path: Path) -> None:
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(
            fake,
            on_elicit=lambda p: {"action": "accept", "content": {"name": "Ada"}, "resultType": "x"},
            on_roots=lambda p: {"roots": [{"uri": "file:///w"}]},
        ) as c:
            r = await c.call_tool("greet", {"k": 1})
            got = json.loads(r["content"][0]["text"])
            assert (
                got["stateOk"] is True
                and got["name"] == "Ada"
                and got["roots"] == [{"uri": "file:///w"}]
            )

    run(main())
    calls = [m for m in fake.received() if m.get("method") == "tools/call"]
    assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"]
    assert "requestState" not in calls[0]["params"] and "inputResponses" not in calls[0]["params"]
    retry = calls[1]["params"]
    assert retry["arguments"] == {"k": 1} and retry["name"] == "greet"
    assert retry["requestState"] == 'opaque "state" \\ é \u2028 ü/+=='
    assert retry["inputResponses"]["who"] == {
        "action": "accept",
        "content": {"name": "Ada"},
    }  # no resultType
    assert retry["_meta"][CAPS] == {
        "elicitation": {"form": {}},
        "roots": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }
    raw = [line for line in fake.log.read_bytes().splitlines() if b'"requestState"' in line]
    assert len(raw) == 1


def test_mrtr_rounds_are_bounded(tmp_path: Path) -> None:
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, max_rounds=3) as c:
            with pytest.raises(ProtocolError, match="3 rounds"):
                await c.call_tool("loop", {})

    run(main())
    calls = [m for m in fake.received() if m.get("method") == "tools/call"]
    assert len(calls) == 4
    assert all(c["params"]["requestState"] == "again" for c in calls[1:])


def test_input_request_without_a_handler_is_refused(tmp_path: Path) -> None:
    from mcpline.client import InputDeclined

    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake) as c:
            with pytest.raises(InputDeclined, match="elicitation/create"):
                await c.call_tool("greet", {})

    run(main())


def test_missing_result_type_is_complete(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "no-resulttype")

    async def main() -> None:
        async with fake_client(fake) as c:
            assert (await c.discover()).era == "modern"
            assert (await c.call_tool("echo", {"a": 1}))["content"]

    run(main())


def test_bogus_result_type_is_an_error(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "bogus-resulttype")

    async def main() -> None:
        async with fake_client(fake) as c:
            with pytest.raises(ProtocolError, match="partial"):
                await c.call_tool("echo", {})

    run(main())


# --- timeouts ---------------------------------------------------------------------------


def test_timeout_sends_cancelled_for_that_id(tmp_path: Path) -> None:
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake) as c:
            await c.discover()
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow", {}, timeout=0.4)
            # the connection is still usable
            assert (await c.call_tool("echo", {}))["content"]

    run(main())
    msgs = fake.received()
    call = next(m for m in msgs if m.get("method") == "tools/call")
    cancels = [m for m in msgs if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [call["id"]]
    assert type(cancels[0]["params"]["requestId"]) is type(call["id"])


def test_progress_resets_the_timeout_but_not_the_maximum(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    ticks: list[float] = []

    async def main() -> None:
        async with fake_client(fake) as c:
            await c.discover()
            t0 = time.monotonic()
            with pytest.raises(RequestTimeout, match="maximum"):
                await c.call_tool(
                    "progress",
                    {},
                    timeout=0.5,
                    max_timeout=1.5,
                    on_progress=lambda p, t, m: ticks.append(p),
                )
            elapsed = time.monotonic() - t0
            assert 1.4 <= elapsed < 10

    run(main())
    assert len(ticks) >= 3 and ticks == sorted(ticks)
    call = next(m for m in fake.received() if m.get("method") == "tools/call")
    assert call["params"]["_meta"]["progressToken"] == call["id"]


# --- a reader that survives bad servers -------------------------------------------------


def test_garbage_lines_are_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fake = Fake(tmp_path, "garbage")

    async def main() -> None:
        async with fake_client(fake) as c:
            assert (await c.discover()).era == "modern"
            r = await c.call_tool("echo", {"ok": True})
            assert json.loads(r["content"][0]["text"]) == {"ok": True}

    with caplog.at_level("WARNING", logger="mcpline.client"):
        run(main())
    assert any("not a JSON-RPC message" in r.getMessage() for r in caplog.records)


HUGE_HOST = r"""
import asyncio, json, sys
from mcpline.client import Client, ProtocolError

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

async def main():
    env = json.loads(sys.argv[2])
    argv = [sys.argv[1], "huge"]
    async with Client.stdio(sys.executable, argv, env=env, max_line_bytes=4 << 20) as c:
        await c.discover()
        before = hwm()
        try:
            await c.call_tool("huge", {"mb": 200}, timeout=60)
            outcome = "no error"
        except ProtocolError as exc:
            outcome = str(exc)
        # the stream resynchronises on the newline that ends the huge line
        after_call = (await c.call_tool("echo", {"again": 1}))["content"][0]["text"]
        report = {"before": before, "after": hwm(), "outcome": outcome, "next": after_call}
        print(json.dumps(report))

asyncio.run(main())
"""


@pytest.mark.linux_only(reason="peak memory from /proc/self/status")
def test_200mb_without_newline_fails_cleanly_with_bounded_memory(tmp_path: Path) -> None:
    import subprocess

    fake = Fake(tmp_path, "huge")
    proc = subprocess.run(
        [sys.executable, "-c", HUGE_HOST, fake.argv[0], json.dumps(fake.env)],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    report = json.loads(proc.stdout)
    assert "line limit" in report["outcome"]
    assert json.loads(report["next"]) == {"again": 1}
    growth = report["after"] - report["before"]
    print(f"client RSS high-water growth while 200 MB streamed: {growth / 2**20:.1f} MiB")
    assert growth < 64 * 2**20


def test_heavy_stderr_is_drained_and_not_an_error(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "stderr-heavy")
    lines: list[str] = []

    async def main() -> None:
        async with fake_client(fake, on_stderr=lines.append) as c:
            for _ in range(2):
                assert (await c.call_tool("echo", {}, timeout=30))["content"]

    run(main())
    assert len(lines) >= 3 * 20000  # discover + two calls, ~20 MB each
    assert lines[0].startswith("noise line 0")


# --- crashes -----------------------------------------------------------------------------


def test_crash_on_first_request_restarts_and_retries(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "crash-first")

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.05) as c:
            d = await c.discover()
            assert d.era == "modern"
            assert c.restarts == 1
            assert (await c.call_tool("echo", {}))["content"]

    run(main())


def test_crash_during_idempotent_tool_call_is_retried(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "crash-call")

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.05) as c:
            await c.list_tools()  # learns that echo is read-only
            r = await c.call_tool("echo", {"n": 1})
            assert json.loads(r["content"][0]["text"]) == {"n": 1}
            assert c.restarts == 1

    run(main())
    assert fake.methods().count("tools/call") == 2


def test_crash_during_other_tool_call_fails_retriably(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "crash-call")

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.05) as c:
            await c.list_tools()
            with pytest.raises(ConnectionLost) as ei:
                await c.call_tool("write", {"n": 1})
            assert ei.value.retriable and "code 5" in str(ei.value)
            # the next request starts a new process
            assert (await c.call_tool("write", {"n": 2}))["content"]

    run(main())
    assert fake.methods().count("tools/call") == 2


def test_restarts_are_bounded(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy,exit-preinit")

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.01, max_restarts=1) as c:
            with pytest.raises(ConnectionLost, match="gave up after 1 restarts") as ei:
                await c.discover()
            assert not ei.value.retriable

    run(main())


def test_listen_stream_is_reestablished_after_a_crash(tmp_path: Path) -> None:
    fake = Fake(tmp_path)

    async def main() -> None:
        async with fake_client(fake, restart_backoff=0.05) as c:
            listener = c.listen()
            got: list[str] = []
            async with listener:
                it = listener.__aiter__()
                got.append((await it.__anext__()).method)
                got.append((await it.__anext__()).method)
                assert listener.acknowledged == {"toolsListChanged": True}
                with pytest.raises(ConnectionLost):
                    await c.call_tool("die", {})
                got.append((await asyncio.wait_for(it.__anext__(), 10)).method)
                assert listener.establishments == 2
            assert got == [
                "notifications/subscriptions/acknowledged",
                "notifications/tools/list_changed",
                "notifications/subscriptions/acknowledged",
            ]

    run(main())
    listens = [m for m in fake.received() if m.get("method") == "subscriptions/listen"]
    assert len(listens) == 2
    assert listens[0]["params"]["notifications"] == {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourcesListChanged": True,
    }
    cancels = [m for m in fake.received() if m.get("method") == "notifications/cancelled"]
    assert cancels and cancels[-1]["params"]["requestId"] == listens[-1]["id"]
