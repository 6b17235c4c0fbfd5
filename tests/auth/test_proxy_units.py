"""The OAuth proxy's rules without a network: its stores' limits, its configuration, the
identity it reads from a provider, redirect URIs, metadata document addresses, its signing
key file and its consent page."""

from __future__ import annotations

import asyncio
import os
import re
import stat
from pathlib import Path

import pytest

from mcpline.server.auth.proxy import OAuthProxy
from mcpline.server.auth.proxy_clients import (
    BadClient,
    check_redirect_uri,
    client_from_metadata,
    fetch_document,
)
from mcpline.server.auth.proxy_config import PROXY_SECRET_ENV, build, parse
from mcpline.server.auth.proxy_pages import consent_page
from mcpline.server.auth.proxy_store import Store, StoreFull
from mcpline.server.auth.proxy_upstream import Upstream, UpstreamError, identity_claims


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_refusing_store_says_which_limit() -> None:
    store: Store[int] = Store("codes", limit=3, per_owner=2, ttl=60, when_full="refuse")
    store.put("a", 1, "alice")
    store.put("b", 2, "alice")
    with pytest.raises(StoreFull, match="codes: 2 for one client, the limit"):
        store.put("c", 3, "alice")
    store.put("c", 3, "bob")
    with pytest.raises(StoreFull, match="codes: 3 in all, the limit"):
        store.put("d", 4, "carol")
    assert len(store) == 3 and store.owned("alice") == 2


def test_an_evicting_store_drops_the_owners_oldest_then_the_oldest() -> None:
    store: Store[int] = Store("tokens", limit=3, per_owner=2, ttl=None, when_full="evict")
    store.put("a", 1, "alice")
    store.put("b", 2, "alice")
    store.put("c", 3, "alice")  # alice's oldest (a) leaves
    assert store.get("a") is None and store.get("b") == 2
    store.put("x", 9, "bob")
    assert store.get("b", touch=True) == 2  # now the most recently used
    store.put("y", 8, "carol")  # the least recently used (c) leaves
    assert [k for k, _ in store.items()] == ["x", "b", "y"]


def test_entries_expire() -> None:
    clock = Clock()
    store: Store[int] = Store(
        "pending", limit=2, per_owner=2, ttl=10, when_full="refuse", clock=clock
    )
    store.put("a", 1, "alice")
    store.put("b", 2, "alice")
    clock.now += 10
    assert store.get("a") is None
    store.put("c", 3, "alice")  # the expired entries made room
    assert len(store) == 1 and store.owned("alice") == 1


def test_the_spec_is_checked() -> None:
    env = {PROXY_SECRET_ENV: "s3cret"}
    for spec, message in [
        ("client_id=x", "give one of provider=NAME"),
        ("provider=gitlab,client_id=x", "provider must be one of github, google"),
        ("provider=github,upstream=https://a.example,client_id=x", "give one of"),
        ("provider=github", "client_id= "),
        ("provider=github,client_id=x,max_clients=-1", "max_clients must be positive"),
        ("provider=github,client_id=x,issuer=ftp://x", "issuer must be an http(s) URL"),
        ("provider=github,client_id=x,color=blue", "unknown key 'color'"),
        ("provider=github,client_id=x,upstream_auth=private_key_jwt", "upstream_auth must"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            parse(spec, default_issuer="http://127.0.0.1:8000", env=env)
    with pytest.raises(ValueError, match=PROXY_SECRET_ENV):
        parse("provider=github,client_id=x", default_issuer="http://127.0.0.1:8000")
    for bound in ("http://0.0.0.0:8000", "http://[::]:8000"):  # all interfaces: no public URL
        with pytest.raises(ValueError, match="issuer=URL is required"):
            parse("provider=github,client_id=x", default_issuer=bound, env=env)


def test_github_needs_no_discovery_and_the_defaults_follow_the_issuer() -> None:
    values = parse(
        "provider=github,client_id=Iv1.abc,scopes=notes:read,code_ttl=30",
        default_issuer="https://mcp.example.com",
        env={PROXY_SECRET_ENV: "s3cret"},
    )
    proxy = build(values)
    assert proxy.resource == "https://mcp.example.com/mcp"
    assert proxy.callback_url == "https://mcp.example.com/oauth/callback"
    assert proxy.limits.code_ttl == 30.0 and proxy.scopes == ("notes:read",)
    endpoints = asyncio.run(proxy.upstream.endpoints())
    assert endpoints.authorization == "https://github.com/login/oauth/authorize"
    assert endpoints.userinfo == "https://api.github.com/user"
    assert proxy.upstream.scopes == ("read:user",)
    assert "s3cret" not in repr(proxy) + repr(proxy.upstream)


def test_the_identity_of_github_and_of_openid_connect() -> None:
    github = identity_claims({"id": 583231, "login": "octocat", "name": "Mona", "token": "x"})
    assert github == {"sub": "583231", "preferred_username": "octocat", "name": "Mona"}
    oidc = identity_claims({"sub": "abc", "email": "a@example.com", "email_verified": True})
    assert oidc == {"sub": "abc", "email": "a@example.com", "email_verified": True}
    with pytest.raises(UpstreamError, match="did not say who signed in"):
        identity_claims({"email": "a@example.com"})


def test_redirect_uris() -> None:
    for good in ("https://app.example/cb", "http://127.0.0.1:3000/cb", "com.example.app:/cb"):
        assert check_redirect_uri(good) == good
    for bad in ("http://app.example/cb", "https://app.example/cb#x", "javascript:alert(1)", ""):
        with pytest.raises(BadClient):
            check_redirect_uri(bad)
    client = client_from_metadata(
        "c", {"redirect_uris": ["http://127.0.0.1/cb", "https://a.example/cb"]}
    )
    assert client.allows_redirect("http://127.0.0.1:51234/cb")  # RFC 8252: any port
    assert not client.allows_redirect("http://127.0.0.1:51234/other")
    assert not client.allows_redirect("https://a.example/cb/")
    assert client.auth_method == "client_secret_basic"


@pytest.mark.parametrize(
    ("url", "allow", "why"),
    [
        ("https://10.0.0.1/client.json", False, "not a public address"),
        ("https://127.0.0.1:9/client.json", False, "not a public address"),
        ("http://127.0.0.1:9/client.json", False, "must be https"),
        ("https://[::1]:9/client.json", False, "not a public address"),
        ("https://169.254.169.254/latest", True, "not a public address"),
        ("https://user:pw@a.example/c.json", False, "no fragment or credentials"),
    ],
)
def test_metadata_documents_come_only_from_public_addresses(
    url: str, allow: bool, why: str
) -> None:
    async def main() -> None:
        with pytest.raises(BadClient, match=why):
            await fetch_document(url, timeout=5, max_bytes=1024, allow_loopback=allow)

    asyncio.run(main())


def _proxy(path: Path) -> OAuthProxy:
    upstream = Upstream(
        client_id="x",
        client_secret="y",
        authorization_url="https://idp.example/a",
        token_url="https://idp.example/t",
    )
    return OAuthProxy(
        upstream, issuer="https://mcp.example", resource="https://mcp.example/mcp", signing_key=path
    )


def test_the_signing_key_file_is_0600_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "proxy-key.json"
    first = _proxy(path).public_keys()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert _proxy(path).public_keys() == first
    assert "d" not in first["keys"][0]  # the public half only
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match="readable by others"):
        _proxy(path)


def test_the_consent_page_escapes_everything() -> None:
    page = consent_page(
        action="https://mcp.example/oauth/consent",
        transaction='t"><script>',
        csrf="c&<",
        client_name="<img src=x onerror=alert(1)>",
        client_id="mcp-1",
        redirect_uri='https://evil.example/"cb',
        scopes=["<b>"],
        resource="https://mcp.example/mcp",
        provider="idp.example",
    ).decode()
    assert "<script>" not in page and "<img" not in page and "<b>" not in page
    assert 'value="t&quot;&gt;&lt;script&gt;"' in page
    assert "<code>evil.example</code>" in page and "runs on a computer" not in page


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5000/cb", "com.example.app:/cb"])
def test_the_consent_page_warns_of_a_local_redirect(uri: str) -> None:
    page = consent_page(
        action="/c",
        transaction="t",
        csrf="c",
        client_name="Claimed Name",
        client_id="mcp-1",
        redirect_uri=uri,
        scopes=[],
        resource="https://mcp.example/mcp",
        provider="idp.example",
    ).decode()
    assert "runs on a computer, not a web site" in page
