"""The machine-to-machine grants and DPoP against a real local authorization server, identity
provider and DPoP-checking MCP endpoint (`oauth_server.AuthServer`, on 127.0.0.1): client
credentials (secret basic/post, private_key_jwt), workload identity (token value, file,
command), enterprise-managed authorization (token exchange, then the JWT bearer grant), and
DPoP (a fresh proof per request, authorization- and resource-server nonces, keys kept 0600).
Every refusal is clear and no token, secret, assertion or key reaches a log, error or repr."""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import Client
from mcpline.client.oauth import (
    ClientCredentials,
    DPoPKey,
    FileTokenStore,
    IdentityAssertion,
    OAuth,
    TokenSource,
    WorkloadIdentity,
    canonical,
)
from mcpline.errors import AuthError

from .http_fakes import fake_server
from .oauth_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    ID_JAG,
    IDP_CLIENT_ID,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    AuthServer,
    new_key,
)
from .util import run

Body = Callable[[Client, OAuth], Awaitable[Any]]


async def two_calls(c: Client, auth: OAuth) -> None:
    await c.discover()
    await c.call_tool("x", {})
    await c.list_tools()


def session(
    server: AuthServer, make_auth: Callable[[AuthServer], OAuth], body: Body = two_calls
) -> Any:
    async def main() -> Any:
        async with fake_server(server.handler) as srv:
            server.url = srv.url
            auth = make_auth(server)
            async with Client.http(srv.url + "/mcp", auth=auth, timeout=10, max_restarts=0) as c:
                return await body(c, auth)

    return run(main(), timeout=60)


def refused(why: str) -> Body:
    async def body(c: Client, auth: OAuth) -> str:
        with pytest.raises(AuthError, match=why) as ei:
            await c.discover()
        return str(ei.value) + repr(auth)

    return body


def assert_nothing_leaked(caplog: pytest.LogCaptureFixture, server: AuthServer, *more: str) -> None:
    secrets = [CLIENT_SECRET, *server.issued, *more]
    secrets += [f["assertion"] for f in server.token_requests if "assertion" in f]
    secrets += [f["client_assertion"] for f in server.token_requests if "client_assertion" in f]
    secrets += [f["subject_token"] for f in server.idp_requests if "subject_token" in f]
    text = caplog.text + "".join(r.getMessage() for r in caplog.records)
    for secret in secrets:
        assert secret not in text


def pem(server: AuthServer) -> str:
    return server.client_key.as_pem(private=True).decode()


# --- client credentials ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_a_secret(method: str, caplog: pytest.LogCaptureFixture) -> None:
    server = AuthServer(auth_methods=[method])

    def auth(s: AuthServer) -> OAuth:
        return OAuth(grant=ClientCredentials(CLIENT_ID, client_secret=CLIENT_SECRET))

    with caplog.at_level(logging.DEBUG):
        reprs = session(server, auth, lambda c, a: _calls_then_repr(c, a))
    [form] = server.token_requests
    assert form["grant_type"] == "client_credentials"
    assert form["resource"] == server.resource
    assert ("client_secret" in form) == (method == "client_secret_post")
    assert not server.refusals[1:]  # only the first, unauthenticated, request was refused
    assert_nothing_leaked(caplog, server)
    assert CLIENT_SECRET not in reprs and "ClientCredentials" in reprs


async def _calls_then_repr(c: Client, auth: OAuth) -> str:
    await two_calls(c, auth)
    return repr(auth) + repr(auth.grant) + repr(c)


def test_client_credentials_with_private_key_jwt(caplog: pytest.LogCaptureFixture) -> None:
    server = AuthServer(auth_methods=["private_key_jwt"])
    key_pem = pem(server)
    with caplog.at_level(logging.DEBUG):
        session(server, lambda s: OAuth(grant=ClientCredentials(CLIENT_ID, private_key=key_pem)))
    [form] = server.token_requests
    assert form["grant_type"] == "client_credentials"
    assert "client_assertion" in form and "client_secret" not in form
    assert server.refusals == ["unknown token"]  # the assertion passed every check
    assert_nothing_leaked(caplog, server, key_pem)


def test_private_key_jwt_with_the_wrong_key_is_refused_clearly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = AuthServer(auth_methods=["private_key_jwt"])
    wrong = new_key().as_pem(private=True).decode()
    with caplog.at_level(logging.DEBUG):
        error = session(
            server,
            lambda s: OAuth(grant=ClientCredentials(CLIENT_ID, private_key=wrong)),
            refused(r"refused \(client_credentials\): HTTP 400: invalid_grant"),
        )
    assert server.refusals[-1].startswith("client assertion: bad signature")
    assert len(server.token_requests) == 1
    assert_nothing_leaked(caplog, server, wrong)
    assert "PRIVATE KEY" not in error


def test_a_wrong_client_secret_is_refused_without_showing_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = AuthServer()
    with caplog.at_level(logging.DEBUG):
        error = session(
            server,
            lambda s: OAuth(grant=ClientCredentials(CLIENT_ID, client_secret="WRONG-secret-99")),
            refused("HTTP 401: invalid_client"),
        )
    assert server.refusals[-1] == "wrong client credentials"
    assert "WRONG-secret-99" not in error
    assert_nothing_leaked(caplog, server, "WRONG-secret-99")


def test_grant_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="client_secret or a private_key"):
        ClientCredentials(CLIENT_ID)
    with pytest.raises(ValueError, match="not an unencrypted PEM"):
        ClientCredentials(CLIENT_ID, private_key="not a key")
    with pytest.raises(ValueError, match="exactly one"):
        TokenSource(value="a", file="b")
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentity()
    assert "SECRET" not in repr(TokenSource(value="SECRET-x"))


# --- workload identity ----------------------------------------------------------------------


def test_workload_identity_reads_its_token_file_for_every_token_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = AuthServer(expires_in=1)  # inside the renewal margin: every request renews
    token_file = tmp_path / "token"
    tokens: list[str] = []

    async def body(c: Client, auth: OAuth) -> None:
        for _ in range(2):
            tokens.append(server.workload_token())
            token_file.write_text(tokens[-1] + "\n")
            await c.call_tool("x", {})

    with caplog.at_level(logging.DEBUG):
        session(
            server,
            lambda s: OAuth(grant=WorkloadIdentity(client_id="agent", token_file=str(token_file))),
            body,
        )
    assert {f["grant_type"] for f in server.token_requests} == {JWT_BEARER}
    sent = [f["assertion"] for f in server.token_requests]
    assert list(dict.fromkeys(sent)) == tokens  # each request read the file as it was then
    assert server.token_requests[0]["client_id"] == "agent"
    assert_nothing_leaked(caplog, server)


def test_workload_identity_from_a_command(tmp_path: Path) -> None:
    server = AuthServer()
    token_file = tmp_path / "token"
    command = [sys.executable, "-c", f"print(open({str(token_file)!r}).read())"]

    def auth(s: AuthServer) -> OAuth:
        token_file.write_text(s.workload_token())
        return OAuth(grant=WorkloadIdentity(token_command=command))

    session(server, auth)
    [form] = server.token_requests
    assert form["assertion"] == token_file.read_text() and "client_id" not in form


@pytest.mark.parametrize(
    ("source", "why", "asked"),
    [
        ({"token_file": "/nonexistent/token"}, "cannot read the workload token file", 0),
        (
            {"token_command": [sys.executable, "-c", "import sys; sys.exit(3)"]},
            "exited with status 3",
            0,
        ),
        ({"token": TokenSource(command=["sleep", "30"], timeout=1.0)}, "gave no token in 1s", 0),
        ({"token": "expired"}, r"invalid_grant \(workload token expired\)", 1),
        ({"token": "wrong-audience"}, "assertion audience is not the issuer", 1),
    ],
)
def test_workload_token_failures_are_clear_and_never_retried(
    source: dict[str, Any], why: str, asked: int, caplog: pytest.LogCaptureFixture
) -> None:
    server = AuthServer()

    def auth(s: AuthServer) -> OAuth:
        given = dict(source)
        if given.get("token") == "expired":
            given["token"] = s.workload_token(expires_in=-60)
        elif given.get("token") == "wrong-audience":
            given["token"] = s.workload_token(audience="https://elsewhere.example")
        return OAuth(grant=WorkloadIdentity(client_id="agent", **given))

    with caplog.at_level(logging.DEBUG):
        session(server, auth, refused(why))
    assert len(server.token_requests) == asked
    assert_nothing_leaked(caplog, server)


# --- enterprise-managed authorization -------------------------------------------------------


def _enterprise(id_token: Callable[[AuthServer], str]) -> Callable[[AuthServer], OAuth]:
    def auth(s: AuthServer) -> OAuth:
        grant = IdentityAssertion(
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            idp_token_endpoint=s.url + "/idp/token",
            idp_client_id=IDP_CLIENT_ID,
            id_token=id_token(s),
        )
        return OAuth(grant=grant)

    return auth


def test_enterprise_managed_authorization(caplog: pytest.LogCaptureFixture) -> None:
    server = AuthServer()
    with caplog.at_level(logging.DEBUG):
        session(server, _enterprise(lambda s: s.id_token()))
    [exchange] = server.idp_requests
    assert exchange["grant_type"] == TOKEN_EXCHANGE
    assert exchange["requested_token_type"] == ID_JAG
    assert exchange["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token"
    assert exchange["audience"] == server.issuer and exchange["resource"] == server.resource
    [grant] = server.token_requests
    assert grant["grant_type"] == JWT_BEARER and grant["resource"] == server.resource
    assert server.refusals == ["unknown token"]  # the ID-JAG passed every check
    assert_nothing_leaked(caplog, server)


def test_an_identity_provider_refusal_names_it_and_stops_there(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = AuthServer()
    with caplog.at_level(logging.DEBUG):
        session(
            server,
            _enterprise(lambda s: s.id_token(audience="someone-else")),
            refused(r"identity provider's token endpoint .* refused \(token exchange\)"),
        )
    assert len(server.idp_requests) == 1 and not server.token_requests
    assert_nothing_leaked(caplog, server)


# --- DPoP -----------------------------------------------------------------------------------


def _dpop_client(s: AuthServer, store: Any = None) -> OAuth:
    return OAuth(grant=ClientCredentials(CLIENT_ID, client_secret=CLIENT_SECRET), store=store)


def test_dpop_binds_the_token_and_sends_a_fresh_proof_with_every_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = AuthServer(dpop=True)
    with caplog.at_level(logging.DEBUG):
        session(server, _dpop_client)
    [token] = server.issued
    assert server.issued[token] is not None  # bound to the client's key
    proofs = server.mcp_proofs
    assert len(proofs) == 3 and len({p["jti"] for p in proofs}) == 3
    assert all(p["htm"] == "POST" and p["htu"] == server.resource for p in proofs)
    assert server.refusals == ["unknown token"]
    assert_nothing_leaked(caplog, server)


def test_dpop_nonces_of_both_servers_are_taken_and_a_spent_one_replaced() -> None:
    server = AuthServer(dpop=True, as_nonce=True, rs_nonce=True)
    session(server, _dpop_client)
    # Each nonce is good for one proof: the token endpoint asked for one, the MCP endpoint
    # refused the spent ones; each time the client sent the request again with the new one.
    assert server.refusals[:2] == ["unknown token", "no nonce"]
    assert "stale nonce" in server.refusals
    assert len(server.token_requests) == 2
    assert all("nonce" in p for p in server.mcp_proofs)
    assert len(server.mcp_proofs) == 2 * 3  # three requests, each sent twice


@pytest.mark.parametrize(
    ("where", "why"),
    [("rs", "asked for a new DPoP nonce 3 times"), ("as", "HTTP 400: use_dpop_nonce")],
)
def test_a_server_that_never_accepts_a_nonce_is_given_up_on(where: str, why: str) -> None:
    server = AuthServer(dpop=True, rs_nonce=where == "rs", as_nonce=where == "as")
    server.rotate_nonce_every_time = True
    session(server, _dpop_client, refused(why))
    assert len(server.refusals) <= 5


def test_dpop_keys_are_kept_0600_and_a_token_without_its_key_is_not_used(
    tmp_path: Path,
) -> None:
    server = AuthServer(dpop=True)
    where = tmp_path / "oauth"
    files: list[Path] = []

    async def main() -> None:
        async with fake_server(server.handler) as srv:
            server.url = srv.url
            for round_ in range(3):
                if round_ == 2:
                    files.extend(where.iterdir())
                    key = "dpop:" + canonical(server.resource)
                    await FileTokenStore(where).save(key, DPoPKey.generate().record())
                auth = _dpop_client(server, FileTokenStore(where))
                async with Client.http(server.resource, auth=auth, timeout=10) as c:
                    await c.list_tools()
                if round_ == 1:
                    # the second client used the stored token and key
                    assert len(server.token_requests) == 1

    run(main(), timeout=60)
    assert len(files) == 2 and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    assert len(server.token_requests) == 2  # a new token for the new key, no mismatched proof
    assert "proof key is not the token's key" not in server.refusals


def test_dpop_off_gets_a_bearer_token() -> None:
    server = AuthServer(dpop=True)

    def auth(s: AuthServer) -> OAuth:
        return OAuth(grant=ClientCredentials(CLIENT_ID, client_secret=CLIENT_SECRET), dpop=False)

    session(server, auth)
    assert list(server.issued.values()) == [None] and not server.mcp_proofs


def test_a_token_file_over_its_bound_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "token"
    big.write_text("x" * 100)
    source = TokenSource(file=str(big), max_bytes=64)
    server = AuthServer()
    session(
        server,
        lambda s: OAuth(grant=WorkloadIdentity(token=source)),
        refused(f"the workload token file {big} holds more than 64 bytes"),
    )
    assert not server.token_requests
