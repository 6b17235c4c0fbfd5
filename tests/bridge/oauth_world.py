"""An MCP server that wants OAuth 2.1 and its authorization server, in one fake HTTP server:
protected-resource and authorization-server metadata, registration, an authorization endpoint
that consents at once (302 back to the client's loopback redirect URI), the token endpoint,
and ``/mcp`` answering 2026-07-28 requests that carry an issued token (401 otherwise)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode, urlsplit

from ..client.http_fakes import (
    Request,
    answer_empty,
    authorization_server_metadata,
    respond,
    respond_json,
)


@dataclass
class ConsentingWorld:
    url: str = ""
    authorizations: list[dict[str, str]] = field(default_factory=list)
    issued: set[str] = field(default_factory=set)
    tokens: int = 0

    async def handler(self, req: Request, w: asyncio.StreamWriter) -> None:
        base = self.url
        path = req.path
        if path == "/.well-known/oauth-protected-resource/mcp":
            respond_json(w, {"resource": base + "/mcp", "authorization_servers": [base]})
        elif path == "/.well-known/oauth-authorization-server":
            respond_json(w, authorization_server_metadata(base, "none"))
        elif path == "/register":
            body = req.json()
            respond_json(
                w,
                {"client_id": "bridge-client", "token_endpoint_auth_method": "none", **body},
                status=201,
            )
        elif path == "/authorize":
            q = {k: v[0] for k, v in parse_qs(urlsplit(req.target).query).items()}
            self.authorizations.append(q)
            back = urlencode({"code": "the-code", "state": q["state"]})
            respond(w, 302, headers={"Location": f"{q['redirect_uri']}?{back}"})
        elif path == "/token":
            self.tokens += 1
            token = f"token-{self.tokens}"
            self.issued.add(token)
            respond_json(
                w,
                {
                    "access_token": token,
                    "token_type": "Bearer",
                    "expires_in": 3600,
                    "refresh_token": "refresh",
                },
            )
        elif path == "/mcp":
            token = req.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.issued:
                challenge = (
                    f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
                )
                respond(w, 401, headers={"WWW-Authenticate": challenge})
                return
            answer_empty(w, json.loads(req.body))
        else:
            respond(w, 404)
