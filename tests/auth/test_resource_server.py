"""``mcpline run --http --auth``: a real resource server in front of a real authorization
server (`authz_server`, its own process): JWT access tokens checked against the JWKS (issuer,
audience, expiry, kid, key rotation, a JWKS endpoint that hangs), RFC 7662 introspection,
per-tool/prompt/resource scopes (403 ``insufficient_scope``, listings filtered), DPoP-bound
tokens, and the principal in ``ctx``. No refusal logs the token."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from mcpline.client.oauth import DPoPKey

from ..transports.http_util import MCPLINE, HttpServer, Reply, call, free_port
from .authz_server import CLIENT_ID
from .rs_util import SCOPED, Authz, audience, resource_server


@pytest.fixture(scope="module")
def rs(authz: Authz) -> Iterator[HttpServer]:
    port = free_port()
    aud = f"http://127.0.0.1:{port}/mcp"
    spec = f"jwks={authz.url}/jwks,issuer={authz.url},audience={aud},min_refetch=0"
    server = resource_server(spec, port=port)
    yield server
    assert server.stop() == 0, server.stderr


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def whoami(srv: HttpServer, headers: dict[str, str]) -> Reply:
    return call(srv, 1, "tools/call", {"name": "whoami"}, headers=headers)


def text(reply: Reply) -> str:
    assert reply.status == 200, (reply.status, reply.body)
    out: str = reply.json["result"]["content"][0]["text"]
    return out


def refused(reply: Reply, error: str, why: str, scheme: str = "Bearer") -> None:
    assert reply.status == 401, (reply.status, reply.body)
    www = reply.headers["www-authenticate"]
    assert www.startswith(scheme + " ") and f'error="{error}"' in www, www
    assert why in www and why in reply.json["error"]["message"], (www, reply.json)
    assert 'resource_metadata="http://127.0.0.1:' in www


def test_the_principal_reaches_ctx(authz: Authz, rs: HttpServer) -> None:
    token = authz.mint(audience(rs), scope="notes:read extra", sub="bob")
    me = json.loads(text(whoami(rs, bearer(token))))
    assert me == {
        "subject": "bob",
        "scopes": ["extra", "notes:read"],
        "client_id": CLIENT_ID,
        "claims_sub": "bob",
        "jkt": None,
    }


def test_the_metadata_follows_from_the_auth_spec(authz: Authz, rs: HttpServer) -> None:
    conn = rs.connection()
    conn.request("GET", "/.well-known/oauth-protected-resource/mcp")
    doc = json.loads(conn.getresponse().read())
    conn.close()
    assert doc["resource"] == audience(rs)
    assert doc["authorization_servers"] == [authz.url]
    assert "ES256" in doc["dpop_signing_alg_values_supported"]


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"exp": int(time.time()) - 3600}, "the token has expired"),
        ({"aud": "http://127.0.0.1:1/other"}, "the token is for another audience"),
        ({"iss": "http://127.0.0.1:1"}, "the token was issued by another issuer"),
        ({"stranger": True}, "the token's kid is not among the issuer's keys"),
        ({"nbf": int(time.time()) + 3600}, "the token's nbf is in the future"),
        ({"exp": None}, "the token has no exp"),
        ({"typ": "dpop+jwt"}, "is not an access token"),
    ],
)
def test_bad_tokens_are_refused_and_never_logged(
    authz: Authz, rs: HttpServer, claims: dict[str, object], why: str
) -> None:
    aud = claims.pop("aud", audience(rs))
    token = authz.mint(str(aud), **claims)
    refused(whoami(rs, bearer(token)), "invalid_token", why)
    log = rs.wait_for_stderr(why)
    assert token not in log and token.split(".")[2] not in log


def test_an_expired_token_within_the_leeway_is_accepted(authz: Authz, rs: HttpServer) -> None:
    token = authz.mint(audience(rs), exp=int(time.time()) - 5)
    assert json.loads(text(whoami(rs, bearer(token))))["subject"] == "alice"


def test_a_rotated_key_is_fetched_once(authz: Authz, rs: HttpServer) -> None:
    whoami(rs, bearer(authz.mint(audience(rs))))  # the keys are cached
    before = authz.stats()["jwks"]
    authz.control("/rotate")
    token = authz.mint(audience(rs))
    for _ in range(3):
        assert json.loads(text(whoami(rs, bearer(token))))["subject"] == "alice"
    assert authz.stats()["jwks"] == before + 1


def test_unknown_kids_refetch_at_most_once_per_interval(authz: Authz) -> None:
    port_rs = resource_server(
        f"jwks={authz.url}/jwks,issuer={authz.url},audience=http://127.0.0.1:9/mcp,min_refetch=3600"
    )
    try:
        aud = "http://127.0.0.1:9/mcp"
        assert whoami(port_rs, bearer(authz.mint(aud))).status == 200  # the keys are cached
        before = authz.stats()["jwks"]
        for _ in range(5):
            r = whoami(port_rs, bearer(authz.mint(aud, stranger=True)))
            refused(r, "invalid_token", "kid is not among")
        assert authz.stats()["jwks"] == before
    finally:
        port_rs.stop()


def test_a_jwks_endpoint_that_hangs_is_a_bounded_503(authz: Authz) -> None:
    srv = resource_server(
        f"jwks={authz.url}/jwks-hang,issuer={authz.url},audience=http://127.0.0.1:9/mcp,"
        "fetch_timeout=1"
    )
    try:
        token = authz.mint("http://127.0.0.1:9/mcp")
        started = time.monotonic()
        r = whoami(srv, bearer(token))
        assert time.monotonic() - started < 30  # the fetch gave up after 1 s, not 3600
        assert r.status == 503 and "retry-after" in r.headers
        assert (
            "signing keys could not be fetched (no answer within 1 s)" in r.json["error"]["message"]
        )
        again = whoami(srv, bearer(token))  # within min_refetch: refused at once, no fetch
        assert again.status == 503 and "the last fetch failed" in again.json["error"]["message"]
        assert 1 < int(again.headers["retry-after"]) <= 30  # when min_refetch allows a fetch
        assert token not in srv.stderr
    finally:
        srv.stop()


# --- scopes ---------------------------------------------------------------------------------


def test_a_missing_scope_is_403_insufficient_scope(authz: Authz, rs: HttpServer) -> None:
    token = authz.mint(audience(rs), scope="notes:read")
    assert text(call(rs, 1, "tools/call", {"name": "read_notes"}, headers=bearer(token)))
    r = call(
        rs,
        2,
        "tools/call",
        {"name": "write_notes", "arguments": {"text": "x"}},
        headers=bearer(token),
    )
    assert r.status == 403
    www = r.headers["www-authenticate"]
    assert www.startswith('Bearer error="insufficient_scope", scope="notes:read notes:write"')
    assert r.json["id"] == 2 and "notes:read notes:write" in r.json["error"]["message"]
    complete = {
        "ref": {"type": "ref/prompt", "name": "draft"},
        "argument": {"name": "a", "value": ""},
    }
    for method, params in (
        ("prompts/get", {"name": "draft"}),
        ("resources/read", {"uri": "notes://admin/x"}),
        ("completion/complete", complete),
    ):
        r = call(rs, 3, method, params, headers=bearer(token))
        assert r.status == 403 and "insufficient_scope" in r.headers["www-authenticate"]
    assert text(
        call(
            rs,
            4,
            "tools/call",
            {"name": "write_notes", "arguments": {"text": "x"}},
            headers=bearer(authz.mint(audience(rs), scope="notes:read notes:write")),
        )
    )
    r = call(rs, 5, "resources/read", {"uri": "notes://all"}, headers=bearer(token))
    assert r.status == 200 and r.json["result"]["contents"][0]["text"] == "all the notes"
    assert "insufficient scope: notes:read notes:write is required" in rs.stderr


def test_listings_show_only_what_the_caller_may_call(authz: Authz, rs: HttpServer) -> None:
    reader = bearer(authz.mint(audience(rs), scope="notes:read"))
    tools = call(rs, 1, "tools/list", headers=reader).json["result"]
    assert [t["name"] for t in tools["tools"]] == ["whoami", "read_notes"]
    assert tools["cacheScope"] == "private"
    prompts = call(rs, 2, "prompts/list", headers=reader).json["result"]["prompts"]
    assert prompts == []
    resources = call(rs, 3, "resources/list", headers=reader).json["result"]["resources"]
    assert [r["uri"] for r in resources] == ["notes://all"]
    templates = call(rs, 4, "resources/templates/list", headers=reader).json["result"]
    assert templates["resourceTemplates"] == []
    admin = bearer(authz.mint(audience(rs), scope="notes:read notes:write notes:admin"))
    tools = call(rs, 5, "tools/list", headers=admin).json["result"]["tools"]
    assert [t["name"] for t in tools] == ["whoami", "read_notes", "write_notes"]
    templates = call(rs, 6, "resources/templates/list", headers=admin).json["result"]
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == ["notes://admin/{name}"]


# --- DPoP -----------------------------------------------------------------------------------


def dpop(key: DPoPKey, token: str, url: str, method: str = "POST") -> dict[str, str]:
    return {"Authorization": f"DPoP {token}", "DPoP": key.proof(method, url, token)}


def test_dpop_bound_tokens_need_a_fresh_proof_for_this_request(
    authz: Authz, rs: HttpServer
) -> None:
    key = DPoPKey.generate()
    token = authz.mint(audience(rs), cnf={"jkt": key.thumbprint})
    headers = dpop(key, token, audience(rs))
    me = json.loads(text(whoami(rs, headers)))
    assert me["jkt"] == key.thumbprint
    refused(whoami(rs, headers), "invalid_dpop_proof", "already used (replay)", "DPoP")
    other = dpop(key, token, audience(rs).replace("/mcp", "/other"))
    refused(whoami(rs, other), "invalid_dpop_proof", "for another URL", "DPoP")
    get = dpop(key, token, audience(rs), "GET")
    refused(whoami(rs, get), "invalid_dpop_proof", "another HTTP method", "DPoP")
    stranger = DPoPKey.generate()
    refused(
        whoami(
            rs,
            {"Authorization": f"DPoP {token}", "DPoP": stranger.proof("POST", audience(rs), token)},
        ),
        "invalid_dpop_proof",
        "not the one the token is bound to",
        "DPoP",
    )
    wrong_ath = {"Authorization": f"DPoP {token}", "DPoP": key.proof("POST", audience(rs), "x")}
    refused(whoami(rs, wrong_ath), "invalid_dpop_proof", "ath is not the hash", "DPoP")
    refused(
        whoami(rs, {"Authorization": f"DPoP {token}"}),
        "invalid_dpop_proof",
        "a DPoP proof is required",
        "DPoP",
    )
    refused(whoami(rs, bearer(token)), "invalid_token", "send it as Authorization: DPoP")
    plain = authz.mint(audience(rs))
    refused(
        whoami(rs, dpop(key, plain, audience(rs))),
        "invalid_token",
        "not bound to a DPoP key",
        "DPoP",
    )
    assert token not in rs.stderr and plain not in rs.stderr


def test_workers_each_verify_tokens(authz: Authz) -> None:
    port = free_port()
    aud = f"http://127.0.0.1:{port}/mcp"
    spec = f"jwks={authz.url}/jwks,issuer={authz.url}"  # the audience: the bound URL
    argv = [MCPLINE, "run", str(SCOPED), "--http", f"127.0.0.1:{port}", "--workers", "2"]
    srv = HttpServer([*argv, "--auth", spec], {"MCPLINE_STATE_KEY": "a-key-for-the-test-workers"})
    try:
        for _ in range(4):
            assert json.loads(text(whoami(srv, bearer(authz.mint(aud)))))["subject"] == "alice"
        refused(whoami(srv, bearer(authz.mint(aud + "x"))), "invalid_token", "another audience")
    finally:
        assert srv.stop() == 0, srv.stderr


def test_scopes_without_a_verifier_are_named_in_a_warning() -> None:
    srv = HttpServer([MCPLINE, "run", str(SCOPED), "--http", "127.0.0.1:0"])
    try:
        srv.wait_for_stderr("scopes are declared but this app verifies no tokens")
    finally:
        srv.stop()
