"""A resource server for `mcpline.http_app`: JWT (JWKS) and introspection verifiers, DPoP
proofs, and the principal they produce. See docs/auth.md."""

from __future__ import annotations

from .dpop import ProofChecker
from .jwks import JwksCache, KeysUnavailable
from .tokens import AccessToken, AuthRequest, Refused, scopes_of
from .verifiers import IntrospectionVerifier, JWTVerifier, Verifier

__all__ = [
    "AccessToken",
    "AuthRequest",
    "IntrospectionVerifier",
    "JwksCache",
    "JWTVerifier",
    "KeysUnavailable",
    "ProofChecker",
    "Refused",
    "scopes_of",
    "Verifier",
]
