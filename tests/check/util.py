"""Helpers for the checker tests: run ``mcpline check`` as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
EXAMPLES = REPO / "examples"
BENCH_SERVERS = REPO / "bench" / "servers"
MCPLINE = [sys.executable, "-c", "import sys; from mcpline.cli import main; sys.exit(main())"]


def run_check(*args: str, server: list[str], timeout: float = 110) -> tuple[int, dict[str, Any]]:
    """``mcpline check --json ARGS -- SERVER``: (exit status, parsed report)."""
    cmd = [*MCPLINE, "check", "--json", *args, "--", *server]
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=REPO)
    assert proc.stdout, proc.stderr.decode(errors="replace")
    return proc.returncode, json.loads(proc.stdout)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


def failed(report: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["seen"] for c in report["checks"] if c["status"] == "FAIL"}
