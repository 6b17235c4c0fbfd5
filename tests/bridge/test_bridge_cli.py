"""``mcpline bridge`` from the command line: ``mcpServers`` config entries in both directions
(``${VAR}`` expanded by the client commands' loader), usage errors, and the bounds of legacy
sessions (each a server process)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from mcpline import Client
from mcpline.errors import ServerError

from ..transports.http_util import ACCEPT
from .util import (
    BRIDGE_SERVER,
    LISTENING,
    MCPLINE,
    Proc,
    bridge_http,
    connection,
    gone_within,
    http_server,
    path_of,
)

pytestmark = pytest.mark.timeout(120)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_a_command_entry_is_served_over_http(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": ["${FIXTURE}"], "env": {"TAG": "${TAG:-cfg}"}}
    config.write_text(json.dumps({"mcpServers": {"fixture": entry}}))
    argv = [*MCPLINE, "bridge", "--http", "127.0.0.1:0", "--config", str(config)]
    proc = Proc([*argv, "--name", "fixture"], {"FIXTURE": str(BRIDGE_SERVER)})

    async def main(url: str) -> None:
        async with Client.http(url) as c:
            assert (await c.discover()).server_info["name"] == "bridge-fixture"

    try:
        url = proc.wait_for(LISTENING)[1]
        proc.wait_for("mcpline bridge: serving")
        family = proc.descendants()
        run(main(url))
    finally:
        proc.stop()
    assert gone_within(family) == []


def test_a_url_entry_is_served_over_stdio(tmp_path: Path) -> None:
    with http_server() as (url, _):
        config = tmp_path / "mcp.json"
        base = url.removesuffix("/mcp")
        entry = {"type": "http", "url": "${BASE}/mcp", "headers": {"X-Tag": "${TAG:-t}"}}
        config.write_text(json.dumps({"mcpServers": {"web": entry}}))
        argv = [*MCPLINE, "bridge", "--stdio", "--config", str(config), "--name", "web"]

        async def main() -> None:
            async with Client.stdio(argv[0], argv[1:], env={"BASE": base}) as c:
                d = await c.discover()
                assert d.server_info["name"] == "everything-stateless-server"

        run(main())


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--http", "8000", "--stdio", "--", "x"], "give --http HOST:PORT"),
        (["--http", "8000"], "give the server as"),
        (["--stdio", "--", "python", "x.py"], "--stdio bridges an HTTP server"),
        (["--http", "8000", "--server", "http://h/mcp"], "--server and --header are for --stdio"),
        (["--stdio", "--server", "ftp://h/mcp"], "must be an http(s)://HOST:PORT/mcp URL"),
        (["--http", "8000", "--pool", "0", "--", "x"], "--pool must be at least 1"),
        (["--http", "nope", "--", "x"], "bad address"),
        (
            ["--http", "8000", "--bearer-token-file", "/nonexistent/token", "--", "x"],
            "--bearer-token-file: cannot read the token file",
        ),
    ],
)
def test_usage_errors_exit_2(args: list[str], says: str) -> None:
    proc = subprocess.run([*MCPLINE, "bridge", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_legacy_sessions_are_bounded_in_number_and_idle_time() -> None:
    """Each session is a process: past ``--max-sessions`` a new one is refused while the
    others are busy (mcpline's client keeps a GET stream open), and one that ends (DELETE)
    takes its process with it; a session left idle (no request, no open stream) is ended
    after ``--session-idle-timeout``, its process too."""
    options = ["--max-sessions", "2", "--session-idle-timeout", "1"]

    async def pid_of(c: Client) -> int:
        return int((await c.call_tool("pid", {}))["structuredContent"]["result"])

    async def main(url: str) -> None:
        async with Client.http(url, era="legacy") as a, Client.http(url, era="legacy") as b:
            pa, pb = await pid_of(a), await pid_of(b)
            first = psutil.Process(pa)
            async with Client.http(url, era="legacy", max_restarts=0) as c:
                with pytest.raises(ServerError) as info:
                    await pid_of(c)
                assert "2 sessions open (max_sessions)" in info.value.message
            await a.aclose()
            assert gone_within([first]) == []
            async with Client.http(url, era="legacy") as c:
                assert await pid_of(c) not in (pa, pb)
        # A session nobody holds a stream of: the idle timeout ends it and its process.
        before = {p.pid for p in proc.descendants()}
        sid = await asyncio.to_thread(raw_session, url)
        assert sid
        fresh: list[psutil.Process] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not fresh:
            fresh = [p for p in proc.descendants() if p.pid not in before]
            await asyncio.sleep(0.02)
        assert fresh, "the raw session started no process"
        assert gone_within(fresh, 15) == []

    with bridge_http(sys.executable, BRIDGE_SERVER, options=options) as (url, proc):
        run(main(url))


def raw_session(url: str) -> str:
    """initialize and notifications/initialized by hand, no GET stream: an idle session."""
    conn = connection(url)
    try:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            }
        ).encode()
        headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        conn.request("POST", path_of(url), body=body, headers=headers)
        resp = conn.getresponse()
        sid = resp.getheader("mcp-session-id") or ""
        resp.read()
        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        conn.request("POST", path_of(url), body=note, headers={**headers, "Mcp-Session-Id": sid})
        conn.getresponse().read()
        return sid
    finally:
        conn.close()
