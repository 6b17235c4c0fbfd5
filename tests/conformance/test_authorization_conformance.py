"""The official suite's authorization-server scenarios against mcpline's OAuth proxy.

``conformance authorization`` runs ``authorization-server-metadata-endpoint`` (the RFC 8414
document at the issuer's well-known URL) and then ``authorization-code-grant``: it prints an
authorization URL and waits for a browser to bring the redirect to its own callback listener
on ``127.0.0.1:P``. This test is that browser: it opens the URL at the proxy, answers the
consent page, follows the proxy → identity provider → proxy redirects and delivers the
authorization response to the suite's listener, which then redeems the code (PKCE, a public
client) and checks the token response. The proxy is ``mcpline run --http --oauth-proxy`` in
front of the test authorization server (``tests/auth/authz_server.py``) as the identity
provider; the client the suite uses is registered at the proxy first (RFC 7591).
Nothing here skips: a suite that cannot be installed or run fails this test.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..auth.proxy_util import Browser, proxy_server
from ..auth.rs_util import Authz
from ..transports.http_util import HttpServer, free_port
from . import harness, provision

pytestmark = pytest.mark.timeout(300)

SCENARIOS = ("authorization-server-metadata-endpoint", "authorization-code-grant")


@pytest.fixture(scope="module")
def proxy() -> Iterator[HttpServer]:
    authz = Authz()
    server = proxy_server(authz)
    yield server
    server.stop()
    authz.stop()


def register(issuer: str, redirect_uri: str) -> str:
    """A public client (``none``) with the suite's callback as its redirect URI."""
    body = {
        "client_name": "conformance",
        "redirect_uris": [redirect_uri],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
    }
    request = urllib.request.Request(
        issuer + "/oauth/register",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        client_id: str = json.loads(r.read())["client_id"]
        return client_id


async def play_browser(url: str, callback: str) -> str:
    """Consent at the proxy, follow the redirects, deliver the response to ``callback``."""
    browser = Browser()
    try:
        back = await browser.sign_in(url, callback)
        delivered = await browser.http.get(back)
        assert delivered.status_code == 200, delivered.text
        return back
    finally:
        await browser.close()


def checks(out: Path, scenario: str) -> list[harness.Check]:
    found = sorted(out.glob(f"authorization-server-{scenario}-*/checks.json"))
    assert len(found) == 1, (scenario, sorted(p.name for p in out.iterdir()))
    return [
        harness.Check(c["id"], c["status"], c.get("description", ""), c.get("errorMessage"))
        for c in json.loads(found[0].read_text("utf-8"))
    ]


def test_both_authorization_server_scenarios_pass(proxy: HttpServer) -> None:
    issuer = f"http://127.0.0.1:{proxy.port}"
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    client_id = register(issuer, callback)
    with tempfile.TemporaryDirectory(prefix="conformance-authz-") as tmp:
        out = Path(tmp) / "results"
        command = [
            *provision.conformance_command(),
            "authorization",
            "--url",
            issuer,
            "--client-id",
            client_id,
            "--resource",
            issuer + "/mcp",
            "--port",
            str(port),
            "--output-dir",
            str(out),
        ]
        env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=tmp,
            env=env,
        )
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            url, listening = None, False
            for line in proc.stdout:  # the URL, and the suite's listener bound (either order)
                lines.append(line)
                if line.startswith(issuer + "/oauth/authorize?"):
                    url = line.strip()
                listening = listening or line.startswith("Callback server started")
                if url is not None and listening:
                    break
            assert url is not None and listening, "".join(lines)
            rest: list[str] = []
            reader = threading.Thread(target=lambda: rest.extend(proc.stdout or ()), daemon=True)
            reader.start()
            back = asyncio.run(asyncio.wait_for(play_browser(url, callback), 60))
            assert (
                "code=" in back and f"iss={issuer.replace(':', '%3A').replace('/', '%2F')}" in back
            )
            assert proc.wait(120) == 0, "".join(lines + rest)
            reader.join(10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        results = {name: checks(out, name) for name in SCENARIOS}
    metadata = {c.id: c for c in results["authorization-server-metadata-endpoint"]}
    assert metadata["authorization-server-metadata"].status == "SUCCESS", metadata
    assert metadata["authorization-server-metadata-cimd"].status == "SUCCESS", metadata
    grant = results["authorization-code-grant"]
    assert [(c.id, c.status) for c in grant] == [("authorization-code-grant", "SUCCESS")], grant
    summary = "".join(rest)
    for name in SCENARIOS:
        assert f"✓ {name}:" in summary, summary
    assert client_id in proxy.stderr and "signed in for client" in proxy.stderr
