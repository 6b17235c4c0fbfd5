"""`mcpline check` against the official SDK's and FastMCP's stdio servers (the bench
servers, written with each library's public API): it must run to completion and report
what it sees. The failures asserted here are the ones docs/check.md records and explains."""

from __future__ import annotations

import sys

import pytest

from .util import BENCH_SERVERS, failed, run_check, statuses

# Failures both peers show (see docs/check.md for the rule each one breaks and why).
COMMON_FAILS = {
    "errors.parse-error",  # no -32700 reply to a line that is not JSON
    "errors.non-object",  # no -32600 reply to a JSON value that is not an object
    "errors.id-null",
    "errors.jsonrpc-version",
    "errors.removed-methods",  # initialize with modern _meta answered -32022, not -32601
}


@pytest.mark.timeout(600)  # every check of `mcpline check` against a slow peer
@pytest.mark.parametrize("name", ["mcp_server.py", "fastmcp_server.py"])
def test_peer_runs_to_completion_and_reports_honestly(name: str) -> None:
    server = BENCH_SERVERS / name
    assert server.is_file(), f"{server} is missing"
    code, report = run_check(
        "--timeout", "3", "--exit-timeout", "3", server=[sys.executable, str(server)]
    )
    st = statuses(report)
    groups = {c["group"] for c in report["checks"]}
    assert groups == {
        "framing",
        "errors",
        "discover",
        "notifications",
        "concurrency",
        "cancellation",
        "lifecycle",
        "legacy",
    }
    assert code == 1 and report["ok"] is False
    assert set(failed(report)) >= COMMON_FAILS, failed(report)
    # What they do right is reported as such.
    for cid in (
        "discover.implemented",
        "framing.stdout-pure",
        "notifications.never-answered",
        "cancellation.no-reply-after-cancel",
        "lifecycle.stdin-eof",
    ):
        assert st[cid] == "PASS", (cid, report["checks"])
    assert report["facts"]["era"] == "dual-era"
