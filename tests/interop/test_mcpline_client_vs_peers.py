"""Our client against real stdio servers built with the pinned peers: the official `mcp`
SDK and FastMCP (both in the `test` extra). Both peers serve both eras, so each is tested
modern (auto-detected by the probe) and legacy (forced initialize handshake).

No skips: a missing peer makes its server exit at start-up and these tests fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import Client, ServerError

from ..client.util import run
from ..proc import FIXTURES

MCP_PEER = FIXTURES / "client_peer_mcp.py"
FASTMCP_PEER = FIXTURES / "client_peer_fastmcp.py"
# The peers import a lot at start-up; on a loaded machine that can take several seconds.
SLOW_START = 30.0


def peer(script: Path, era: str, **kw: Any) -> Client:
    asked: list[dict[str, Any]] = kw.pop("asked", [])

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    return Client.stdio(
        sys.executable,
        [str(script)],
        era=era,
        probe_timeout=SLOW_START,
        on_elicit=elicit,
        on_stderr=lambda line: None,
        **kw,
    )


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_official_sdk_server(era: str) -> None:
    asked: list[dict[str, Any]] = []

    async def main() -> None:
        async with peer(MCP_PEER, era, asked=asked) as c:
            d = await c.discover()
            assert d.era == ("modern" if era == "auto" else "legacy")
            assert d.protocol_version == ("2026-07-28" if era == "auto" else "2025-11-25")
            assert d.server_info["name"] == "official-peer"
            assert {"tools", "resources", "prompts"} <= set(d.capabilities)

            tools = await c.list_tools()
            assert [t["name"] for t in tools] == ["add", "fail", "greet"]
            assert c._tool_is_idempotent("add") and not c._tool_is_idempotent("fail")

            r = await c.call_tool("add", {"a": 2, "b": 3})
            assert r["structuredContent"] == {"result": 5} and r["isError"] is False
            assert ("resultType" in r) == (era == "auto")

            r = await c.call_tool("fail", {})
            assert r["isError"] is True

            # Modern: an input_required result and a retry; legacy: a server-initiated
            # elicitation/create request. The same host handler answers both.
            r = await c.call_tool("greet", {})
            assert r["content"][0]["text"] == "Hello, Ada!"
            assert [a["message"] for a in asked] == ["What is your name?"]

            with pytest.raises(ServerError) as ei:
                await c.read_resource("mem://no-such-resource")
            assert ei.value.code in ((-32602,) if era == "auto" else (-32602, -32002))

            resources = await c.list_resources()
            assert [x["uri"] for x in resources] == ["mem://motd"]
            read = await c.read_resource("mem://motd")
            assert read["contents"][0]["text"] == "Have a nice day"

            prompts = await c.list_prompts()
            assert [p["name"] for p in prompts] == ["review"]
            got = await c.get_prompt("review", {"code": "x = 1"})
            assert "x = 1" in json.dumps(got["messages"])

    run(main(), timeout=90)


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_fastmcp_server(era: str) -> None:
    asked: list[dict[str, Any]] = []

    async def main() -> None:
        async with peer(FASTMCP_PEER, era, asked=asked) as c:
            d = await c.discover()
            assert d.era == ("modern" if era == "auto" else "legacy")
            assert d.server_info["name"] == "fastmcp-peer"

            tools = await c.list_tools()
            assert {t["name"] for t in tools} == {"multiply", "ask"}
            r = await c.call_tool("multiply", {"a": 6, "b": 7})
            assert r["structuredContent"] == {"result": 42}

            r = await c.call_tool("ask", {})
            if era == "legacy":
                # FastMCP's ctx.elicit is a server-initiated request in the legacy era.
                assert r["content"][0]["text"] == "Hi Ada" and len(asked) == 1
            else:
                # ... and unavailable on modern connections (FastMCP says so as a tool error).
                assert r["isError"] is True and not asked

            read = await c.read_resource("mem://about")
            assert read["contents"][0]["text"] == "fastmcp peer"
            got = await c.get_prompt("summarize", {"text": "abc"})
            assert "abc" in json.dumps(got["messages"])

    run(main(), timeout=90)


def test_cli_against_the_official_sdk_server() -> None:
    mcpline = str(Path(sys.executable).with_name("mcpline"))
    proc = subprocess.run(
        [
            mcpline,
            "call",
            "add",
            "--args",
            '{"a": 20, "b": 22}',
            "--",
            sys.executable,
            str(MCP_PEER),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"result": 42}
