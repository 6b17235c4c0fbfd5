"""Token verifiers for `mcpline.http_app(verify_token=...)` and ``mcpline run --auth``.

`JWTVerifier` checks RFC 9068 JWT access tokens against the issuer's JWKS;
`IntrospectionVerifier` asks an RFC 7662 introspection endpoint. Both produce an
`AccessToken` (handlers see it as ``ctx.principal``), and both require a token bound to a key
(``cnf.jkt``) to come with ``Authorization: DPoP`` and a valid proof (RFC 9449).

A verifier is the app's ``verify_token``: called with a token alone it answers the principal
or None; the HTTP app calls `Verifier.authenticate` with the request, which also reads the
scheme and the DPoP proof and says why a request is refused (`Refused`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .dpop import ALGORITHMS, ProofChecker
from .jwks import (
    DEFAULT_FETCH_TIMEOUT,
    DEFAULT_MAX_BYTES,
    JwksCache,
    has_kid,
    kid_of,
    read_capped,
)
from .tokens import DPOP, AccessToken, AuthRequest, Refused, credentials, unavailable

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("mcpline.auth")

JWT_ALGORITHMS = ALGORITHMS
"""Signature algorithms accepted for access tokens: the asymmetric ones DPoP proofs use too."""
AT_JWT_TYPES = (None, "JWT", "at+jwt", "application/at+jwt")
"""``typ`` values accepted (RFC 9068 asks for ``at+jwt``; many providers send ``JWT``)."""
MAX_TOKEN_CHARS = 16 * 1024
DEFAULT_LEEWAY = 60.0


def _invalid(why: str) -> Refused:
    return Refused("invalid_token", why)


class Verifier(ABC):
    """What both verifiers share: the schemes, DPoP binding and the ``verify_token`` call.

    ``issuer`` and ``audience`` (the resource's URL) are what the RFC 9728 metadata says;
    ``dpop`` checks proofs (one `ProofChecker` per verifier by default).
    """

    def __init__(
        self, *, issuer: str | None, audience: str | None, dpop: ProofChecker | None
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.dpop = dpop if dpop is not None else ProofChecker()

    @abstractmethod
    async def verify(self, token: str) -> AccessToken:
        """The token's principal, or `Refused`."""

    async def __call__(self, token: str) -> AccessToken | None:
        """``verify_token``: the principal of a bearer token, None when refused (a token
        bound to a DPoP key is refused: nothing here proves possession)."""
        try:
            principal = await self.verify(token)
        except Refused as refused:
            log.info("token refused: %s", refused.description)
            return None
        return None if principal.jkt is not None else principal

    async def authenticate(self, request: AuthRequest) -> AccessToken | None:
        """The principal of ``request``'s credentials (None when it has none), or `Refused`."""
        found = credentials(request.authorization)
        if found is None:
            return None
        scheme, token = found
        if len(token) > MAX_TOKEN_CHARS:
            raise Refused("invalid_token", "the token is too long", scheme=scheme)
        try:
            principal = await self.verify(token)
        except Refused as refused:
            refused.scheme = scheme
            raise
        if principal.jkt is None:
            if scheme == DPOP:
                raise Refused("invalid_token", "the token is not bound to a DPoP key", scheme=DPOP)
            return principal
        if scheme != DPOP:
            raise Refused(
                "invalid_token", "the token is DPoP-bound: send it as Authorization: DPoP"
            )
        self.dpop.check(
            request.dpop, method=request.method, url=request.url, token=token, jkt=principal.jkt
        )
        return principal


class JWTVerifier(Verifier):
    """RFC 9068 access tokens signed by ``issuer``'s keys at ``jwks_url``.

    Checks: an accepted asymmetric ``alg`` and ``typ`` (`AT_JWT_TYPES`, or only ``at+jwt``
    when ``require_at_jwt``), the signature by a key of the JWKS (named by ``kid``), ``iss``
    equal to ``issuer``, ``aud`` naming ``audience``, ``exp`` in the future and ``nbf``/``iat``
    not in it, each with ``leeway`` seconds. Keys: see `JwksCache` (``jwks_ttl``,
    ``min_refetch``, ``fetch_timeout``, ``max_jwks_bytes``).
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str,
        leeway: float = DEFAULT_LEEWAY,
        algorithms: Sequence[str] = JWT_ALGORITHMS,
        require_at_jwt: bool = False,
        jwks_ttl: float = 3600.0,
        min_refetch: float = 30.0,
        fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
        max_jwks_bytes: int = DEFAULT_MAX_BYTES,
        dpop: ProofChecker | None = None,
        http: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(issuer=issuer, audience=audience, dpop=dpop)
        if leeway < 0:
            raise ValueError("leeway must not be negative")
        self.leeway = leeway
        self.algorithms = tuple(a for a in algorithms if a != "none" and not a.startswith("HS"))
        self.require_at_jwt = require_at_jwt
        self.jwks = JwksCache(
            jwks_url,
            ttl=jwks_ttl,
            min_refetch=min_refetch,
            fetch_timeout=fetch_timeout,
            max_bytes=max_jwks_bytes,
            http=http,
        )
        self._clock = clock

    async def verify(self, token: str) -> AccessToken:
        from joserfc import jws, jwt
        from joserfc.errors import JoseError

        if len(token) > MAX_TOKEN_CHARS:
            raise _invalid("the token is too long")
        try:
            header = jws.extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, UnicodeError):
            raise _invalid("the token is not a JWT") from None
        typ = header.get("typ")
        if typ not in (("at+jwt", "application/at+jwt") if self.require_at_jwt else AT_JWT_TYPES):
            raise _invalid(f"a JWT of typ {str(typ)[:40]!r} is not an access token")
        if header.get("alg") not in self.algorithms:
            raise _invalid("the token's alg is not accepted")
        kid = kid_of(header)
        keys = await self.jwks.keys(kid)
        if kid is not None and not has_kid(keys, kid):
            raise _invalid("the token's kid is not among the issuer's keys")
        try:
            claims = jwt.decode(token, keys, algorithms=list(self.algorithms)).claims
        except (JoseError, ValueError, TypeError):
            raise _invalid("the token's signature does not verify") from None
        self._check_claims(claims)
        return AccessToken.from_claims(claims)

    def _check_claims(self, claims: dict[str, Any]) -> None:
        now = self._clock()
        if claims.get("iss") != self.issuer:
            raise _invalid("the token was issued by another issuer")
        if not _names(claims.get("aud"), self.audience):
            raise _invalid("the token is for another audience")
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)):
            raise _invalid("the token has no exp")
        if exp + self.leeway < now:
            raise _invalid("the token has expired")
        for name in ("nbf", "iat"):
            value = claims.get(name)
            if value is not None and (
                not isinstance(value, (int, float)) or value - self.leeway > now
            ):
                raise _invalid(f"the token's {name} is in the future")


def _names(aud: Any, audience: str | None) -> bool:
    if audience is None:
        return True
    wanted = audience.rstrip("/")
    values = aud if isinstance(aud, list) else [aud]
    return any(isinstance(v, str) and v.rstrip("/") == wanted for v in values)


class IntrospectionVerifier(Verifier):
    """Tokens checked by an RFC 7662 introspection endpoint at ``url``.

    The server authenticates with ``client_id``/``client_secret`` (``client_secret_basic``).
    An answer must say ``active: true``; when it names them, ``iss`` must be ``issuer`` and
    ``aud`` must name ``audience``; ``exp`` must be in the future. Active answers are cached
    (by the token's SHA-256, at most ``cache_size`` entries, each for ``cache_ttl`` seconds or
    until the token's ``exp`` when sooner). A call gives up after ``timeout`` seconds or at a
    body over ``max_bytes`` (503); at most ``max_concurrent`` calls are in flight, a request
    that would need one more is refused with 503 at once.
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        audience: str | None = None,
        cache_size: int = 1024,
        cache_ttl: float = 300.0,
        timeout: float = DEFAULT_FETCH_TIMEOUT,
        max_bytes: int = 64 * 1024,
        max_concurrent: int = 32,
        dpop: ProofChecker | None = None,
        http: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(issuer=issuer, audience=audience, dpop=dpop)
        if cache_size < 0 or cache_ttl < 0 or timeout <= 0 or min(max_bytes, max_concurrent) < 1:
            raise ValueError(
                "cache_size, cache_ttl, timeout, max_bytes and max_concurrent must be positive"
            )
        self.max_concurrent = max_concurrent
        self._in_flight = 0
        self.url = url
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._auth = (client_id, client_secret)
        self._http = http
        self._clock = clock
        self._cache: OrderedDict[bytes, tuple[float, AccessToken]] = OrderedDict()

    def __repr__(self) -> str:
        return f"IntrospectionVerifier({self.url!r}, client_id={self._auth[0]!r})"

    async def verify(self, token: str) -> AccessToken:
        if len(token) > MAX_TOKEN_CHARS:
            raise _invalid("the token is too long")
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None:
            if hit[0] > now:
                self._cache.move_to_end(key)
                return hit[1]
            del self._cache[key]
        if self._in_flight >= self.max_concurrent:
            raise _unavailable(f"{self._in_flight} introspections in progress, the limit")
        self._in_flight += 1
        try:
            claims = await self._introspect(token)
        finally:
            self._in_flight -= 1
        if claims.get("active") is not True:
            raise _invalid("the token is not active")
        if self.issuer is not None and "iss" in claims and claims["iss"] != self.issuer:
            raise _invalid("the token was issued by another issuer")
        if "aud" in claims and not _names(claims["aud"], self.audience):
            raise _invalid("the token is for another audience")
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and exp <= now:
            raise _invalid("the token has expired")
        principal = AccessToken.from_claims(claims)
        until = now + self.cache_ttl
        if isinstance(exp, (int, float)):
            until = min(until, float(exp))
        if self.cache_size and until > now:
            self._cache[key] = (until, principal)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return principal

    async def _introspect(self, token: str) -> dict[str, Any]:
        try:
            data = await asyncio.wait_for(self._post(token), self.timeout)
        except asyncio.TimeoutError:
            log.warning("introspection at %s took over %g s", self.url, self.timeout)
            raise _unavailable(f"no answer within {self.timeout:g} s") from None
        try:
            claims = json.loads(data)
        except ValueError:
            claims = None
        if not isinstance(claims, dict):
            log.warning("introspection at %s answered no JSON object", self.url)
            raise _unavailable("not a JSON object")
        return claims

    async def _post(self, token: str) -> bytes:
        import httpx2

        basic = base64.b64encode(":".join(self._auth).encode()).decode()
        headers = {"authorization": f"Basic {basic}", "accept": "application/json"}
        form = {"token": token, "token_type_hint": "access_token"}
        try:
            if self._http is not None:
                return await self._read(self._http, form, headers)
            async with httpx2.AsyncClient(timeout=self.timeout) as http:
                return await self._read(http, form, headers)
        except httpx2.HTTPError as exc:
            log.warning("introspection at %s failed: %s", self.url, type(exc).__name__)
            raise _unavailable(type(exc).__name__) from None

    async def _read(
        self, http: httpx2.AsyncClient, form: dict[str, str], headers: dict[str, str]
    ) -> bytes:
        async with http.stream("POST", self.url, data=form, headers=headers) as r:
            if r.status_code != 200:
                log.warning("introspection at %s answered %d", self.url, r.status_code)
                raise _unavailable(f"HTTP {r.status_code}")
            body = await read_capped(r, self.max_bytes)
            if body is None:
                raise _unavailable(f"over {self.max_bytes} bytes")
            return body


def _unavailable(why: str) -> Refused:
    return unavailable(f"the token could not be introspected ({why})")


__all__ = [
    "AT_JWT_TYPES",
    "DEFAULT_LEEWAY",
    "IntrospectionVerifier",
    "JWT_ALGORITHMS",
    "JWTVerifier",
    "Verifier",
]
