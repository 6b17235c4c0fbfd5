"""RFC 7662 introspection: ``mcpline run --http --auth introspection=...`` against the test
authorization server (its own process), and `IntrospectionVerifier`'s cache (bounded, never
past the token's ``exp``) with a controlled clock; and what `JwksCache` refuses to read."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from mcpline.server.auth import IntrospectionVerifier, JwksCache, KeysUnavailable, Refused

from ..transports.http_util import HttpServer, call, free_port
from .authz_server import RS_CLIENT_ID, RS_CLIENT_SECRET
from .rs_util import Authz, audience, resource_server


def introspecting(authz: Authz, secret: str = RS_CLIENT_SECRET) -> HttpServer:
    port = free_port()
    spec = (
        f"introspection={authz.url}/introspect,client_id={RS_CLIENT_ID},issuer={authz.url},"
        f"audience=http://127.0.0.1:{port}/mcp"
    )
    return resource_server(spec, port=port, MCPLINE_AUTH_CLIENT_SECRET=secret)


@pytest.fixture(scope="module")
def rs(authz: Authz) -> Iterator[HttpServer]:
    server = introspecting(authz)
    yield server
    assert server.stop() == 0, server.stderr


def whoami(srv: HttpServer, token: str) -> tuple[int, str, dict[str, str]]:
    r = call(srv, 1, "tools/call", {"name": "whoami"}, headers={"Authorization": f"Bearer {token}"})
    body = r.json
    text = body["result"]["content"][0]["text"] if r.status == 200 else body["error"]["message"]
    return r.status, text, r.headers


def test_active_tokens_are_served_and_cached(authz: Authz, rs: HttpServer) -> None:
    token = authz.mint(audience(rs), sub="carol", scope="notes:read notes:write")
    before = authz.stats()["introspect"]
    for _ in range(3):
        status, text, _ = whoami(rs, token)
        assert status == 200
        me = json.loads(text)
        assert me["subject"] == "carol" and me["scopes"] == ["notes:read", "notes:write"]
    assert authz.stats()["introspect"] == before + 1


@pytest.mark.parametrize(
    ("make", "why"),
    [
        ("revoked", "the token is not active"),
        ("audience", "the token is for another audience"),
        ("garbage", "the token is not active"),
    ],
)
def test_refused_tokens(authz: Authz, rs: HttpServer, make: str, why: str) -> None:
    if make == "revoked":
        token = authz.mint(audience(rs))
        authz.control("/revoke", {"token": token})
    elif make == "audience":
        token = authz.mint("http://127.0.0.1:1/mcp")
    else:
        token = "not-a-token-4f2a9c"
    status, text, headers = whoami(rs, token)
    assert status == 401 and why in text
    assert 'error="invalid_token"' in headers["www-authenticate"]
    assert token not in rs.wait_for_stderr(why)


def test_a_refused_client_secret_is_a_503_and_the_secret_is_not_logged(authz: Authz) -> None:
    srv = introspecting(authz, secret="WRONG-secret-9d1e")
    try:
        token = authz.mint(audience(srv))
        status, text, headers = whoami(srv, token)
        assert status == 503 and "could not be introspected (HTTP 401)" in text
        assert "retry-after" in headers
        log = srv.wait_for_stderr("answered 401")
        assert "WRONG-secret-9d1e" not in log and token not in log
    finally:
        srv.stop()


def test_the_cache_is_bounded_and_never_outlives_the_token(authz: Authz) -> None:
    now = [time.time()]
    aud = "http://127.0.0.1:9/mcp"
    verifier = IntrospectionVerifier(
        authz.url + "/introspect",
        client_id=RS_CLIENT_ID,
        client_secret=RS_CLIENT_SECRET,
        issuer=authz.url,
        audience=aud,
        cache_size=2,
        cache_ttl=60,
        clock=lambda: now[0],
    )
    exp = int(time.time()) + 600
    a, b, c = (authz.mint(aud, sub=s, exp=exp) for s in "abc")

    async def asks(*tokens: str) -> int:
        before = authz.stats()["introspect"]
        for token in tokens:
            await verifier.verify(token)
        return authz.stats()["introspect"] - before

    async def main() -> None:
        assert await asks(a, a, b, b) == 2
        assert await asks(c) == 1  # a, the least recently used, leaves the cache
        assert await asks(b, c) == 0 and await asks(a) == 1
        now[0] += 61  # past cache_ttl: asked again
        assert await asks(a) == 1
        now[0] = exp + 1  # past the token's exp: asked again, and expired here
        with pytest.raises(Refused, match="expired"):
            await verifier.verify(a)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_an_endpoint_that_hangs_is_bounded_in_time_and_in_calls(authz: Authz) -> None:
    def verifier(**options: float) -> IntrospectionVerifier:
        return IntrospectionVerifier(
            authz.url + "/jwks-hang",  # never answers
            client_id=RS_CLIENT_ID,
            client_secret=RS_CLIENT_SECRET,
            **options,  # type: ignore[arg-type]
        )

    async def main() -> None:
        with pytest.raises(Refused, match=r"no answer within 1 s") as ei:
            await verifier(timeout=1).verify("token-one")
        assert ei.value.status == 503
        busy = verifier(timeout=60, max_concurrent=1)
        first = asyncio.ensure_future(busy.verify("token-one"))
        await asyncio.sleep(0.2)
        assert not first.done()
        with pytest.raises(Refused, match="1 introspections in progress, the limit") as ei:
            await busy.verify("token-two")
        assert ei.value.status == 503
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize(
    ("path", "options", "why"),
    [
        ("/jwks", {"max_bytes": 10}, "over 10 bytes"),
        ("/stats", {}, "not a JSON Web Key Set"),
        ("/nowhere", {}, "HTTP 404"),
    ],
)
def test_a_jwks_that_is_too_big_or_no_key_set_is_refused(
    authz: Authz, path: str, options: dict[str, int], why: str
) -> None:
    cache = JwksCache(authz.url + path, **options)  # type: ignore[arg-type]

    async def main() -> None:
        with pytest.raises(KeysUnavailable, match=why) as ei:
            await cache.keys(None)
        assert ei.value.status == 503

    asyncio.run(asyncio.wait_for(main(), 60))


def test_concurrent_requests_share_one_jwks_fetch(authz: Authz) -> None:
    cache = JwksCache(authz.url + "/jwks")

    async def main() -> None:
        before = authz.stats()["jwks"]
        found = await asyncio.gather(*(cache.keys("some-kid") for _ in range(20)))
        assert all(keys is found[0] for keys in found)
        assert authz.stats()["jwks"] == before + 1
        await cache.keys("another-unknown-kid")  # within min_refetch: the cached keys
        assert authz.stats()["jwks"] == before + 1

    asyncio.run(asyncio.wait_for(main(), 60))
