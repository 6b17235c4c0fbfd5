"""`mcpline check` against mcpline's own examples (must pass) and against deliberately
broken servers (must catch them). Every server is a real process over real pipes."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from .util import EXAMPLES, MCPLINE, REPO, failed, run_check, statuses

GROUPS = (
    "framing",
    "errors",
    "discover",
    "notifications",
    "concurrency",
    "cancellation",
    "lifecycle",
    "legacy",
)


def test_the_run_order_and_the_report_order_name_the_same_groups() -> None:
    from mcpline.check.registry import ALL_GROUPS, REGISTRY

    assert len(set(ALL_GROUPS)) == len(ALL_GROUPS)
    assert sorted(g.name for g in REGISTRY) == sorted(ALL_GROUPS)


def test_quickstart_passes_every_check() -> None:
    code, report = run_check(
        "--exit-timeout", "3", server=[sys.executable, str(EXAMPLES / "quickstart.py")]
    )
    assert failed(report) == {}
    assert code == 0 and report["ok"] is True
    assert {c["group"] for c in report["checks"]} == set(GROUPS)
    st = statuses(report)
    assert st["legacy.era"] == "PASS" and report["facts"]["era"] == "dual-era"
    # No sleep-like tool in the calculator: the checks that need one say so.
    assert st["concurrency.slow-does-not-block"] == "SKIP"


def test_everything_passes_with_no_skips_for_tool_driven_checks(
    everything_check: tuple[int, dict[str, Any]],
) -> None:
    code, report = everything_check
    assert failed(report) == {}
    assert code == 0
    st = statuses(report)
    assert report["facts"]["slow_tool"] == "sleep"
    for cid in (
        "concurrency.slow-does-not-block",
        "concurrency.duplicate-id",
        "cancellation.no-reply-after-cancel",
        "lifecycle.stdin-eof-busy",
        "errors.missing-capability",
        "discover.resource-not-found",
        "discover.resource-read",
        "errors.unknown-prompt",
    ):
        assert st[cid] == "PASS", (cid, report["checks"])
    assert [c for c in report["checks"] if c["status"] in ("WARN", "SKIP")] == []


def test_human_report_has_rules_and_a_summary_line() -> None:
    cmd = [*MCPLINE, "check", "--only", "errors,notifications", "--verbose", "--"]
    proc = subprocess.run(
        [*cmd, sys.executable, str(EXAMPLES / "quickstart.py")],
        capture_output=True,
        timeout=60,
        cwd=REPO,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "[errors]" in out and "PASS  errors.unsupported-version" in out
    assert "rule: S·MUST answer -32022" in out
    assert out.rstrip().splitlines()[-1].startswith("mcpline check passed: ")


def test_usage_errors_exit_2() -> None:
    base = [*MCPLINE, "check"]
    bad_group = subprocess.run(
        [*base, "--only", "nope", "--", "true"], capture_output=True, timeout=30, text=True
    )
    assert bad_group.returncode == 2 and "unknown group" in bad_group.stderr
    no_cmd = subprocess.run(base, capture_output=True, timeout=30, text=True)
    assert no_cmd.returncode == 2 and "server command" in no_cmd.stderr
