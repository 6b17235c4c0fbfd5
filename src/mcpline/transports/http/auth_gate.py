"""The HTTP side of a resource server: reading a request's credentials and DPoP proof for
the app's verifier, and the ``WWW-Authenticate`` challenges of its refusals (401, 403, 503).

A plain ``verify_token(token)`` sees ``Authorization: Bearer`` tokens only. A verifier with
an ``authenticate(AuthRequest)`` method (`mcpline.server.auth.Verifier`) also sees the
``DPoP`` scheme and proofs, and says why it refuses (`mcpline.server.auth.Refused`).
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from ...server.auth.dpop import ALGORITHMS
from ...server.auth.tokens import DPOP, AuthRequest, Refused, scopes_of
from ...spec import INTERNAL_ERROR, INVALID_REQUEST
from . import respond
from .headers import Headers
from .security import TokenVerifier, bearer_token, challenge, verify

log = logging.getLogger("mcpline.server")


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


async def authenticate(
    verifier: TokenVerifier,
    scope: dict[str, Any],
    headers: Headers,
    metadata: dict[str, Any] | None,
    send: respond.Send,
    extra: respond.Headers,
) -> Any:
    """The caller's principal; None once a refusal (401, or 503 while the verifier cannot reach
    its keys or endpoint) is sent, with its challenge."""
    url = request_url(scope, headers, None if metadata is None else metadata["resource"])
    try:
        principal = await principal_of(verifier, headers, scope["method"], url)
    except Refused as refused:
        log.info(
            "credentials refused (%d %s): %s", refused.status, refused.error, refused.description
        )
        www = _latin1(
            challenge(
                metadata,
                refused.error,
                scheme=refused.scheme,
                # A Verifier says why; a plain verify_token's "refused" adds nothing.
                description=refused.description if hasattr(verifier, "authenticate") else None,
                algs=ALGORITHMS if refused.scheme == DPOP else (),
            )
        )
        out = [(b"www-authenticate", www), *extra]
        if refused.status == 401:
            why, code = "Unauthorized: " + refused.description, INVALID_REQUEST
        else:
            why, code = refused.description, INTERNAL_ERROR
        if refused.retry_after is not None:
            out.append((b"retry-after", str(refused.retry_after).encode("ascii")))
        await respond.error(send, refused.status, code, why, None, out)
        return None
    if principal is None:
        why = "Unauthorized: a bearer token is required"
        www = _latin1(challenge(metadata))
        await respond.error(
            send, 401, INVALID_REQUEST, why, None, [(b"www-authenticate", www), *extra]
        )
    return principal


def holds(principal: Any, needed: frozenset[str]) -> bool:
    """Whether ``principal`` holds every scope in ``needed``."""
    return needed <= scopes_of(principal)


async def insufficient_scope(
    send: respond.Send,
    needed: frozenset[str],
    id: Any,
    metadata: dict[str, Any] | None,
    extra: respond.Headers,
) -> None:
    """403 for a caller whose token lacks scopes the operation requires (RFC 6750)."""
    log.info("insufficient scope: %s is required", " ".join(sorted(needed)))
    www = _latin1(challenge(metadata, "insufficient_scope", scope=needed))
    why = "Forbidden: the token lacks the scope this needs: " + " ".join(sorted(needed))
    await respond.error(send, 403, INVALID_REQUEST, why, id, [(b"www-authenticate", www), *extra])


def _latin1(value: str) -> bytes:
    return value.encode("latin-1", "replace")


async def principal_of(verifier: TokenVerifier, headers: Headers, method: str, url: str) -> Any:
    """The principal of the request's credentials (None without any); `Refused` if refused
    (also when the verifier raises anything else: that is logged without its message)."""
    authenticate = getattr(verifier, "authenticate", None)
    try:
        if authenticate is not None:
            request = AuthRequest(
                method, url, _values(headers, "authorization"), _values(headers, "dpop")
            )
            return await authenticate(request)
        token = bearer_token(headers.get("authorization"))
        if token is None:
            return None
        found = await verify(verifier, token)
    except Refused:
        raise
    except Exception as exc:
        # The exception's message and chain may hold the presented token: log where it was
        # raised, never what it says.
        frames = "".join(traceback.format_tb(exc.__traceback__))
        log.error(
            "verify_token raised %s (its message is not logged: it may hold the presented "
            "token); the request is refused. Raised at:\n%s",
            type(exc).__name__,
            frames.rstrip(),
        )
        found = None
    if found is None:
        raise Refused("invalid_token", "the token was refused")
    return found


__all__ = [
    "authenticate",
    "holds",
    "insufficient_scope",
    "principal_of",
    "request_url",
]
