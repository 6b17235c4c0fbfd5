"""OAuth 2.1 for HTTP servers that want it (the 2026-07-28 specification's basic/authorization).

Give ``Client.http`` an `OAuth`; the first 401 starts the flow and every request carries
the token from then on::

    auth = OAuth(client_name="my host")                 # a browser and a loopback redirect
    async with Client.http("https://example.com/mcp", auth=auth) as client:
        await client.list_tools()

The flow: the protected resource metadata (RFC 9728: the ``resource_metadata`` of the
``WWW-Authenticate`` challenge, else the well-known paths), whose ``resource`` must cover the
server's URL; the authorization server's metadata (RFC 8414 and OpenID Connect discovery, its
``issuer`` checked against the one it was looked up for); a client: pre-registered
(``client_id``), a client ID metadata document (``client_metadata_url``, when the server
supports them) or dynamic registration (RFC 7591), each bound to its issuer; the
authorization code grant with PKCE S256, the ``resource`` indicator (RFC 8707), ``state``
and the ``iss`` response parameter (RFC 9207) checked; the token endpoint's client
authentication (``client_secret_basic``, ``client_secret_post`` or ``none``); refresh tokens
(``offline_access`` when the server offers it); and step-up on 403 ``insufficient_scope``
(the union of the scopes granted and challenged, at most ``max_authorizations`` consent
rounds in a row).

``on_authorize(url, redirect_uri)`` shows the user ``url`` and returns the URL the
authorization server redirected to: `browser_redirect` (the default: a browser and a one-shot
loopback listener) or `fetch_redirect` (follows nothing: for servers that redirect at once,
as test servers do). ``store`` keeps tokens and clients between runs: `MemoryTokenStore` by
default, or `FileTokenStore` (``0600`` files in the user's config directory).

Tokens, codes and client secrets never appear in a log line, an error or a repr.
authlib supplies the OAuth primitives (PKCE, the grant URI, client authentication, metadata
checks); httpx2 carries them. Both load with the first HTTP connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ..errors import AuthError
from ._oauth_config import oauth_arguments
from ._oauth_dpop import DPoPKey
from ._oauth_grants import (
    ClientAuth,
    ClientCredentials,
    Grant,
    GrantContext,
    IdentityAssertion,
    TokenSource,
    WorkloadIdentity,
    token_response_json,
)
from ._oauth_redirects import browser_redirect, fetch_redirect, loopback_redirect_uri
from ._oauth_stores import FileTokenStore, MemoryTokenStore, TokenStore, config_dir
from ._oauth_urls import canonical, covers, default_endpoints, origin_of, parse_challenges, short

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("mcpline.client.oauth")

AuthorizeHook = Callable[[str, str], Awaitable[str]]
"""``on_authorize(authorization_url, redirect_uri)`` → the URL the user came back to."""

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
AS_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")
DPOP_ALGS = ("ES256",)
"""The DPoP proof algorithms this client signs with."""
MAX_NONCE_RETRIES = 2
"""The default of ``OAuth(max_nonce_retries=...)``."""
OFFLINE_ACCESS = "offline_access"
MAX_METADATA_BYTES = 256 * 1024
EXPIRY_MARGIN = 30.0
"""Seconds before its expiry that a token is refreshed."""


# --- the flow --------------------------------------------------------------------------------


class OAuth:
    """An OAuth 2.1 client for one MCP server (see the module docs).

    ``client_name``, ``redirect_uri`` and ``application_type`` describe this client to a
    registration endpoint; ``client_metadata_url`` is its client ID metadata document, used
    when the authorization server supports them; ``client_id`` and ``client_secret`` are a
    pre-registered client (``token_endpoint_auth_method`` says how it authenticates:
    ``client_secret_basic`` by default with a secret, ``none`` without). ``scopes``, when
    given, replaces the scope the server's challenge or metadata would select.
    ``timeout`` bounds each request to the authorization server.

    ``grant`` replaces the authorization code flow with a machine-to-machine grant:
    `ClientCredentials`, `WorkloadIdentity` or `IdentityAssertion`. ``dpop`` asks for
    DPoP-bound tokens (RFC 9449): True always, False never, None (the default) when the
    resource server accepts DPoP (its challenge or metadata says so) and the authorization
    server signs proofs with ES256; a server that wants a new DPoP nonce more than
    ``max_nonce_retries`` times in a row for one request gets an `AuthError`.
    """

    def __init__(
        self,
        *,
        client_name: str = "mcpline",
        redirect_uri: str | None = None,
        client_metadata_url: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        scopes: Sequence[str] | None = None,
        on_authorize: AuthorizeHook | None = None,
        store: TokenStore | None = None,
        application_type: str = "native",
        max_authorizations: int = 3,
        timeout: float = 30.0,
        grant: Grant | None = None,
        dpop: bool | None = None,
        max_nonce_retries: int = MAX_NONCE_RETRIES,
    ) -> None:
        if token_endpoint_auth_method not in (None, *AUTH_METHODS):
            raise ValueError(f"token_endpoint_auth_method must be one of {AUTH_METHODS}")
        self.client_name = client_name
        self.redirect_uri = redirect_uri or loopback_redirect_uri()
        self.client_metadata_url = client_metadata_url
        self.client_id = client_id
        self._client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.scopes = list(scopes) if scopes is not None else None
        self.on_authorize: AuthorizeHook = on_authorize or browser_redirect
        self.store: TokenStore = store or MemoryTokenStore()
        self.application_type = application_type
        self.max_authorizations = max_authorizations
        self.timeout = timeout
        self._token: dict[str, Any] | None = None
        self._loaded = False
        self._generation = 0
        self._rounds = 0
        """Authorization rounds since a request last went through."""
        self._requested: set[str] = set()
        self._lock: asyncio.Lock | None = None
        self.grant = grant
        self.dpop = dpop
        self._dpop_key: DPoPKey | None = None
        self._dpop_offered = False
        """The resource server challenged with the DPoP scheme."""
        self._nonce_retries = 0
        self.max_nonce_retries = max_nonce_retries

    def __repr__(self) -> str:
        return (
            f"OAuth(client_name={self.client_name!r}, redirect_uri={self.redirect_uri!r}, "
            f"client_id={'set' if self.client_id else None}, grant={self.grant!r}, "
            f"dpop={self.dpop}, authorized={self._token is not None})"
        )

    @property
    def generation(self) -> int:
        """Changes whenever the token does (so a request knows whether it used the latest)."""
        return self._generation

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    # --- what the HTTP channel calls ------------------------------------------------------

    async def headers(
        self, http: httpx2.AsyncClient, url: str, method: str = "POST"
    ) -> dict[str, str]:
        """``Authorization`` (and a fresh ``DPoP`` proof for a DPoP-bound token) for the next
        ``method`` request to ``url``, refreshing or renewing an expired token first."""
        if not self._loaded:
            async with self._locked():
                if not self._loaded:
                    await self._load(url)
        token = self._token
        if token is None:
            return {}
        expires = token.get("expires_at")
        if isinstance(expires, (int, float)) and time.time() > expires - EXPIRY_MARGIN:
            if token.get("refresh_token") or self.grant is not None:
                async with self._locked():
                    if self._token is token:
                        with contextlib.suppress(AuthError):
                            if token.get("refresh_token"):
                                await self._refresh(http, url)
                            else:
                                await self._authorize(http, url, {}, step_up=False)
                token = self._token
            if token is None:
                return {}
        access = token["access_token"]
        if token.get("token_type") == "DPoP" and self._dpop_key is not None:
            return {
                "Authorization": f"DPoP {access}",
                "DPoP": self._dpop_key.proof(method, url, access_token=access),
            }
        return {"Authorization": f"Bearer {access}"}

    async def _load(self, url: str) -> None:
        token = await self.store.load(self._key(url))
        if token is not None and token.get("token_type") == "DPoP":
            key = DPoPKey.from_record(await self.store.load("dpop:" + self._key(url)))
            if key is None or key.thumbprint != token.get("jkt"):
                token = None  # a bound token without its key is of no use
            self._dpop_key = key
        self._token = token
        self._loaded = True
        self._generation += 1

    async def _dpop(self, url: str) -> DPoPKey:
        """This server's DPoP key: the stored one, else a new one (stored at once)."""
        if self._dpop_key is None:
            key = DPoPKey.from_record(await self.store.load("dpop:" + self._key(url)))
            if key is None:
                key = DPoPKey.generate()
                await self.store.save("dpop:" + self._key(url), key.record())
            self._dpop_key = key
        return self._dpop_key

    def received(self, url: str, headers: Any) -> None:
        """A response from ``url`` arrived: keep the DPoP nonce it may carry."""
        if self._dpop_key is not None:
            self._dpop_key.remember_nonce(url, headers.get("dpop-nonce"))

    def succeeded(self) -> None:
        """A request went through: the consent rounds start again from zero."""
        self._rounds = 0
        self._nonce_retries = 0

    async def challenged(
        self,
        http: httpx2.AsyncClient,
        status: int,
        challenges: Sequence[str],
        url: str,
        generation: int,
    ) -> bool:
        """Act on a 401 or 403; True when the request should be sent again."""
        dpop = parse_challenges(challenges, "dpop")
        params = parse_challenges(challenges) or dpop
        if "dpop" in {c.strip().split(" ")[0].lower() for c in challenges}:
            self._dpop_offered = True
        if status == 401 and dpop.get("error") == "use_dpop_nonce" and self._dpop_key:
            # RFC 9449 section 9: the response carried the nonce; a new proof takes it.
            self._nonce_retries += 1
            if self._nonce_retries > self.max_nonce_retries:
                raise AuthError(
                    f"the server asked for a new DPoP nonce {self._nonce_retries} times in a row"
                )
            return True
        if status == 403 and params.get("error") != "insufficient_scope":
            return False
        async with self._locked():
            if generation != self._generation:
                return True  # another request already got a new token
            if status == 401 and self._token is not None and self._token.get("refresh_token"):
                issuer = await self._current_issuer(http, url, params)
                if issuer is not None and issuer == self._token.get("issuer"):
                    try:
                        await self._refresh(http, url)
                        return True
                    except AuthError as exc:
                        log.info("refreshing the token failed (%s); authorizing again", exc)
            if self._rounds >= self.max_authorizations:
                raise AuthError(
                    f"gave up after {self._rounds} authorization attempts: the server still "
                    f"answers HTTP {status}"
                    + (f" ({params['error']})" if "error" in params else "")
                )
            self._rounds += 1
            step_up = status == 403
            await self._authorize(http, url, params, step_up=step_up)
            return True

    # --- discovery ------------------------------------------------------------------------

    def _key(self, url: str) -> str:
        return canonical(url)

    async def _get_json(self, http: httpx2.AsyncClient, url: str) -> dict[str, Any] | None:
        import httpx2

        try:
            response = await http.get(
                url, headers={"Accept": "application/json"}, timeout=self.timeout
            )
        except httpx2.HTTPError as exc:
            log.info("could not fetch %s: %s", url, type(exc).__name__)
            return None
        if response.status_code != 200 or len(response.content) > MAX_METADATA_BYTES:
            return None
        try:
            data = response.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    async def _resource_metadata(
        self, http: httpx2.AsyncClient, url: str, params: dict[str, str]
    ) -> dict[str, Any] | None:
        """The protected resource metadata: the challenge's URL, else the path-aware and
        the root well-known locations (RFC 9728, section 3)."""
        candidates = []
        if params.get("resource_metadata"):
            candidates.append(params["resource_metadata"])
        parts = urlsplit(url)
        path = parts.path.rstrip("/")
        if path:
            candidates.append(origin_of(url) + PRM_WELL_KNOWN + path)
        candidates.append(origin_of(url) + PRM_WELL_KNOWN)
        for candidate in candidates:
            data = await self._get_json(http, candidate)
            if data is not None and isinstance(data.get("authorization_servers"), list):
                return data
        return None

    async def _current_issuer(
        self, http: httpx2.AsyncClient, url: str, params: dict[str, str]
    ) -> str | None:
        prm = await self._resource_metadata(http, url, params)
        servers = prm.get("authorization_servers") if prm else None
        return servers[0] if servers and isinstance(servers[0], str) else None

    async def _server_metadata(self, http: httpx2.AsyncClient, issuer: str) -> dict[str, Any]:
        """The authorization server's metadata (RFC 8414 section 3 and OpenID Connect discovery, in
        the spec's order), whose ``issuer`` must be exactly the one looked up."""
        from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

        origin = origin_of(issuer)
        path = urlsplit(issuer).path.rstrip("/")
        if path:
            candidates = [
                origin + AS_WELL_KNOWN + path,
                origin + OIDC_WELL_KNOWN + path,
                origin + path + OIDC_WELL_KNOWN,
            ]
        else:
            candidates = [origin + AS_WELL_KNOWN, origin + OIDC_WELL_KNOWN]
        refused = ""
        for candidate in candidates:
            data = await self._get_json(http, candidate)
            if data is None:
                continue
            if data.get("issuer") != issuer:
                refused = (
                    f"; {candidate} names the issuer {short(data.get('issuer'), 100)!r}, "
                    f"not {issuer!r}"
                )
                continue
            meta = AuthorizationServerMetadata(data)
            try:
                if self.grant is None:
                    meta.validate_authorization_endpoint()
                meta.validate_token_endpoint()
                meta.validate_registration_endpoint()
            except ValueError as exc:
                raise AuthError(f"unusable metadata for {issuer}: {exc}") from None
            needed = ["token_endpoint"] + (["authorization_endpoint"] if self.grant is None else [])
            if any(not isinstance(data.get(n), str) for n in needed):
                raise AuthError(f"the metadata of {issuer} lacks its endpoints")
            return data
        raise AuthError(f"no authorization server metadata for {issuer}{refused}")

    # --- registration ---------------------------------------------------------------------

    def _auth_method(self, meta: dict[str, Any], has_secret: bool) -> str:
        supported = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        for method in supported:
            if method in AUTH_METHODS and (has_secret or method == "none"):
                return str(method)
        return "client_secret_basic" if has_secret else "none"

    async def _client(
        self, http: httpx2.AsyncClient, issuer: str, meta: dict[str, Any], scope: str | None
    ) -> dict[str, Any]:
        """This client's identity at ``issuer``: stored, pre-registered, a metadata document
        or a new registration. Credentials are never shown to another issuer."""
        stored = await self.store.load("client:" + issuer)
        if stored is not None and stored.get("issuer") == issuer:
            return stored
        if self.client_id is not None:
            method = self.token_endpoint_auth_method or (
                "client_secret_basic" if self._client_secret else "none"
            )
            return {
                "issuer": issuer,
                "client_id": self.client_id,
                "client_secret": self._client_secret,
                "method": method,
            }
        if meta.get("client_id_metadata_document_supported") is True and self.client_metadata_url:
            return {"issuer": issuer, "client_id": self.client_metadata_url, "method": "none"}
        endpoint = meta.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise AuthError(
                f"{issuer} offers no registration endpoint and no client ID metadata documents; "
                "give OAuth(client_id=...) of a pre-registered client"
            )
        method = self._auth_method(meta, has_secret=True)
        body: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.application_type,
        }
        if scope:
            body["scope"] = scope
        import httpx2

        try:
            response = await http.post(endpoint, json=body, timeout=self.timeout)
        except httpx2.HTTPError as exc:
            raise AuthError(f"registration at {issuer} failed: {type(exc).__name__}") from None
        if response.status_code not in (200, 201):
            raise AuthError(f"registration at {issuer} failed: HTTP {response.status_code}")
        try:
            info = response.json()
        except ValueError:
            raise AuthError(f"registration at {issuer} returned no JSON") from None
        if not isinstance(info, dict) or not isinstance(info.get("client_id"), str):
            raise AuthError(f"registration at {issuer} returned no client_id")
        client = {
            "issuer": issuer,
            "client_id": info["client_id"],
            "client_secret": info.get("client_secret"),
            "method": info.get("token_endpoint_auth_method") or method,
        }
        if client["method"] != "none" and not client["client_secret"]:
            client["method"] = "none"
        await self.store.save("client:" + issuer, client)
        return client

    # --- authorization --------------------------------------------------------------------

    def _scope(
        self,
        params: dict[str, str],
        prm: dict[str, Any],
        meta: dict[str, Any],
        step_up: bool,
    ) -> str | None:
        """The spec's scope selection: the challenge's ``scope``, else every scope the
        resource supports, else none; on step-up, with what was asked for before;
        ``offline_access`` when the authorization server offers it."""
        if self.scopes is not None:
            wanted = list(self.scopes)
        elif params.get("scope"):
            wanted = params["scope"].split()
        elif isinstance(prm.get("scopes_supported"), list):
            wanted = [s for s in prm["scopes_supported"] if isinstance(s, str)]
        else:
            wanted = []
        if step_up:
            wanted = [*[s for s in sorted(self._requested) if s not in wanted], *wanted]
        offered = meta.get("scopes_supported")
        if isinstance(offered, list) and OFFLINE_ACCESS in offered and OFFLINE_ACCESS not in wanted:
            wanted.append(OFFLINE_ACCESS)
        return " ".join(dict.fromkeys(wanted)) or None

    async def _discover(
        self, http: httpx2.AsyncClient, url: str, params: dict[str, str]
    ) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        """(issuer, resource, resource metadata, authorization server metadata) for ``url``."""
        prm = await self._resource_metadata(http, url, params)
        if prm is None:
            # A 2025-03-26 server: no resource metadata; the authorization server is the
            # server's origin, with its metadata or, failing that, the default endpoints.
            issuer, resource, prm = origin_of(url), canonical(url), {}
            try:
                meta = await self._server_metadata(http, issuer)
            except AuthError:
                meta = default_endpoints(issuer)
        else:
            named = prm.get("resource")
            if not isinstance(named, str) or not covers(named, url):
                raise AuthError(
                    f"the protected resource metadata is for {short(named, 100)!r}, "
                    f"not for {canonical(url)}; refusing to authorize"
                )
            resource = named
            servers = [s for s in prm.get("authorization_servers") or [] if isinstance(s, str)]
            if not servers:
                raise AuthError("the protected resource metadata names no authorization server")
            issuer = servers[0]
            meta = await self._server_metadata(http, issuer)
        return issuer, resource, prm, meta

    def _wants_dpop(self, prm: dict[str, Any], meta: dict[str, Any]) -> bool:
        if self.dpop is not None:
            return self.dpop
        algs = meta.get("dpop_signing_alg_values_supported")
        supported = isinstance(algs, list) and any(a in DPOP_ALGS for a in algs)
        offered = (
            self._dpop_offered
            or prm.get("dpop_bound_access_tokens_required") is True
            or isinstance(prm.get("dpop_signing_alg_values_supported"), list)
        )
        return supported and offered

    async def _authorize(
        self, http: httpx2.AsyncClient, url: str, params: dict[str, str], *, step_up: bool
    ) -> None:
        issuer, resource, prm, meta = await self._discover(http, url, params)
        dpop = await self._dpop(url) if self._wants_dpop(prm, meta) else None
        if self.grant is not None:
            scope = self._scope(params, prm, {}, step_up)
            ctx = GrantContext(http, issuer, resource, scope, meta, self.timeout)
            form = await self.grant.form(ctx)
            if scope:
                self._requested.update(scope.split())
            client = self.grant.client(meta)
            await self._token_request(http, url, meta, client, form, issuer, resource, dpop)
            return
        await self._code_grant(http, url, params, issuer, resource, prm, meta, step_up, dpop)

    async def _code_grant(
        self,
        http: httpx2.AsyncClient,
        url: str,
        params: dict[str, str],
        issuer: str,
        resource: str,
        prm: dict[str, Any],
        meta: dict[str, Any],
        step_up: bool,
        dpop: DPoPKey | None,
    ) -> None:
        from authlib.common.security import generate_token
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        if "S256" not in (meta.get("code_challenge_methods_supported") or []):
            raise AuthError(f"{issuer} does not support PKCE with S256; refusing to authorize")
        scope = self._scope(params, prm, meta, step_up)
        client = await self._client(http, issuer, meta, scope)
        verifier = generate_token(64)
        state = secrets.token_urlsafe(24)
        grant_url = prepare_grant_uri(
            meta["authorization_endpoint"],
            client["client_id"],
            "code",
            redirect_uri=self.redirect_uri,
            scope=scope,
            state=state,
            code_challenge=create_s256_code_challenge(verifier),  # type: ignore[no-untyped-call]
            code_challenge_method="S256",
            resource=resource,
        )
        came_back = await self.on_authorize(str(grant_url), self.redirect_uri)
        query = parse_qs(urlsplit(came_back).query)

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        if one("state") != state:
            raise AuthError("the authorization response's state does not match; refused")
        iss = one("iss")
        if meta.get("authorization_response_iss_parameter_supported") is True and iss is None:
            raise AuthError(f"{issuer} promised an iss parameter and sent none; refused")
        if iss is not None and iss != issuer:
            raise AuthError("the authorization response's iss is not the issuer; refused")
        if one("error") is not None:
            raise AuthError(
                f"authorization refused: {short(one('error'), 80)}"
                + (f" ({short(one('error_description'))})" if one("error_description") else "")
            )
        code = one("code")
        if not code:
            raise AuthError("the authorization response has no code")
        if scope:
            self._requested.update(scope.split())
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
            "resource": resource,
        }
        auth = ClientAuth(client["client_id"], client["method"], secret=client.get("client_secret"))
        await self._token_request(http, url, meta, auth, form, issuer, resource, dpop)

    async def _refresh(self, http: httpx2.AsyncClient, url: str) -> None:
        token = self._token
        if token is None or not token.get("refresh_token"):
            raise AuthError("no refresh token")
        issuer = str(token.get("issuer"))
        meta = await self._server_metadata(http, issuer)
        if self.grant is not None:
            auth = self.grant.client(meta)
        else:
            client = await self._client(http, issuer, meta, None)
            auth = ClientAuth(
                client["client_id"], client["method"], secret=client.get("client_secret")
            )
        form = {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]}
        if token.get("resource"):
            form["resource"] = token["resource"]
        dpop = self._dpop_key if token.get("token_type") == "DPoP" else None
        await self._token_request(http, url, meta, auth, form, issuer, token.get("resource"), dpop)

    async def _token_request(
        self,
        http: httpx2.AsyncClient,
        url: str,
        meta: dict[str, Any],
        client: ClientAuth,
        form: dict[str, str],
        issuer: str,
        resource: str | None,
        dpop: DPoPKey | None = None,
    ) -> None:
        """POST ``form`` to the token endpoint as ``client`` (with a DPoP proof when ``dpop``,
        sent again with a fresh one when the server asks for its nonce) and keep the token."""
        import httpx2

        endpoint = meta["token_endpoint"]
        who = f"the token endpoint of {issuer}"
        for attempt in range(1 + self.max_nonce_retries):
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            }
            target, headers, body = client.prepare(issuer, endpoint, headers, form)
            if dpop is not None:
                headers["DPoP"] = dpop.proof("POST", endpoint)
            try:
                response = await http.post(
                    target, content=body, headers=headers, timeout=self.timeout
                )
            except httpx2.HTTPError as exc:
                raise AuthError(f"{who}: {type(exc).__name__}") from None
            if dpop is None:
                break
            fresh = dpop.remember_nonce(endpoint, response.headers.get("dpop-nonce"))
            if response.status_code != 400 or not fresh or attempt == self.max_nonce_retries:
                break
            try:
                error = response.json().get("error")
            except (ValueError, AttributeError):
                error = None
            if error != "use_dpop_nonce":
                break
            log.info("%s asked for a DPoP nonce; sending the request again", issuer)
        data = token_response_json(response, who, form["grant_type"])
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            raise AuthError(f"{who} returned no access_token")
        kind = data.get("token_type")
        kind = kind.lower() if isinstance(kind, str) else "bearer"
        if kind not in ("bearer", "dpop") or (kind == "dpop" and dpop is None):
            raise AuthError(f"{who} returned a {short(data.get('token_type'), 40)!r} token")
        previous = self._token or {}
        token: dict[str, Any] = {
            "access_token": access,
            "token_type": "DPoP" if kind == "dpop" else "Bearer",
            "refresh_token": data.get("refresh_token")
            or (previous.get("refresh_token") if form["grant_type"] == "refresh_token" else None),
            "scope": data.get("scope") or form.get("scope"),
            "issuer": issuer,
            "resource": resource,
        }
        if kind == "dpop" and dpop is not None:
            token["jkt"] = dpop.thumbprint
        expires_in = data.get("expires_in")
        if isinstance(expires_in, (int, float)) and expires_in > 0:
            token["expires_at"] = time.time() + float(expires_in)
        self._token = token
        self._generation += 1
        await self.store.save(self._key(url), token)
        log.info("authorized with %s (%s)", issuer, form["grant_type"])


def oauth_settings(
    settings: Mapping[str, Any], *, client_name: str = "mcpline", store: TokenStore | None = None
) -> OAuth:
    """The `OAuth` plain ``settings`` describe: the ``auth`` object of an ``mcpServers`` config
    entry, or the CLI's ``--auth KEY=VALUE`` options. ``grant`` picks the flow
    (``authorization_code``, the default, ``client_credentials``, ``workload_identity`` or
    ``identity_assertion``); the other keys are that flow's arguments (docs/auth.md).
    ValueError names what is wrong (never a secret's value)."""
    return OAuth(**oauth_arguments(settings, client_name=client_name, store=store))


__all__ = [
    "AuthorizeHook",
    "ClientCredentials",
    "DPoPKey",
    "Grant",
    "IdentityAssertion",
    "TokenSource",
    "WorkloadIdentity",
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuth",
    "TokenStore",
    "browser_redirect",
    "canonical",
    "config_dir",
    "covers",
    "fetch_redirect",
    "loopback_redirect_uri",
    "oauth_settings",
    "parse_challenges",
]
