"""A resource server for `mcpline.http_app`: JWT (JWKS) and introspection verifiers, DPoP
proofs, and the principal they produce; and an OAuth proxy (`OAuthProxy`) in front of an
identity provider. See docs/auth.md.

The names load on first use, so that a server whose tools declare ``scopes=`` (which reads
`tokens` only) does not import the verifiers, JOSE or an HTTP client at start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_names

if TYPE_CHECKING:
    from .dpop import ProofChecker
    from .jwks import JwksCache, KeysUnavailable
    from .proxy import OAuthProxy, ProxyLimits
    from .proxy_upstream import Upstream
    from .tokens import AccessToken, AuthRequest, Refused, scopes_of
    from .verifiers import IntrospectionVerifier, JWTVerifier, Verifier

_LAZY = {
    "AccessToken": ".tokens",
    "AuthRequest": ".tokens",
    "IntrospectionVerifier": ".verifiers",
    "JwksCache": ".jwks",
    "JWTVerifier": ".verifiers",
    "KeysUnavailable": ".jwks",
    "OAuthProxy": ".proxy",
    "ProxyLimits": ".proxy",
    "ProofChecker": ".dpop",
    "Refused": ".tokens",
    "scopes_of": ".tokens",
    "Upstream": ".proxy_upstream",
    "Verifier": ".verifiers",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "AccessToken",
    "AuthRequest",
    "IntrospectionVerifier",
    "JwksCache",
    "JWTVerifier",
    "KeysUnavailable",
    "OAuthProxy",
    "ProofChecker",
    "ProxyLimits",
    "Refused",
    "scopes_of",
    "Upstream",
    "Verifier",
]
