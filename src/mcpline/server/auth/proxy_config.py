"""``mcpline run --http --oauth-proxy SPEC``: an `OAuthProxy` from one text.

``SPEC`` is ``key=value`` pairs separated by commas:

- the identity provider: ``provider=github`` or ``provider=google`` (known endpoints), or
  ``upstream=URL`` (its issuer: endpoints from ``/.well-known/openid-configuration``), or
  ``authorization_url=URL,token_url=URL`` (and ``userinfo_url=URL``); ``client_id=`` of the
  proxy's client there, its secret in ``client_secret=`` or, better,
  ``$MCPLINE_OAUTH_PROXY_CLIENT_SECRET``; ``upstream_scopes=a b``,
  ``upstream_auth=client_secret_post|client_secret_basic``;
- the proxy: ``issuer=URL`` (its public URL; default: the URL the server is bound to),
  ``resource=URL`` (the MCP endpoint's public URL; default: the issuer's origin and
  ``/mcp``), ``scopes=a b``, ``signing_key=PATH``, ``allow_loopback_documents=true``;
- limits: every field of `ProxyLimits` (``max_clients=N``, ``code_ttl=S``, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .config import spec_values
from .proxy import OAuthProxy, ProxyLimits
from .proxy_upstream import PRESETS, Upstream

PROXY_ENV = "MCPLINE_OAUTH_PROXY"
"""The ``--oauth-proxy`` spec when the flag is absent."""
PROXY_SECRET_ENV = "MCPLINE_OAUTH_PROXY_CLIENT_SECRET"
"""The proxy's client secret at the identity provider when the spec names none."""

_URLS = ("upstream", "authorization_url", "token_url", "userinfo_url", "issuer", "resource")
_TEXTS = (
    "provider",
    "client_id",
    "client_secret",
    "upstream_scopes",
    "upstream_auth",
    "scopes",
    "signing_key",
    "allow_loopback_documents",
)
_LIMITS: dict[str, type[int] | type[float]] = {
    f.name: float if f.type in (float, "float") else int for f in dataclasses.fields(ProxyLimits)
}


def parse(
    spec: str, *, default_issuer: str | None = None, env: Mapping[str, str] = {}
) -> dict[str, Any]:
    """The spec's settings, checked; `ValueError` naming what is wrong."""
    values = spec_values(spec, urls=_URLS, numbers=_LIMITS, texts=_TEXTS)
    provider = values.get("provider")
    if provider is not None and provider not in PRESETS:
        raise ValueError(f"provider must be one of {', '.join(PRESETS)}")
    found = [k for k in ("provider", "upstream") if k in values]
    explicit = "authorization_url" in values and "token_url" in values
    if len(found) > 1 or (not found and not explicit):
        raise ValueError(
            "give one of provider=NAME, upstream=URL (OpenID Connect discovery) or "
            "authorization_url=URL,token_url=URL"
        )
    if "client_id" not in values:
        raise ValueError("client_id= (the proxy's client at the identity provider) is required")
    secret = values.get("client_secret") or env.get(PROXY_SECRET_ENV)
    if not secret:
        raise ValueError(
            f"the identity provider's client secret: client_secret= or ${PROXY_SECRET_ENV}"
        )
    values["client_secret"] = secret
    values.setdefault("issuer", default_issuer)
    if values["issuer"] is None or urlsplit(values["issuer"]).hostname in ("0.0.0.0", "::"):
        raise ValueError("issuer=URL is required (the proxy's public URL)")
    if values.get("allow_loopback_documents", "false") not in ("true", "false"):
        raise ValueError("allow_loopback_documents must be true or false")
    if values.get("upstream_auth", "client_secret_post") not in (
        "client_secret_post",
        "client_secret_basic",
    ):
        raise ValueError("upstream_auth must be client_secret_post or client_secret_basic")
    return values


def build(values: Mapping[str, Any]) -> OAuthProxy:
    """The proxy `parse`'s settings describe."""
    v = dict(values)
    preset = dict(PRESETS.get(v.get("provider", ""), {}))
    scopes = v.get("upstream_scopes")
    upstream = Upstream(
        client_id=v["client_id"],
        client_secret=v["client_secret"],
        issuer=v.get("upstream", preset.get("issuer")),
        authorization_url=v.get("authorization_url", preset.get("authorization_url")),
        token_url=v.get("token_url", preset.get("token_url")),
        userinfo_url=v.get("userinfo_url", preset.get("userinfo_url")),
        scopes=tuple(scopes.split()) if scopes else tuple(preset.get("scopes", ())),
        auth_method=v.get("upstream_auth", "client_secret_post"),
        **({"timeout": v["fetch_timeout"]} if "fetch_timeout" in v else {}),
        **({"max_bytes": v["max_fetch_bytes"]} if "max_fetch_bytes" in v else {}),
    )
    issuer = v["issuer"].rstrip("/")
    parts = urlsplit(issuer)
    return OAuthProxy(
        upstream,
        issuer=issuer,
        resource=v.get("resource", f"{parts.scheme}://{parts.netloc}/mcp"),
        scopes=tuple(v.get("scopes", "").split()),
        signing_key=v.get("signing_key"),
        allow_loopback_documents=v.get("allow_loopback_documents") == "true",
        limits=ProxyLimits(**{k: v[k] for k in _LIMITS if k in v}),
    )


def app_options(
    spec: str, *, default_issuer: str | None = None, env: Mapping[str, str] = {}
) -> dict[str, Any]:
    """``oauth_proxy`` for `mcpline.http_app` from a spec (`ValueError` if it is wrong)."""
    return {"oauth_proxy": build(parse(spec, default_issuer=default_issuer, env=env))}


__all__ = ["PROXY_ENV", "PROXY_SECRET_ENV", "app_options", "build", "parse"]
