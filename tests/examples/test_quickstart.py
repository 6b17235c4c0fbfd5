"""Smoke tests of examples/quickstart.py, the calculator the README shows."""

from __future__ import annotations

import pytest

from ..proc import ServerProcess

pytestmark = pytest.mark.driver("memory")


def test_quickstart_lists_and_calls(quickstart: ServerProcess) -> None:
    d = quickstart.request("server/discover")["result"]
    assert d["supportedVersions"][0] == "2026-07-28" and "tools" in d["capabilities"]
    tools = {t["name"]: t for t in quickstart.request("tools/list")["result"]["tools"]}
    assert sorted(tools) == ["add", "divide"]
    for t in tools.values():
        assert t["description"] and t["inputSchema"]["type"] == "object"
        assert t["inputSchema"]["required"] == ["a", "b"]
        assert t["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    r = quickstart.call("add", {"a": 2, "b": 3.5})["result"]
    assert r["structuredContent"] == {"result": 5.5} and not r.get("isError")
    r = quickstart.call("divide", {"a": 1, "b": 4})["result"]
    assert r["structuredContent"] == {"result": 0.25}


def test_quickstart_divide_by_zero_is_a_tool_error(quickstart: ServerProcess) -> None:
    r = quickstart.call("divide", {"a": 1, "b": 0})["result"]
    assert r["isError"] is True
    assert r["content"][0]["text"] == "Cannot divide by zero: b must be non-zero"
    assert "structuredContent" not in r


def test_quickstart_bad_arguments(quickstart: ServerProcess) -> None:
    r = quickstart.call("add", {"a": "one", "b": 2})["result"]
    assert r["isError"] is True and "Invalid arguments" in r["content"][0]["text"]
    assert quickstart.call("subtract", {"a": 1, "b": 2})["error"]["code"] == -32602
