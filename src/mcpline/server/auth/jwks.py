"""A JWKS URL's keys, cached, refetched with bounds (the I/O of `JWTVerifier`).

Keys are fetched on first use and kept for ``ttl`` seconds. A token naming a ``kid`` the
cached set lacks (the issuer rotated its keys) brings one refetch, at most once every
``min_refetch`` seconds; concurrent requests share one fetch. A fetch is bounded: it gives up
after ``fetch_timeout`` seconds in all (connect, headers and body) and refuses a body over
``max_bytes``; while the keys cannot be had, requests are refused with 503, never held.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .tokens import Refused, unavailable

if TYPE_CHECKING:
    import httpx2
    from joserfc.jwk import KeySet

log = logging.getLogger("mcpline.auth")

DEFAULT_TTL = 3600.0
DEFAULT_MIN_REFETCH = 30.0
DEFAULT_FETCH_TIMEOUT = 5.0
DEFAULT_MAX_BYTES = 256 * 1024


class KeysUnavailable(Refused):
    """The JWKS could not be fetched or read (503)."""

    def __init__(self, why: str, retry_after: int = 1) -> None:
        refused = unavailable(f"the signing keys could not be fetched ({why})", retry_after)
        super().__init__(
            refused.error, refused.description, status=503, retry_after=refused.retry_after
        )


class JwksCache:
    """The keys at ``url``; see the module text for the bounds."""

    def __init__(
        self,
        url: str,
        *,
        ttl: float = DEFAULT_TTL,
        min_refetch: float = DEFAULT_MIN_REFETCH,
        fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        http: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0 or min_refetch < 0 or fetch_timeout <= 0 or max_bytes < 1:
            raise ValueError("ttl, fetch_timeout and max_bytes must be positive")
        self.url = url
        self.ttl = ttl
        self.min_refetch = min_refetch
        self.fetch_timeout = fetch_timeout
        self.max_bytes = max_bytes
        self._http = http
        self._clock = clock
        self._keys: KeySet | None = None
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._fetching: asyncio.Future[KeySet] | None = None

    async def keys(self, kid: str | None) -> KeySet:
        """The key set to verify a token naming ``kid`` with (refetched as the rules allow)."""
        now = self._clock()
        keys = self._keys
        fresh = self._fetched_at is not None and now - self._fetched_at < self.ttl
        if keys is not None and fresh and (kid is None or has_kid(keys, kid)):
            return keys
        recently = self._attempted_at is not None and now - self._attempted_at < self.min_refetch
        if recently:
            if keys is None:
                wait = self.min_refetch - (now - (self._attempted_at or now))
                raise KeysUnavailable(
                    f"the last fetch failed; the next within {self.min_refetch:g} s",
                    max(1, math.ceil(wait)),
                )
            return keys  # an unknown kid fails against these: no fetch storm
        if self._fetching is None:
            self._fetching = asyncio.ensure_future(self._fetch())
            self._fetching.add_done_callback(self._fetched)
        try:
            return await asyncio.shield(self._fetching)
        except KeysUnavailable:
            if keys is None:
                raise
            log.warning("JWKS refetch from %s failed; the cached keys stay in use", self.url)
            return keys

    def _fetched(self, future: asyncio.Future[KeySet]) -> None:
        self._fetching = None
        if not future.cancelled():
            future.exception()  # marks it retrieved; the waiters re-raise it

    async def _fetch(self) -> KeySet:
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        self._attempted_at = self._clock()
        try:
            data = await asyncio.wait_for(self._download(), self.fetch_timeout)
        except asyncio.TimeoutError:
            log.warning("JWKS fetch from %s took over %g s", self.url, self.fetch_timeout)
            raise KeysUnavailable(f"no answer within {self.fetch_timeout:g} s") from None
        try:
            document = json.loads(data)
            keys: KeySet = KeySet.import_key_set(document)
        except (JoseError, ValueError, TypeError, KeyError):
            log.warning("JWKS at %s is not a key set", self.url)
            raise KeysUnavailable("not a JSON Web Key Set") from None
        self._keys = keys
        self._fetched_at = self._clock()
        return keys

    async def _download(self) -> bytes:
        import httpx2

        try:
            if self._http is not None:
                return await self._read(self._http)
            async with httpx2.AsyncClient(timeout=self.fetch_timeout) as http:
                return await self._read(http)
        except httpx2.HTTPError as exc:
            log.warning("JWKS fetch from %s failed: %s", self.url, type(exc).__name__)
            raise KeysUnavailable(type(exc).__name__) from None

    async def _read(self, http: httpx2.AsyncClient) -> bytes:
        async with http.stream("GET", self.url, headers={"accept": "application/json"}) as r:
            if r.status_code != 200:
                log.warning("JWKS fetch from %s answered %d", self.url, r.status_code)
                raise KeysUnavailable(f"HTTP {r.status_code}")
            body = await read_capped(r, self.max_bytes)
            if body is None:
                log.warning("JWKS at %s is over %d bytes", self.url, self.max_bytes)
                raise KeysUnavailable(f"over {self.max_bytes} bytes")
            return body


async def read_capped(response: httpx2.Response, limit: int) -> bytes | None:
    """The body of ``response``, or None as soon as it passes ``limit`` bytes (the rest is
    not read): what an identity provider sends is bounded like any peer's."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def has_kid(keys: KeySet, kid: str) -> bool:
    return any(k.kid == kid for k in keys.keys)


def kid_of(header: dict[str, Any]) -> str | None:
    kid = header.get("kid")
    return kid if isinstance(kid, str) else None


__all__ = ["JwksCache", "KeysUnavailable", "read_capped"]
