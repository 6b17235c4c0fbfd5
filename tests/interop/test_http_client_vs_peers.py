"""mcpline's HTTP client against real Streamable HTTP servers built with the pinned peers
(the official ``mcp`` SDK and FastMCP) and with mcpline itself, each a process on a free
loopback port, in both eras: the modern one found by the probe, the legacy one forced
(``initialize``, a session, DELETE).

Another server is one more `PEERS` entry: its command (which prints ``listening on URL``)
and what its tool, resource and prompt answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcpline.client import Client, RequestTimeout, ServerError

from ..client.util import run
from ..proc import FIXTURES
from .http_servers import serve

HTTP_PEER = str(FIXTURES / "http_peer.py")


@dataclass(frozen=True)
class Peer:
    command: tuple[str, ...]
    name: str
    tool: tuple[str, dict[str, Any], Any]
    """(name, arguments, structuredContent.result)"""
    resource: tuple[str, str]
    prompt: tuple[str, dict[str, str], str]
    """(name, arguments, a string the messages contain)"""
    elicits: tuple[str, str] | None = None
    """(tool, text of its result once the user answered name "Ada")"""
    modern_elicits: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


PEERS = {
    "mcp": Peer(
        (sys.executable, HTTP_PEER, "mcp"),
        "official-peer",
        ("add", {"a": 2, "b": 3}, 5),
        ("mem://motd", "Have a nice day"),
        ("review", {"code": "x = 1"}, "x = 1"),
        ("greet", "Hello, Ada!"),
    ),
    "fastmcp": Peer(
        (sys.executable, HTTP_PEER, "fastmcp"),
        "fastmcp-peer",
        ("multiply", {"a": 6, "b": 7}, 42),
        ("mem://about", "fastmcp peer"),
        ("summarize", {"text": "abc"}, "abc"),
        ("ask", "Hi Ada"),
        modern_elicits=False,  # FastMCP's ctx.elicit is a legacy-only server request
    ),
    "mcpline": Peer(
        (sys.executable, HTTP_PEER, "mcpline"),
        "mcpline-peer",
        ("add", {"a": 2, "b": 3}, 5),
        ("mem://motd", "Have a nice day"),
        ("review", {"code": "x = 1"}, "x = 1"),
        ("greet", "Hello, Ada!"),
    ),
}


@pytest.fixture(scope="module", params=sorted(PEERS))
def peer(request: pytest.FixtureRequest) -> Iterator[tuple[Peer, str]]:
    spec = PEERS[request.param]
    with serve(spec.command) as url:
        yield spec, url


def client(url: str, era: str, asked: list[dict[str, Any]] | None = None, **kw: Any) -> Client:
    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        if asked is not None:
            asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    return Client.http(url, era=era, on_elicit=elicit, timeout=20, **kw)


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_every_feature_in_each_era(peer: tuple[Peer, str], era: str) -> None:
    spec, url = peer
    asked: list[dict[str, Any]] = []

    async def main() -> None:
        async with client(url, era, asked) as c:
            d = await c.discover()
            assert d.era == ("modern" if era == "auto" else "legacy")
            assert d.protocol_version == ("2026-07-28" if era == "auto" else "2025-11-25")
            assert d.server_info["name"] == spec.name

            name, args, expected = spec.tool
            assert name in {t["name"] for t in await c.list_tools()}
            r = await c.call_tool(name, args)
            assert r["structuredContent"] == {"result": expected}
            assert ("resultType" in r) == (era == "auto")

            uri, text = spec.resource
            assert uri in {x["uri"] for x in await c.list_resources()}
            assert (await c.read_resource(uri))["contents"][0]["text"] == text

            prompt, pargs, contains = spec.prompt
            assert prompt in {p["name"] for p in await c.list_prompts()}
            assert contains in json.dumps((await c.get_prompt(prompt, pargs))["messages"])

            if spec.elicits is not None:
                tool, answer = spec.elicits
                r = await c.call_tool(tool, {})
                if era == "legacy" or spec.modern_elicits:
                    assert r["content"][0]["text"] == answer
                    assert len(asked) == 1
                else:
                    assert r["isError"] is True and not asked

            try:  # an unknown tool: a JSON-RPC error or an isError result, per server
                r = await c.call_tool("no-such-tool-anywhere", {})
                assert r["isError"] is True
            except ServerError as exc:
                assert exc.code == -32602

    run(main(), timeout=90)


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_a_hundred_calls_in_flight(peer: tuple[Peer, str], era: str) -> None:
    spec, url = peer
    name, args, expected = spec.tool

    async def main() -> None:
        async with client(url, era) as c:
            results = await asyncio.gather(*(c.call_tool(name, args) for _ in range(100)))
            assert all(r["structuredContent"] == {"result": expected} for r in results)

    run(main(), timeout=120)


def test_a_timed_out_call_is_cancelled_and_the_client_goes_on(peer: tuple[Peer, str]) -> None:
    spec, url = peer
    name, args, expected = spec.tool

    async def main() -> None:
        async with client(url, "auto") as c:
            await c.discover()
            # A deadline shorter than any round trip: the session cancels the request,
            # which on the modern era closes its stream.
            with pytest.raises(RequestTimeout):
                await c.call_tool(name, args, timeout=0.0001)
            r = await c.call_tool(name, args)
            assert r["structuredContent"] == {"result": expected}

    run(main(), timeout=60)
