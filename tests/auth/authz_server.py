"""A small authorization server for the resource-server tests, run as its own process on a
free 127.0.0.1 port (uvicorn), announcing ``listening on http://…`` on stderr.

- ``/.well-known/oauth-authorization-server``: RFC 8414 metadata;
- ``/jwks``: the public keys it signs access tokens with (``/jwks-hang`` never answers);
- ``/token``: the client credentials grant (``client_secret_basic``), JWT access tokens
  (RFC 9068, ``at+jwt``) for the ``resource`` asked, bound to the DPoP key of a valid proof;
- ``/introspect``: RFC 7662 for the resource server's own client;
- test controls: ``/mint`` (a token with chosen claims, signed by the current key or by a key
  it never published), ``/rotate`` (a new signing key), ``/revoke``, ``/stats`` (how often
  the JWKS and introspection endpoints were asked).

As the identity provider behind the OAuth proxy (``UPSTREAM_CLIENT_ID`` is the proxy's client):
``/.well-known/openid-configuration``, ``/authorize`` (approves at once: redirects back with a
code; PKCE S256 required), the authorization code grant at ``/token`` (``client_secret_post``
or ``client_secret_basic``, the verifier checked), ``/userinfo``; ``/fail-next`` makes the next
``/authorize`` answer an error or the next code exchange fail.

All JOSE work is joserfc, independent of the code under test.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import socket
import sys
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

import uvicorn
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet

CLIENT_ID = "machine-client"
CLIENT_SECRET = "SECRET-machine-7a31"
CLIENT_SCOPES = {"notes:read", "notes:write"}
RS_CLIENT_ID = "resource-server"
RS_CLIENT_SECRET = "SECRET-rs-55e0"
UPSTREAM_CLIENT_ID = "mcp-proxy"
UPSTREAM_CLIENT_SECRET = "SECRET-upstream-9c2d"
USER = {"sub": "user-42", "email": "ada@example.com", "name": "Ada Lovelace"}


def new_key() -> ECKey:
    key: ECKey = ECKey.generate_key("P-256")
    key.ensure_kid()
    return key


class AuthServer:
    def __init__(self) -> None:
        self.url = ""
        self.keys = [new_key()]
        self.stranger = new_key()
        self.revoked: set[str] = set()
        self.stats = {"jwks": 0, "introspect": 0, "token": 0, "authorize": 0, "userinfo": 0}
        self.codes: dict[str, tuple[str, str]] = {}
        """code → (PKCE challenge, redirect_uri) of the upstream sign-ins."""
        self.user_tokens: set[str] = set()
        self.fail_next: dict[str, str] = {}

    @property
    def key(self) -> ECKey:
        return self.keys[-1]

    def sign(self, claims: dict[str, Any], key: ECKey | None = None, typ: str = "at+jwt") -> str:
        key = key or self.key
        return jwt.encode({"alg": "ES256", "typ": typ, "kid": key.kid}, claims, key)

    def claims(self, aud: str, **more: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {
            "iss": self.url,
            "aud": aud,
            "sub": "alice",
            "client_id": CLIENT_ID,
            "scope": "notes:read",
            "iat": now,
            "exp": now + 600,
            "jti": secrets.token_urlsafe(8),
        }
        base.update(more)
        return {k: v for k, v in base.items() if v is not None}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if scope["path"] == "/authorize":
            query = dict(parse_qsl(scope["query_string"].decode()))
            status, answer = self.authorize(query)
        else:
            status, answer = await self.route(scope["method"], scope["path"], headers, body)
        data = json.dumps(answer).encode()
        out = [(b"content-type", b"application/json")]
        if status == 302:
            out.append((b"location", answer["location"].encode()))
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": data})

    async def route(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        if path == "/.well-known/oauth-authorization-server":
            return 200, {
                "issuer": self.url,
                "token_endpoint": self.url + "/token",
                "jwks_uri": self.url + "/jwks",
                "introspection_endpoint": self.url + "/introspect",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "dpop_signing_alg_values_supported": ["ES256"],
                "scopes_supported": sorted(CLIENT_SCOPES),
            }
        if path == "/.well-known/openid-configuration":
            return 200, {
                "issuer": self.url,
                "authorization_endpoint": self.url + "/authorize",
                "token_endpoint": self.url + "/token",
                "userinfo_endpoint": self.url + "/userinfo",
                "jwks_uri": self.url + "/jwks",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            }
        if path == "/userinfo":
            self.stats["userinfo"] += 1
            bearer = headers.get("authorization", "").removeprefix("Bearer ")
            if bearer not in self.user_tokens:
                return 401, {"error": "invalid_token"}
            return 200, USER
        if path == "/fail-next":
            self.fail_next.update(json.loads(body))
            return 200, {}
        if path == "/jwks":
            self.stats["jwks"] += 1
            return 200, KeySet(list(self.keys)).as_dict(private=False)
        if path == "/jwks-hang":
            await asyncio.sleep(3600)
        if path == "/stats":
            return 200, self.stats
        if path == "/rotate":
            self.keys.append(new_key())
            return 200, {"kid": self.key.kid}
        if path == "/revoke":
            self.revoked.add(json.loads(body)["token"])
            return 200, {}
        if path == "/mint":
            spec = json.loads(body)
            key = self.stranger if spec.pop("stranger", False) else None
            typ = spec.pop("typ", "at+jwt")
            return 200, {"token": self.sign(self.claims(**spec), key, typ)}
        if path == "/token":
            return self.token(headers, dict(parse_qsl(body.decode())))
        if path == "/introspect":
            return self.introspect(headers, dict(parse_qsl(body.decode())))
        return 404, {"error": "not_found"}

    def client(self, headers: dict[str, str]) -> tuple[str, str]:
        value = headers.get("authorization", "")
        if not value.startswith("Basic "):
            return "", ""
        cid, _, secret = base64.b64decode(value[6:]).decode().partition(":")
        return cid, secret

    def authorize(self, query: dict[str, str]) -> tuple[int, Any]:
        """The provider's sign-in page, which approves at once."""
        self.stats["authorize"] += 1
        if query.get("client_id") != UPSTREAM_CLIENT_ID or "redirect_uri" not in query:
            return 400, {"error": "invalid_client"}
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return 400, {"error": "invalid_request"}
        back: dict[str, str] = {"state": query.get("state", "")}
        error = self.fail_next.pop("authorize", None)
        if error is not None:
            back["error"] = error
        else:
            code = secrets.token_urlsafe(16)
            self.codes[code] = (query["code_challenge"], query["redirect_uri"])
            back["code"] = code
        return 302, {"location": query["redirect_uri"] + "?" + urlencode(back)}

    def code_grant(self, headers: dict[str, str], form: dict[str, str]) -> tuple[int, Any]:
        """The authorization code grant of the proxy's client."""
        client = self.client(headers)
        if client == ("", ""):
            client = (form.get("client_id", ""), form.get("client_secret", ""))
        if client != (UPSTREAM_CLIENT_ID, UPSTREAM_CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if self.fail_next.pop("token", None) is not None:
            return 400, {"error": "invalid_grant"}
        found = self.codes.pop(form.get("code", ""), None)
        if found is None or form.get("redirect_uri") != found[1]:
            return 400, {"error": "invalid_grant"}
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != found[0]:
            return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        token = "UPSTREAM-" + secrets.token_urlsafe(16)
        self.user_tokens.add(token)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600}

    def token(self, headers: dict[str, str], form: dict[str, str]) -> tuple[int, Any]:
        self.stats["token"] += 1
        if form.get("grant_type") == "authorization_code":
            return self.code_grant(headers, form)
        if self.client(headers) != (CLIENT_ID, CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        wanted = set(form.get("scope", "notes:read").split())
        if not wanted <= CLIENT_SCOPES:
            return 400, {"error": "invalid_scope"}
        scope = " ".join(sorted(wanted))
        extra: dict[str, Any] = {"scope": scope}
        proof = headers.get("dpop")
        if proof is not None:
            try:
                header = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
                key = ECKey.import_key(header["jwk"])
                jwt.decode(proof, key, algorithms=["ES256"])
            except (JoseError, ValueError, KeyError, TypeError):
                return 400, {"error": "invalid_dpop_proof"}
            extra["cnf"] = {"jkt": key.thumbprint()}
        token = self.sign(self.claims(form.get("resource", ""), **extra))
        kind = "DPoP" if proof is not None else "Bearer"
        return 200, {"access_token": token, "token_type": kind, "expires_in": 600, "scope": scope}

    def introspect(self, headers: dict[str, str], form: dict[str, str]) -> tuple[int, Any]:
        self.stats["introspect"] += 1
        if self.client(headers) != (RS_CLIENT_ID, RS_CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        token = form.get("token", "")
        try:
            claims = dict(jwt.decode(token, KeySet(list(self.keys)), algorithms=["ES256"]).claims)
        except (JoseError, ValueError, TypeError):
            return 200, {"active": False}
        if token in self.revoked or claims.get("exp", 0) < time.time():
            return 200, {"active": False}
        return 200, {"active": True, "token_type": "Bearer", **claims}


def main() -> None:
    app = AuthServer()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before "listening on": a client may connect as soon as it reads that
    app.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    print(f"listening on {app.url}", file=sys.stderr, flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
