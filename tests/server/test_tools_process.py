"""Tools through the raw driver (in memory; the megabyte round trip over a real pipe): success,
tool errors, validation errors, structured output, pagination, big arguments and awkward ids."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

CORE = FIXTURES / "core_server.py"
Spawn = Callable[..., ServerProcess]


def text_of(resp: dict[str, Any]) -> str:
    return str(resp["result"]["content"][0]["text"])


def test_discover(spawn: Spawn) -> None:
    p = spawn(CORE)
    r = p.request("server/discover")["result"]
    assert r["resultType"] == "complete"
    assert r["supportedVersions"][0] == "2026-07-28"
    assert "tools" in r["capabilities"]
    assert r["instructions"] == "Test fixture for the mcpline core."
    assert r["ttlMs"] == 0 and r["cacheScope"] in ("public", "private")
    assert r["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "core-fixture",
        "version": "1.2.3",
    }


def test_every_result_is_stamped(spawn: Spawn) -> None:
    p = spawn(CORE)
    for resp in (
        p.request("tools/list"),
        p.call("echo", {"text": "x"}),
        p.call("fail", {"message": "m"}),
        p.call("echo", {}),
    ):
        res = resp["result"]
        assert res["resultType"] == "complete"
        assert res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "core-fixture"


def test_success_tool_error_and_exception(spawn: Spawn) -> None:
    p = spawn(CORE)
    ok = p.call("add", {"a": 2, "b": 40})["result"]
    assert ok["structuredContent"] == {"result": 42}
    assert json.loads(ok["content"][0]["text"]) == {"result": 42}
    assert not ok.get("isError")
    refused = p.call("refuse", {"message": "not today"})["result"]
    assert refused["isError"] is True and refused["content"][0]["text"] == "not today"
    boom = p.call("fail", {"message": "disk on fire"})["result"]
    assert boom["isError"] is True
    assert "RuntimeError" in boom["content"][0]["text"]
    assert "disk on fire" in boom["content"][0]["text"]
    assert "Traceback" not in boom["content"][0]["text"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expect"),
    [
        ("add", {}, '"a" is a required property'),
        ("add", {"a": "two"}, "a"),
        ("add", {"a": 1, "c": 3}, "Additional properties"),
        ("add", {"a": 1.5}, "a"),
        ("raw_schema", {"n": 11}, "maximum"),
        ("raw_schema", {"n": -1}, "minimum"),
        ("point", {"x": 1, "y": 2, "color": "green"}, "color"),
        ("echo", {"text": None}, "text"),
    ],
)
def test_validation_errors_are_tool_errors(
    spawn: Spawn, tool: str, arguments: dict[str, Any], expect: str
) -> None:
    p = spawn(CORE)
    res = p.call(tool, arguments)["result"]
    assert res["isError"] is True
    msg = res["content"][0]["text"]
    assert msg.startswith(f"Invalid arguments for tool {tool!r}") and expect in msg, msg


def test_structured_output_and_raw_schema(spawn: Spawn) -> None:
    p = spawn(CORE)
    tools = {t["name"]: t for t in p.request("tools/list")["result"]["tools"]}
    assert tools["point"]["outputSchema"]["type"] == "object"
    assert tools["raw_schema"]["inputSchema"]["properties"]["n"]["maximum"] == 10
    res = p.call("point", {"x": 1, "y": 2.5, "color": "blue"})["result"]
    assert res["structuredContent"] == {"x": 1.0, "y": 2.5, "color": "blue"}
    assert text_of(p.call("raw_schema", {"n": 3})) == "n=3"


def test_tools_list_is_deterministic_and_paginated(spawn: Spawn) -> None:
    p = spawn(CORE, env={"CORE_PAGE_SIZE": "3"})
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"cursor": cursor} if cursor else {}
        res = p.request("tools/list", params)["result"]
        assert len(res["tools"]) <= 3 and res["ttlMs"] == 0 and "cacheScope" in res
        names += [t["name"] for t in res["tools"]]
        pages += 1
        cursor = res.get("nextCursor")
        if cursor is None:
            break
        # A cursor is reusable (stable) and opaque.
        again = p.request("tools/list", {"cursor": cursor})["result"]
        assert [t["name"] for t in again["tools"]] == [
            t["name"] for t in p.request("tools/list", {"cursor": cursor})["result"]["tools"]
        ]
    assert pages > 3 and len(names) == len(set(names))
    p2 = spawn(CORE, env={"CORE_PAGE_SIZE": "1000"})
    assert [t["name"] for t in p2.request("tools/list")["result"]["tools"]] == names
    # A cursor that was tampered with, or belongs to another list, is refused.
    first = p.request("tools/list")["result"]["nextCursor"]
    forged = base64.urlsafe_b64encode(b"tools:999").decode().rstrip("=")
    for bad in (first + "x", forged, "", "prompts"):
        err = p.request("tools/list", {"cursor": bad})
        assert err["error"]["code"] == -32602, bad


@pytest.mark.driver("process")  # megabytes through a real pipe
def test_five_megabyte_argument_round_trip(spawn: Spawn) -> None:
    p = spawn(CORE)
    big = "mcpline \u00e9\u4e2d\U0001f600 " * 300_000
    assert len(big.encode()) > 5 * 1024 * 1024
    resp = p.call("echo", {"text": big}, timeout=60)
    assert text_of(resp) == big


@pytest.mark.parametrize(
    "rid",
    [
        '\u2028\u2029\ufeff\U0001f600\u0000\n\r\t"\\/ ключ 键 \U0010ffff',
        "x" * 200,
        "\U0010ffff" * 200,
        0,
        -1,
        2**53,
        -(2**53),
        "",
    ],
)
def test_awkward_ids_round_trip(spawn: Spawn, rid: Any) -> None:
    p = spawn(CORE)
    resp = p.call("echo", {"text": "ok"}, id=rid)
    assert resp["id"] == rid and type(resp["id"]) is type(rid) and text_of(resp) == "ok"
    err = p.request("no/such", id=rid)
    assert err["id"] == rid and err["error"]["code"] == -32601
    # Every written line is one line: the raw bytes contain no stray newline or U+2028.
    for raw in p.raw_out:
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1
        assert b"\xe2\x80\xa8" not in raw and b"\xe2\x80\xa9" not in raw


def test_string_and_integer_ids_are_distinct(spawn: Spawn) -> None:
    p = spawn(CORE)
    p.send(p.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 300}}, id=1))
    p.send(p.request_msg("tools/call", {"name": "echo", "arguments": {"text": "s"}}, id="1"))
    a = p.read()
    b = p.read()
    assert (a["id"], type(a["id"])) == ("1", str) and text_of(a) == "s"
    assert (b["id"], type(b["id"])) == (1, int) and text_of(b) == "slept 300"
