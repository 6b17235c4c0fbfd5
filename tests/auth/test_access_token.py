"""``ctx.access_token`` and ``mctx.access_token``: over ``mcpline run --http --auth`` with a
real JWT from the test authorization server, the verified token with its claims (read-only,
no token text in its repr); ``None`` over stdio and over HTTP without ``--auth``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..proc import ServerProcess
from ..transports.http_util import MCPLINE, HttpServer, call, free_port
from .authz_server import CLIENT_ID
from .rs_util import Authz

SERVER = Path(__file__).with_name("token_server.py")


@pytest.fixture(scope="module")
def rs(authz: Authz) -> Iterator[HttpServer]:
    port = free_port()
    aud = f"http://127.0.0.1:{port}/mcp"
    spec = f"jwks={authz.url}/jwks,issuer={authz.url},audience={aud},min_refetch=0"
    argv = [MCPLINE, "run", str(SERVER), "--http", f"127.0.0.1:{port}", "--auth", spec]
    server = HttpServer(argv)
    yield server
    assert server.stop() == 0, server.stderr


def tool(srv: HttpServer, name: str, headers: dict[str, str] | None = None) -> Any:
    reply = call(srv, 1, "tools/call", {"name": name}, headers=headers)
    assert reply.status == 200, (reply.status, reply.body)
    result = reply.json["result"]
    return json.loads(result["content"][0]["text"]) if name == "token" else result


def test_the_verified_token_reaches_ctx_and_the_middleware(authz: Authz, rs: HttpServer) -> None:
    aud = f"http://127.0.0.1:{rs.port}/mcp"
    exp = int(time.time()) + 600
    token = authz.mint(aud, scope="notes:read extra", sub="ada", exp=exp, team="core")
    got = tool(rs, "token", {"Authorization": f"Bearer {token}"})
    assert got["subject"] == "ada"
    assert got["client_id"] == CLIENT_ID
    assert got["scopes"] == ["extra", "notes:read"]
    assert got["expires_at"] == exp
    assert got["audience"] == [aud]
    assert got["claims"]["team"] == "core" and got["claims"]["sub"] == "ada"
    assert got["claims_writable"] is False
    assert got["same_as_principal"] is True
    assert "ada" in got["repr"] and token not in got["repr"]
    assert token.split(".")[2] not in got["repr"]
    assert tool(rs, "seen", {"Authorization": f"Bearer {token}"})["structuredContent"] == {
        "result": ["ada"]
    }
    assert token not in rs.stderr


def test_no_token_without_auth_over_http() -> None:
    srv = HttpServer([MCPLINE, "run", str(SERVER), "--http", "127.0.0.1:0"])
    try:
        assert tool(srv, "token") is None
        assert tool(srv, "seen")["structuredContent"] == {"result": [None]}
    finally:
        assert srv.stop() == 0


def test_no_token_over_stdio(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    resp = p.call("token")
    assert json.loads(resp["result"]["content"][0]["text"]) is None
    assert p.call("seen")["result"]["structuredContent"] == {"result": [None]}
