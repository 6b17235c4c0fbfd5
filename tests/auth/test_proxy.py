"""The OAuth proxy for real: ``mcpline run --http --oauth-proxy`` in front of the test
authorization server as the identity provider, mcpline's client signing in through it (a
scripted browser answering the consent page), and each refusal of bad input."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Coroutine, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from mcpline.client import Client
from mcpline.client.oauth import OAuth
from mcpline.errors import AuthError

from ..transports.http_util import HttpServer
from .authz_server import UPSTREAM_CLIENT_SECRET
from .proxy_util import Browser, ConsentPage, Flow, proxy_server
from .rs_util import Authz

REDIRECT = "http://127.0.0.1:9/callback"
"""The redirect URI of the raw flows (nothing listens: the browser stops before it)."""


@pytest.fixture(scope="module")
def proxy(authz: Authz) -> Iterator[HttpServer]:
    server = proxy_server(authz)
    yield server
    assert server.stop() == 0, server.stderr
    assert UPSTREAM_CLIENT_SECRET not in server.stderr
    assert "UPSTREAM-" not in server.stderr  # the provider's tokens
    assert "code=" not in server.stderr  # no URL with a code, the provider's or the proxy's


@pytest.fixture
def small(authz: Authz) -> Iterator[HttpServer]:
    """A proxy with tiny limits (codes live 1 s, 2 sign-ins in progress per address, 3
    registrations per address, 1 s for a body), given the provider's endpoints as for
    GitHub. One per test: the tests count registrations from this address."""
    limits = "code_ttl=1,max_pending_per_address=2,max_clients_per_address=3,body_timeout=1"
    server = proxy_server(authz, limits, discovery=False)
    yield server
    server.stop()


def issuer(server: HttpServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 90))


def with_flow(server: HttpServer, body: Any, decision: str = "approve") -> Any:
    async def main() -> Any:
        browser = Browser(decision)
        try:
            return await body(Flow(issuer(server), browser))
        finally:
            await browser.close()

    return run(main())


# --- the whole way, with mcpline's client ------------------------------------------------


def test_our_client_signs_in_through_the_proxy(authz: Authz, proxy: HttpServer) -> None:
    browser = Browser()

    async def main() -> None:
        auth = OAuth(on_authorize=browser.sign_in, client_name="notes <app> & co")
        url = issuer(proxy) + "/mcp"
        async with Client.http(url, auth=auth, timeout=30, max_restarts=0) as c:
            me = json.loads((await c.call_tool("whoami", {}))["content"][0]["text"])
            assert me["subject"] == "user-42"
            assert me["scopes"] == ["notes:read", "notes:write"]
            assert me["client_id"].startswith("mcp-")
            wrote = await c.call_tool("write_notes", {"text": "hi"})
            assert wrote["content"][0]["text"] == "wrote hi"
        await browser.close()

    run(main())
    page = browser.pages[0].html
    assert "notes &lt;app&gt; &amp; co" in page and "<app>" not in page
    assert "<code>notes:read</code>" in page and "<code>notes:write</code>" in page
    assert f"After you sign in with {urlsplit(authz.url).netloc}," in page
    assert "signed in for client mcp-" in proxy.stderr


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_official_sdk_client_signs_in_through_the_proxy(proxy: HttpServer, mode: str) -> None:
    import httpx2
    from mcp import Client as SdkClient
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthClientMetadata,
        OAuthToken,
    )

    class Memory:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    browser = Browser()
    came_back: list[str] = []

    async def redirect(url: str) -> None:
        came_back.append(await browser.sign_in(url, REDIRECT))

    async def callback() -> AuthorizationCodeResult:
        query = dict(parse_qsl(urlsplit(came_back[-1]).query))
        return AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query["iss"])

    async def main() -> None:
        url = issuer(proxy) + "/mcp"
        meta = OAuthClientMetadata.model_validate(
            {
                "client_name": "sdk",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            }
        )
        provider = OAuthClientProvider(url, meta, Memory(), redirect, callback)
        async with httpx2.AsyncClient(auth=provider) as http:
            transport = streamable_http_client(url, http_client=http)
            async with SdkClient(transport, mode=mode) as c:
                r = await c.call_tool("whoami", {})
                me = json.loads(r.content[0].text)  # type: ignore[union-attr]
                assert me["subject"] == "user-42"
                assert me["scopes"] == ["notes:read", "notes:write"]
        await browser.close()

    run(main())
    assert len(came_back) == 1 and "code=" in came_back[0]


def test_the_resource_metadata_names_the_proxy_and_the_metadata_its_endpoints(
    proxy: HttpServer,
) -> None:
    async def body(flow: Flow) -> None:
        r = await flow.http.get(flow.issuer + "/.well-known/oauth-protected-resource/mcp")
        prm = r.json()
        assert prm["resource"] == flow.issuer + "/mcp"
        assert prm["authorization_servers"] == [flow.issuer]
        assert prm["scopes_supported"] == ["notes:read", "notes:write"]
        meta = (await flow.http.get(flow.issuer + "/.well-known/oauth-authorization-server")).json()
        assert meta["issuer"] == flow.issuer
        assert meta["registration_endpoint"] == flow.issuer + "/oauth/register"
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["client_id_metadata_document_supported"] is True
        assert set(meta["token_endpoint_auth_methods_supported"]) == {
            "none",
            "client_secret_post",
            "client_secret_basic",
        }
        for method, path, allow in [
            ("POST", "/oauth/authorize", "GET"),
            ("HEAD", "/oauth/authorize", "GET"),
            ("GET", "/oauth/token", "POST"),
            ("GET", "/oauth/register", "POST"),
            ("GET", "/oauth/consent", "POST"),
        ]:
            r = await flow.http.request(method, flow.issuer + path)
            assert (r.status_code, r.headers["allow"]) == (405, allow), (method, path)
        r = await flow.http.options(flow.issuer + "/oauth/token")
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "*"
        r = await flow.http.post(flow.issuer + "/mcp", json={})
        assert r.status_code == 401
        assert "/.well-known/oauth-protected-resource" in r.headers["www-authenticate"]

    with_flow(proxy, body)


# --- client ID metadata documents -------------------------------------------------------


@pytest.fixture(scope="module")
def documents() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A loopback web server for client metadata documents: (its URL, path → body)."""
    bodies: dict[str, bytes] = {}
    done = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = bodies.get(self.path)
            if body == b"slow":  # answers only once the tests are over
                done.wait(60)
            self.send_response(200 if body is not None else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body or b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    done.set()
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_a_client_id_metadata_document_signs_in(
    proxy: HttpServer, documents: tuple[str, dict[str, bytes]]
) -> None:
    base, bodies = documents
    url = base + "/clients/notes.json"
    doc = {"client_id": url, "client_name": "Notes (document)", "redirect_uris": [REDIRECT]}
    bodies["/clients/notes.json"] = json.dumps(doc).encode()
    browser = Browser()

    async def main() -> None:
        auth = OAuth(on_authorize=browser.sign_in, client_metadata_url=url, redirect_uri=REDIRECT)
        async with Client.http(issuer(proxy) + "/mcp", auth=auth, timeout=30) as c:
            me = json.loads((await c.call_tool("whoami", {}))["content"][0]["text"])
            assert me["client_id"] == url and me["subject"] == "user-42"
        await browser.close()

    run(main())
    assert "Notes (document)" in browser.pages[0].html


@pytest.mark.parametrize(
    ("path", "body", "why"),
    [
        (
            "/other.json",
            {"client_id": "https://a.example/x", "redirect_uris": [REDIRECT]},
            "does not name its own URL as client_id",
        ),
        ("/missing.json", None, "answered HTTP 404"),
        ("/nameless.json", {"redirect_uris": [REDIRECT]}, "client_name is required"),
        ("/huge.json", "x" * (65 * 1024), "is over 65536 bytes"),
        (
            "/secret.json",
            {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"},
            "token_endpoint_auth_method must be one of none",
        ),
    ],
)
def test_a_bad_metadata_document_is_refused(
    proxy: HttpServer, documents: tuple[str, dict[str, bytes]], path: str, body: Any, why: str
) -> None:
    base, bodies = documents
    if isinstance(body, dict) and "client_id" not in body:
        body = {"client_name": "n", **body, "client_id": base + path}
        if path == "/nameless.json":
            del body["client_name"]
    if body is not None:
        bodies[path] = body.encode() if isinstance(body, str) else json.dumps(body).encode()

    async def main(flow: Flow) -> None:
        flow.client = {"client_id": base + path, "redirect_uris": [REDIRECT]}
        r = await flow.http.get(flow.authorize_url())
        assert r.status_code == 400 and "location" not in r.headers
        assert why in r.text

    with_flow(proxy, main)


@pytest.mark.parametrize(
    ("path", "body", "why"),
    [
        ("/idp-other", {"issuer": "https://other.example"}, "is for another issuer"),
        ("/idp-missing", None, "discovery answered HTTP 404"),
        ("/idp-slow", "slow", "discovery did not answer in time"),
        ("/idp-empty", {}, "names no endpoints"),
    ],
)
def test_a_provider_that_cannot_be_discovered_fails_the_sign_in(
    documents: tuple[str, dict[str, bytes]], path: str, body: Any, why: str
) -> None:
    import httpx2

    from mcpline.server.auth import OAuthProxy, Upstream

    base, bodies = documents
    if isinstance(body, dict):
        body = {
            "issuer": base + path,
            "authorization_endpoint": base + "/a",
            "token_endpoint": base + "/t",
            **body,
        }
        if path == "/idp-empty":
            body = {"issuer": base + path}
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        bodies[path + "/.well-known/openid-configuration"] = data
    # Only the provider that never answers meets the short timeout: a busy machine must not
    # turn another case's answer into "did not answer in time".
    timeout = 0.5 if body == "slow" else 30.0
    upstream = Upstream(client_id="x", client_secret="y", issuer=base + path, timeout=timeout)
    proxy = OAuthProxy(upstream, issuer="http://proxy.test", resource="http://proxy.test/mcp")

    async def main() -> None:
        transport = httpx2.ASGITransport(app=proxy)  # type: ignore[arg-type]
        async with httpx2.AsyncClient(transport=transport, base_url="http://proxy.test") as http:
            browser = Browser(http=http)
            flow = Flow("http://proxy.test", browser)
            await flow.register(REDIRECT)
            page = await browser.consent(flow.authorize_url())
            assert isinstance(page, ConsentPage)
            r = await http.post(page.action, data={**page.fields, "decision": "approve"})
            assert r.status_code == 303
            back = dict(parse_qsl(urlsplit(r.headers["location"]).query))
            assert back["error"] == "temporarily_unavailable" and why in back["error_description"]
            assert r.headers["location"].startswith(REDIRECT + "?")

    run(main())


# --- the token endpoint ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["none", "client_secret_post", "client_secret_basic"])
def test_each_client_authentication_and_a_rotating_refresh_token(
    proxy: HttpServer, method: str
) -> None:
    async def body(flow: Flow) -> None:
        client = await flow.register(REDIRECT, token_endpoint_auth_method=method)
        assert ("client_secret" in client) is (method != "none")
        back = await flow.back(scope="notes:read")
        assert back["state"] == flow.state and back["iss"] == flow.issuer
        r = await flow.redeem(back["code"], method)
        assert r.status_code == 200, r.text
        assert r.headers["cache-control"] == "no-store"
        first = r.json()
        secrets = [back["code"], first["access_token"], first["refresh_token"]]
        keys = KeySet.import_key_set((await flow.http.get(flow.issuer + "/oauth/jwks")).json())
        token = jwt.decode(first["access_token"], keys, algorithms=["ES256"])
        assert token.header["typ"] == "at+jwt"
        claims = token.claims
        assert (claims["iss"], claims["aud"], claims["sub"]) == (
            flow.issuer,
            flow.issuer + "/mcp",
            "user-42",
        )
        assert claims["client_id"] == client["client_id"] and claims["scope"] == "notes:read"
        assert claims["email"] == "ada@example.com" and claims["exp"] - claims["iat"] == 900
        assert first["token_type"] == "Bearer" and first["scope"] == "notes:read"
        assert first["expires_in"] == 900
        refreshed = await flow.token(
            method, grant_type="refresh_token", refresh_token=first["refresh_token"]
        )
        assert refreshed.status_code == 200, refreshed.text
        again = await flow.token(
            method, grant_type="refresh_token", refresh_token=first["refresh_token"]
        )
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        secrets += [refreshed.json()["access_token"], refreshed.json()["refresh_token"]]
        secrets += [client.get("client_secret") or client["client_id"] + "!"]
        wider = await flow.token(
            method,
            grant_type="refresh_token",
            refresh_token=refreshed.json()["refresh_token"],
            scope="notes:read notes:write",
        )
        assert wider.json()["error"] == "invalid_scope"
        if method != "none":
            flow.client["client_secret"] = "wrong"
            r = await flow.redeem("whatever", method)
            assert r.status_code == 401 and r.json()["error"] == "invalid_client"
            assert r.json()["error_description"] == "the client secret is wrong"
        logged = proxy.wait_for_stderr(f"client {client['client_id']} registered")
        assert not [s for s in secrets if s in logged]

    with_flow(proxy, body)


def test_a_client_must_authenticate_as_it_registered(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT, token_endpoint_auth_method="client_secret_basic")
        back = await flow.back()
        r = await flow.redeem(back["code"], "none")
        assert r.status_code == 401
        assert r.json() == {
            "error": "invalid_client",
            "error_description": "the client registered client_secret_basic, not none",
        }

    with_flow(proxy, body)


def test_a_wrong_pkce_verifier_is_refused_and_burns_the_code(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        back = await flow.back()
        r = await flow.redeem(back["code"], code_verifier="x" * 43)
        assert r.status_code == 400
        assert r.json()["error_description"] == "the code_verifier does not match the challenge"
        r = await flow.redeem(back["code"])
        assert r.json()["error_description"] == "the code has already been used"

    with_flow(proxy, body)


def test_a_reused_code_is_refused_and_revokes_what_it_gave(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        back = await flow.back()
        first = await flow.redeem(back["code"])
        assert first.status_code == 200
        r = await flow.redeem(back["code"])
        assert r.status_code == 400
        assert r.json() == {
            "error": "invalid_grant",
            "error_description": "the code has already been used",
        }
        refresh = first.json()["refresh_token"]
        r = await flow.token(grant_type="refresh_token", refresh_token=refresh)
        assert r.json()["error"] == "invalid_grant"

    with_flow(proxy, body)
    proxy.wait_for_stderr("was presented twice; 1 refresh token(s) issued for it revoked")


def test_an_expired_code_is_refused(small: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        back = await flow.back()
        await asyncio.sleep(1.5)  # the code lives 1 s
        r = await flow.redeem(back["code"])
        assert r.status_code == 400
        assert r.json()["error_description"] == "the code is unknown or has expired"

    with_flow(small, body)


def test_a_redirect_uri_mismatch_is_refused_at_both_ends(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        r = await flow.http.get(flow.authorize_url(redirect_uri="http://127.0.0.1:9/other"))
        assert r.status_code == 400 and "location" not in r.headers
        assert "the redirect_uri is not one the client registered" in r.text
        r = await flow.http.get(flow.authorize_url(redirect_uri="https://evil.example/callback"))
        assert r.status_code == 400 and "location" not in r.headers
        back = await flow.back()
        r = await flow.redeem(back["code"], redirect_uri=REDIRECT + "/")
        assert r.json() == {
            "error": "invalid_grant",
            "error_description": "the redirect_uri is not the authorization's",
        }

    with_flow(proxy, body)


def test_an_unknown_client_is_refused(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        flow.client = {"client_id": "mcp-nobody", "redirect_uris": [REDIRECT]}
        r = await flow.http.get(flow.authorize_url())
        assert r.status_code == 400 and "location" not in r.headers
        assert "this client_id is not registered here" in r.text
        r = await flow.redeem("a-code")
        assert r.status_code == 401
        assert r.json() == {"error": "invalid_client", "error_description": "unknown client"}

    with_flow(proxy, body)


@pytest.mark.parametrize(
    ("override", "error", "description"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request", "PKCE with S256"),
        ({"code_challenge": "short"}, "invalid_request", "not an S256 challenge"),
        ({"response_type": "token"}, "unsupported_response_type", "must be code"),
        ({"resource": "http://127.0.0.1:1/other"}, "invalid_target", "only for"),
        ({"scope": "notes:admin"}, "invalid_scope", "unknown scope: notes:admin"),
    ],
)
def test_bad_authorization_requests_go_back_with_an_error(
    proxy: HttpServer, override: dict[str, str], error: str, description: str
) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        r = await flow.http.get(flow.authorize_url(**override))
        assert r.status_code == 302
        back = dict(parse_qsl(urlsplit(r.headers["location"]).query))
        assert back["error"] == error and description in back["error_description"]
        assert back["state"] == flow.state and back["iss"] == flow.issuer

    with_flow(proxy, body)


# --- the consent step --------------------------------------------------------------------


def test_consent_denied_sends_access_denied(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        back = await flow.back()
        assert back["error"] == "access_denied" and back["state"] == flow.state
        assert "code" not in back
        assert "/authorize" not in "".join(flow.browser.visited[1:])  # never at the provider

    with_flow(proxy, body, decision="deny")
    proxy.wait_for_stderr("the user denied client mcp-")

    async def client() -> None:
        browser = Browser("deny")
        auth = OAuth(on_authorize=browser.sign_in)
        try:
            async with Client.http(issuer(proxy) + "/mcp", auth=auth, timeout=30) as c:
                with pytest.raises(AuthError, match="authorization refused: access_denied"):
                    await c.list_tools()
        finally:
            await browser.close()

    run(client())


def test_the_consent_form_is_bound_to_its_browser_and_its_csrf_token(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        page = await flow.browser.consent(flow.authorize_url())
        assert isinstance(page, ConsentPage)
        r = await flow.http.post(page.action, data={**page.fields, "csrf": "forged"})
        assert r.status_code == 400 and "CSRF" in r.text
        stranger = Browser()
        try:  # another browser (no cookie) with the right fields
            r = await stranger.http.post(page.action, data={**page.fields, "decision": "approve"})
            assert r.status_code == 400 and "begun in another browser" in r.text
            r = await flow.http.post(
                page.action,
                data={**page.fields, "decision": "approve"},
                headers={"origin": "https://evil.example"},
            )
            assert r.status_code == 400 and "sent from another site" in r.text
        finally:
            await stranger.close()
        back = await flow.browser.submit(page, REDIRECT)
        assert "code=" in back
        r = await flow.http.post(page.action, data={**page.fields, "decision": "approve"})
        assert r.status_code == 400 and "unknown or has expired" in r.text
        assert r.headers["x-frame-options"] == "DENY"

    with_flow(proxy, body)


# --- the identity provider --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fail", "error", "description"),
    [
        ({"authorize": "access_denied"}, "access_denied", "refused the sign-in (access_denied)"),
        ({"authorize": "temporarily_unavailable"}, "server_error", "(temporarily_unavailable)"),
        ({"token": "x"}, "server_error", "token endpoint refused the code (invalid_grant)"),
    ],
)
def test_an_upstream_error_reaches_the_client(
    authz: Authz, proxy: HttpServer, fail: dict[str, str], error: str, description: str
) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        authz.control("/fail-next", fail)
        back = await flow.back()
        assert back["error"] == error and description in back["error_description"]
        assert back["state"] == flow.state

    with_flow(proxy, body)


# --- limits --------------------------------------------------------------------------


def test_a_full_store_refuses_clearly(small: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        await flow.register(REDIRECT)
        pages = [await flow.browser.consent(flow.authorize_url()) for _ in range(2)]
        r = await flow.http.get(flow.authorize_url())  # two sign-ins wait at the consent page
        assert r.status_code == 302
        back = dict(parse_qsl(urlsplit(r.headers["location"]).query))
        assert back["error"] == "temporarily_unavailable"
        assert "sign-ins in progress: 2 for one address, the limit" in back["error_description"]
        for page in pages:  # answered, they leave the store, and a sign-in may begin again
            assert isinstance(page, ConsentPage)
            await flow.browser.submit(page, REDIRECT, decision="deny")
        again = await flow.browser.consent(flow.authorize_url())
        assert isinstance(again, ConsentPage)
        await flow.browser.submit(again, REDIRECT, decision="deny")
        for _ in range(2):  # 3 registrations from this address in all
            await flow.register(REDIRECT)
        r = await flow.http.post(
            flow.issuer + "/oauth/register", json={"redirect_uris": [REDIRECT]}
        )
        assert r.status_code == 429 and r.headers["retry-after"] == "3600"
        assert r.json()["error_description"] == (
            "3 clients registered from this address, the limit"
        )

    with_flow(small, body)
    small.wait_for_stderr("sign-ins in progress: 2 for one address, the limit")


def test_a_body_that_does_not_arrive_gets_408(small: HttpServer) -> None:
    conn = small.connection(timeout=30)
    try:
        conn.putrequest("POST", "/oauth/token")
        conn.putheader("content-type", "application/x-www-form-urlencoded")
        conn.putheader("content-length", "100")
        conn.endheaders(b"grant_type=")  # and the other 89 bytes never come
        r = conn.getresponse()
        assert r.status == 408
        assert json.loads(r.read())["error_description"] == (
            "the request body did not arrive within 1 s"
        )
    finally:
        conn.close()


def test_registration_refusals(proxy: HttpServer) -> None:
    async def body(flow: Flow) -> None:
        url = flow.issuer + "/oauth/register"
        for meta, error in [
            ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri"),
            ({"redirect_uris": ["https://a.example/cb#x"]}, "invalid_redirect_uri"),
            ({"redirect_uris": []}, "invalid_redirect_uri"),
            ({"redirect_uris": [REDIRECT], "grant_types": ["password"]}, "invalid_client_metadata"),
            (
                {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"},
                "invalid_client_metadata",
            ),
        ]:
            r = await flow.http.post(url, json=meta)
            assert (r.status_code, r.json()["error"]) == (400, error), meta
        r = await flow.http.post(url, content=b"x" * (65 * 1024))
        assert r.status_code == 413

    with_flow(proxy, body)


def test_the_proxy_flag_is_checked(authz: Authz) -> None:
    import subprocess

    from ..transports.http_util import MCPLINE
    from .rs_util import SCOPED

    base = [MCPLINE, "run", str(SCOPED), "--http", "127.0.0.1:0"]
    good = f"upstream={authz.url},client_id=x,client_secret=y"
    for extra, message in [
        (["--oauth-proxy", "client_id=x,client_secret=y"], "give one of provider=NAME"),
        (["--oauth-proxy", f"upstream={authz.url},client_id=x"], "client secret"),
        (["--oauth-proxy", good + ",max_codes=0"], "max_codes must be positive"),
        (
            [
                "--oauth-proxy",
                good,
                "--auth",
                f"jwks={authz.url}/jwks,issuer={authz.url},audience={authz.url}/mcp",
            ],
            "exclude",
        ),
        (["--oauth-proxy", good, "--workers", "2"], "--workers 1"),
    ]:
        started = time.monotonic()
        done = subprocess.run(
            [*base, *extra], capture_output=True, text=True, timeout=60, env=_no_secret()
        )
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr, (extra, done.stderr)
        assert time.monotonic() - started < 60


def _no_secret() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("MCPLINE_OAUTH_PROXY_CLIENT_SECRET", None)
    env.setdefault("MCPLINE_STATE_KEY", "k" * 43)
    return env
