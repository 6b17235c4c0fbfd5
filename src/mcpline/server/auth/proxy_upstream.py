"""The identity provider behind the OAuth proxy: its endpoints (given, or discovered from
``/.well-known/openid-configuration``), the authorization URL the user is sent to, and the
code exchange that tells who signed in.

The proxy is a confidential client of the provider with pre-registered credentials, and uses
PKCE (S256) there too. The provider's access token serves only to read the user's identity
(its userinfo endpoint, else the ID token the token endpoint sent over its TLS connection,
OpenID Connect Core section 3.1.3.7); it is then dropped, never stored nor handed on. Every
call is bounded by ``timeout`` seconds and ``max_bytes`` of answer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .jwks import read_capped

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("mcpline.auth")

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 256 * 1024
IDENTITY_CLAIMS = ("email", "email_verified", "name", "preferred_username")
"""The provider's claims copied into the proxy's tokens besides ``sub``."""

PRESETS: dict[str, dict[str, Any]] = {
    "github": {
        "authorization_url": "https://github.com/login/oauth/authorize",
        "token_url": "https://github.com/login/oauth/access_token",
        "userinfo_url": "https://api.github.com/user",
        "scopes": ("read:user",),
    },
    "google": {"issuer": "https://accounts.google.com", "scopes": ("openid", "email")},
}
"""Providers known by name (``provider=github``): GitHub has no discovery document."""


class UpstreamError(Exception):
    """The provider could not be reached or refused; the text never holds a token or code."""


@dataclass(frozen=True)
class Endpoints:
    authorization: str
    token: str
    userinfo: str | None


class Upstream:
    """The provider at ``issuer`` (discovered) or at the given URLs, as client ``client_id``
    authenticating with ``auth_method`` (``client_secret_post`` or ``client_secret_basic``)."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        authorization_url: str | None = None,
        token_url: str | None = None,
        userinfo_url: str | None = None,
        scopes: tuple[str, ...] = (),
        auth_method: str = "client_secret_post",
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        http: httpx2.AsyncClient | None = None,
    ) -> None:
        if auth_method not in ("client_secret_post", "client_secret_basic"):
            raise ValueError("auth_method must be client_secret_post or client_secret_basic")
        if issuer is None and (authorization_url is None or token_url is None):
            raise ValueError(
                "give the provider's issuer (discovery) or its authorization_url and token_url"
            )
        if timeout <= 0 or max_bytes < 1:
            raise ValueError("timeout and max_bytes must be positive")
        self.client_id = client_id
        self._secret = client_secret
        self.issuer = issuer
        self.scopes = scopes
        self.auth_method = auth_method
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._http = http
        self._given = (authorization_url, token_url, userinfo_url)
        self._endpoints: Endpoints | None = None
        if authorization_url is not None and token_url is not None:
            self._endpoints = Endpoints(authorization_url, token_url, userinfo_url)

    def __repr__(self) -> str:
        return f"Upstream(issuer={self.issuer!r}, client_id={self.client_id!r})"

    @property
    def name(self) -> str:
        """The provider's host, as the consent page names it."""
        return urlsplit(self.issuer or self._given[0] or "").netloc or "the identity provider"

    async def endpoints(self) -> Endpoints:
        """The provider's endpoints (discovery is asked once it succeeds)."""
        if self._endpoints is not None:
            return self._endpoints
        assert self.issuer is not None
        url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        doc = await self._call("GET", url, "discovery")
        if str(doc.get("issuer", "")).rstrip("/") != self.issuer.rstrip("/"):
            raise UpstreamError(f"the discovery document at {url} is for another issuer")
        auth, token = doc.get("authorization_endpoint"), doc.get("token_endpoint")
        if not isinstance(auth, str) or not isinstance(token, str):
            raise UpstreamError(f"the discovery document at {url} names no endpoints")
        given = self._given
        info = doc.get("userinfo_endpoint")
        self._endpoints = Endpoints(
            given[0] or auth,
            given[1] or token,
            given[2] or (info if isinstance(info, str) else None),
        )
        return self._endpoints

    async def authorization_url(self, state: str, challenge: str, redirect_uri: str) -> str:
        """Where the user signs in: the provider's authorization endpoint with PKCE."""
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri

        endpoints = await self.endpoints()
        return str(
            prepare_grant_uri(
                endpoints.authorization,
                self.client_id,
                "code",
                redirect_uri=redirect_uri,
                scope=" ".join(self.scopes) or None,
                state=state,
                code_challenge=challenge,
                code_challenge_method="S256",
            )
        )

    async def identity(self, code: str, verifier: str, redirect_uri: str) -> dict[str, Any]:
        """Who signed in: ``sub`` and the `IDENTITY_CLAIMS` the provider tells, from the
        authorization ``code``; `UpstreamError` if it cannot be had."""
        endpoints = await self.endpoints()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        headers: dict[str, str] = {}
        if self.auth_method == "client_secret_basic":
            pair = f"{self.client_id}:{self._secret}".encode()
            headers["authorization"] = "Basic " + base64.b64encode(pair).decode()
        else:
            form.update(client_id=self.client_id, client_secret=self._secret)
        answer = await self._call("POST", endpoints.token, "token", form=form, headers=headers)
        if "error" in answer or not isinstance(answer.get("access_token"), str):
            error = answer.get("error")
            raise UpstreamError(
                "the provider's token endpoint refused the code"
                + (f" ({str(error)[:60]})" if isinstance(error, str) else "")
            )
        if endpoints.userinfo is not None:
            bearer = {"authorization": "Bearer " + answer["access_token"]}
            claims = await self._call("GET", endpoints.userinfo, "userinfo", headers=bearer)
        elif isinstance(answer.get("id_token"), str):
            claims = _id_token_claims(answer["id_token"])
        else:
            raise UpstreamError("the provider sent no ID token and has no userinfo endpoint")
        return identity_claims(claims)

    async def _call(
        self,
        method: str,
        url: str,
        what: str,
        *,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        try:
            data = await asyncio.wait_for(
                self._send(method, url, what, form, headers or {}), self.timeout
            )
        except asyncio.TimeoutError:
            log.warning("oauth proxy: the provider's %s took over %g s", what, self.timeout)
            raise UpstreamError(f"the provider's {what} did not answer in time") from None
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise UpstreamError(f"the provider's {what} answered no JSON object")
        return doc

    async def _send(
        self,
        method: str,
        url: str,
        what: str,
        form: dict[str, str] | None,
        headers: dict[str, str],
    ) -> bytes:
        import httpx2

        headers = {"accept": "application/json", **headers}
        try:
            if self._http is not None:
                return await self._read(self._http, method, url, what, form, headers)
            async with httpx2.AsyncClient(timeout=self.timeout) as http:
                return await self._read(http, method, url, what, form, headers)
        except httpx2.HTTPError as exc:
            log.warning("oauth proxy: the provider's %s failed: %s", what, type(exc).__name__)
            raise UpstreamError(f"the provider's {what} failed ({type(exc).__name__})") from None

    async def _read(
        self,
        http: httpx2.AsyncClient,
        method: str,
        url: str,
        what: str,
        form: dict[str, str] | None,
        headers: dict[str, str],
    ) -> bytes:
        async with http.stream(method, url, data=form, headers=headers) as r:
            body = await read_capped(r, self.max_bytes)
            if body is None:
                raise UpstreamError(f"the provider's {what} answered over {self.max_bytes} bytes")
            if r.status_code != 200 and not (what == "token" and r.status_code == 400):
                log.warning("oauth proxy: the provider's %s answered %d", what, r.status_code)
                raise UpstreamError(f"the provider's {what} answered HTTP {r.status_code}")
            return body


def _id_token_claims(token: str) -> dict[str, Any]:
    from joserfc import jws
    from joserfc.errors import JoseError

    try:
        payload = json.loads(jws.extract_compact(token.encode("ascii")).payload)
    except (JoseError, ValueError, UnicodeError):
        raise UpstreamError("the provider's ID token is not a JWT") from None
    if not isinstance(payload, dict):
        raise UpstreamError("the provider's ID token holds no claims")
    return payload


def identity_claims(claims: dict[str, Any]) -> dict[str, Any]:
    """``sub`` (OpenID Connect; GitHub's numeric ``id``) and the `IDENTITY_CLAIMS`."""
    sub = claims.get("sub", claims.get("id"))
    if isinstance(sub, int) and not isinstance(sub, bool):
        sub = str(sub)
    if not isinstance(sub, str) or not sub or len(sub) > 255:
        raise UpstreamError("the provider did not say who signed in (no sub)")
    out: dict[str, Any] = {"sub": sub}
    login = claims.get("login")
    if isinstance(login, str) and "preferred_username" not in claims:
        out["preferred_username"] = login[:255]
    for name in IDENTITY_CLAIMS:
        value = claims.get(name)
        if isinstance(value, (str, bool)):
            out[name] = value[:255] if isinstance(value, str) else value
    return out


__all__ = ["Endpoints", "identity_claims", "PRESETS", "Upstream", "UpstreamError"]
