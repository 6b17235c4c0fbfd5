"""A small authorization server, identity provider and DPoP-checking MCP resource server for
the grant tests, one real HTTP server on a free loopback port (`http_fakes.fake_server`):

- ``/.well-known/oauth-protected-resource/mcp`` and ``/.well-known/oauth-authorization-server``;
- ``/token``: the client credentials grant (``client_secret_basic``, ``client_secret_post``,
  ``private_key_jwt`` checked against the client's registered public key: ``iss``/``sub`` the
  client, ``aud`` the issuer, unexpired, ``jti`` unseen), the JWT bearer grant with a workload
  token or an ID-JAG (verified against the identity provider's JWKS, fetched over HTTP), and
  DPoP: the proof checked (RFC 9449 section 4.3), the token bound to its key (``cnf.jkt``),
  a nonce demanded when ``as_nonce`` is on (each nonce good for one proof);
- ``/idp/token`` (RFC 8693 token exchange: ID token → ID-JAG) and ``/idp/jwks``;
- ``/jwks``: the key the authorization server signs its JWT access tokens with;
- ``/mcp``: an MCP endpoint that accepts only tokens issued here, DPoP-bound ones only with a
  valid fresh proof for this request by the bound key, and a nonce when ``rs_nonce`` is on.

Every refusal is recorded in ``refusals`` (why) so a test can assert the server's side too.
All JOSE work is joserfc (authlib's JOSE layer), independent of the client's code.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet

from .http_fakes import Request, answer_empty, respond, respond_json

CLIENT_ID = "machine-client"
CLIENT_SECRET = "SECRET-machine-4c1d"
IDP_CLIENT_ID = "idp-client"
USER = "alice@example.com"
WORKLOAD_ISSUER = "https://workload-issuer.example"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def sign(key: ECKey, claims: dict[str, Any], typ: str = "JWT") -> str:
    return jwt.encode({"alg": "ES256", "typ": typ, "kid": key.kid}, claims, key)


def new_key() -> ECKey:
    key: ECKey = ECKey.generate_key("P-256")
    key.ensure_kid()
    return key


def ath(token: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


class Refused(Exception):
    """A request the server refuses: (status, OAuth error, why)."""

    def __init__(self, status: int, error: str, why: str) -> None:
        super().__init__(why)
        self.status, self.error, self.why = status, error, why


@dataclass
class AuthServer:
    """What the servers accept, and what they saw."""

    url: str = ""
    client_key: ECKey = field(default_factory=new_key)
    """The key whose public half is registered for ``private_key_jwt``."""
    workload_key: ECKey = field(default_factory=new_key)
    idp_key: ECKey = field(default_factory=new_key)
    as_key: ECKey = field(default_factory=new_key)
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic"])
    dpop: bool = False
    """Advertise DPoP and challenge with the DPoP scheme."""
    as_nonce: bool = False
    rs_nonce: bool = False
    rotate_nonce_every_time: bool = False
    """Answer every proof, even one with the current nonce, with a new nonce (a broken server)."""
    expires_in: int = 3600
    token_requests: list[dict[str, str]] = field(default_factory=list)
    idp_requests: list[dict[str, str]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    issued: dict[str, str | None] = field(default_factory=dict)
    """access token → the key thumbprint it is bound to (None: a bearer token)."""
    seen_jti: set[str] = field(default_factory=set)
    mcp_proofs: list[dict[str, Any]] = field(default_factory=list)
    as_nonces: set[str] = field(default_factory=set)
    rs_nonces: set[str] = field(default_factory=set)

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def resource(self) -> str:
        return self.url + "/mcp"

    # --- tokens the tests hand the client --------------------------------------------------

    def workload_token(self, *, audience: str | None = None, expires_in: int = 300) -> str:
        now = int(time.time())
        claims = {
            "iss": WORKLOAD_ISSUER,
            "sub": "system:serviceaccount:prod:agent",
            "aud": audience or self.issuer,
            "iat": now,
            "exp": now + expires_in,
        }
        return sign(self.workload_key, claims)

    def id_token(self, *, audience: str = IDP_CLIENT_ID) -> str:
        now = int(time.time())
        claims = {"iss": self.url + "/idp", "sub": USER, "aud": audience, "iat": now}
        return sign(self.idp_key, {**claims, "exp": now + 300})

    # --- dispatch ----------------------------------------------------------------------------

    async def handler(self, req: Request, w: asyncio.StreamWriter) -> None:
        try:
            await self._route(req, w)
        except Refused as r:
            self.refusals.append(r.why)
            headers = {}
            if r.error == "use_dpop_nonce":
                nonce = secrets.token_urlsafe(12)
                (self.rs_nonces if req.path == "/mcp" else self.as_nonces).add(nonce)
                headers["DPoP-Nonce"] = nonce
            if req.path == "/mcp":
                scheme = "DPoP" if self.dpop else "Bearer"
                headers["WWW-Authenticate"] = (
                    f'{scheme} error="{r.error}", resource_metadata="{self.url}'
                    '/.well-known/oauth-protected-resource/mcp"'
                )
            respond_json(
                w, {"error": r.error, "error_description": r.why}, r.status, headers=headers
            )

    async def _route(self, req: Request, w: asyncio.StreamWriter) -> None:
        path = req.path
        if path == "/.well-known/oauth-protected-resource/mcp":
            respond_json(w, {"resource": self.resource, "authorization_servers": [self.issuer]})
        elif path == "/.well-known/oauth-authorization-server":
            meta: dict[str, Any] = {
                "issuer": self.issuer,
                "token_endpoint": self.url + "/token",
                "jwks_uri": self.url + "/jwks",
                "grant_types_supported": ["client_credentials", JWT_BEARER],
                "token_endpoint_auth_methods_supported": self.auth_methods,
                "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
            }
            if self.dpop:
                meta["dpop_signing_alg_values_supported"] = ["ES256"]
            respond_json(w, meta)
        elif path == "/jwks":
            respond_json(w, KeySet([self.as_key]).as_dict(private=False))
        elif path == "/idp/jwks":
            respond_json(w, KeySet([self.idp_key]).as_dict(private=False))
        elif path == "/idp/token":
            respond_json(w, self._idp_token(req))
        elif path == "/token":
            respond_json(w, await self._token(req))
        elif path == "/mcp":
            self._check_mcp(req)
            answer_empty(w, req.json())
        else:
            respond(w, 404)

    # --- the authorization server ------------------------------------------------------------

    def _client(self, req: Request, form: dict[str, str]) -> str:
        """The authenticated client's id, by the method it used."""
        basic = req.headers.get("authorization", "")
        if basic.startswith("Basic "):
            cid, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            method = "client_secret_basic"
        elif "client_assertion" in form:
            if form.get("client_assertion_type") != ASSERTION_TYPE:
                raise Refused(401, "invalid_client", "wrong client_assertion_type")
            claims = self._verify(form["client_assertion"], self.client_key, "client assertion")
            if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID:
                raise Refused(401, "invalid_client", "client assertion iss/sub is not the client")
            if claims.get("aud") not in (self.issuer, [self.issuer]):
                raise Refused(401, "invalid_client", "client assertion aud is not the issuer")
            if claims.get("jti") in self.seen_jti:
                raise Refused(401, "invalid_client", "client assertion replayed")
            self.seen_jti.add(str(claims.get("jti")))
            return CLIENT_ID
        elif "client_secret" in form:
            cid, secret, method = (
                form.get("client_id", ""),
                form["client_secret"],
                "client_secret_post",
            )
        else:
            return form.get("client_id", "")
        if method not in self.auth_methods:
            raise Refused(401, "invalid_client", f"{method} is not allowed")
        if cid != CLIENT_ID or secret != CLIENT_SECRET:
            raise Refused(401, "invalid_client", "wrong client credentials")
        return cid

    def _verify(self, token: str, key: ECKey, what: str) -> dict[str, Any]:
        try:
            claims = dict(jwt.decode(token, key, algorithms=["ES256"]).claims)
        except (JoseError, ValueError) as exc:
            why = f"{what}: bad signature ({type(exc).__name__})"
            raise Refused(400, "invalid_grant", why) from None
        exp = claims.get("exp")
        if not isinstance(exp, int) or exp < time.time():
            raise Refused(400, "invalid_grant", f"{what} expired")
        return claims

    async def _token(self, req: Request) -> dict[str, Any]:
        form = req.form()
        self.token_requests.append(form)
        jkt = self._check_proof(req.headers.get("dpop"), "POST", self.url + "/token", None)
        client = self._client(req, form)
        grant = form.get("grant_type")
        if form.get("resource") != self.resource:
            raise Refused(400, "invalid_target", "resource is not this MCP server")
        if grant == "client_credentials":
            if client != CLIENT_ID:
                raise Refused(401, "invalid_client", "unknown client")
        elif grant == JWT_BEARER:
            await self._check_assertion(form.get("assertion", ""), client)
        else:
            raise Refused(400, "unsupported_grant_type", f"grant {grant}")
        token = "AT-" + secrets.token_urlsafe(16)
        if jkt is not None:
            now = int(time.time())
            claims = {"iss": self.issuer, "aud": self.resource, "exp": now + 600, "jti": token}
            token = sign(self.as_key, {**claims, "cnf": {"jkt": jkt}}, "at+jwt")
        self.issued[token] = jkt
        answer = {
            "access_token": token,
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": self.expires_in,
        }
        if form.get("scope"):
            answer["scope"] = form["scope"]
        return answer

    async def _check_assertion(self, assertion: str, client: str) -> None:
        import httpx2

        if not assertion:
            raise Refused(400, "invalid_request", "no assertion")
        try:
            is_jag = _header(assertion).get("typ") == "oauth-id-jag+jwt"
        except ValueError:
            raise Refused(400, "invalid_grant", "the assertion is not a JWT") from None
        if is_jag:
            async with httpx2.AsyncClient() as http:
                jwks = KeySet.import_key_set((await http.get(self.url + "/idp/jwks")).json())
            claims = self._verify(assertion, jwks.keys[0], "ID-JAG")
            if claims.get("client_id") != client:
                raise Refused(400, "invalid_grant", "ID-JAG client_id is not the client")
            if claims.get("resource") != self.resource:
                raise Refused(400, "invalid_grant", "ID-JAG resource is not this MCP server")
        else:
            claims = self._verify(assertion, self.workload_key, "workload token")
            if claims.get("iss") != WORKLOAD_ISSUER:
                raise Refused(400, "invalid_grant", "workload token from an unknown issuer")
        if claims.get("aud") not in (self.issuer, [self.issuer]):
            raise Refused(400, "invalid_grant", "assertion audience is not the issuer")

    def _idp_token(self, req: Request) -> dict[str, Any]:
        form = req.form()
        self.idp_requests.append(form)
        if form.get("grant_type") != TOKEN_EXCHANGE or form.get("requested_token_type") != ID_JAG:
            raise Refused(400, "unsupported_grant_type", "the IdP only exchanges for ID-JAGs")
        if form.get("client_id") != IDP_CLIENT_ID:
            raise Refused(401, "invalid_client", "unknown IdP client")
        claims = self._verify(form.get("subject_token", ""), self.idp_key, "ID token")
        if claims.get("aud") != IDP_CLIENT_ID:
            raise Refused(400, "invalid_grant", "ID token audience is not the IdP client")
        now = int(time.time())
        jag = {
            "iss": self.url + "/idp",
            "sub": claims["sub"],
            "aud": form.get("audience"),
            "resource": form.get("resource"),
            "client_id": CLIENT_ID,
            "jti": secrets.token_urlsafe(8),
            "iat": now,
            "exp": now + 300,
        }
        return {
            "access_token": sign(self.idp_key, jag, "oauth-id-jag+jwt"),
            "issued_token_type": ID_JAG,
            "token_type": "N_A",
        }

    # --- DPoP ----------------------------------------------------------------------------------

    def _check_proof(
        self, proof: str | None, method: str, url: str, token: str | None
    ) -> str | None:
        """The thumbprint of a valid proof's key (None without a proof at the token endpoint);
        refuses a proof that is malformed, replayed, for another request or without the
        nonce this server demands."""
        at_mcp = token is not None
        if proof is None:
            if at_mcp:
                raise Refused(401, "invalid_dpop_proof", "no DPoP proof")
            return None
        try:
            key = ECKey.import_key(_header(proof)["jwk"])
            decoded = jwt.decode(proof, key, algorithms=["ES256"])
            header, claims = decoded.header, dict(decoded.claims)
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            why = f"unverifiable proof ({type(exc).__name__})"
            raise Refused(400, "invalid_dpop_proof", why) from None
        if header.get("typ") != "dpop+jwt" or "d" in header["jwk"]:
            raise Refused(400, "invalid_dpop_proof", "not a dpop+jwt with a public key")
        if claims.get("htm") != method or claims.get("htu") != url:
            raise Refused(400, "invalid_dpop_proof", "proof for another request")
        if abs(time.time() - int(claims.get("iat", 0))) > 60:
            raise Refused(400, "invalid_dpop_proof", "proof too old")
        jti = str(claims.get("jti"))
        if jti in self.seen_jti:
            raise Refused(400, "invalid_dpop_proof", "proof replayed")
        self.seen_jti.add(jti)
        if at_mcp:
            self.mcp_proofs.append(claims)
            if claims.get("ath") != ath(str(token)):
                raise Refused(401, "invalid_dpop_proof", "ath is not the token's hash")
            if self.issued.get(str(token)) != key.thumbprint():
                raise Refused(401, "invalid_dpop_proof", "proof key is not the token's key")
        nonces, demanded = (
            (self.rs_nonces, self.rs_nonce) if at_mcp else (self.as_nonces, self.as_nonce)
        )
        if demanded:
            nonce = claims.get("nonce")
            if nonce not in nonces or self.rotate_nonce_every_time:
                why = "stale nonce" if nonce else "no nonce"
                raise Refused(401 if at_mcp else 400, "use_dpop_nonce", why)
            nonces.discard(nonce)  # each nonce is good once: a replay gets a new one
        return str(key.thumbprint())

    def _check_mcp(self, req: Request) -> None:
        auth = req.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if token not in self.issued:
            raise Refused(401, "invalid_token", "unknown token")
        if self.issued[token] is None:
            if scheme != "Bearer":
                raise Refused(401, "invalid_token", "a bearer token under another scheme")
            return
        if scheme != "DPoP":
            raise Refused(401, "invalid_token", "a DPoP-bound token sent as Bearer")
        self._check_proof(req.headers.get("dpop"), req.method, self.resource, token)


def _header(token: str) -> dict[str, Any]:
    """A JWT's header, unverified (to find the key that verifies it)."""
    import json

    head = token.split(".")[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, TypeError):
        raise ValueError("not a JWT") from None
    if not isinstance(header, dict):
        raise ValueError("not a JWT")
    return header
