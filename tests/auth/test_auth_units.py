"""The sans-I/O parts of the resource server: DPoP proof rules (`ProofChecker`), the
``--auth`` spec (`AuthConfig`), scope rules, and the CLI's usage errors."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey

from mcpline import Server
from mcpline.client.oauth import DPoPKey
from mcpline.server.auth import AccessToken, ProofChecker, Refused
from mcpline.server.auth.config import AuthConfig
from mcpline.server.scopes import ScopeRules
from mcpline.transports.http.security import challenge

from ..transports.http_util import MCPLINE
from .rs_util import SCOPED

URL = "https://mcp.example.com/mcp"


def check(checker: ProofChecker, key: DPoPKey, proof: str, token: str = "tok") -> None:
    checker.check([proof], method="POST", url=URL, token=token, jkt=key.thumbprint)


def test_a_proof_is_accepted_once_and_its_jti_forgotten_after_the_window() -> None:
    now = [time.time()]
    checker = ProofChecker(window=60, clock=lambda: now[0])
    key = DPoPKey.generate()
    proof = key.proof("POST", URL + "?q=1", "tok")  # query and fragment are not part of htu
    check(checker, key, proof)
    with pytest.raises(Refused, match="replay"):
        check(checker, key, proof)
    now[0] += 61
    with pytest.raises(Refused, match="iat is outside"):
        check(checker, key, proof)


def test_at_max_proofs_a_new_proof_is_a_503_not_an_unremembered_pass() -> None:
    checker = ProofChecker(max_proofs=2)
    key = DPoPKey.generate()
    check(checker, key, key.proof("POST", URL, "tok"))
    check(checker, key, key.proof("POST", URL, "tok"))
    with pytest.raises(Refused) as ei:
        check(checker, key, key.proof("POST", URL, "tok"))
    assert ei.value.status == 503 and "2 DPoP proofs" in ei.value.description


def forged(header: dict[str, Any], claims: dict[str, Any], key: Any) -> str:
    return jwt.encode(header, claims, key, algorithms=[header["alg"]])


@pytest.mark.parametrize("case", ["typ", "hmac", "private", "two", "none", "long"])
def test_malformed_proofs_are_refused(case: str) -> None:
    checker = ProofChecker()
    ec = ECKey.generate_key("P-256")
    claims = {"htm": "POST", "htu": URL, "iat": int(time.time()), "jti": "j1"}
    public = ec.as_dict(private=False)
    key = DPoPKey(ec)
    if case == "typ":
        proofs = [forged({"typ": "JWT", "alg": "ES256", "jwk": public}, claims, ec)]
        why = "typ is not dpop"
    elif case == "hmac":
        oct_key = OctKey.generate_key(256)
        jwk = oct_key.as_dict(private=False)
        proofs = [forged({"typ": "dpop+jwt", "alg": "HS256", "jwk": jwk}, claims, oct_key)]
        why = "alg is not an accepted"
    elif case == "private":
        header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": ec.as_dict(private=True)}
        proofs = [forged(header, claims, ec)]
        why = "needs a public jwk"
    elif case == "two":
        proofs = [key.proof("POST", URL, "tok"), key.proof("POST", URL, "tok")]
        why = "exactly one DPoP header"
    elif case == "none":
        proofs = []
        why = "a DPoP proof is required"
    else:
        proofs = ["a" * 9000]
        why = "too long"
    with pytest.raises(Refused, match=why) as ei:
        checker.check(proofs, method="POST", url=URL, token="tok", jkt=key.thumbprint)
    assert ei.value.error == "invalid_dpop_proof" and ei.value.scheme == "DPoP"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("jwks=https://as/jwks", "needs issuer"),
        ("issuer=https://as", "either jwks"),
        ("jwks=https://as/jwks,introspection=https://as/i,issuer=https://as", "either jwks"),
        ("jwks=ftp://as,issuer=https://as", "jwks must be an http"),
        ("jwks=https://as/jwks,issuer=https://as,leeway=soon", "leeway must be a number"),
        ("jwks=https://as/jwks,issuer=https://as,fetch_timeout=0", "must be positive"),
        ("jwks=https://as/jwks,issuer=https://as,colour=red", "unknown key 'colour'"),
        ("jwks=https://as/jwks,issuer=https://as,issuer=https://b", "given twice"),
        ("jwks=https://as/jwks,issuer=https://as,audience", "not key=value"),
        ("jwks=https://as/jwks,issuer=https://as", "audience=URL is required"),
        ("introspection=https://as/i,issuer=https://as,audience=https://r", "needs client_id"),
        (
            "introspection=https://as/i,client_id=c,issuer=https://as,audience=https://r",
            "needs client_secret= or $MCPLINE_AUTH_CLIENT_SECRET",
        ),
    ],
)
def test_bad_specs_are_named(spec: str, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("$", r"\$")):
        AuthConfig.parse(spec)


def test_a_spec_gives_the_metadata_and_hides_the_secret() -> None:
    config = AuthConfig.parse(
        "introspection=https://as/i,client_id=c,authorization_server=https://as,scopes=a b",
        default_audience="http://127.0.0.1:8000/mcp",
        env={"MCPLINE_AUTH_CLIENT_SECRET": "s3cr3t-value"},
    )
    meta = config.metadata()
    assert meta["resource"] == "http://127.0.0.1:8000/mcp"
    assert meta["authorization_servers"] == ["https://as"]
    assert meta["scopes_supported"] == ["a", "b"]
    assert "s3cr3t-value" not in repr(config) and "s3cr3t-value" not in repr(config.verifier())


def test_scope_rules_and_principals() -> None:
    rules = ScopeRules()
    rules.set("tool", "t", ["a", "b"])
    token = AccessToken.from_claims({"sub": "x", "scp": ["a"], "cnf": {"jkt": "k"}})
    assert token.jkt == "k" and rules.missing(token, "tool", "t") == {"b"}
    assert rules.missing({"scope": "a b"}, "tool", "t") == frozenset()
    assert rules.missing("just a name", "tool", "t") == {"a", "b"}
    assert rules.missing(None, "tool", "t") == frozenset()  # no principal: stdio, no auth
    with pytest.raises(ValueError, match="a list of scope names"):
        rules.set("tool", "u", "a b")
    with pytest.raises(ValueError, match="is not a scope"):
        rules.set("tool", "u", ['a"b'])


def test_the_server_knows_what_each_request_requires() -> None:
    server = Server("s")

    @server.tool(scopes=["w"])
    def t() -> str:
        """A tool."""
        return ""

    @server.resource("r://{x}", scopes=["r"])
    def r(x: str) -> str:
        return x

    assert server.registry.required_scopes("tools/call", {"name": "t"}) == {"w"}
    assert server.registry.required_scopes("resources/read", {"uri": "r://1"}) == {"r"}
    assert server.registry.required_scopes("resources/read", {"uri": "q://1"}) == frozenset()
    assert server.registry.required_scopes("tools/list", {}) == frozenset()
    for ref in (
        {"type": "ref/resource", "uri": "r://{x}"},
        {"type": "ref/resource", "uri": "r://2"},
    ):
        complete = {"ref": ref, "argument": {"name": "x", "value": ""}}
        assert server.registry.required_scopes("completion/complete", complete) == {"r"}
    server.remove_tool("t")
    assert server.registry.required_scopes("tools/call", {"name": "t"}) == frozenset()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth", "jwks=https://as/jwks,issuer=https://as"], "--auth: not for stdio"),
        (["--http", "127.0.0.1:0", "--auth", "jwks=https://as/jwks"], "--auth: jwks= needs issuer"),
        (
            ["--http", "127.0.0.1:0", "--auth", "jwks=https://as/jwks,issuer=https://as"],
            "--auth: audience=URL is required",
        ),
    ],
)
def test_cli_usage_errors(args: list[str], message: str) -> None:
    proc = subprocess.run(
        [MCPLINE, "run", str(SCOPED), *args], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_challenges() -> None:
    doc = {"resource": "https://mcp.example.com/mcp"}
    url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert challenge(doc, "insufficient_scope", scope=["b", "a"]) == (
        f'Bearer error="insufficient_scope", scope="a b", resource_metadata="{url}"'
    )
    www = challenge(
        None, "invalid_dpop_proof", scheme="DPoP", description='a "quoted" \\ why', algs=["ES256"]
    )
    assert (
        www
        == 'DPoP error="invalid_dpop_proof", error_description="a \'quoted\'  why", algs="ES256"'
    )


def test_an_auth_spec_from_the_environment_is_checked_too() -> None:
    proc = subprocess.run(
        [MCPLINE, "run", str(SCOPED), "--http", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MCPLINE_AUTH": "jwks=https://as/jwks"},
    )
    assert proc.returncode == 2 and "--auth: jwks= needs issuer" in proc.stderr, proc.stderr


def test_a_renewed_token_is_the_same_owner() -> None:
    from mcpline.server.owners import owner_key

    claims = {"iss": "https://as", "sub": "dana", "client_id": "c", "scope": "a", "exp": 1}
    first = AccessToken.from_claims(claims)
    renewed = AccessToken.from_claims({**claims, "scope": "a b", "exp": 2, "jti": "new"})
    other = AccessToken.from_claims({**claims, "sub": "eve"})
    assert first == renewed and owner_key(first) == owner_key(renewed)
    assert first != other and owner_key(first) != owner_key(other)
    assert owner_key(AccessToken.from_claims({**claims, "iss": "https://elsewhere"})) != owner_key(
        first
    )


def test_credentials_are_read_from_one_authorization_header() -> None:
    from mcpline.server.auth.tokens import credentials

    assert credentials([]) is None and credentials(["Basic abc"]) is None
    assert credentials(["bearer abc"]) == ("Bearer", "abc")
    assert credentials(["DPoP abc"]) == ("DPoP", "abc")
    for bad, why in (
        (["Bearer a", "Bearer b"], "several Authorization headers"),
        (["Bearer"], "a malformed Bearer credential"),
        (["DPoP a b"], "a malformed DPoP credential"),
    ):
        with pytest.raises(Refused, match=why) as ei:
            credentials(bad)
        assert ei.value.error == "invalid_request" and ei.value.status == 401
