"""DPoP (RFC 9449) for `mcpline.client.oauth.OAuth`: a proof-of-possession key, the proofs
it signs (one per HTTP request, never reused) and the nonces servers hand out.

The key is an ES256 (P-256) key generated on first use and kept in the token store beside
the token bound to it; a proof is a ``dpop+jwt`` carrying the public key, ``htm``, ``htu``
(the URL without query or fragment), a fresh ``jti``, ``iat``, the server's latest nonce
for that origin and, sent with an access token, its hash ``ath``.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from joserfc.jwk import ECKey

ALG = "ES256"
CURVE = "P-256"
MAX_NONCES = 32
"""Origins whose latest nonce is remembered (the oldest is forgotten first)."""
MAX_NONCE_CHARS = 512
_NONCE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 9449 section 8.1: a nonce is one or more NQCHAR (printable ASCII without ``"``, ``\\``)."""


def htu(url: str) -> str:
    """The ``htu`` of a request to ``url``: its scheme, authority and path only."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def access_token_hash(token: str) -> str:
    """``ath``: the unpadded base64url SHA-256 of the access token (RFC 9449 section 4.2)."""
    digest = hashlib.sha256(token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class DPoPKey:
    """A DPoP key and the nonces each server (by origin) asked proofs to carry."""

    def __init__(self, key: ECKey) -> None:
        self._key = key
        self._public: dict[str, Any] = dict(key.as_dict(private=False))
        self._nonces: OrderedDict[str, str] = OrderedDict()

    @classmethod
    def generate(cls) -> DPoPKey:
        from joserfc.jwk import ECKey

        return cls(ECKey.generate_key(CURVE))

    @classmethod
    def from_record(cls, record: Any) -> DPoPKey | None:
        """The key of a stored record (`record`'s output), or None if it is not one."""
        from joserfc.errors import JoseError
        from joserfc.jwk import ECKey

        if not isinstance(record, dict) or record.get("crv") != CURVE or "d" not in record:
            return None
        try:
            return cls(ECKey.import_key(record))
        except (JoseError, ValueError, TypeError):
            return None

    def record(self) -> dict[str, Any]:
        """The private key as a JWK, for the token store."""
        return dict(self._key.as_dict(private=True))

    @property
    def thumbprint(self) -> str:
        """The key's JWK SHA-256 thumbprint (RFC 7638): the ``cnf.jkt`` a bound token names."""
        return str(self._key.thumbprint())

    def remember_nonce(self, url: str, nonce: str | None) -> bool:
        """Keep ``nonce`` (a ``DPoP-Nonce`` from a response to ``url``) for that origin's next
        proofs; False when it is absent or malformed (and so ignored)."""
        if not nonce or len(nonce) > MAX_NONCE_CHARS or not _NONCE.fullmatch(nonce):
            return False
        origin = _origin(url)
        self._nonces[origin] = nonce
        self._nonces.move_to_end(origin)
        while len(self._nonces) > MAX_NONCES:
            self._nonces.popitem(last=False)
        return True

    def nonce_for(self, url: str) -> str | None:
        return self._nonces.get(_origin(url))

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A new proof for one ``method`` request to ``url`` (never sent twice)."""
        from joserfc import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        nonce = self.nonce_for(url)
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        header = {"typ": "dpop+jwt", "alg": ALG, "jwk": self._public}
        return jwt.encode(header, claims, self._key, algorithms=[ALG])

    def __repr__(self) -> str:
        return f"DPoPKey(jkt={self.thumbprint!r})"


__all__ = ["ALG", "DPoPKey", "access_token_hash", "htu"]
