"""``mcpline bridge --http --metrics``: a real bridge process in front of a stdio server
serves ``/metrics`` as ``mcpline run --http --metrics`` does (the same Prometheus families,
the same ``Host`` check and bearer token), beside ``/healthz`` and ``/readyz``; without the
flag there is no ``/metrics``; ``--stdio`` refuses it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..bridge.util import BRIDGE_SERVER, MCPLINE, bridge_http, connection, path_of, python_server
from ..transports.http_util import HttpServer, Reply, modern_headers, request_body, send

SERVER = python_server(BRIDGE_SERVER)
FAMILIES = (
    "mcpline_requests_total",
    "mcpline_request_duration_seconds",
    "mcpline_requests_in_flight",
    "mcpline_limit",
    "mcpline_limit_hits_total",
    "mcpline_legacy_sessions",
    "mcpline_listens_open",
)


def get(url: str, path: str, headers: dict[str, str] | None = None) -> Reply:
    conn = connection(url)
    try:
        return send(conn, None, headers or {}, method="GET", path=path)
    finally:
        conn.close()


def echo(url: str, headers: dict[str, str] | None = None) -> Reply:
    conn = connection(url)
    body = request_body(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    try:
        hdrs = {**modern_headers("tools/call", "echo"), **(headers or {})}
        return send(conn, body, hdrs, path=path_of(url))
    finally:
        conn.close()


def families(page: str) -> set[str]:
    return set(re.findall(r"^# TYPE (\S+) ", page, re.M))


def run_page() -> str:
    """The metrics page of ``mcpline run --http --metrics`` serving the same server, after
    the same call."""
    server = HttpServer([*MCPLINE, "run", str(BRIDGE_SERVER), "--http", "127.0.0.1:0", "--metrics"])
    try:
        assert echo(server.url).status == 200
        page: str = get(server.url, "/metrics").body.decode()
    finally:
        assert server.stop() == 0
    return page


def test_the_bridge_serves_metrics_and_probes() -> None:
    with bridge_http(*SERVER, options=["--metrics"]) as (url, _):
        assert echo(url).status == 200
        assert get(url, "/healthz").status == 200
        assert get(url, "/readyz").body == b"ready\n"
        r = get(url, "/metrics")
        assert r.status == 200
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        page = r.body.decode()
        assert set(FAMILIES) <= families(page)
        assert families(page) == families(run_page())
        assert re.search(
            r'^mcpline_requests_total\{method="tools/call",outcome="ok"\} 1', page, re.M
        )
        assert get(url, "/metrics", {"Host": "evil.example"}).status == 421


def test_bridge_metrics_need_the_bridges_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token-for-the-bridge\n")
    options = ["--metrics", "--bearer-token-file", str(token)]
    with bridge_http(*SERVER, options=options) as (url, _):
        refused = get(url, "/metrics")
        assert refused.status == 401
        assert "bearer" in refused.headers["www-authenticate"].lower()
        ok = get(url, "/metrics", {"Authorization": "Bearer s3cret-token-for-the-bridge"})
        assert ok.status == 200 and b"mcpline_requests_total" in ok.body
        assert get(url, "/healthz").status == 200  # probes carry no token


def test_no_metrics_without_the_flag() -> None:
    with bridge_http(*SERVER) as (url, _):
        assert get(url, "/metrics").status == 404
        assert get(url, "/healthz").status == 200


def test_metrics_are_for_the_http_bridge_only() -> None:
    argv = [*MCPLINE, "bridge", "--stdio", "--server", "http://127.0.0.1:9/mcp", "--metrics"]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2
    assert "--metrics" in done.stderr and "--http" in done.stderr
