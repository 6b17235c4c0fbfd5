"""The OAuth proxy's tests: ``mcpline run --http --oauth-proxy`` in front of `scoped_server`,
signing users in at the test authorization server (`authz_server`, the identity provider),
and a scripted browser that goes through the consent page and the provider's redirects."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from html import unescape
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..transports.http_util import MCPLINE, HttpServer, free_port
from .authz_server import UPSTREAM_CLIENT_ID, UPSTREAM_CLIENT_SECRET
from .rs_util import SCOPED, Authz

if TYPE_CHECKING:
    import httpx2

SCOPES = "notes:read notes:write"
FIELD = re.compile(r'<input type=hidden name=(\w+) value="([^"]*)">')
ACTION = re.compile(r'<form method=post action="([^"]*)">')


def proxy_server(authz: Authz, extra: str = "", *, discovery: bool = True) -> HttpServer:
    """``mcpline run scoped_server.py --http 127.0.0.1:PORT --oauth-proxy ...`` (INFO logs),
    the provider's endpoints discovered, or given as for GitHub (and ``client_secret_basic``
    there)."""
    port = free_port()
    if discovery:
        upstream = f"upstream={authz.url}"
    else:
        upstream = (
            f"authorization_url={authz.url}/authorize,token_url={authz.url}/token,"
            f"userinfo_url={authz.url}/userinfo,upstream_auth=client_secret_basic"
        )
    spec = (
        f"{upstream},client_id={UPSTREAM_CLIENT_ID},scopes={SCOPES},"
        "allow_loopback_documents=true" + (f",{extra}" if extra else "")
    )
    argv = [MCPLINE, "run", str(SCOPED), "--http", f"127.0.0.1:{port}", "--oauth-proxy", spec]
    secret = {"MCPLINE_OAUTH_PROXY_CLIENT_SECRET": UPSTREAM_CLIENT_SECRET}
    return HttpServer(argv, {"MCPLINE_LOG_LEVEL": "INFO", **secret})


class ConsentPage:
    """The consent form of one page: where it posts and its hidden fields."""

    def __init__(self, html: str) -> None:
        found = ACTION.search(html)
        assert found is not None, html
        self.action = unescape(found[1])
        self.fields = {name: unescape(value) for name, value in FIELD.findall(html)}
        self.html = html


class Browser:
    """A user at a browser (cookies kept, redirects followed one by one) who answers the
    consent page with ``decision``."""

    def __init__(self, decision: str = "approve", http: httpx2.AsyncClient | None = None) -> None:
        import httpx2

        self.decision = decision
        self.http = http or httpx2.AsyncClient(follow_redirects=False, timeout=30)
        self.pages: list[ConsentPage] = []
        self.visited: list[str] = []

    async def close(self) -> None:
        await self.http.aclose()

    async def consent(self, url: str) -> ConsentPage | str:
        """The consent page at ``url``, or where ``url`` redirected at once."""
        r = await self.http.get(url)
        self.visited.append(url)
        if r.status_code in (302, 303):
            return str(r.headers["location"])
        assert r.status_code == 200, (r.status_code, r.text)
        page = ConsentPage(r.text)
        self.pages.append(page)
        return page

    async def follow(self, url: str, redirect_uri: str) -> str:
        """Follow redirects from ``url`` until one goes to ``redirect_uri``; that URL."""
        for _ in range(10):
            if url.startswith(redirect_uri.split("?")[0]):
                return url
            r = await self.http.get(url)
            self.visited.append(url)
            assert r.status_code in (302, 303), (url, r.status_code, r.text)
            url = str(r.url.join(r.headers["location"]))
        raise AssertionError("too many redirects")

    async def sign_in(self, url: str, redirect_uri: str) -> str:
        """``on_authorize`` of `mcpline.client.oauth.OAuth`: the URL the client gets back."""
        page = await self.consent(url)
        if isinstance(page, str):
            return page
        return await self.submit(page, redirect_uri)

    async def submit(self, page: ConsentPage, redirect_uri: str, **override: Any) -> str:
        form = {**page.fields, "decision": self.decision, **override}
        r = await self.http.post(page.action, data=form)
        assert r.status_code in (302, 303), (r.status_code, r.text)
        return await self.follow(str(r.headers["location"]), redirect_uri)


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class Flow:
    """One MCP client's raw OAuth exchanges with the proxy at ``issuer``."""

    def __init__(self, issuer: str, browser: Browser) -> None:
        self.issuer = issuer
        self.browser = browser
        self.http = browser.http
        self.verifier = secrets.token_urlsafe(48)
        self.state = secrets.token_urlsafe(12)
        self.client: dict[str, Any] = {}

    async def register(self, redirect_uri: str, **meta: Any) -> dict[str, Any]:
        body = {"redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none", **meta}
        r = await self.http.post(self.issuer + "/oauth/register", json=body)
        assert r.status_code == 201, r.text
        self.client = r.json()
        return self.client

    def authorize_url(self, **override: str) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client["client_id"],
            "redirect_uri": self.client["redirect_uris"][0],
            "state": self.state,
            "code_challenge": challenge_of(self.verifier),
            "code_challenge_method": "S256",
            "resource": self.issuer + "/mcp",
        }
        params.update(override)
        return self.issuer + "/oauth/authorize?" + urlencode(params)

    async def back(self, **override: str) -> dict[str, str]:
        """The parameters the client's redirect URI receives at the end of the sign-in."""
        url = await self.browser.sign_in(self.authorize_url(**override), self.redirect_uri)
        return dict(parse_qsl(urlsplit(url).query))

    @property
    def redirect_uri(self) -> str:
        uri: str = self.client["redirect_uris"][0]
        return uri

    async def token(self, auth: str = "none", **form: str) -> Any:
        """POST the token endpoint with ``form``, authenticating as ``auth`` says."""

        data = {**form}
        headers: dict[str, str] = {}
        cid, secret = self.client["client_id"], self.client.get("client_secret", "")
        if auth == "client_secret_basic":
            pair = f"{cid}:{secret}".encode()
            headers["authorization"] = "Basic " + base64.b64encode(pair).decode()
        elif auth == "client_secret_post":
            data.update(client_id=cid, client_secret=secret)
        else:
            data.setdefault("client_id", cid)
        r: httpx2.Response = await self.http.post(
            self.issuer + "/oauth/token", data=data, headers=headers
        )
        return r

    async def redeem(self, code: str, auth: str = "none", **form: str) -> Any:
        fields = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": self.verifier,
            **form,
        }
        return await self.token(auth, **fields)
