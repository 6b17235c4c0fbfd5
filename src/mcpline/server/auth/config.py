"""``mcpline run --http --auth SPEC``: a verifier and the RFC 9728 metadata from one text.

``SPEC`` is ``key=value`` pairs separated by commas:

- ``jwks=URL,issuer=URL`` for JWT access tokens (`JWTVerifier`), or
  ``introspection=URL,client_id=ID`` for RFC 7662 (`IntrospectionVerifier`; the secret in
  ``client_secret=`` or, better, in ``$MCPLINE_AUTH_CLIENT_SECRET``);
- ``audience=URL``: the resource's URL, the ``aud`` tokens must name (default: the URL the
  server is bound to);
- optional: ``authorization_server=URL`` (default: the issuer), ``scopes=a b`` (the metadata's
  ``scopes_supported``), ``leeway=S``, ``fetch_timeout=S``, ``min_refetch=S``, ``jwks_ttl=S``,
  ``cache_ttl=S``, ``cache_size=N``, ``max_introspections=N``, ``dpop_window=S``,
  ``max_proofs=N``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .dpop import ALGORITHMS, ProofChecker
from .verifiers import IntrospectionVerifier, JWTVerifier, Verifier

AUTH_ENV = "MCPLINE_AUTH"
"""The ``--auth`` spec when the flag is absent (and how workers receive it)."""
SECRET_ENV = "MCPLINE_AUTH_CLIENT_SECRET"
"""The introspection client's secret when the spec names none."""

_URLS = ("jwks", "issuer", "audience", "introspection", "authorization_server")
_FLOATS = ("leeway", "fetch_timeout", "min_refetch", "jwks_ttl", "cache_ttl", "dpop_window")
_INTS = ("cache_size", "max_proofs", "max_introspections")
_TEXTS = ("client_id", "client_secret", "scopes")


def spec_values(
    spec: str,
    *,
    urls: Collection[str],
    numbers: Mapping[str, type[int] | type[float]],
    texts: Collection[str],
    zero_ok: Collection[str] = (),
) -> dict[str, Any]:
    """The ``key=value,...`` settings of a spec (``--auth``, ``--oauth-proxy``), each checked
    by its kind: an http(s) URL (``urls``), a positive number of its type (``numbers``; 0 too
    for ``zero_ok``) or text (``texts``). `ValueError` naming a malformed, repeated, unknown
    or bad key."""
    values: dict[str, Any] = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise ValueError(f"{item.strip()!r} is not key=value")
        if key in values:
            raise ValueError(f"{key} is given twice")
        if key in urls:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"{key} must be an http(s) URL")
            values[key] = value
        elif key in numbers:
            try:
                number = numbers[key](value)
            except ValueError:
                raise ValueError(f"{key} must be a number") from None
            if number < 0 or (number == 0 and key not in zero_ok):
                raise ValueError(f"{key} must be positive")
            values[key] = number
        elif key in texts:
            values[key] = value
        else:
            known = ", ".join(sorted((*urls, *numbers, *texts)))
            raise ValueError(f"unknown key {key!r} (known: {known})")
    return values


@dataclass(frozen=True)
class AuthConfig:
    """A parsed ``--auth`` spec (`parse`)."""

    values: Mapping[str, Any]

    @classmethod
    def parse(
        cls, spec: str, *, default_audience: str | None = None, env: Mapping[str, str] = {}
    ) -> AuthConfig:
        """The spec's settings; `ValueError` naming what is wrong."""
        numbers: dict[str, type[int] | type[float]] = {k: float for k in _FLOATS}
        numbers.update((k, int) for k in _INTS)
        values = spec_values(
            spec, urls=_URLS, numbers=numbers, texts=_TEXTS, zero_ok=("leeway", "min_refetch")
        )
        if ("jwks" in values) == ("introspection" in values):
            raise ValueError("give either jwks=URL (with issuer=URL) or introspection=URL")
        if "jwks" in values and "issuer" not in values:
            raise ValueError("jwks= needs issuer=URL (the iss tokens must carry)")
        if "introspection" in values:
            if "client_id" not in values:
                raise ValueError("introspection= needs client_id=")
            secret = values.get("client_secret") or env.get(SECRET_ENV)
            if not secret:
                raise ValueError(f"introspection= needs client_secret= or ${SECRET_ENV}")
            values["client_secret"] = secret
        values.setdefault("audience", default_audience)
        if values["audience"] is None:
            raise ValueError("audience=URL is required (the resource's URL tokens must name)")
        if "authorization_server" not in values and "issuer" not in values:
            raise ValueError("introspection= needs issuer= or authorization_server= (metadata)")
        return cls(values)

    def verifier(self) -> Verifier:
        """The verifier the spec describes."""
        v = self.values
        dpop = ProofChecker(
            **{
                k: v[n]
                for k, n in (("window", "dpop_window"), ("max_proofs", "max_proofs"))
                if n in v
            }
        )
        timeouts = {"fetch_timeout": v["fetch_timeout"]} if "fetch_timeout" in v else {}
        if "jwks" in v:
            extra = {k: v[k] for k in ("leeway", "min_refetch", "jwks_ttl") if k in v}
            return JWTVerifier(
                v["jwks"],
                issuer=v["issuer"],
                audience=v["audience"],
                dpop=dpop,
                **timeouts,
                **extra,
            )
        extra = {k: v[k] for k in ("cache_ttl", "cache_size") if k in v}
        if "max_introspections" in v:
            extra["max_concurrent"] = v["max_introspections"]
        if timeouts:
            extra["timeout"] = timeouts["fetch_timeout"]
        return IntrospectionVerifier(
            v["introspection"],
            client_id=v["client_id"],
            client_secret=v["client_secret"],
            issuer=v.get("issuer"),
            audience=v["audience"],
            dpop=dpop,
            **extra,
        )

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 document: the resource, its authorization server, its scopes."""
        v = self.values
        doc: dict[str, Any] = {
            "resource": v["audience"],
            "authorization_servers": [v.get("authorization_server") or v["issuer"]],
            "bearer_methods_supported": ["header"],
            "dpop_signing_alg_values_supported": list(ALGORITHMS),
        }
        if "scopes" in v:
            doc["scopes_supported"] = v["scopes"].split()
        return doc

    def __repr__(self) -> str:
        shown = {k: ("***" if k == "client_secret" else val) for k, val in self.values.items()}
        return f"AuthConfig({shown!r})"


def app_options(
    spec: str, *, default_audience: str | None = None, env: Mapping[str, str] = {}
) -> dict[str, Any]:
    """``verify_token`` and ``resource_metadata`` for `mcpline.http_app` from a spec."""
    config = AuthConfig.parse(spec, default_audience=default_audience, env=env)
    return {"verify_token": config.verifier(), "resource_metadata": config.metadata()}


__all__ = ["AUTH_ENV", "AuthConfig", "SECRET_ENV", "app_options", "spec_values"]
