"""``/healthz``, ``/readyz`` and ``/metrics`` on a real ``mcpline run --http`` (and behind a
bearer token): what they answer, the Prometheus text, and its counters moving with requests
and limit hits."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

import pytest

from mcpline.observability.metrics import Family, render

from ..proc import FIXTURES
from .http_util import MCPLINE, HttpServer, Reply, call, send

SERVER = str(FIXTURES / "middleware_server.py")


@pytest.fixture(scope="module")
def metered() -> Iterator[HttpServer]:
    server = HttpServer(
        [MCPLINE, "run", SERVER, "--http", "127.0.0.1:0", "--metrics"], {"MW": "rate"} | RATE
    )
    try:
        yield server
    finally:
        assert server.stop() == 0
        assert server.stdout == b""


RATE = {"MW_RATE": "0.01", "MW_BURST": "4"}


def get(server: HttpServer, path: str, headers: dict[str, str] | None = None) -> Reply:
    conn = server.connection()
    try:
        return send(conn, None, headers or {}, method="GET", path=path)
    finally:
        conn.close()


def value(text: str, sample: str) -> float:
    """The value of ``sample`` (name and labels as written) in a metrics page."""
    m = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.M)
    assert m is not None, f"{sample} not in:\n{text}"
    return float(m[1])


def test_health_and_readiness(metered: HttpServer) -> None:
    r = get(metered, "/healthz")
    assert (r.status, r.body) == (200, b"ok\n")
    r = get(metered, "/readyz")
    assert (r.status, r.body) == (200, b"ready\n")
    conn = metered.connection()
    try:
        assert send(conn, b"", {}, method="POST", path="/healthz").status == 405
    finally:
        conn.close()


def test_metrics_count_requests_outcomes_latency_and_limits(metered: HttpServer) -> None:
    assert (
        call(metered, 1, "tools/call", {"name": "echo", "arguments": {"text": "a"}}).status == 200
    )
    call(metered, 2, "tools/call", {"name": "boom", "arguments": {"secret": "s"}})
    call(metered, 3, "tools/call", {"name": "forbidden"})
    call(metered, 4, "tools/list")
    refused = call(metered, 5, "tools/call", {"name": "echo", "arguments": {"text": "b"}})
    assert refused.json["error"]["code"] == -32011  # over the rate: metrics sit outside it
    big = {"X-Filler": "x" * 20_000}
    assert get(metered, "/mcp", big).status == 431
    r = get(metered, "/metrics")
    assert r.status == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    page = r.body.decode()
    assert value(page, 'mcpline_requests_total{method="tools/call",outcome="ok"}') == 1
    assert value(page, 'mcpline_requests_total{method="tools/call",outcome="tool_error"}') == 1
    assert value(page, 'mcpline_requests_total{method="tools/call",outcome="error"}') == 2
    assert value(page, 'mcpline_request_errors_total{method="tools/call",code="-32011"}') == 1
    assert value(page, 'mcpline_request_errors_total{method="tools/call",code="-32001"}') == 1
    assert value(page, 'mcpline_requests_total{method="tools/list",outcome="ok"}') == 1
    count = value(page, 'mcpline_request_duration_seconds_count{method="tools/call"}')
    assert count == 4
    assert (
        value(page, 'mcpline_request_duration_seconds_bucket{method="tools/call",le="+Inf"}') == 4
    )
    assert value(page, "mcpline_requests_in_flight") == 0
    assert value(page, 'mcpline_limit{limit="max_requests_per_client"}') == 128
    assert value(page, 'mcpline_limit_hits_total{limit="max_header_bytes"}') == 1
    assert value(page, "mcpline_legacy_sessions") == 0
    assert value(page, "mcpline_listens_open") == 0
    assert "# TYPE mcpline_request_duration_seconds histogram" in page


def test_a_request_refused_before_its_handler_counts_as_other() -> None:
    server = HttpServer([MCPLINE, "run", SERVER, "--http", "127.0.0.1:0", "--metrics"])
    try:
        assert call(server, 9, "no/such/method").json["error"]["code"] == -32601
        page = get(server, "/metrics").body.decode()
    finally:
        assert server.stop() == 0
    assert value(page, 'mcpline_request_errors_total{method="other",code="-32601"}') == 1
    assert "no/such/method" not in page


def test_metrics_pass_the_host_check(metered: HttpServer) -> None:
    assert get(metered, "/metrics", {"Host": "evil.example"}).status == 421


def test_metrics_are_off_by_default() -> None:
    server = HttpServer([MCPLINE, "run", SERVER, "--http", "127.0.0.1:0"])
    try:
        assert get(server, "/metrics").status == 404
        assert get(server, "/healthz").status == 200
    finally:
        assert server.stop() == 0


def test_metrics_need_the_token_when_the_endpoint_does() -> None:
    server = HttpServer([sys.executable, SERVER, "--http-auth"])
    try:
        refused = get(server, "/metrics")
        assert refused.status == 401
        assert "bearer" in refused.headers["www-authenticate"].lower()
        ok = get(server, "/metrics", {"Authorization": "Bearer metrics-token"})
        assert ok.status == 200 and b"mcpline_requests_total" in ok.body
        assert get(server, "/healthz").status == 200  # probes carry no token
    finally:
        assert server.stop() == 0


def test_metrics_only_for_http() -> None:
    import subprocess

    done = subprocess.run(
        [MCPLINE, "run", SERVER, "--metrics"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--metrics" in done.stderr and "only for http" in done.stderr


def test_render_escapes_labels() -> None:
    family = Family("m", "gauge", "help", [("m", {"k": 'a"b\\c\nd'}, 1.5)])
    assert render([family]) == b'# HELP m help\n# TYPE m gauge\nm{k="a\\"b\\\\c\\nd"} 1.5\n'
