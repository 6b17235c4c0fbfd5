"""The bridge as a hostile peer sees it: real ``mcpline bridge`` processes on loopback.

What a remote HTTP client learns when the bridged stdio server fails: a generic -32603 with an
incident id, never the server's stderr, command, path or exit status; those go to the
bridge's own log under that id (issue 22, H2). The bridge's own secrets never reach a child,
and a short one is a usage error (M1).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from mcpline import Client
from mcpline.errors import ServerError

from ..bridge.util import (
    EVERYTHING,
    FIXTURES,
    MCPLINE,
    Proc,
    bridge_http,
    connection,
    http_server,
    path_of,
)
from ..transports.http_util import TEST_SERVER as HTTP_TEST_SERVER

pytestmark = pytest.mark.timeout(180)

SECRET = "DATABASE_URL=postgres://app:hunter2@db.internal/prod"
LEGACY = "2025-11-25"
INCIDENT = re.compile(r"incident ([0-9a-f]{8})")

LEAKY_SERVER = f'''
import os, sys
from pathlib import Path
from mcpline import Server

STATE = Path(os.environ["LEAKY_STATE"])
with open(STATE / "starts", "a", encoding="utf-8") as f:
    f.write(f"{{os.getpid()}}\\n")
if (STATE / "broken").exists():
    print({SECRET!r}, file=sys.stderr, flush=True)
    sys.exit(3)

server = Server("leaky", version="1.0.0")


@server.tool
def leak() -> str:
    """Write a secret on stderr and die."""
    print({SECRET!r}, file=sys.stderr, flush=True)
    (STATE / "broken").touch()
    os._exit(7)


@server.tool
def environment() -> dict[str, str]:
    """This process's environment."""
    return dict(os.environ)


if __name__ == "__main__":
    server.run()
'''


def run(coro: Any, timeout: float = 120) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


@pytest.fixture
def leaky(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    """The server command line, its environment and its state directory."""
    script = tmp_path / "leaky_server.py"
    script.write_text(LEAKY_SERVER, encoding="utf-8")
    state = tmp_path / "state"
    state.mkdir()
    return [sys.executable, str(script)], {"LEAKY_STATE": str(state)}, state


def starts(state: Path) -> int:
    path = state / "starts"
    return len(path.read_text().split()) if path.exists() else 0


def legacy_initialize(
    url: str, rid: int = 1, timeout: float = 30.0, source: str | None = None
) -> dict[str, Any]:
    """One raw legacy ``initialize`` POST (from loopback address ``source``); the JSON-RPC
    response (from JSON or SSE), with the HTTP status as ``"status"``."""
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"},
        },
    }
    conn = connection(url, timeout, source)
    try:
        conn.request(
            "POST",
            path_of(url),
            json.dumps(body),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        resp = conn.getresponse()
        return {**answer_of(resp), "status": resp.status}
    finally:
        conn.close()


def answer_of(resp: http.client.HTTPResponse) -> dict[str, Any]:
    """The JSON-RPC response in a JSON body or the first response event of an SSE one."""
    if resp.getheader("Content-Type", "").startswith("application/json"):
        found: dict[str, Any] = json.loads(resp.read())
        return found
    for raw in resp:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data:") and line[5:].strip():
            msg = json.loads(line[5:])
            if "result" in msg or "error" in msg:
                return dict(msg)
    raise AssertionError(f"no response in the stream (HTTP {resp.status})")


def assert_no_local_detail(message: str, *details: str) -> None:
    for detail in (SECRET, "hunter2", "exited", "code 7", "code 3", "stderr", *details):
        assert detail not in message, f"{detail!r} reached the client: {message!r}"


def logged_incident(proc: Proc, incident: str) -> str:
    """The bridge's log line for ``incident``."""
    return proc.wait_for(rf"incident {incident}\b.*", timeout=15)[0]


# --- H2: what a remote client learns of a local failure ------------------------------------


def test_a_failing_server_tells_remote_clients_an_incident_id_and_its_log_the_rest(
    leaky: tuple[list[str], dict[str, str], Path],
) -> None:
    """A call whose process dies, a request while no process can start, and a legacy session
    whose process dies at start: each client error names an incident and nothing local; the
    bridge's log line for that incident has the exit status and the stderr with the secret."""
    server, env, state = leaky
    script = server[1]

    async def modern(url: str) -> list[ServerError]:
        seen = []
        async with Client.http(url) as c:
            with pytest.raises(ServerError) as died:
                await c.call_tool("leak", {})
            seen.append(died.value)
            # Every replacement now dies at start: the next request waits, then fails.
            with pytest.raises(ServerError) as down:
                await c.call_tool("environment", {})
            seen.append(down.value)
        return seen

    with bridge_http(*server, options=["--pool", "1"], env=env) as (url, proc):
        errors = run(modern(url))
        legacy = legacy_initialize(url)
        assert "error" in legacy, legacy
        messages = [(e.code, e.message, e.data) for e in errors]
        messages.append((legacy["error"]["code"], legacy["error"]["message"], None))
        for code, message, _data in messages:
            assert code == -32603, messages
            assert_no_local_detail(message, script, os.path.basename(script), sys.executable)
            found = INCIDENT.search(message)
            assert found, message
            line = logged_incident(proc, found[1])
            assert SECRET in line and ("code 7" in line or "code 3" in line), line


# --- M1: the bridge's own secrets -----------------------------------------------------------

TOKEN = "bridge-token-0123456789abcdef"
STATE_KEY = "state-key-0123456789abcdef-secret"


def test_the_bridges_secrets_never_reach_its_child(
    leaky: tuple[list[str], dict[str, str], Path],
) -> None:
    server, env, _state = leaky
    env = {**env, "MCPLINE_BRIDGE_TOKEN": TOKEN, "MCPLINE_STATE_KEY": STATE_KEY}

    async def child_environment(url: str) -> dict[str, Any]:
        async with Client.http(url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            result = await c.call_tool("environment", {})
        found: dict[str, Any] = result["structuredContent"]
        return found

    with bridge_http(*server, env=env) as (url, _proc):
        seen = run(child_environment(url))
    assert seen.get("LEAKY_STATE") == env["LEAKY_STATE"], "the rest of the environment is kept"
    assert "MCPLINE_BRIDGE_TOKEN" not in seen and "MCPLINE_STATE_KEY" not in seen
    assert TOKEN not in json.dumps(seen) and STATE_KEY not in json.dumps(seen)


def usage_error(args: list[str], **env: str) -> str:
    """The stderr of ``mcpline ARGS`` (with ``env`` added), which must end as a usage error:
    exit status 2, one message and no traceback, nothing on stdout."""
    done = subprocess.run(
        [*MCPLINE, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    return done.stderr


def test_a_short_token_in_the_environment_is_a_usage_error(
    leaky: tuple[list[str], dict[str, str], Path],
) -> None:
    server, env, _state = leaky
    args = ["bridge", "--http", "127.0.0.1:0", "--", *server]
    stderr = usage_error(args, **env, MCPLINE_BRIDGE_TOKEN="abc")
    assert "$MCPLINE_BRIDGE_TOKEN" in stderr and "at least 16" in stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", str(EVERYTHING), "--http", "127.0.0.1:0", "--workers", "2"],
        ["run", str(EVERYTHING), "--http", "127.0.0.1:0"],
        ["run", str(EVERYTHING)],
        ["bridge", "--http", "127.0.0.1:0", "--", sys.executable, str(EVERYTHING)],
    ],
    ids=["workers", "http", "stdio", "bridge"],
)
def test_a_short_state_key_is_a_usage_error(args: list[str]) -> None:
    stderr = usage_error(args, MCPLINE_STATE_KEY="short")
    assert "at least 16 bytes" in stderr and "MCPLINE_STATE_KEY" in stderr


def _events(directory: Path, key: str) -> list[str]:
    path = directory / f"{key}.events"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def test_a_call_the_child_never_answers_ends_at_the_call_timeout(tmp_path: Path) -> None:
    """``bridge --http``: a stdio server that never answers a call; the call fails with
    -32603 naming the bound, the child is told to cancel it, and the bridge serves on."""

    async def main(url: str) -> None:
        async with Client.http(url) as c:
            with pytest.raises(ServerError) as info:
                await c.call_tool("wait", {"key": "stuck", "ms": 3_600_000})
            assert info.value.code == -32603
            assert "did not answer tools/call within 2 s" in info.value.message
            again = await c.call_tool("echo", {"text": "still here"})
            assert again["content"][0]["text"] == "still here"

    server = [sys.executable, str(FIXTURES / "bridge_server.py")]
    options = ["--pool", "1", "--call-timeout", "2"]
    with bridge_http(*server, options=options, env={"BRIDGE_EVENTS": str(tmp_path)}) as (url, _):
        asyncio.run(asyncio.wait_for(main(url), 120))
        deadline = time.monotonic() + 60
        while "cancelled" not in _events(tmp_path, "stuck") and time.monotonic() < deadline:
            time.sleep(0.05)
    assert _events(tmp_path, "stuck")[::2] == ["started", "cancelled"]


def test_a_never_ending_upstream_stream_ends_at_the_call_timeout() -> None:
    """``bridge --stdio``: the HTTP server's event stream for a call stays open (keep-alive
    comments, no answer); the bridged call still ends at ``--call-timeout``."""

    async def main(url: str) -> None:
        argv = [*MCPLINE, "bridge", "--stdio", "--server", url, "--call-timeout", "2"]
        async with Client.stdio(argv[0], argv[1:]) as c:
            with pytest.raises(ServerError) as info:
                await c.call_tool("wait", {"key": "stuck", "ms": 3_600_000})
            assert info.value.code == -32603
            assert "did not answer tools/call within 2 s" in info.value.message
            deadline = time.monotonic() + 60
            seen: list[str] = []
            while "cancelled" not in seen and time.monotonic() < deadline:
                got = await c.call_tool("events", {"key": "stuck"})
                seen = got["structuredContent"]["result"]
                await asyncio.sleep(0.05)
            assert seen == ["started", "cancelled"]

    with http_server(HTTP_TEST_SERVER) as (url, _):
        asyncio.run(asyncio.wait_for(main(url), 120))


def test_the_call_timeout_must_be_positive() -> None:
    args = ["bridge", "--http", "127.0.0.1:0", "--call-timeout", "0", "--", "true"]
    assert "--call-timeout" in usage_error(args)


# --- M7: sessions are processes: bounded per client, in number and in rate ----------------


def test_an_initialize_flood_spawns_a_bounded_number_of_processes(
    leaky: tuple[list[str], dict[str, str], Path],
) -> None:
    """The review's 151 initializes started 171 processes. Now one client gets a burst of
    --max-sessions-per-client, then --session-rate a second; the rest get 429 with
    Retry-After at once, and another client still starts a session and is served."""
    server, env, state = leaky
    options = ["--max-sessions-per-client", "4", "--session-rate", "1"]
    with bridge_http(*server, options=options, env=env) as (url, proc):
        legacy_initialize(url, source="127.0.0.3")  # the pool is up; one session made
        before = starts(state)
        began = time.monotonic()
        answers = [legacy_initialize(url, i, source="127.0.0.1") for i in range(151)]
        elapsed = time.monotonic() - began
        spawned = starts(state) - before
        refused = [a for a in answers if a["status"] == 429]
        assert refused and "faster than 1 a second" in refused[0]["error"]["message"]
        assert spawned <= 4 + elapsed * 1 + 1, (spawned, elapsed)
        assert len(refused) + spawned >= 151 - 1
        victim = legacy_initialize(url, source="127.0.0.2")
        assert victim["status"] == 200 and "result" in victim
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) <= 16 + 2  # --max-sessions, and the pool
