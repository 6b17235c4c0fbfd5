"""Processes for the resource-server tests: the authorization server and ``mcpline run
--http --auth`` in front of `scoped_server`, each on a free 127.0.0.1 port."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from ..transports.http_util import MCPLINE, HttpServer, free_port

HERE = Path(__file__).resolve().parent
AUTHZ = HERE / "authz_server.py"
SCOPED = HERE / "scoped_server.py"


class Authz:
    """The authorization server process (`authz_server`) and its test controls."""

    def __init__(self) -> None:
        self.proc = HttpServer([sys.executable, str(AUTHZ)])
        self.url = self.proc.url

    def control(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body or {}).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def mint(self, aud: str, **claims: Any) -> str:
        token: str = self.control("/mint", {"aud": aud, **claims})["token"]
        return token

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as r:
            stats: dict[str, int] = json.loads(r.read())
            return stats

    def stop(self) -> None:
        self.proc.stop()


def resource_server(spec: str, *, port: int | None = None, **env: str) -> HttpServer:
    """``mcpline run scoped_server.py --http 127.0.0.1:PORT --auth SPEC`` (INFO logs)."""
    port = port or free_port()
    argv = [MCPLINE, "run", str(SCOPED), "--http", f"127.0.0.1:{port}", "--auth", spec]
    return HttpServer(argv, {"MCPLINE_LOG_LEVEL": "INFO", **env})


def audience(server: HttpServer) -> str:
    return f"http://127.0.0.1:{server.port}/mcp"
