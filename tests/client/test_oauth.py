"""OAuth 2.1 against a real local resource server and authorization server (one fake HTTP
server serving both): discovery, registration, PKCE, the resource indicator, refresh, step-up
and its limit, refusals, a token endpoint that never answers, the file store, and that no
token, code or secret ever reaches a log line, a trace, an error or a repr."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import stat
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from mcpline.client import Client
from mcpline.client.oauth import FileTokenStore, OAuth, covers, parse_challenges
from mcpline.errors import AuthError

from .http_fakes import (
    Request,
    answer_empty,
    authorization_server_metadata,
    fake_server,
    respond,
    respond_json,
)
from .util import run

SECRET = "SECRET-client-7f3a"
TOKEN = "TOKEN-access-91bc"
REFRESH = "REFRESH-token-55de"
CODE = "CODE-auth-0a1b"


@dataclass
class World:
    """What the fake servers do and saw."""

    url: str = ""
    resource: str | None = None
    expires_in: int = 3600
    need_scope: str | None = None
    """tools/call answers 403 insufficient_scope until a token has this scope."""
    always_403: bool = False
    iss: str | None = None
    hang_token: bool = False
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    token_auth: list[str] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    bearer_seen: list[str] = field(default_factory=list)
    issued: dict[str, str] = field(default_factory=dict)
    """token → its scope"""
    challenge: str = ""

    async def handler(self, req: Request, w: asyncio.StreamWriter) -> None:
        path = req.path
        base = self.url
        if path == "/.well-known/oauth-protected-resource/mcp":
            respond_json(
                w,
                {
                    "resource": self.resource or base + "/mcp",
                    "authorization_servers": [base],
                    "scopes_supported": ["mcp:read"],
                },
            )
        elif path == "/.well-known/oauth-authorization-server":
            scopes = ["mcp:read", "mcp:write", "offline_access"]
            metadata = authorization_server_metadata(
                base, "client_secret_basic", scopes_supported=scopes
            )
            respond_json(w, metadata)
        elif path == "/register":
            self.registrations.append(req.json())
            respond_json(
                w,
                {
                    "client_id": "client-1",
                    "client_secret": SECRET,
                    "token_endpoint_auth_method": "client_secret_basic",
                },
                status=201,
            )
        elif path == "/token":
            self.token_requests.append(req.form())
            self.token_auth.append(req.headers.get("authorization", ""))
            if self.hang_token:
                await asyncio.sleep(30)
                return
            form = req.form()
            token = f"{TOKEN}-{len(self.token_requests)}"
            scope = self.authorizations[-1].get("scope", "") if self.authorizations else ""
            self.issued[token] = scope
            respond_json(
                w,
                {
                    "access_token": token,
                    "token_type": "Bearer",
                    "expires_in": self.expires_in,
                    "refresh_token": REFRESH,
                    "scope": scope,
                    "grant": form["grant_type"],
                },
            )
        elif path == "/mcp":
            auth = req.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ")
            self.bearer_seen.append(token)
            if token not in self.issued:
                respond(
                    w,
                    401,
                    headers={
                        "WWW-Authenticate": f'Bearer resource_metadata="{base}'
                        '/.well-known/oauth-protected-resource/mcp"'
                        + (f", {self.challenge}" if self.challenge else "")
                    },
                )
                return
            msg = req.json()
            if msg["method"] == "tools/call" and (
                self.always_403
                or (self.need_scope and self.need_scope not in self.issued[token].split())
            ):
                respond(
                    w,
                    403,
                    headers={
                        "WWW-Authenticate": 'Bearer error="insufficient_scope", '
                        f'scope="{self.need_scope or "mcp:admin"}"'
                    },
                )
                return
            answer_empty(w, msg)
        else:
            respond(w, 404)

    async def authorize(self, url: str, redirect_uri: str) -> str:
        """The user's consent: check the request, then come back with a code."""
        q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        self.authorizations.append(q)
        back = {"code": CODE, "state": q["state"]}
        if self.iss is not None:
            back["iss"] = self.iss
        return f"{redirect_uri}?{urlencode(back)}"


def session(world: World, body: Any, **auth_kw: Any) -> Any:
    async def main() -> Any:
        async with fake_server(world.handler) as srv:
            world.url = srv.url
            auth = OAuth(
                client_name="t",
                redirect_uri="http://127.0.0.1:9/cb",
                on_authorize=world.authorize,
                **auth_kw,
            )
            async with Client.http(srv.url + "/mcp", auth=auth, timeout=10, max_restarts=0) as c:
                return await body(c, auth)

    return run(main(), timeout=60)


def test_the_whole_flow_and_no_secret_anywhere(caplog: pytest.LogCaptureFixture) -> None:
    world = World()

    async def body(c: Client, auth: OAuth) -> str:
        await c.discover()
        await c.call_tool("x", {})
        return repr(auth) + repr(c.transport) + repr(c)

    with caplog.at_level(logging.DEBUG):
        reprs = session(world, body)
    # Registration, then the code grant with PKCE S256 and the resource indicator.
    [reg] = world.registrations
    assert reg["redirect_uris"] == ["http://127.0.0.1:9/cb"]
    assert reg["application_type"] == "native" and "refresh_token" in reg["grant_types"]
    [authz] = world.authorizations
    assert authz["code_challenge_method"] == "S256"
    assert authz["resource"] == world.url + "/mcp"
    assert authz["scope"] == "mcp:read offline_access"
    [tok] = world.token_requests
    verifier = tok["code_verifier"]
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    assert digest.decode() == authz["code_challenge"]
    assert tok["resource"] == authz["resource"] and tok["code"] == CODE
    assert (
        world.token_auth[0] == "Basic " + base64.b64encode(f"client-1:{SECRET}".encode()).decode()
    )
    assert world.bearer_seen[-1] == f"{TOKEN}-1"
    everything = caplog.text + reprs + "".join(r.getMessage() for r in caplog.records)
    for secret in (SECRET, TOKEN, REFRESH, CODE, verifier):
        assert secret not in everything


def test_an_expired_token_is_refreshed_before_the_next_request() -> None:
    world = World(expires_in=1)  # inside the refresh margin at once

    async def body(c: Client, auth: OAuth) -> None:
        await c.discover()
        await c.call_tool("x", {})

    session(world, body)
    assert [t["grant_type"] for t in world.token_requests][:2] == [
        "authorization_code",
        "refresh_token",
    ]
    assert world.token_requests[1]["refresh_token"] == REFRESH
    assert len(world.authorizations) == 1


def test_insufficient_scope_steps_up_with_the_union_of_scopes() -> None:
    world = World(need_scope="mcp:write")

    async def body(c: Client, auth: OAuth) -> None:
        await c.discover()
        await c.call_tool("x", {})

    session(world, body)
    assert [a["scope"].split() for a in world.authorizations] == [
        ["mcp:read", "offline_access"],
        ["mcp:read", "offline_access", "mcp:write"],
    ]


def test_a_scope_that_never_suffices_stops_after_three_consents() -> None:
    world = World(always_403=True)

    async def body(c: Client, auth: OAuth) -> None:
        await c.discover()
        with pytest.raises(AuthError, match="gave up after 3 authorization attempts"):
            await c.call_tool("x", {})

    session(world, body)
    assert len(world.authorizations) == 1 + 3  # discover's, then three step-ups for the call


@pytest.mark.parametrize(
    ("world", "why"),
    [
        (World(resource="https://evil.example.com/mcp"), "refusing to authorize"),
        (World(iss="https://evil.example.com"), "iss"),
    ],
)
def test_refusals(world: World, why: str) -> None:
    async def body(c: Client, auth: OAuth) -> None:
        with pytest.raises(AuthError, match=why):
            await c.discover()

    session(world, body)
    assert not world.token_requests


def test_a_token_endpoint_that_never_answers_fails_within_the_oauth_timeout() -> None:
    world = World(hang_token=True)

    async def body(c: Client, auth: OAuth) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(AuthError, match="token endpoint") as ei:
            await c.discover()
        assert loop.time() - started < 8  # the 1 s OAuth timeout, not the 10 s request one
        assert SECRET not in str(ei.value)

    session(world, body, timeout=1.0)


def test_the_file_store_keeps_tokens_private_and_across_clients(tmp_path: Any) -> None:
    world = World()
    where = tmp_path / "oauth"

    async def main() -> None:
        async with fake_server(world.handler) as srv:
            world.url = srv.url
            for _ in range(2):
                auth = OAuth(
                    redirect_uri="http://127.0.0.1:9/cb",
                    on_authorize=world.authorize,
                    store=FileTokenStore(where),
                )
                async with Client.http(srv.url + "/mcp", auth=auth) as c:
                    await c.discover()

    run(main())
    assert len(world.authorizations) == 1  # the second client used the stored token
    assert world.bearer_seen[-1] == f"{TOKEN}-1"
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    files = list(where.iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


def test_challenge_parsing_and_resource_coverage() -> None:
    assert parse_challenges(
        ['Basic realm="x"', 'Bearer error="insufficient_scope", scope="a b", resource_metadata="u"']
    ) == {"error": "insufficient_scope", "scope": "a b", "resource_metadata": "u"}
    assert covers("http://h:1", "http://h:1/mcp")
    assert covers("http://h:1/mcp/", "http://H:1/mcp")
    assert not covers("http://h:1/mc", "http://h:1/mcp")
    assert not covers("https://evil.example.com/mcp", "http://h:1/mcp")
