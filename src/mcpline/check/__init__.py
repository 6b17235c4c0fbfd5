"""``mcpline check``: a conformance and robustness checker for any stdio MCP server."""

from __future__ import annotations

from .checker import Checker
from .model import CheckResult, Status, find_slow_tool, summarize
from .registry import EXTRA_GROUPS, GROUPS

__all__ = [
    "EXTRA_GROUPS",
    "GROUPS",
    "CheckResult",
    "Checker",
    "Status",
    "find_slow_tool",
    "summarize",
]
