"""What a resource server's verifiers produce and refuse with: `AccessToken`, `Refused`,
and the parts of one HTTP request they look at (`AuthRequest`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

BEARER = "Bearer"
DPOP = "DPoP"


@dataclass(frozen=True, eq=False)
class AccessToken:
    """A verified access token: the principal handlers see as ``ctx.principal``.

    ``scopes`` are the granted scopes; ``claims`` every claim of the JWT (or of the
    introspection answer); ``jkt`` the thumbprint of the key the token is bound to (``cnf.jkt``),
    if any. The token text itself is not kept, so a principal never carries it into a log.

    Two tokens are equal when they speak for the same `owner` (issuer, subject, client): a
    renewed token, or one with more scopes after a step-up, keeps the caller's legacy session
    and tasks.
    """

    subject: str | None
    scopes: frozenset[str]
    claims: Mapping[str, Any] = field(repr=False)
    client_id: str | None = None
    expires_at: float | None = None
    jkt: str | None = None

    @property
    def audience(self) -> tuple[str, ...]:
        """The audiences the token is for (its ``aud`` claim: one string or a list)."""
        aud = self.claims.get("aud")
        if isinstance(aud, str):
            return (aud,)
        if isinstance(aud, list):
            return tuple(a for a in aud if isinstance(a, str))
        return ()

    @property
    def owner(self) -> str:
        """Who the token speaks for, the same across its renewals: its issuer, subject and
        client (what tasks and sessions are bound to)."""
        return json.dumps([self.claims.get("iss"), self.subject, self.client_id])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccessToken) and self.owner == other.owner

    def __hash__(self) -> int:
        return hash(self.owner)

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> AccessToken:
        """The principal of RFC 9068 / RFC 7662 claims (``scope`` text or an ``scp`` list)."""
        exp = claims.get("exp")
        cnf = claims.get("cnf")
        jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
        sub = claims.get("sub")
        client_id = claims.get("client_id", claims.get("azp"))
        return cls(
            subject=sub if isinstance(sub, str) else None,
            scopes=scopes_of_claims(claims),
            claims=MappingProxyType(dict(claims)),
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=float(exp) if isinstance(exp, (int, float)) else None,
            jkt=jkt if isinstance(jkt, str) else None,
        )


def access_token_of(principal: Any) -> AccessToken | None:
    """``principal`` when it is a verified `AccessToken` (``ctx.access_token``), else None."""
    return principal if isinstance(principal, AccessToken) else None


def scopes_of_claims(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (space-separated, RFC 9068 / RFC 8693) or ``scp`` (a list or text)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(s for s in value if isinstance(s, str))
    return frozenset()


def scopes_of(principal: Any) -> frozenset[str]:
    """The scopes a principal holds: its ``scopes`` attribute, or a claims mapping's
    ``scope``/``scp``; none for anything else (such a caller meets no scoped tool)."""
    scopes = getattr(principal, "scopes", None)
    if isinstance(scopes, (set, frozenset, list, tuple)):
        return frozenset(s for s in scopes if isinstance(s, str))
    if isinstance(principal, Mapping):
        return scopes_of_claims(principal)
    return frozenset()


class Refused(Exception):
    """A request whose credentials are refused: ``status`` (401, or 503 when the keys or the
    introspection endpoint cannot be reached, with ``retry_after`` seconds), the RFC 6750 /
    RFC 9449 ``error`` code, a ``description`` that never quotes the token, and the
    ``scheme`` of the challenge."""

    def __init__(
        self,
        error: str,
        description: str,
        *,
        status: int = 401,
        scheme: str = BEARER,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status
        self.scheme = scheme
        self.retry_after = retry_after


def unavailable(description: str, retry_after: int = 1) -> Refused:
    """503: the verifier cannot decide now (its keys or endpoint are out of reach)."""
    return Refused(
        "temporarily_unavailable",
        f"Service Unavailable: {description}",
        status=503,
        retry_after=retry_after,
    )


@dataclass(frozen=True)
class AuthRequest:
    """The parts of one HTTP request that authentication reads."""

    method: str
    url: str
    """The request's URL as the client addressed it (the resource URL when configured)."""
    authorization: tuple[str, ...]
    dpop: tuple[str, ...]


def credentials(authorization: Iterable[str]) -> tuple[str, str] | None:
    """(scheme, token) of one ``Authorization: Bearer|DPoP <token>``; None if there is none.

    Raises `Refused` for several Authorization headers or another scheme's malformed value.
    """
    values = list(authorization)
    if not values:
        return None
    if len(values) > 1:
        raise Refused("invalid_request", "several Authorization headers")
    scheme, _, token = values[0].strip().partition(" ")
    token = token.strip()
    for known in (BEARER, DPOP):
        if scheme.lower() == known.lower():
            if not token or " " in token:
                raise Refused("invalid_request", f"a malformed {known} credential", scheme=known)
            return known, token
    return None


__all__ = [
    "AccessToken",
    "access_token_of",
    "AuthRequest",
    "BEARER",
    "credentials",
    "DPOP",
    "Refused",
    "unavailable",
    "scopes_of",
    "scopes_of_claims",
]
