"""The machine-to-machine grants of `mcpline.client.oauth.OAuth` (``OAuth(grant=...)``):
no browser and no user, the client proves who it is with a secret, a key or an assertion.

- `ClientCredentials`: the client credentials grant, the client authenticated with
  ``client_secret_basic`` / ``client_secret_post`` or ``private_key_jwt`` (RFC 7523 client
  assertions signed with the client's private key, audience the issuer);
- `WorkloadIdentity`: the JWT bearer grant (RFC 7523, ``urn:ietf:params:oauth:grant-type:
  jwt-bearer``) with a token the platform issued to this workload, read from a file or a
  command each time one is needed;
- `IdentityAssertion`: enterprise-managed authorization: the user's ID token exchanged at
  the enterprise identity provider for an identity assertion authorization grant (ID-JAG,
  RFC 8693 token exchange), then that grant exchanged at the MCP server's authorization
  server with the JWT bearer grant.

A grant builds the token request's form and names the client authentication; `OAuth` does
discovery, DPoP, storage and the request itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from ..errors import AuthError
from ._oauth_urls import short

if TYPE_CHECKING:
    import httpx2

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
SECRET_METHODS = ("client_secret_basic", "client_secret_post")
MAX_TOKEN_BYTES = 64 * 1024
"""The default of ``TokenSource(max_bytes=...)``: the most a token file or command may yield."""


# --- where tokens and keys come from ---------------------------------------------------------


@dataclass(frozen=True)
class TokenSource:
    """A token given as ``value``, read from ``file`` or printed by ``command`` (run without a
    shell, at most ``timeout`` seconds), fetched again every time one is needed (platform
    tokens rotate). Exactly one of the three; a file or output of more than ``max_bytes`` is
    refused."""

    value: str | None = field(default=None, repr=False)
    file: str | None = None
    command: Sequence[str] | None = None
    timeout: float = 30.0
    max_bytes: int = MAX_TOKEN_BYTES

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.value, self.file, self.command)) != 1:
            raise ValueError("give a token as exactly one of value, file or command")
        if isinstance(self.command, str):
            object.__setattr__(self, "command", tuple(shlex.split(self.command)))
        if self.command is not None and not self.command:
            raise ValueError("the token command is empty")

    async def read(self, what: str) -> str:
        """The token now (``what`` names it in errors, which never contain it)."""
        if self.value is not None:
            token = self.value
        elif self.file is not None:
            try:
                with open(self.file, "rb") as f:
                    data = f.read(self.max_bytes + 1)
            except OSError as exc:
                why = exc.strerror
                raise AuthError(f"cannot read the {what} file {self.file}: {why}") from None
            token = self._text(data, f"the {what} file {self.file}")
        else:
            assert self.command is not None
            token = await self._run(what, list(self.command))
        if not token:
            raise AuthError(f"the {what} is empty")
        return token

    def _text(self, data: bytes, where: str) -> str:
        if len(data) > self.max_bytes:
            raise AuthError(f"{where} holds more than {self.max_bytes} bytes")
        try:
            return data.decode("ascii").strip()
        except UnicodeDecodeError:
            raise AuthError(f"{where} is not ASCII text") from None

    async def _run(self, what: str, argv: list[str]) -> str:
        name = os.path.basename(argv[0])
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
        except OSError as exc:
            raise AuthError(f"cannot run the {what} command {name}: {exc.strerror}") from None
        assert proc.stdout is not None
        try:
            data = await asyncio.wait_for(proc.stdout.read(self.max_bytes + 1), self.timeout)
            status = await asyncio.wait_for(proc.wait(), self.timeout)
        except asyncio.TimeoutError:
            why = f"gave no token in {self.timeout:g}s"
            raise AuthError(f"the {what} command {name} {why}") from None
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if status != 0:
            raise AuthError(f"the {what} command {name} exited with status {status}")
        return self._text(data, f"the output of the {what} command {name}")

    def __repr__(self) -> str:
        where = "value" if self.value is not None else self.file or shlex.join(self.command or ())
        return f"TokenSource({where!r})" if self.value is None else "TokenSource(value)"


def as_source(token: str | TokenSource | None, file: str | None, command: Any) -> TokenSource:
    if isinstance(token, TokenSource):
        return token
    return TokenSource(value=token, file=file, command=command)


def load_private_key(pem: str | bytes) -> tuple[Any, str]:
    """A PEM private key as a joserfc key, with its default JWS algorithm."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise ValueError("the private key is not an unencrypted PEM private key") from None
    if isinstance(key, ec.EllipticCurvePrivateKey):
        algs = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
        if key.curve.name not in algs:
            raise ValueError(f"unsupported elliptic curve {key.curve.name}")
        return ECKey.import_key(data), algs[key.curve.name]
    if isinstance(key, rsa.RSAPrivateKey):
        return RSAKey.import_key(data), "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return OKPKey.import_key(data), "EdDSA"
    raise ValueError(f"unsupported private key type {type(key).__name__}")


# --- client authentication -------------------------------------------------------------------


@dataclass(frozen=True)
class ClientAuth:
    """How a client authenticates at a token endpoint: ``method`` one of
    ``client_secret_basic``, ``client_secret_post``, ``private_key_jwt`` or ``none``."""

    client_id: str
    method: str
    secret: str | None = field(default=None, repr=False)
    key: Any = field(default=None, repr=False)
    alg: str | None = None
    lifetime: int = 300

    def prepare(
        self, issuer: str, endpoint: str, headers: dict[str, str], form: dict[str, str]
    ) -> tuple[str, dict[str, str], str]:
        """(url, headers, body) of a token request carrying this client's credentials. A
        client assertion's audience is ``issuer`` (RFC 7523 as updated for OAuth 2.1)."""
        from authlib.oauth2.auth import ClientAuth as AuthlibClientAuth
        from authlib.oauth2.rfc7523 import PrivateKeyJWT

        body = urlencode(form)
        if self.method == "none" and not self.client_id:
            return endpoint, headers, body
        method: Any = self.method
        secret: Any = self.secret
        if self.method == "private_key_jwt":
            method = PrivateKeyJWT(
                token_endpoint=issuer,
                alg=self.alg,
                claims={"exp": _now() + self.lifetime},
            )
            secret = self.key
        auth = AuthlibClientAuth(self.client_id, secret, method)
        url, headers, body = auth.prepare("POST", endpoint, headers, body)  # type: ignore[no-untyped-call]
        return str(url), dict(headers), str(body)


def _now() -> int:
    import time

    return int(time.time())


def secret_method(meta: dict[str, Any], wanted: str | None) -> str:
    """``wanted``, else the first secret method the server lists (``client_secret_basic``
    when it lists none)."""
    if wanted is not None:
        return wanted
    listed = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return next((m for m in listed if m in SECRET_METHODS), "client_secret_basic")


# --- the grants ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrantContext:
    """What a grant knows when it is asked for a token request."""

    http: httpx2.AsyncClient
    issuer: str
    resource: str
    scope: str | None
    metadata: dict[str, Any]
    timeout: float


class Grant(Protocol):
    """A grant `OAuth` runs instead of the authorization code flow."""

    grant_type: str

    def client(self, meta: dict[str, Any]) -> ClientAuth:
        """The client's authentication at the authorization server ``meta`` describes."""
        ...

    async def form(self, ctx: GrantContext) -> dict[str, str]:
        """The token request's parameters (without client authentication)."""
        ...


def _base_form(grant_type: str, ctx: GrantContext) -> dict[str, str]:
    form = {"grant_type": grant_type, "resource": ctx.resource}
    if ctx.scope:
        form["scope"] = ctx.scope
    return form


class ClientCredentials:
    """The client credentials grant: ``client_secret`` (sent as ``token_endpoint_auth_method``,
    by default the first of ``client_secret_basic``/``client_secret_post`` the server lists)
    or ``private_key`` (PEM; ``private_key_jwt``, signed with ``signing_algorithm``, by
    default the key's own: ES256 for P-256, RS256 for RSA, EdDSA for Ed25519)."""

    grant_type = "client_credentials"

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: str | bytes | None = None,
        signing_algorithm: str | None = None,
        token_endpoint_auth_method: str | None = None,
        assertion_lifetime: int = 300,
    ) -> None:
        if (client_secret is None) == (private_key is None):
            raise ValueError("give ClientCredentials a client_secret or a private_key")
        if token_endpoint_auth_method not in (None, *SECRET_METHODS, "private_key_jwt"):
            raise ValueError(f"unsupported token_endpoint_auth_method {token_endpoint_auth_method}")
        self.client_id = client_id
        self._secret = client_secret
        self._key: Any = None
        alg: str | None = None
        if private_key is not None:
            self._key, alg = load_private_key(private_key)
        self.signing_algorithm = signing_algorithm or alg
        self.method = token_endpoint_auth_method or ("private_key_jwt" if private_key else None)
        self.assertion_lifetime = assertion_lifetime

    def client(self, meta: dict[str, Any]) -> ClientAuth:
        if self._key is not None:
            return ClientAuth(
                self.client_id,
                "private_key_jwt",
                key=self._key,
                alg=self.signing_algorithm,
                lifetime=self.assertion_lifetime,
            )
        return ClientAuth(self.client_id, secret_method(meta, self.method), secret=self._secret)

    async def form(self, ctx: GrantContext) -> dict[str, str]:
        return _base_form(self.grant_type, ctx)

    def __repr__(self) -> str:
        how = "private_key_jwt" if self._key is not None else "client_secret"
        return f"ClientCredentials(client_id={self.client_id!r}, {how})"


class WorkloadIdentity:
    """Workload identity federation: the JWT bearer grant with the workload's own token
    (``token``, ``token_file`` or ``token_command``, read anew for every token request) as
    the assertion. ``client_id`` (with ``client_secret`` if the client has one) identifies
    the client; without a secret the client authenticates as ``none``."""

    grant_type = JWT_BEARER

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        token: str | TokenSource | None = None,
        token_file: str | None = None,
        token_command: str | Sequence[str] | None = None,
    ) -> None:
        self.client_id = client_id
        self._secret = client_secret
        self.source = as_source(token, token_file, token_command)

    def client(self, meta: dict[str, Any]) -> ClientAuth:
        if self._secret is not None and self.client_id is not None:
            return ClientAuth(self.client_id, secret_method(meta, None), secret=self._secret)
        return ClientAuth(self.client_id or "", "none")

    async def form(self, ctx: GrantContext) -> dict[str, str]:
        form = _base_form(self.grant_type, ctx)
        form["assertion"] = await self.source.read("workload token")
        return form

    def __repr__(self) -> str:
        return f"WorkloadIdentity(client_id={self.client_id!r}, token={self.source!r})"


class IdentityAssertion:
    """Enterprise-managed authorization: the user's ``id_token`` (or ``id_token_file`` /
    ``id_token_command``) exchanged at the identity provider's ``idp_token_endpoint`` (as
    ``idp_client_id``, with ``idp_client_secret`` if it has one) for an ID-JAG whose audience
    is the MCP server's authorization server and whose resource is the MCP server; then the
    ID-JAG exchanged there (JWT bearer grant) as ``client_id`` / ``client_secret``."""

    grant_type = JWT_BEARER

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str | None = None,
        idp_token_endpoint: str,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        id_token: str | TokenSource | None = None,
        id_token_file: str | None = None,
        id_token_command: str | Sequence[str] | None = None,
        token_endpoint_auth_method: str | None = None,
    ) -> None:
        self.client_id = client_id
        self._secret = client_secret
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self._idp_secret = idp_client_secret
        self.source = as_source(id_token, id_token_file, id_token_command)
        self.method = token_endpoint_auth_method

    def client(self, meta: dict[str, Any]) -> ClientAuth:
        if self._secret is None:
            return ClientAuth(self.client_id, "none")
        return ClientAuth(self.client_id, secret_method(meta, self.method), secret=self._secret)

    async def form(self, ctx: GrantContext) -> dict[str, str]:
        jag = await self._exchange(ctx)
        form = _base_form(self.grant_type, ctx)
        form["assertion"] = jag
        return form

    async def _exchange(self, ctx: GrantContext) -> str:
        """The RFC 8693 token exchange at the identity provider: ID token → ID-JAG."""
        import httpx2

        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": ctx.issuer,
            "resource": ctx.resource,
            "subject_token": await self.source.read("ID token"),
            "subject_token_type": ID_TOKEN,
        }
        if ctx.scope:
            form["scope"] = ctx.scope
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        if self.idp_client_id is not None:
            auth = ClientAuth(
                self.idp_client_id,
                "client_secret_basic" if self._idp_secret else "none",
                secret=self._idp_secret,
            )
            url, headers, body = auth.prepare(ctx.issuer, self.idp_token_endpoint, headers, form)
        else:
            url, body = self.idp_token_endpoint, urlencode(form)
        who = f"the identity provider's token endpoint {short(self.idp_token_endpoint, 100)}"
        try:
            response = await ctx.http.post(url, content=body, headers=headers, timeout=ctx.timeout)
        except httpx2.HTTPError as exc:
            raise AuthError(f"{who}: {type(exc).__name__}") from None
        data = token_response_json(response, who, "token exchange")
        if data.get("issued_token_type") != ID_JAG:
            raise AuthError(f"{who} issued no ID-JAG (issued_token_type is not {ID_JAG})")
        jag = data.get("access_token")
        if not isinstance(jag, str) or not jag:
            raise AuthError(f"{who} returned no ID-JAG")
        return jag

    def __repr__(self) -> str:
        return (
            f"IdentityAssertion(client_id={self.client_id!r}, "
            f"idp_token_endpoint={self.idp_token_endpoint!r})"
        )


def token_response_json(response: httpx2.Response, who: str, grant: str) -> dict[str, Any]:
    """The JSON object of a successful token response, else an `AuthError` with the OAuth
    error code and description (never the request's credentials)."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code != 200 or not isinstance(data, dict):
        why = ""
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            why = f": {short(data['error'], 80)}"
            if isinstance(data.get("error_description"), str):
                why += f" ({short(data['error_description'])})"
        raise AuthError(f"{who} refused ({grant}): HTTP {response.status_code}{why}")
    return data


__all__ = [
    "ClientAuth",
    "ClientCredentials",
    "Grant",
    "GrantContext",
    "IdentityAssertion",
    "TokenSource",
    "WorkloadIdentity",
    "load_private_key",
    "token_response_json",
]
