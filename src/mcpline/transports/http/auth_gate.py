"""The HTTP side of a resource server: reading a request's credentials and DPoP proof for
the app's verifier, and the ``WWW-Authenticate`` challenges of its refusals (401, 403, 503).

A plain ``verify_token(token)`` sees ``Authorization: Bearer`` tokens only. A verifier with
an ``authenticate(AuthRequest)`` method (`mcpline.server.auth.Verifier`) also sees the
``DPoP`` scheme and proofs, and says why it refuses (`mcpline.server.auth.Refused`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from ...server.auth.tokens import BEARER, AuthRequest, Refused
from .headers import Headers
from .security import TokenVerifier, bearer_token, metadata_url, verify

log = logging.getLogger("mcpline.server")

DPOP_ALGS = "ES256 ES384 ES512 RS256 PS256 EdDSA"


def _values(headers: Headers, name: str) -> tuple[str, ...]:
    """Every value of ``name`` (neither tokens nor proofs contain commas)."""
    text = headers.get(name)
    if text is None:
        return ()
    return tuple(v.strip() for v in text.split(","))


def request_url(scope: dict[str, Any], headers: Headers, resource: str | None) -> str:
    """The URL the client addressed: the configured resource URL, else scheme, Host, path."""
    if resource is not None:
        return resource
    host = headers.get("host") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('path', '/')}"


async def principal_of(
    verifier: TokenVerifier, headers: Headers, method: str, url: str
) -> tuple[Any, bool]:
    """(the principal, whether credentials were presented); `Refused` for refused ones."""
    authenticate = getattr(verifier, "authenticate", None)
    if authenticate is not None:
        request = AuthRequest(
            method, url, _values(headers, "authorization"), _values(headers, "dpop")
        )
        found = await authenticate(request)
        return found, found is not None
    token = bearer_token(headers.get("authorization"))
    if token is None:
        return None, False
    try:
        found = await verify(verifier, token)
    except Exception as exc:
        # Neither the message nor the traceback: either may quote the presented token.
        log.error("verify_token raised %s; the request is refused", type(exc).__name__)
        found = None
    if found is None:
        raise Refused("invalid_token", "the token was refused")
    return found, True


def _quoted(text: str) -> str:
    return text.replace("\\", "").replace('"', "'")


def challenge(
    metadata: dict[str, Any] | None,
    *,
    scheme: str = BEARER,
    error: str | None = None,
    description: str | None = None,
    scope: Iterable[str] = (),
) -> bytes:
    """A ``WWW-Authenticate`` value: the scheme, the error, the scope it needs, the
    metadata URL (and the proof algorithms, for DPoP)."""
    parts = []
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{_quoted(description)}"')
    wanted = " ".join(sorted(scope))
    if wanted:
        parts.append(f'scope="{_quoted(wanted)}"')
    if metadata is not None:
        parts.append(f'resource_metadata="{metadata_url(metadata["resource"])}"')
    if scheme != BEARER:
        parts.append(f'algs="{DPOP_ALGS}"')
    return (scheme + (" " + ", ".join(parts) if parts else "")).encode("latin-1", "replace")


__all__ = ["challenge", "principal_of", "request_url"]
