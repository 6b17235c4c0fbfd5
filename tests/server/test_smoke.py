from __future__ import annotations

from ..proc import ServerProcess


def test_discover_list_call(quickstart: ServerProcess) -> None:
    d = quickstart.request("server/discover")
    assert d["result"]["supportedVersions"] == ["2026-07-28"]
    assert "tools" in d["result"]["capabilities"]
    tools = quickstart.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["add", "divide"]
    r = quickstart.call("add", {"a": 2, "b": 3})["result"]
    assert r["structuredContent"] == {"result": 5.0}
    r = quickstart.call("divide", {"a": 1, "b": 0})["result"]
    assert r["isError"] is True and "zero" in r["content"][0]["text"]
