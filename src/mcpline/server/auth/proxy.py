"""An OAuth proxy: the MCP server's own authorization server, in front of an identity
provider that registers no clients on the fly (GitHub, Google, Azure AD, a company's OpenID
Connect provider). See docs/auth.md, "An OAuth proxy".

To MCP clients it is an OAuth 2.1 authorization server (RFC 8414 metadata, RFC 7591
registration, Client ID Metadata Documents, the authorization code grant with PKCE S256,
refresh tokens). A sign-in goes:

1. ``GET /oauth/authorize`` from the client: checked (client, exact redirect URI, PKCE,
   ``resource``, ``scope``), then the consent page, bound to the browser by a cookie and to
   the form by a CSRF token;
2. ``POST /oauth/consent``: "Allow" sends the browser to the provider (the proxy's own
   pre-registered client, its own PKCE); "Deny" back to the client with ``access_denied``;
3. ``GET /oauth/callback`` from the provider: the code is exchanged there, the user's
   identity read, the provider's token dropped; the browser goes back to the client's
   redirect URI with the proxy's own code, ``state`` and ``iss`` (RFC 9207);
4. ``POST /oauth/token``: the code (single use, short-lived, PKCE-checked, for the same client
   and redirect URI) or a refresh token (rotated at each use) for the proxy's own access token:
   an ES256 JWT (RFC 9068) whose audience is the MCP server's URL, verified by the server with
   `JWTVerifier` against ``/oauth/jwks``.

Every store is bounded (`mcpline.server.auth.proxy_store`); codes, secrets and tokens are
kept only as SHA-256 hashes and never logged.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from .proxy_clients import (
    AUTH_METHODS,
    BadClient,
    RegisteredClient,
    client_from_metadata,
    fetch_document,
    is_document_url,
    secret_hash,
)
from .proxy_pages import PAGE_HEADERS, consent_page, error_page
from .proxy_store import Store, StoreFull
from .proxy_upstream import Upstream, UpstreamError

if TYPE_CHECKING:
    from joserfc.jwk import ECKey

    from .verifiers import JWTVerifier

log = logging.getLogger("mcpline.auth")

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

AS_WELL_KNOWN = "/.well-known/oauth-authorization-server"
COOKIE = "mcpline_oauth"
PKCE_VERIFIER = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
PKCE_CHALLENGE = re.compile(r"^[A-Za-z0-9\-_]{43}$")
MAX_PARAM_CHARS = 2000
ERROR_CODE = re.compile(r"^[A-Za-z0-9_.\-]{1,60}$")


@dataclass(frozen=True)
class ProxyLimits:
    """The proxy's bounds (each an ``--oauth-proxy`` key of the same name).

    Stores: ``max_clients`` registrations (the least recently used is forgotten past it),
    ``max_clients_per_address`` from one address (past it 429); ``max_documents`` cached
    metadata documents (the oldest leaves) kept ``document_ttl`` seconds; ``max_pending``
    sign-ins in progress, ``max_pending_per_address`` begun from one address (past either
    the sign-in is refused: ``temporarily_unavailable``), each ``pending_ttl`` seconds;
    ``max_codes``/``max_codes_per_client`` codes (refused likewise), each ``code_ttl``
    seconds; ``max_refresh_tokens``/``max_refresh_per_client`` refresh tokens (the oldest is
    revoked past either), each ``refresh_ttl`` seconds. Access tokens live ``access_ttl``
    seconds. Requests: ``max_body_bytes`` (413) arriving within ``body_timeout`` seconds
    (408); a metadata document: ``fetch_timeout`` seconds and ``max_fetch_bytes`` (and the
    provider's answers, when `mcpline.server.auth.proxy_config` builds the `Upstream`).
    """

    max_clients: int = 1024
    max_clients_per_address: int = 32
    max_documents: int = 256
    document_ttl: float = 3600.0
    max_pending: int = 1024
    max_pending_per_address: int = 32
    pending_ttl: float = 600.0
    max_codes: int = 1024
    max_codes_per_client: int = 32
    code_ttl: float = 60.0
    max_refresh_tokens: int = 10_000
    max_refresh_per_client: int = 1000
    refresh_ttl: float = 30 * 86400.0
    access_ttl: float = 900.0
    max_body_bytes: int = 64 * 1024
    body_timeout: float = 30.0
    fetch_timeout: float = 10.0
    max_fetch_bytes: int = 64 * 1024


@dataclass
class _Pending:
    client_id: str
    redirect_uri: str
    state: str | None
    challenge: str
    scopes: tuple[str, ...]
    resource: str
    browser: bytes
    csrf: str
    verifier: str = ""
    approved: bool = False


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str
    scopes: tuple[str, ...]
    resource: str
    identity: dict[str, Any]
    family: str
    used: bool = False


@dataclass(frozen=True)
class _Grant:
    client_id: str
    scopes: tuple[str, ...]
    resource: str
    identity: dict[str, Any]
    family: str


@dataclass
class _Request:
    method: str
    route: str
    query: str
    headers: dict[str, str]
    address: str
    body: bytes = b""


@dataclass
class _Response:
    status: int
    body: bytes
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


class OAuthError(Exception):
    """An OAuth error answer (RFC 6749 section 5.2): ``error``, a ``description`` that
    quotes no secret, the HTTP ``status``."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


class _Refusal(Exception):
    """An authorization request that cannot go back to the client: an error page."""

    def __init__(self, title: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.title = title
        self.description = description
        self.status = status


class OAuthProxy:
    """The authorization server at ``issuer`` (the public URL of the app's origin, or with a
    path) for the MCP server at ``resource``, signing users in at ``upstream``.

    ``scopes`` are the MCP server's scopes (its metadata's ``scopes_supported``; a sign-in
    asking for none gets them all). ``signing_key``: a file holding the ES256 key tokens
    are signed with (JWK JSON, created ``0600`` when absent); without it a new key each run,
    so tokens do not survive a restart. ``allow_loopback_documents`` admits client metadata
    documents on loopback ``http`` URLs. ``limits``: `ProxyLimits`.
    """

    def __init__(
        self,
        upstream: Upstream,
        *,
        issuer: str,
        resource: str,
        scopes: Sequence[str] = (),
        signing_key: str | os.PathLike[str] | None = None,
        allow_loopback_documents: bool = False,
        limits: ProxyLimits | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, url in (("issuer", issuer), ("resource", resource)):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
                raise ValueError(f"{name} must be an http(s) URL without a query")
        self.upstream = upstream
        self.issuer = issuer.rstrip("/")
        self.resource = resource
        self.scopes = tuple(scopes)
        self.allow_loopback_documents = allow_loopback_documents
        self.limits = limits = limits or ProxyLimits()
        self._clock = clock
        self._key = _signing_key(None if signing_key is None else Path(signing_key))
        base = urlsplit(self.issuer).path
        self.base = base
        self.secure = urlsplit(self.issuer).scheme == "https"
        self.callback_url = self.issuer + "/oauth/callback"
        self._routes: dict[str, Callable[[_Request], Awaitable[_Response]]] = {
            AS_WELL_KNOWN + base: self._metadata,
            base + "/oauth/authorize": self._authorize,
            base + "/oauth/consent": self._consent,
            base + "/oauth/callback": self._callback,
            base + "/oauth/token": self._token,
            base + "/oauth/register": self._register,
            base + "/oauth/jwks": self._jwks,
        }
        mono = time.monotonic
        self.clients: Store[RegisteredClient] = Store(
            "registered clients",
            limit=limits.max_clients,
            per_owner=limits.max_clients_per_address,
            ttl=None,
            when_full="evict",
            owner="address",
            clock=mono,
        )
        self.documents: Store[RegisteredClient] = Store(
            "client metadata documents",
            limit=limits.max_documents,
            per_owner=limits.max_documents,
            ttl=limits.document_ttl,
            when_full="evict",
            clock=mono,
        )
        self.pending: Store[_Pending] = Store(
            "sign-ins in progress",
            limit=limits.max_pending,
            per_owner=limits.max_pending_per_address,
            ttl=limits.pending_ttl,
            when_full="refuse",
            owner="address",
            clock=mono,
        )
        self.codes: Store[_Code] = Store(
            "authorization codes",
            limit=limits.max_codes,
            per_owner=limits.max_codes_per_client,
            ttl=limits.code_ttl,
            when_full="refuse",
            clock=mono,
        )
        self.refresh_tokens: Store[_Grant] = Store(
            "refresh tokens",
            limit=limits.max_refresh_tokens,
            per_owner=limits.max_refresh_per_client,
            ttl=limits.refresh_ttl,
            when_full="evict",
            clock=mono,
        )

    def __repr__(self) -> str:
        return f"OAuthProxy(issuer={self.issuer!r}, resource={self.resource!r})"

    # --- what the HTTP app asks --------------------------------------------------------

    def handles(self, route: str) -> bool:
        """Whether ``route`` (a request path) is one of the proxy's."""
        return route in self._routes

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 document."""
        oauth = self.issuer + "/oauth"
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": oauth + "/authorize",
            "token_endpoint": oauth + "/token",
            "registration_endpoint": oauth + "/register",
            "jwks_uri": oauth + "/jwks",
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
        if self.scopes:
            doc["scopes_supported"] = list(self.scopes)
        return doc

    def resource_metadata(self) -> dict[str, Any]:
        """The MCP server's RFC 9728 document: this proxy is its authorization server."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        }
        if self.scopes:
            doc["scopes_supported"] = list(self.scopes)
        return doc

    def verifier(self) -> JWTVerifier:
        """The MCP server's verifier of the proxy's tokens: `JWTVerifier` reading the
        proxy's ``/oauth/jwks`` in process."""
        import httpx2

        from .verifiers import JWTVerifier

        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=cast(Any, self)))
        return JWTVerifier(
            self.issuer + "/oauth/jwks",
            issuer=self.issuer,
            audience=self.resource,
            require_at_jwt=True,
            http=http,
        )

    def public_keys(self) -> dict[str, Any]:
        """The JWKS of the key the proxy signs its tokens with."""
        from joserfc.jwk import KeySet

        keys: dict[str, Any] = dict(KeySet([self._key]).as_dict(private=False))
        return keys

    # --- ASGI ----------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        await self.handle(path.rstrip("/") or "/", scope, receive, send)

    async def handle(self, route: str, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """Answer one HTTP request for ``route`` (one `handles` accepts)."""
        handler = self._routes.get(route)
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", ()):
            name = k.decode("latin-1").lower()
            value = v.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        client = scope.get("client")
        request = _Request(
            scope["method"],
            route,
            scope.get("query_string", b"").decode("latin-1"),
            headers,
            str(client[0]) if client else "unknown",
        )
        if handler is None:
            response = _Response(404, b"Not Found", [(b"content-type", b"text/plain")])
        elif request.method == "OPTIONS":
            response = _Response(204, b"", _cors(allow_headers=True))
        else:
            try:
                body = await asyncio.wait_for(
                    _read_body(receive, self.limits.max_body_bytes), self.limits.body_timeout
                )
            except asyncio.TimeoutError:
                why = f"the request body did not arrive within {self.limits.body_timeout:g} s"
                response = _json_error(OAuthError("invalid_request", why, 408))
                response.headers.append((b"connection", b"close"))
            else:
                response = await self._answer(handler, request, body)
        await send(
            {"type": "http.response.start", "status": response.status, "headers": response.headers}
        )
        await send({"type": "http.response.body", "body": response.body})

    async def _answer(
        self,
        handler: Callable[[_Request], Awaitable[_Response]],
        request: _Request,
        body: bytes | None,
    ) -> _Response:
        if body is None:
            why = f"the request body is over {self.limits.max_body_bytes} bytes"
            return _json_error(OAuthError("invalid_request", why, 413))
        request.body = body
        return await handler(request)

    # --- metadata and keys ----------------------------------------------------------------

    async def _metadata(self, request: _Request) -> _Response:
        if request.method not in ("GET", "HEAD"):
            return _not_allowed(b"GET")
        return _json(200, self.metadata(), _cors())

    async def _jwks(self, request: _Request) -> _Response:
        if request.method not in ("GET", "HEAD"):
            return _not_allowed(b"GET")
        return _json(200, self.public_keys(), _cors())

    # --- registration ------------------------------------------------------------------

    async def _register(self, request: _Request) -> _Response:
        if request.method != "POST":
            return _not_allowed(b"POST")
        try:
            meta = json.loads(request.body)
        except ValueError:
            return _json_error(OAuthError("invalid_client_metadata", "the body is not JSON"))
        client_id = "mcp-" + secrets.token_urlsafe(18)
        wants_secret = isinstance(meta, dict) and meta.get("token_endpoint_auth_method") != "none"
        secret = secrets.token_urlsafe(32) if wants_secret else None
        try:
            client = client_from_metadata(client_id, meta, secret=secret)
        except BadClient as exc:
            return _json_error(OAuthError(exc.error, exc.description))
        if self.clients.owned(request.address) >= self.limits.max_clients_per_address:
            log.warning(
                "oauth proxy: registration refused: %d clients registered from one address, "
                "the limit",
                self.limits.max_clients_per_address,
            )
            error = OAuthError(
                "temporarily_unavailable",
                f"{self.limits.max_clients_per_address} clients registered from this address, "
                "the limit",
                429,
            )
            return _json_error(error, [(b"retry-after", b"3600")])
        self.clients.put(client_id, client, request.address)
        log.info("oauth proxy: client %s registered (%s)", client_id, client.auth_method)
        answer: dict[str, Any] = {
            "client_id": client_id,
            "client_id_issued_at": int(self._clock()),
            "redirect_uris": list(client.redirect_uris),
            "token_endpoint_auth_method": client.auth_method,
            "grant_types": list(client.grant_types),
            "response_types": ["code"],
        }
        if client.name:
            answer["client_name"] = client.name
        if secret is not None:
            answer["client_secret"] = secret
            answer["client_secret_expires_at"] = 0
        return _json(201, answer, [*_cors(), *_NO_STORE])

    async def _client(self, client_id: str) -> RegisteredClient | None:
        """A registered client, or the client a metadata document describes (`BadClient`
        when that cannot be fetched); None for an unknown id."""
        found = self.clients.get(client_id, touch=True) or self.documents.get(client_id)
        if found is not None or not is_document_url(client_id):
            return found
        client = await fetch_document(
            client_id,
            timeout=self.limits.fetch_timeout,
            max_bytes=self.limits.max_fetch_bytes,
            allow_loopback=self.allow_loopback_documents,
        )
        self.documents.put(client_id, client, "documents")
        return client

    # --- authorization -----------------------------------------------------------------

    async def _authorize(self, request: _Request) -> _Response:
        if request.method != "GET":
            return _not_allowed(b"GET")
        try:
            params = _query(request.query)
            client, redirect_uri = await self._client_and_redirect(params)
        except _Refusal as refusal:
            log.info("oauth proxy: authorization refused: %s", refusal.description)
            return _page(refusal.status, error_page(refusal.title, refusal.description))
        state = params.get("state")
        cookie = _cookie(request.headers) or secrets.token_urlsafe(32)
        try:
            pending = self._pending(params, client, redirect_uri, cookie)
        except OAuthError as exc:
            log.info(
                "oauth proxy: authorization for %s refused: %s", client.client_id, exc.description
            )
            return self._back(redirect_uri, state, error=exc.error, description=exc.description)
        transaction = secrets.token_urlsafe(32)
        try:
            self.pending.put(transaction, pending, request.address)
        except StoreFull as full:
            log.warning("oauth proxy: authorization refused: %s", full)
            return self._back(
                redirect_uri,
                state,
                error="temporarily_unavailable",
                description=f"{full}; try again later",
            )
        page = consent_page(
            action=self.issuer + "/oauth/consent",
            transaction=transaction,
            csrf=pending.csrf,
            client_name=client.name,
            client_id=client.client_id,
            redirect_uri=redirect_uri,
            scopes=list(pending.scopes),
            resource=pending.resource,
            provider=self.upstream.name,
        )
        response = _page(200, page)
        response.headers.append((b"set-cookie", self._set_cookie(cookie)))
        return response

    async def _client_and_redirect(self, params: dict[str, str]) -> tuple[RegisteredClient, str]:
        """The client and its redirect URI, or `_Refusal`: until both are known to be right,
        nothing is sent back to the redirect URI (RFC 6749 section 4.1.2.1)."""
        client_id = params.get("client_id")
        if not client_id:
            raise _Refusal("Unknown application", "the request names no client_id")
        try:
            client = await self._client(client_id)
        except BadClient as exc:
            raise _Refusal("Unknown application", exc.description) from None
        if client is None:
            raise _Refusal("Unknown application", "this client_id is not registered here")
        redirect_uri = params.get("redirect_uri")
        if not redirect_uri:
            raise _Refusal("Bad request", "the request names no redirect_uri")
        if not client.allows_redirect(redirect_uri):
            raise _Refusal("Bad request", "the redirect_uri is not one the client registered")
        return client, redirect_uri

    def _pending(
        self,
        params: dict[str, str],
        client: RegisteredClient,
        redirect_uri: str,
        cookie: str,
    ) -> _Pending:
        if params.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "response_type must be code")
        if "authorization_code" not in client.grant_types:
            raise OAuthError("unauthorized_client", "the client did not register this grant")
        challenge = params.get("code_challenge")
        if params.get("code_challenge_method") != "S256" or not challenge:
            raise OAuthError("invalid_request", "PKCE with S256 (code_challenge) is required")
        if not PKCE_CHALLENGE.match(challenge):
            raise OAuthError("invalid_request", "the code_challenge is not an S256 challenge")
        resource = params.get("resource", self.resource)
        if resource.rstrip("/") != self.resource.rstrip("/"):
            raise OAuthError(
                "invalid_target", "this server issues tokens only for " + self.resource
            )
        scopes = self._scopes(params.get("scope"))
        return _Pending(
            client_id=client.client_id,
            redirect_uri=redirect_uri,
            state=params.get("state"),
            challenge=challenge,
            scopes=scopes,
            resource=self.resource,
            browser=_hash(cookie),
            csrf=secrets.token_urlsafe(32),
        )

    def _scopes(self, asked: str | None) -> tuple[str, ...]:
        wanted = tuple(dict.fromkeys((asked or "").split()))
        if not wanted:
            return self.scopes
        unknown = [s for s in wanted if s not in self.scopes]
        if unknown:
            raise OAuthError("invalid_scope", "unknown scope: " + " ".join(unknown)[:200])
        return wanted

    def _set_cookie(self, value: str) -> bytes:
        """The cookie binding sign-ins to this browser (the sign-in keeps its hash only)."""
        ttl = int(self.limits.pending_ttl)
        cookie = f"{COOKIE}={value}; Path={self.base}/oauth; Max-Age={ttl}; HttpOnly; SameSite=Lax"
        return (cookie + ("; Secure" if self.secure else "")).encode("latin-1")

    async def _consent(self, request: _Request) -> _Response:
        if request.method != "POST":
            return _not_allowed(b"POST")
        try:
            form = _query(request.body.decode("latin-1"))
        except _Refusal as refusal:
            return _page(400, error_page(refusal.title, refusal.description))
        transaction = form.get("transaction", "")
        pending = self.pending.get(transaction)
        refused = self._check_browser(pending, request)
        if refused is None and (
            pending is None
            or pending.approved
            or not hmac.compare_digest(form.get("csrf", ""), pending.csrf)
        ):
            refused = "the form is not the one this sign-in showed (CSRF check)"
        if refused is not None or pending is None:
            log.info("oauth proxy: consent refused: %s", refused)
            return _page(400, error_page("Sign-in refused", refused or ""))
        if form.get("decision") != "approve":
            self.pending.pop(transaction)
            log.info("oauth proxy: the user denied client %s", pending.client_id)
            return self._back(
                pending.redirect_uri,
                pending.state,
                error="access_denied",
                description="the user denied the request",
                status=303,
            )
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        pending.verifier = secrets.token_urlsafe(48)
        pending.approved = True
        challenge = create_s256_code_challenge(pending.verifier)  # type: ignore[no-untyped-call]
        try:
            url = await self.upstream.authorization_url(transaction, challenge, self.callback_url)
        except UpstreamError as exc:
            self.pending.pop(transaction)
            return self._back(
                pending.redirect_uri,
                pending.state,
                error="temporarily_unavailable",
                description=str(exc),
                status=303,
            )
        return _Response(303, b"", [(b"location", url.encode("latin-1")), *_NO_STORE])

    def _check_browser(self, pending: _Pending | None, request: _Request) -> str | None:
        """Why ``request`` does not come from the browser that began ``pending``, if not."""
        if pending is None:
            return "this sign-in is unknown or has expired; start again from the application"
        cookie = _cookie(request.headers)
        if cookie is None or not hmac.compare_digest(_hash(cookie), pending.browser):
            return "this sign-in was begun in another browser (its cookie is missing)"
        origin = request.headers.get("origin")
        if origin is not None and origin != "null" and origin != _origin(self.issuer):
            return "the form was sent from another site"
        return None

    async def _callback(self, request: _Request) -> _Response:
        if request.method != "GET":
            return _not_allowed(b"GET")
        try:
            params = _query(request.query)
        except _Refusal as refusal:
            return _page(400, error_page(refusal.title, refusal.description))
        transaction = params.get("state", "")
        pending = self.pending.get(transaction)
        refused = self._check_browser(pending, request)
        if refused is None and pending is not None and not pending.approved:
            refused = "this sign-in was not approved"
        if refused is not None or pending is None:
            log.info("oauth proxy: callback refused: %s", refused)
            return _page(400, error_page("Sign-in refused", refused or ""))
        self.pending.pop(transaction)
        error = params.get("error")
        if error is not None or not params.get("code"):
            shown = error if error is not None and ERROR_CODE.match(error) else "no code"
            log.info(
                "oauth proxy: the identity provider refused client %s's sign-in: %s",
                pending.client_id,
                shown,
            )
            code = "access_denied" if error == "access_denied" else "server_error"
            return self._back(
                pending.redirect_uri,
                pending.state,
                error=code,
                description=f"the identity provider refused the sign-in ({shown})",
            )
        try:
            identity = await self.upstream.identity(
                params["code"], pending.verifier, self.callback_url
            )
        except UpstreamError as exc:
            log.warning("oauth proxy: sign-in for client %s failed: %s", pending.client_id, exc)
            return self._back(
                pending.redirect_uri, pending.state, error="server_error", description=str(exc)
            )
        code = secrets.token_urlsafe(32)
        record = _Code(
            client_id=pending.client_id,
            redirect_uri=pending.redirect_uri,
            challenge=pending.challenge,
            scopes=pending.scopes,
            resource=pending.resource,
            identity=identity,
            family=secrets.token_urlsafe(12),
        )
        try:
            self.codes.put(_key(code), record, pending.client_id)
        except StoreFull as full:
            log.warning("oauth proxy: no code issued: %s", full)
            return self._back(
                pending.redirect_uri,
                pending.state,
                error="temporarily_unavailable",
                description=f"{full}; try again later",
            )
        log.info("oauth proxy: %s signed in for client %s", identity["sub"], pending.client_id)
        return self._back(pending.redirect_uri, pending.state, code=code)

    def _back(
        self,
        redirect_uri: str,
        state: str | None,
        *,
        code: str | None = None,
        error: str | None = None,
        description: str | None = None,
        status: int = 302,
    ) -> _Response:
        """The redirect to the client with the authorization response (RFC 6749 4.1.2)."""
        params: dict[str, str] = {}
        if code is not None:
            params["code"] = code
        if error is not None:
            params["error"] = error
            if description:
                params["error_description"] = description[:300]
        if state is not None:
            params["state"] = state
        params["iss"] = self.issuer
        parts = urlsplit(redirect_uri)
        query = (parts.query + "&" if parts.query else "") + urlencode(params)
        url = parts._replace(query=query).geturl()
        return _Response(status, b"", [(b"location", url.encode("utf-8")), *_NO_STORE])

    # --- tokens --------------------------------------------------------------------------

    async def _token(self, request: _Request) -> _Response:
        if request.method != "POST":
            return _not_allowed(b"POST")
        basic = False
        try:
            form = _query(request.body.decode("latin-1"))
            basic = request.headers.get("authorization", "").lower().startswith("basic ")
            client = await self._authenticate(request, form)
            grant = form.get("grant_type")
            if grant == "authorization_code":
                issued = self._redeem_code(form, client)
            elif grant == "refresh_token":
                issued = self._redeem_refresh(form, client)
            else:
                raise OAuthError(
                    "unsupported_grant_type",
                    "grant_type must be authorization_code or refresh_token",
                )
        except _Refusal as refusal:
            return _json_error(OAuthError("invalid_request", refusal.description))
        except OAuthError as exc:
            log.info("oauth proxy: token request refused (%s): %s", exc.error, exc.description)
            extra = (
                [(b"www-authenticate", b'Basic realm="oauth"')]
                if exc.status == 401 and basic
                else []
            )
            return _json_error(exc, extra)
        return _json(200, self._issue(issued), [*_cors(), *_NO_STORE])

    async def _authenticate(self, request: _Request, form: dict[str, str]) -> RegisteredClient:
        """The client of a token request by its authentication (RFC 6749 section 2.3)."""
        header = request.headers.get("authorization")
        secret: str | None = None
        if header is not None and header.lower().startswith("basic "):
            try:
                pair = base64.b64decode(header[6:].strip(), validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                raise OAuthError("invalid_client", "a malformed Basic credential", 401) from None
            client_id, sep, secret = pair.partition(":")
            if not sep:
                raise OAuthError("invalid_client", "a malformed Basic credential", 401)
            client_id, secret = unquote(client_id), unquote(secret)
            method = "client_secret_basic"
            if form.get("client_id", client_id) != client_id:
                raise OAuthError("invalid_request", "two different client ids")
        elif "client_secret" in form:
            client_id, secret, method = (
                form.get("client_id", ""),
                form["client_secret"],
                ("client_secret_post"),
            )
        else:
            client_id, method = form.get("client_id", ""), "none"
        if not client_id:
            raise OAuthError("invalid_client", "no client authentication", 401)
        try:
            client = await self._client(client_id)
        except BadClient as exc:
            raise OAuthError("invalid_client", exc.description, 401) from None
        if client is None:
            raise OAuthError("invalid_client", "unknown client", 401)
        if client.auth_method != method:
            raise OAuthError(
                "invalid_client",
                f"the client registered {client.auth_method}, not {method}",
                401,
            )
        if secret is not None and (
            client.secret_hash is None
            or not hmac.compare_digest(secret_hash(secret), client.secret_hash)
        ):
            raise OAuthError("invalid_client", "the client secret is wrong", 401)
        return client

    def _redeem_code(self, form: dict[str, str], client: RegisteredClient) -> _Grant:
        code = form.get("code")
        if not code:
            raise OAuthError("invalid_request", "no code")
        record = self.codes.get(_key(code))
        if record is None:
            raise OAuthError("invalid_grant", "the code is unknown or has expired")
        if record.used:
            revoked = self._revoke_family(record.family)
            log.warning(
                "oauth proxy: a code of client %s was presented twice; %d refresh "
                "token(s) issued for it revoked",
                record.client_id,
                revoked,
            )
            raise OAuthError("invalid_grant", "the code has already been used")
        record.used = True
        if record.client_id != client.client_id:
            raise OAuthError("invalid_grant", "the code was issued to another client")
        if form.get("redirect_uri") != record.redirect_uri:
            raise OAuthError("invalid_grant", "the redirect_uri is not the authorization's")
        verifier = form.get("code_verifier", "")
        if not PKCE_VERIFIER.match(verifier):
            raise OAuthError("invalid_grant", "a code_verifier (PKCE) is required")
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if not hmac.compare_digest(computed, record.challenge):
            raise OAuthError("invalid_grant", "the code_verifier does not match the challenge")
        resource = form.get("resource")
        if resource is not None and resource.rstrip("/") != record.resource.rstrip("/"):
            raise OAuthError("invalid_target", "the resource is not the authorization's")
        return _Grant(
            client.client_id, record.scopes, record.resource, record.identity, record.family
        )

    def _redeem_refresh(self, form: dict[str, str], client: RegisteredClient) -> _Grant:
        token = form.get("refresh_token")
        if not token:
            raise OAuthError("invalid_request", "no refresh_token")
        grant = self.refresh_tokens.get(_key(token))
        if grant is None:
            raise OAuthError("invalid_grant", "the refresh token is unknown, used or expired")
        if grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        self.refresh_tokens.pop(_key(token))
        asked = form.get("scope")
        if asked is not None:
            wanted = tuple(dict.fromkeys(asked.split()))
            if not set(wanted) <= set(grant.scopes):
                raise OAuthError("invalid_scope", "a refresh cannot widen the scopes")
            grant = replace(grant, scopes=wanted)
        resource = form.get("resource")
        if resource is not None and resource.rstrip("/") != grant.resource.rstrip("/"):
            raise OAuthError("invalid_target", "the resource is not the authorization's")
        return grant

    def _revoke_family(self, family: str) -> int:
        doomed = [k for k, g in self.refresh_tokens.items() if g.family == family]
        for key in doomed:
            self.refresh_tokens.pop(key)
        return len(doomed)

    def _issue(self, grant: _Grant) -> dict[str, Any]:
        """An access token (a JWT for the resource) and a new refresh token for ``grant``."""
        from joserfc import jwt

        now = int(self._clock())
        claims = {
            **{k: v for k, v in grant.identity.items() if k != "sub"},
            "iss": self.issuer,
            "aud": grant.resource,
            "sub": grant.identity["sub"],
            "client_id": grant.client_id,
            "scope": " ".join(grant.scopes),
            "iat": now,
            "exp": now + int(self.limits.access_ttl),
            "jti": secrets.token_urlsafe(16),
        }
        header = {"alg": "ES256", "typ": "at+jwt", "kid": self._key.kid}
        access = jwt.encode(header, claims, self._key)
        refresh = secrets.token_urlsafe(32)
        self.refresh_tokens.put(_key(refresh), grant, grant.client_id)
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.limits.access_ttl),
            "refresh_token": refresh,
        }
        if grant.scopes:
            answer["scope"] = " ".join(grant.scopes)
        return answer


# --- helpers ---------------------------------------------------------------------------

_NO_STORE = [(b"cache-control", b"no-store"), (b"pragma", b"no-cache")]


def _key(secret: str) -> str:
    """The store key of a code or token: its SHA-256, so the store holds no usable one."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _hash(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _cookie(headers: dict[str, str]) -> str | None:
    for item in headers.get("cookie", "").split(";"):
        name, _, value = item.strip().partition("=")
        if name == COOKIE and re.fullmatch(r"[A-Za-z0-9_\-]{43}", value):
            return value
    return None


def _query(text: str) -> dict[str, str]:
    """Form or query parameters, each at most once (RFC 6749 section 3.1)."""
    try:
        parsed = parse_qs(text, keep_blank_values=True, max_num_fields=64)
    except ValueError:
        raise _Refusal("Bad request", "too many parameters") from None
    out: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) > 1:
            raise _Refusal("Bad request", f"the parameter {name[:40]!r} is repeated")
        if len(values[0]) > MAX_PARAM_CHARS:
            raise _Refusal("Bad request", f"the parameter {name[:40]!r} is too long")
        out[name] = values[0]
    return out


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body)
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body"):
            return bytes(body)


def _cors(*, allow_headers: bool = False) -> list[tuple[bytes, bytes]]:
    out = [(b"access-control-allow-origin", b"*")]
    if allow_headers:
        out += [
            (b"access-control-allow-methods", b"GET, POST"),
            (b"access-control-allow-headers", b"authorization, content-type, mcp-protocol-version"),
            (b"access-control-max-age", b"600"),
        ]
    return out


def _json(status: int, doc: Any, headers: Sequence[tuple[bytes, bytes]] = ()) -> _Response:
    return _Response(
        status,
        json.dumps(doc).encode(),
        [(b"content-type", b"application/json"), *headers],
    )


def _json_error(exc: OAuthError, headers: Sequence[tuple[bytes, bytes]] = ()) -> _Response:
    doc = {"error": exc.error, "error_description": exc.description}
    return _json(exc.status, doc, [*_cors(), *_NO_STORE, *headers])


def _page(status: int, page: bytes) -> _Response:
    return _Response(status, page, list(PAGE_HEADERS))


def _not_allowed(allow: bytes) -> _Response:
    return _Response(
        405, b"Method Not Allowed", [(b"allow", allow), (b"content-type", b"text/plain")]
    )


def _signing_key(path: Path | None) -> ECKey:
    """The ES256 key at ``path`` (JWK JSON), created ``0600`` when absent; a new one
    in memory without a path."""
    from joserfc.jwk import ECKey

    if path is not None and path.exists():
        if path.stat().st_mode & 0o077:
            raise ValueError(f"{path} is readable by others: chmod 600 it")
        key: ECKey = ECKey.import_key(json.loads(path.read_text("utf-8")))
        key.ensure_kid()
        return key
    key = ECKey.generate_key("P-256")
    key.ensure_kid()
    if path is not None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(key.as_dict(private=True), f)
    return key


__all__ = ["OAuthError", "OAuthProxy", "ProxyLimits"]
