"""``mcpline check``: a conformance and robustness checker for any stdio MCP server."""

from __future__ import annotations

from .checks import EXTRA_GROUPS, GROUPS, Checker, CheckResult, find_slow_tool, summarize

__all__ = ["EXTRA_GROUPS", "GROUPS", "CheckResult", "Checker", "find_slow_tool", "summarize"]
