"""``mcpline bridge --stdio --server URL``: an HTTP server served over stdio, in front of
mcpline's own HTTP server (both eras, one endpoint), a modern-only one and a legacy-only one.
Its clients are real: ``mcpline check``, the official ``mcp`` SDK client in both of its modes,
and mcpline's stdio client."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client as McpClient  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from mcpline import Client  # noqa: E402
from mcpline.errors import ClientError  # noqa: E402

from ..check.util import failed, run_check, statuses  # noqa: E402
from ..interop.legacy_sdk import Recorder, first_text  # noqa: E402
from ..interop.legacy_sdk import legacy_session as sdk_legacy_session  # noqa: E402
from .util import FIXTURES, Proc, bridge_stdio_argv, http_server  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def run(coro: Any, timeout: float = 90) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def params_for(url: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    argv = bridge_stdio_argv(url)
    return StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **(env or {})})


def test_mcpline_check_passes_every_check_through_the_bridge() -> None:
    with http_server() as (url, _):
        code, report = run_check("--exit-timeout", "3", server=bridge_stdio_argv(url))
    assert failed(report) == {}
    assert code == 0 and report["ok"] is True
    st = statuses(report)
    assert report["facts"]["era"] == "dual-era" and report["facts"]["slow_tool"] == "sleep"
    for cid in (
        "framing.stdout-pure",
        "concurrency.slow-does-not-block",
        "cancellation.no-reply-after-cancel",
        "lifecycle.stdin-eof-busy",
        "legacy.era",
        "errors.missing-capability",
    ):
        assert st.get(cid) == "PASS", (cid, st.get(cid))
    assert [c for c in report["checks"] if c["status"] in ("WARN", "SKIP")] == []


def test_the_official_client_in_modern_mode() -> None:
    async def main(url: str) -> None:
        async with (
            stdio_client(params_for(url)) as (read, write),
            ClientSession(read, write) as s,
        ):
            discovered = await s.discover()
            assert "2026-07-28" in discovered.supported_versions
            tools = await s.list_tools()
            assert "test_simple_text" in {t.name for t in tools.tools}
            r = await s.call_tool("test_simple_text", {})
            assert r.content[0].text == "This is a simple text response for testing."  # type: ignore[union-attr]

        async with McpClient(params_for(url)) as c:
            assert c.protocol_version == "2026-07-28"
            assert c.server_info is not None and c.server_info.name == "everything-stateless-server"

    with http_server() as (url, _):
        anyio.run(main, url)


def test_the_official_client_progress_and_concurrency() -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def main(url: str) -> None:
        async with McpClient(params_for(url)) as c:
            r = await c.call_tool("progress", {"steps": 4}, progress_callback=on_progress)
            assert r.content[0].text == "done"  # type: ignore[union-attr]
            results = await asyncio.gather(*(c.call_tool("sleep", {"ms": 300}) for _ in range(10)))
            assert all(x.content[0].text == "slept 300" for x in results)  # type: ignore[union-attr]

    with http_server(FIXTURES / "core_server.py") as (url, _):
        asyncio.run(asyncio.wait_for(main(url), 60))
    assert seen == [1, 2, 3, 4]


def legacy_session(url: str, body: Any, recorder: Recorder) -> None:
    """The official client in its legacy mode (initialize), over the stdio bridge."""
    sdk_legacy_session(params_for(url), "everything-stateless-server", body, recorder, 60)


def test_the_official_client_in_legacy_mode_is_translated() -> None:
    """initialize, sampling, multi-round elicitation and roots: the bridge answers the
    handshake from server/discover and turns each InputRequiredResult into real requests to
    the client, retrying with the answers."""
    rec = Recorder()

    async def body(s: ClientSession) -> None:
        names = [t.name for t in (await s.list_tools()).tools]
        assert "test_sampling" in names
        assert first_text(await s.call_tool("test_sampling", {"prompt": "hi"})) == (
            "LLM response: Paris"
        )
        result = await s.call_tool("test_input_required_result_multi_round", {})
        assert first_text(result) == "Multi-round complete for Ada who likes green"
        result = await s.call_tool("test_input_required_result_multiple_inputs", {})
        assert first_text(result) == "Name: Ada; Greeting: Paris; Roots: 2"
        await s.send_ping()
        await s.set_logging_level("debug")
        assert first_text(await s.call_tool("test_tool_with_logging", {}))
        read = await s.read_resource("test://static-text")
        assert read.contents[0].text == "This is the content of the static text resource."  # type: ignore[union-attr]
        with pytest.raises(MCPError) as err:
            await s.read_resource("test://nonexistent-resource-for-conformance-testing")
        assert err.value.code == -32002
        prompt = await s.get_prompt("test_input_required_result_prompt")
        assert prompt.messages[0].content.text == "Prompt with context: c"  # type: ignore[union-attr]

    with http_server() as (url, _):
        legacy_session(url, body, rec)
    assert rec.asked[:1] == ["sample"]
    assert "elicit:Step 1: What is your name?" in rec.asked
    assert "elicit:Step 2: What is your favorite color?" in rec.asked
    assert "roots" in rec.asked
    assert {"Tool execution started", "Tool processing data", "Tool execution completed"} <= set(
        rec.logs
    )


def test_tool_parameters_are_mirrored_in_headers_by_the_bridge() -> None:
    """The stdio host knows nothing of ``x-mcp-header``; the bridge's HTTP client mirrors the
    tool's annotated arguments as ``Mcp-Param-*``, which the server checks."""

    async def main(url: str) -> None:
        argv = bridge_stdio_argv(url)
        async with Client.stdio(argv[0], argv[1:], era="modern") as c:
            r = await c.call_tool("test_header_param", {"region": "eu-west"})
            assert r["content"][0]["text"] == "region=eu-west"

    with http_server() as (url, _):
        run(main(url))


def test_a_declined_elicitation_is_the_servers_to_judge() -> None:
    rec = Recorder(elicit_action="decline")

    async def body(s: ClientSession) -> None:
        result = await s.call_tool("test_input_required_result_elicitation", {})
        assert first_text(result) == "The user chose to decline."

    with http_server() as (url, _):
        legacy_session(url, body, rec)


def test_a_legacy_session_hears_list_changes_through_a_listen_of_the_bridge() -> None:
    async def main(url: str) -> None:
        argv = bridge_stdio_argv(url)
        async with Client.stdio(argv[0], argv[1:], era="legacy") as c:
            assert (await c.discover()).era == "legacy"
            async with c.listen(tools=True) as listener:
                await asyncio.sleep(0.5)  # the bridge's listen on the server is open by now
                await c.call_tool("test_trigger_tool_change", {})
                note = await asyncio.wait_for(listener.__anext__(), 15)
                while note.synthesized:
                    note = await asyncio.wait_for(listener.__anext__(), 15)
                assert note.method == "notifications/tools/list_changed"

    with http_server() as (url, _):
        run(main(url))


@pytest.fixture(scope="module")
def legacy_only() -> Any:
    proc = Proc([sys.executable, str(FIXTURES / "legacy_http_server.py")])
    try:
        yield proc.wait_for(r"listening on (http://\S+)")[1]
    finally:
        proc.stop()


def test_a_modern_host_of_a_legacy_only_endpoint_is_translated(legacy_only: str) -> None:
    """The endpoint refuses 2026-07-28 requests; the bridge opens legacy sessions of its own
    and serves the modern stdio host statelessly: discover from the InitializeResult, the
    server's elicitation mid-call as an InputRequiredResult, answered on the retry."""
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Lin"}}

    async def main() -> None:
        argv = bridge_stdio_argv(legacy_only)
        async with Client.stdio(argv[0], argv[1:], era="modern", on_elicit=elicit) as c:
            d = await c.discover()
            assert d.era == "modern" and d.server_info["name"] == "mcp-conformance-test-server"
            r = await c.call_tool("test_input_required_result_elicitation", {})
            assert r["content"][0]["text"] == "Hello, Lin!"
            assert r["resultType"] == "complete"
            seen: list[float] = []
            r = await c.call_tool(
                "test_tool_with_progress", {}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert seen == [0, 50, 100]
            read = await c.read_resource("test://static-text")
            assert read["ttlMs"] == 0 and read["cacheScope"] == "private"

    run(main())
    assert asked == ["What is your name?"]


def test_a_legacy_host_of_a_legacy_only_endpoint_gets_its_own_session(legacy_only: str) -> None:
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Kay"}}

    async def main() -> None:
        argv = bridge_stdio_argv(legacy_only)
        async with Client.stdio(argv[0], argv[1:], era="legacy", on_elicit=elicit) as c:
            assert (await c.discover()).protocol_version == "2025-11-25"
            r = await c.call_tool("test_input_required_result_elicitation", {})
            assert r["content"][0]["text"] == "Hello, Kay!"

    run(main())
    assert asked == ["What is your name?"]


def test_a_modern_only_endpoint_serves_legacy_hosts_through_translation() -> None:
    target = FIXTURES / "modern_only_server.py"

    async def main(url: str) -> None:
        argv = bridge_stdio_argv(url)
        async with Client.stdio(argv[0], argv[1:], era="legacy") as c:
            assert (await c.discover()).era == "legacy"
            r = await c.call_tool("echo", {"text": "legacy in, modern out"})
            assert r["content"][0]["text"] == "legacy in, modern out"

    with http_server(target) as (url, _):
        run(main(url))


async def logged_line(lines: list[str], text: str, timeout: float = 30) -> str:
    """The first of ``lines`` holding ``text``, waiting for it (stderr is read apart from the
    answers on stdout, so a line written before an answer may be read after it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (found := [line for line in lines if text in line]):
        assert loop.time() < deadline, f"{text!r} never logged: {lines}"
        await asyncio.sleep(0.02)
    return found[0]


def test_an_unreachable_server_is_an_error_naming_it_and_tried_again() -> None:
    """The bridge serves its stdio client at once; while the server cannot be reached each
    request fails with -32603 saying so, with an incident id under which the bridge's log
    names the address (stdout carries only those answers)."""
    stderr: list[str] = []

    async def main() -> None:
        argv = bridge_stdio_argv("http://127.0.0.1:9/mcp")
        async with Client.stdio(
            argv[0], argv[1:], era="modern", max_restarts=0, on_stderr=stderr.append
        ) as c:
            for _ in range(2):
                with pytest.raises(ClientError) as info:
                    await c.discover()
                message = str(info.value)
                assert "the bridge cannot reach the bridged server" in message
                assert "127.0.0.1:9" not in message
                incident = re.search(r"incident ([0-9a-f]{8})", message)
                assert incident is not None, message
                logged = await logged_line(stderr, f"incident {incident[1]}")
                assert "127.0.0.1:9" in logged, stderr

    run(main())


def test_oauth_browser_flow_then_the_cached_token(tmp_path: Path) -> None:
    """A server that answers 401: the bridge runs the browser flow once (the "browser" here
    is a script that follows the authorization URL, as a user's consent would), keeps the
    token in the user's config directory (0600), and a second bridge uses it."""
    from ..client.http_fakes import fake_server
    from .oauth_world import ConsentingWorld

    browser = tmp_path / "browser"  # returns at once, as a browser does, and follows the URL
    browser.write_text(
        f"#!{sys.executable}\nimport os, sys, urllib.request\n"
        "if os.fork() == 0:\n    urllib.request.urlopen(sys.argv[1], timeout=30)\n"
    )
    browser.chmod(0o755)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "BROWSER": str(browser)}
    world = ConsentingWorld()
    errs: list[str] = []

    async def main() -> None:
        async with fake_server(world.handler) as srv:
            world.url = srv.url
            argv = bridge_stdio_argv(srv.url + "/mcp")
            for _ in range(2):
                async with Client.stdio(
                    argv[0],
                    argv[1:],
                    env=env,
                    era="modern",
                    probe_timeout=60,
                    on_stderr=errs.append,
                ) as c:
                    d = await c.discover()
                    assert d.server_info["name"] == "fake"
                    await c.call_tool("x", {})

    try:
        run(main(), timeout=120)
    except BaseException:
        print("\n".join(errs))
        raise
    assert len(world.authorizations) == 1  # the second bridge used the cached token
    store = tmp_path / "config" / "mcpline" / "oauth"
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    files = list(store.iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
