"""`mcpline check` must be able to fail: deliberately broken servers are caught."""

from __future__ import annotations

import sys

from .util import HERE, failed, run_check, statuses


def test_broken_server_is_caught_on_framing_errors_and_notifications() -> None:
    code, report = run_check(
        "--only",
        "framing,errors,notifications",
        "--timeout",
        "2",
        "--exit-timeout",
        "1",
        server=[sys.executable, str(HERE / "bad_server.py")],
    )
    assert code == 1 and report["ok"] is False
    fails = failed(report)
    assert "bad-server starting up" in fails["framing.stdout-pure"]
    assert "resultType" in fails["framing.schema-valid"]  # tools/list result without it
    assert fails["errors.parse-error"].endswith("no reply")
    assert "-32603 instead of -32601" in fails["errors.unknown-method"]
    assert "a result instead of error -32602" in fails["errors.meta-missing"]
    assert "a result instead of error -32022" not in fails.get("errors.unsupported-version", "")
    assert "errors.unsupported-version" in fails
    assert '"id":null' in fails["notifications.never-answered"]


def test_broken_server_is_caught_on_concurrency_cancellation_and_lifecycle() -> None:
    code, report = run_check(
        "--only",
        "concurrency,cancellation,lifecycle",
        "--timeout",
        "3",
        "--exit-timeout",
        "1",
        server=[sys.executable, str(HERE / "bad_server.py")],
    )
    assert code == 1
    st = statuses(report)
    assert st["cancellation.no-reply-after-cancel"] == "FAIL"
    assert st["concurrency.slow-does-not-block"] == "WARN"  # its reader blocks in sleep
    assert st["lifecycle.stdin-eof"] == "WARN" and st["lifecycle.sigterm"] == "WARN"


def test_legacy_only_server_is_reported_as_such() -> None:
    code, report = run_check(
        "--only",
        "discover,legacy",
        "--timeout",
        "2",
        "--exit-timeout",
        "1",
        server=[sys.executable, str(HERE / "legacy_server.py")],
    )
    assert code == 1
    st = statuses(report)
    assert report["facts"]["era"] == "legacy-only"
    assert st["discover.implemented"] == "FAIL"
    assert st["legacy.initialize"] == "PASS" and st["legacy.ping-empty"] == "PASS"
    probe = next(c for c in report["checks"] if c["id"] == "legacy.modern-probe")
    assert (
        probe["status"] == "PASS"
        and "error -32000" in probe["seen"]
        and "falls back to initialize" in probe["seen"]
    )
