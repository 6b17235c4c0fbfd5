"""Who a request's principal is, as one stable key: what tasks, sealed ``requestState``,
rate limits and per-client shares are bound to."""

from __future__ import annotations

from typing import Any

import msgspec


def owner_key(principal: Any) -> str:
    """A digest of the principal's ``owner`` text when it has one
    (`mcpline.server.auth.AccessToken`: issuer, subject, client), else of its JSON (its ``str``
    when it has none), "" without a principal. Give ``verify_token`` a stable value (a user
    id)."""
    if principal is None:
        return ""
    import hashlib  # loads with the first authenticated caller, not with every server

    owner = getattr(principal, "owner", None)
    if isinstance(owner, str):
        return hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        raw = msgspec.json.encode(principal, order="sorted")
    except (TypeError, msgspec.EncodeError):
        raw = str(principal).encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


__all__ = ["owner_key"]
