"""The OAuth proxy's MCP clients: RFC 7591 registration metadata, checked, and Client ID
Metadata Documents (a URL as ``client_id``, its document fetched with bounds).

A document is fetched without following redirects, within ``timeout`` seconds and
``max_bytes``, only from ``https`` URLs whose host resolves to public addresses: a client id
cannot make the proxy call into its own network. ``allow_loopback`` (tests, a proxy on a
developer's machine) also admits ``http`` on loopback addresses.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .jwks import read_capped

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("mcpline.auth")

AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 200
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


class BadClient(Exception):
    """Client metadata that cannot be accepted; ``error`` is the RFC 7591 code."""

    def __init__(self, description: str, error: str = "invalid_client_metadata") -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class RegisteredClient:
    """An MCP client the proxy knows: registered (``secret_hash`` when it has a secret) or
    described by its metadata document (``document``)."""

    client_id: str
    auth_method: str
    redirect_uris: tuple[str, ...]
    name: str
    grant_types: tuple[str, ...]
    secret_hash: bytes | None = None
    document: bool = False

    def allows_redirect(self, uri: str) -> bool:
        """Exact match with a registered URI; for a loopback ``http`` URI registered without
        a port, any port (RFC 8252 section 7.3)."""
        if uri in self.redirect_uris:
            return True
        parts = urlsplit(uri)
        if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS:
            return False
        for registered in self.redirect_uris:
            r = urlsplit(registered)
            if (r.scheme, r.port, r.hostname, r.path, r.query) == (
                "http",
                None,
                parts.hostname,
                parts.path,
                parts.query,
            ):
                return True
        return False


def secret_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def check_redirect_uri(uri: Any) -> str:
    """A redirect URI a client may register: ``https``, ``http`` on a loopback host, or a
    private-use scheme of a native app (``com.example.app:/cb``, RFC 8252 section 7.1); no
    fragment."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        raise BadClient(
            "a redirect URI must be a string of at most 2000 characters", "invalid_redirect_uri"
        )
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri:
        raise BadClient("a redirect URI must not have a fragment", "invalid_redirect_uri")
    if parts.scheme == "https" and parts.hostname:
        return uri
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return uri
    if "." in parts.scheme and parts.scheme not in ("http", "https"):
        return uri
    raise BadClient(
        "a redirect URI must be https, http on a loopback host, or a private-use scheme",
        "invalid_redirect_uri",
    )


def client_from_metadata(
    client_id: str, meta: Any, *, secret: str | None = None, document: bool = False
) -> RegisteredClient:
    """The client RFC 7591 metadata ``meta`` describes (`BadClient` if it cannot be)."""
    if not isinstance(meta, dict):
        raise BadClient("the client metadata must be a JSON object")
    uris = meta.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        raise BadClient(
            f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs", "invalid_redirect_uri"
        )
    checked = tuple(check_redirect_uri(u) for u in uris)
    method = meta.get("token_endpoint_auth_method", "none" if document else "client_secret_basic")
    allowed = ("none",) if document else AUTH_METHODS
    if method not in allowed:
        raise BadClient(f"token_endpoint_auth_method must be one of {', '.join(allowed)}")
    grants = meta.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= set(GRANT_TYPES):
        raise BadClient("grant_types may only be authorization_code and refresh_token")
    responses = meta.get("response_types", ["code"])
    if not isinstance(responses, list) or not set(responses) <= {"code"}:
        raise BadClient("response_types may only be code")
    name = meta.get("client_name", "")
    if document and not name:
        raise BadClient("client_name is required")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
        raise BadClient(f"client_name must be a string of at most {MAX_NAME_CHARS} characters")
    return RegisteredClient(
        client_id=client_id,
        auth_method=str(method),
        redirect_uris=checked,
        name=name,
        grant_types=tuple(dict.fromkeys([*grants, "refresh_token"])),
        secret_hash=None if secret is None else secret_hash(secret),
        document=document,
    )


def is_document_url(client_id: str) -> bool:
    """Whether ``client_id`` names a metadata document (an http(s) URL with a path)."""
    parts = urlsplit(client_id)
    return parts.scheme in ("https", "http") and bool(parts.netloc) and parts.path not in ("", "/")


async def fetch_document(
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    allow_loopback: bool,
    http: httpx2.AsyncClient | None = None,
) -> RegisteredClient:
    """The client whose metadata document is at ``url`` (`BadClient` with ``invalid_client``
    when it cannot be fetched or read)."""
    parts = urlsplit(url)
    if parts.fragment or parts.username or parts.password:
        raise BadClient("a client id URL must have no fragment or credentials", "invalid_client")
    if parts.scheme != "https" and not (allow_loopback and parts.hostname in LOOPBACK_HOSTS):
        raise BadClient("a client id URL must be https", "invalid_client")
    try:
        data = await asyncio.wait_for(
            _download(
                url, parts.hostname or "", parts.port, allow_loopback, max_bytes, timeout, http
            ),
            timeout,
        )
    except asyncio.TimeoutError:
        raise BadClient(
            f"the client's metadata document did not arrive within {timeout:g} s", "invalid_client"
        ) from None
    try:
        meta = json.loads(data)
    except ValueError:
        raise BadClient("the client's metadata document is not JSON", "invalid_client") from None
    if not isinstance(meta, dict) or meta.get("client_id") != url:
        raise BadClient(
            "the client's metadata document does not name its own URL as client_id",
            "invalid_client",
        )
    try:
        return client_from_metadata(url, meta, document=True)
    except BadClient as exc:
        raise BadClient(
            f"the client's metadata document: {exc.description}", "invalid_client"
        ) from None


async def _download(
    url: str,
    host: str,
    port: int | None,
    loopback_ok: bool,
    max_bytes: int,
    timeout: float,
    http: httpx2.AsyncClient | None,
) -> bytes:
    import httpx2

    await _check_host(host, port, loopback_ok)
    try:
        if http is not None:
            return await _read(http, url, max_bytes)
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            return await _read(client, url, max_bytes)
    except httpx2.HTTPError as exc:
        log.info("oauth proxy: client metadata document fetch failed: %s", type(exc).__name__)
        raise BadClient(
            f"the client's metadata document could not be fetched ({type(exc).__name__})",
            "invalid_client",
        ) from None


async def _read(http: httpx2.AsyncClient, url: str, max_bytes: int) -> bytes:
    headers = {"accept": "application/json"}
    async with http.stream("GET", url, headers=headers, follow_redirects=False) as r:
        if r.status_code != 200:
            raise BadClient(
                f"the client's metadata document answered HTTP {r.status_code}", "invalid_client"
            )
        body = await read_capped(r, max_bytes)
        if body is None:
            raise BadClient(
                f"the client's metadata document is over {max_bytes} bytes", "invalid_client"
            )
        return body


async def _check_host(host: str, port: int | None, loopback_ok: bool) -> None:
    """Refuse a host that is, or resolves to, a non-public address (unless loopback is
    allowed and every address is loopback)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port or 443, type=socket.SOCK_STREAM
        )
    except OSError:
        raise BadClient("the client id URL's host does not resolve", "invalid_client") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if loopback_ok and address.is_loopback:
            continue
        if not address.is_global:
            raise BadClient("the client id URL's host is not a public address", "invalid_client")


__all__ = [
    "AUTH_METHODS",
    "BadClient",
    "check_redirect_uri",
    "client_from_metadata",
    "fetch_document",
    "is_document_url",
    "RegisteredClient",
    "secret_hash",
]
