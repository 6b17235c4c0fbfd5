"""DPoP proofs (RFC 9449 section 4.3) as a resource server checks them, sans I/O.

A request with a DPoP-bound token (``cnf.jkt``) must carry one ``DPoP`` header: a
``dpop+jwt`` signed with an asymmetric key whose public JWK is in its header, naming the
request's method (``htm``) and URL (``htu``, without query or fragment), issued within
``window`` seconds of now (``iat``), carrying the hash of the token (``ath``) and a ``jti``
not seen before. The key's thumbprint must be the token's ``cnf.jkt``.

Seen ``jti`` values are kept for the window (at most ``max_proofs`` of them): a replayed
proof is refused. A server with several worker processes keeps one such memory per
process.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from .tokens import DPOP, Refused, unavailable

ALGORITHMS = (
    "ES256",
    "ES384",
    "ES512",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "EdDSA",
)
"""Asymmetric algorithms accepted for proofs (never ``none`` nor an HMAC)."""
MAX_PROOF_CHARS = 8192
DEFAULT_WINDOW = 300.0
DEFAULT_MAX_PROOFS = 100_000


def _refuse(why: str) -> Refused:
    return Refused("invalid_dpop_proof", why, scheme=DPOP)


class ProofChecker:
    """Checks DPoP proofs and remembers their ``jti`` for ``window`` seconds.

    At ``max_proofs`` remembered proofs still inside the window, a new proof is refused with
    503 (the client may retry with a fresh proof once older ones age out), never accepted
    unremembered.
    """

    def __init__(
        self,
        *,
        window: float = DEFAULT_WINDOW,
        max_proofs: int = DEFAULT_MAX_PROOFS,
        algorithms: Sequence[str] = ALGORITHMS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if window <= 0 or max_proofs < 1:
            raise ValueError("window and max_proofs must be positive")
        self.window = window
        self.max_proofs = max_proofs
        self.algorithms = tuple(algorithms)
        self._clock = clock
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        """Digests of the ``jti`` seen within the window, oldest first."""

    def check(self, proofs: Sequence[str], *, method: str, url: str, token: str, jkt: str) -> None:
        """Accept the one proof of a request for ``token`` (bound to ``jkt``), or raise
        `Refused` (``invalid_dpop_proof``) saying which rule it breaks."""
        from joserfc import jws
        from joserfc.errors import JoseError
        from joserfc.jwk import JWKRegistry

        from ...client._oauth_dpop import access_token_hash, htu

        if len(proofs) != 1:
            raise _refuse(
                "exactly one DPoP header is required" if proofs else "a DPoP proof is required"
            )
        proof = proofs[0]
        if len(proof) > MAX_PROOF_CHARS:
            raise _refuse("the DPoP proof is too long")
        try:
            compact = jws.extract_compact(proof.encode("ascii"))
            header = compact.headers()
        except (JoseError, ValueError, UnicodeError):
            raise _refuse("the DPoP proof is not a JWS") from None
        if header.get("typ") != "dpop+jwt":
            raise _refuse("the DPoP proof's typ is not dpop+jwt")
        if header.get("alg") not in self.algorithms:
            raise _refuse("the DPoP proof's alg is not an accepted asymmetric algorithm")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or any(k in jwk for k in ("d", "p", "q", "k")):
            raise _refuse("the DPoP proof's header needs a public jwk")
        try:
            key = JWKRegistry.import_key(jwk)
            verified = jws.deserialize_compact(proof, key, algorithms=list(self.algorithms))
            claims = json.loads(verified.payload)
        except (JoseError, ValueError, TypeError):
            raise _refuse("the DPoP proof's signature does not verify") from None
        if not isinstance(claims, dict):
            raise _refuse("the DPoP proof's payload is not a JSON object")
        if claims.get("htm") != method.upper():
            raise _refuse("the DPoP proof is for another HTTP method")
        if not isinstance(claims.get("htu"), str) or htu(claims["htu"]) != htu(url):
            raise _refuse("the DPoP proof is for another URL")
        iat = claims.get("iat")
        now = self._clock()
        if not isinstance(iat, (int, float)) or abs(now - iat) > self.window:
            raise _refuse("the DPoP proof's iat is outside the accepted window")
        if claims.get("ath") != access_token_hash(token):
            raise _refuse("the DPoP proof's ath is not the hash of this token")
        if str(key.thumbprint()) != jkt:
            raise _refuse("the DPoP proof's key is not the one the token is bound to")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > 256:
            raise _refuse("the DPoP proof needs a jti")
        self._remember(jti, now)

    def _remember(self, jti: str, now: float) -> None:
        digest = hashlib.blake2b(jti.encode(), digest_size=16).digest()
        seen = self._seen
        while seen:
            oldest, at = next(iter(seen.items()))
            if now - at <= self.window:
                break
            del seen[oldest]
        if digest in seen:
            raise _refuse("the DPoP proof was already used (replay)")
        if len(seen) >= self.max_proofs:
            busy = unavailable(f"{self.max_proofs} DPoP proofs are remembered (the limit)")
            busy.scheme = DPOP
            raise busy
        seen[digest] = now


__all__ = ["ALGORITHMS", "DEFAULT_MAX_PROOFS", "DEFAULT_WINDOW", "ProofChecker"]
