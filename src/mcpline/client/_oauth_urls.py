"""What `mcpline.client.oauth.OAuth` reads and compares: ``WWW-Authenticate`` challenges,
canonical server URIs (RFC 8707) and the resources that cover them, origins, the endpoints of
an authorization server without metadata, and server text trimmed for an error message."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_PARAM = re.compile(r'\s*([A-Za-z0-9_\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*,?')


def parse_challenges(values: Sequence[str], scheme: str = "bearer") -> dict[str, str]:
    """The parameters of the ``scheme`` challenge (``Bearer`` unless told) among
    ``WWW-Authenticate`` values."""
    for value in values:
        name, _, rest = value.strip().partition(" ")
        if name.lower() != scheme:
            continue
        params: dict[str, str] = {}
        for m in _PARAM.finditer(rest):
            v = m.group(2)
            if v.startswith('"') and v.endswith('"') and len(v) >= 2:
                v = re.sub(r"\\(.)", r"\1", v[1:-1])
            params[m.group(1).lower()] = v
        return params
    return {}


def canonical(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707): lowercase scheme and host, no fragment
    or query, no trailing slash."""
    parts = urlsplit(url)
    netloc = (parts.hostname or "").lower()
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def covers(resource: str, url: str) -> bool:
    """True when protected resource ``resource`` includes the MCP server at ``url`` (same
    origin, and its path is a prefix of the server's, segment-wise)."""
    r, u = urlsplit(canonical(resource)), urlsplit(canonical(url))
    if (r.scheme, r.netloc) != (u.scheme, u.netloc):
        return False
    rp = r.path.rstrip("/")
    return u.path == rp or u.path.startswith(rp + "/") or not rp


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def default_endpoints(origin: str) -> dict[str, Any]:
    """The endpoints a 2025-03-26 authorization server without metadata has
    (2025-03-26 basic/authorization#fallbacks-for-servers-without-metadata-discovery)."""
    return {
        "issuer": origin,
        "authorization_endpoint": origin + "/authorize",
        "token_endpoint": origin + "/token",
        "registration_endpoint": origin + "/register",
        "code_challenge_methods_supported": ["S256"],
    }


def short(text: Any, limit: int = 200) -> str:
    return " ".join(str(text).split())[:limit]


__all__ = ["canonical", "covers", "default_endpoints", "origin_of", "parse_challenges", "short"]
