"""Bearer tokens and protected-resource metadata (RFC 9728), against a real uvicorn process."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from .http_util import HttpServer, call, modern_headers, post, request_body, spawn_server

PRM = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def srv() -> Iterator[HttpServer]:
    server = spawn_server("--auth")
    yield server
    assert server.stop() == 0, server.stderr


def test_a_missing_token_is_401_with_the_metadata_url(srv: HttpServer) -> None:
    r = post(srv, request_body(1, "tools/list"), modern_headers("tools/list"))
    assert r.status == 401
    assert r.headers["www-authenticate"] == f'Bearer resource_metadata="{PRM}"'
    assert r.json["error"]["code"] == -32600 and "id" not in r.json


@pytest.mark.parametrize("value", ["Bearer wrong", "Basic c2VjcmV0LXRva2Vu", "Bearer", "secret"])
def test_a_refused_or_malformed_token_is_401(srv: HttpServer, value: str) -> None:
    h = modern_headers("tools/list", Authorization=value)
    r = post(srv, request_body(1, "tools/list"), h)
    assert r.status == 401 and r.headers["www-authenticate"].startswith("Bearer ")
    if value == "Bearer wrong":
        assert 'error="invalid_token"' in r.headers["www-authenticate"]


def test_a_verifier_that_raises_refuses_without_logging_the_token(srv: HttpServer) -> None:
    token = "explode-4b1d9e6f0c2a7358"
    h = modern_headers("tools/list", Authorization=f"Bearer {token}")
    r = post(srv, request_body(1, "tools/list"), h)
    assert r.status == 401
    ok = call(srv, 2, "tools/list", headers={"Authorization": "Bearer secret-token"})
    assert ok.status == 200
    stderr = srv.wait_for_stderr("verify_token raised ValueError")
    assert "4b1d9e6f0c2a7358" not in stderr and "Traceback" not in stderr


def test_handlers_see_the_principal(srv: HttpServer) -> None:
    for token, principal in (("secret-token", "'alice'"), ("other-token", "'bob'")):
        r = call(
            srv, 1, "tools/call", {"name": "whoami"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status == 200 and r.json["result"]["content"][0]["text"] == principal


def test_get_and_delete_need_the_token_too(srv: HttpServer) -> None:
    for method in ("GET", "DELETE"):
        r = post(srv, None, {"Accept": "text/event-stream", "Mcp-Session-Id": "x"}, method=method)
        assert r.status == 401


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
def test_the_metadata_document_is_public(srv: HttpServer, path: str) -> None:
    conn = srv.connection()
    conn.request("GET", path)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("access-control-allow-origin") == "*"
    doc = json.loads(resp.read())
    assert doc == {
        "resource": "https://mcp.example.com/mcp",
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["mcp:tools"],
    }
    conn.request("POST", path, body=b"{}")
    assert conn.getresponse().status == 405
