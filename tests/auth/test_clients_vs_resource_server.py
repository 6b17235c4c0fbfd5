"""Real clients against ``mcpline run --http --auth`` in front of the test authorization
server: mcpline's client through the client credentials grant (scopes from the metadata,
step-up on 403 ``insufficient_scope``, DPoP-bound tokens), and the official ``mcp`` SDK
client with a bearer token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcpline.client import Client
from mcpline.client.oauth import ClientCredentials, OAuth

from ..transports.http_util import HttpServer, free_port
from .authz_server import CLIENT_ID, CLIENT_SECRET
from .rs_util import Authz, audience, resource_server


@pytest.fixture(scope="module")
def rs(authz: Authz) -> Iterator[HttpServer]:
    port = free_port()
    aud = f"http://127.0.0.1:{port}/mcp"
    spec = f"jwks={authz.url}/jwks,issuer={authz.url},audience={aud},scopes=notes:read"
    server = resource_server(spec, port=port)
    yield server
    assert server.stop() == 0, server.stderr


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 90))


@pytest.mark.parametrize("dpop", [False, True])
def test_our_client_gets_a_token_and_steps_up(authz: Authz, rs: HttpServer, dpop: bool) -> None:
    async def main() -> None:
        grant = ClientCredentials(CLIENT_ID, client_secret=CLIENT_SECRET)
        auth = OAuth(grant=grant, dpop=dpop)
        async with Client.http(audience(rs), auth=auth, timeout=30, max_restarts=0) as c:
            me = json.loads((await c.call_tool("whoami", {}))["content"][0]["text"])
            assert me["subject"] == "alice" and me["scopes"] == ["notes:read"]
            assert (me["jkt"] is not None) is dpop
            assert [t["name"] for t in await c.list_tools()] == ["whoami", "read_notes"]
            wrote = await c.call_tool("write_notes", {"text": "hi"})  # 403, then step-up
            assert wrote["content"][0]["text"] == "wrote hi"
            me = json.loads((await c.call_tool("whoami", {}))["content"][0]["text"])
            assert me["scopes"] == ["notes:read", "notes:write"]

    before = authz.stats()["token"]
    run(main())
    assert authz.stats()["token"] == before + 2
    assert "insufficient scope: notes:read notes:write is required" in rs.stderr


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_official_sdk_client_with_a_bearer_token(
    authz: Authz, rs: HttpServer, mode: str
) -> None:
    import httpx2
    from mcp import Client as SdkClient
    from mcp import MCPError
    from mcp.client.streamable_http import streamable_http_client

    token = authz.mint(audience(rs), scope="notes:read", sub="sdk-user")

    async def main() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            transport = streamable_http_client(audience(rs), http_client=http)
            async with SdkClient(transport, mode=mode) as c:
                tools = await c.list_tools()
                assert [t.name for t in tools.tools] == ["whoami", "read_notes"]
                r = await c.call_tool("whoami", {})
                me = json.loads(r.content[0].text)  # type: ignore[union-attr]
                assert me["subject"] == "sdk-user" and me["scopes"] == ["notes:read"]
                read = await c.read_resource("notes://all")
                assert read.contents[0].text == "all the notes"  # type: ignore[union-attr]
                with pytest.raises(
                    MCPError, match="lacks the scope this needs: notes:read notes:write"
                ):
                    await c.call_tool("write_notes", {"text": "x"})

    run(main())
    assert token not in rs.stderr


def test_a_renewed_token_keeps_the_legacy_session_and_another_user_is_refused(
    authz: Authz, rs: HttpServer
) -> None:
    import httpx2
    from mcp import Client as SdkClient
    from mcp import MCPError
    from mcp.client.streamable_http import streamable_http_client

    first = authz.mint(audience(rs), sub="dana", scope="notes:read")

    async def main() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {first}"}) as http:
            transport = streamable_http_client(audience(rs), http_client=http)
            async with SdkClient(transport, mode="legacy") as c:
                assert (await c.call_tool("read_notes", {})).content[0].text == "the notes"  # type: ignore[union-attr]
                renewed = authz.mint(audience(rs), sub="dana", scope="notes:read notes:write")
                http.headers["Authorization"] = f"Bearer {renewed}"
                wrote = await c.call_tool("write_notes", {"text": "y"})
                assert wrote.content[0].text == "wrote y"  # type: ignore[union-attr]
                http.headers["Authorization"] = f"Bearer {authz.mint(audience(rs), sub='eve')}"
                with pytest.raises(MCPError, match="opened with another bearer token"):
                    await c.call_tool("read_notes", {})

    run(main())
