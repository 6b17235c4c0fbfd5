"""The error codes (spec: basic/index#error-codes), row by row, through the raw driver (in
memory; megabyte lines and stderr on a real process over pipes).

Every reply is schema-checked by the `spawn` fixture (typed -32021/-32022 errors included).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess, meta

CORE = FIXTURES / "core_server.py"
Spawn = Callable[..., ServerProcess]
pytestmark = pytest.mark.driver("memory")


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def exchange(p: ServerProcess, raw: bytes) -> dict[str, Any]:
    """Send one raw line and return the next message the server writes."""
    p.send_raw(raw)
    return p.read()


def assert_error(msg: dict[str, Any], code: int, id: Any = "<absent>") -> dict[str, Any]:
    assert "error" in msg and "result" not in msg, msg
    assert msg["error"]["code"] == code, msg
    assert isinstance(msg["error"]["message"], str) and msg["error"]["message"]
    if id == "<absent>":
        assert "id" not in msg, msg
    else:
        assert msg["id"] == id and type(msg["id"]) is type(id), msg
    error: dict[str, Any] = msg["error"]
    return error


# --- -32700 ---------------------------------------------------------------------------------

PARSE_ERRORS = [
    ("not json", b"{this is not json\n", "<absent>"),
    ("bare NaN", b"NaN\n", "<absent>"),
    ("Infinity inside", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[Infinity]}\n', 1),
    ("NaN inside", b'{"jsonrpc":"2.0","id":"n","method":"x","params":{"a":NaN}}\n', "n"),
    ("-Infinity", b'{"jsonrpc":"2.0","id":2,"method":"x","params":{"a":-Infinity}}\n', 2),
    ("invalid UTF-8", b'{"jsonrpc":"2.0","id":3,"method":"x\xff\xfe"}\n', 3),
    ("lone surrogate bytes", b'{"jsonrpc":"2.0","id":4,"method":"\xed\xa0\x80"}\n', 4),
    ("truncated", b'{"jsonrpc":"2.0","id":5,"method":"x","params":{\n', 5),
    ("trailing garbage", b'{"jsonrpc":"2.0","id":6,"method":"x"} extra\n', 6),
]


def test_parse_errors(spawn: Spawn) -> None:
    p = spawn(CORE)
    for name, raw, rid in PARSE_ERRORS:
        msg = exchange(p, raw)
        try:
            assert_error(msg, -32700, rid)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    # The stream goes on.
    assert "result" in p.request("server/discover")


def test_too_deep_request_gets_error_with_its_id(spawn: Spawn) -> None:
    p = spawn(CORE)
    deep = b"[" * 100_000 + b"]" * 100_000
    raw = b'{"jsonrpc":"2.0","id":"deep-1","method":"tools/call","params":' + deep + b"}\n"
    assert_error(exchange(p, raw), -32700, "deep-1")
    raw = b'{"jsonrpc":"2.0","method":"tools/call","params":' + deep + b',"id":77}\n'
    assert_error(exchange(p, raw), -32700, 77)
    assert "result" in p.request("server/discover")


@pytest.mark.driver("process")  # megabyte lines through a real pipe
def test_oversized_line_discarded_answered_and_stream_continues(spawn: Spawn) -> None:
    p = spawn(CORE, env={"CORE_MAX_LINE": str(1024 * 1024)})
    big = "x" * (3 * 1024 * 1024)
    first = {
        "jsonrpc": "2.0",
        "id": "big-1",
        "method": "tools/call",
        "params": {"_meta": meta(), "name": "echo", "arguments": {"text": big}},
    }
    err = assert_error(exchange(p, line(first)), -32700, "big-1")
    assert "limit" in err["message"]
    # Written id-last (as the TypeScript SDK does): recovered from the kept tail.
    last = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"_meta": meta(), "name": "echo", "arguments": {"text": big}},
        "id": 99,
    }
    assert_error(exchange(p, line(last)), -32700, 99)
    # No id anywhere: the error has no id member.
    assert_error(exchange(p, b'{"junk":"' + b"y" * (2 * 1024 * 1024) + b'"}\n'), -32700)
    # A line just under the limit is still served.
    ok = p.call("echo", {"text": "z" * (1024 * 1024 - 4096)})
    assert ok["result"]["content"][0]["text"] == "z" * (1024 * 1024 - 4096)


# --- -32600 ---------------------------------------------------------------------------------

INVALID_REQUESTS = [
    ("batch", line([{"jsonrpc": "2.0", "id": 1, "method": "server/discover"}]), "<absent>"),
    ("empty batch", b"[]\n", "<absent>"),
    ("string", b'"hello"\n', "<absent>"),
    ("number", b"42\n", "<absent>"),
    ("null", b"null\n", "<absent>"),
    ("true", b"true\n", "<absent>"),
    ("wrong jsonrpc", line({"jsonrpc": "1.0", "id": 10, "method": "server/discover"}), 10),
    ("missing jsonrpc", line({"id": "s", "method": "server/discover"}), "s"),
    ("numeric jsonrpc", line({"jsonrpc": 2.0, "id": 11, "method": "server/discover"}), 11),
    ("method not a string", line({"jsonrpc": "2.0", "id": 12, "method": 5}), 12),
    ("method null", line({"jsonrpc": "2.0", "id": 13, "method": None}), 13),
    ("id null", line({"jsonrpc": "2.0", "id": None, "method": "server/discover"}), "<absent>"),
    ("id true", line({"jsonrpc": "2.0", "id": True, "method": "server/discover"}), "<absent>"),
    ("id float", line({"jsonrpc": "2.0", "id": 1.5, "method": "server/discover"}), "<absent>"),
    ("id 1.0", b'{"jsonrpc":"2.0","id":1.0,"method":"server/discover"}\n', "<absent>"),
    ("id object", line({"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}), "<absent>"),
    ("id array", line({"jsonrpc": "2.0", "id": [1], "method": "x"}), "<absent>"),
    ("no method, no result", line({"jsonrpc": "2.0", "id": 14}), 14),
    ("empty object", b"{}\n", "<absent>"),
]


def test_invalid_requests(spawn: Spawn) -> None:
    p = spawn(CORE)
    for name, raw, rid in INVALID_REQUESTS:
        try:
            assert_error(exchange(p, raw), -32600, rid)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    assert "result" in p.request("server/discover")


def test_duplicate_in_flight_id_rejected_first_untouched(spawn: Spawn) -> None:
    p = spawn(CORE)
    p.send(p.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 400}}, id="dup"))
    p.send(p.request_msg("tools/call", {"name": "echo", "arguments": {"text": "2nd"}}, id="dup"))
    # Without an id, so that the only response carrying "dup" is the first request's.
    err = assert_error(p.read(), -32600)
    assert 'id "dup"' in err["message"], err
    first = p.read()
    assert first["id"] == "dup" and first["result"]["content"][0]["text"] == "slept 400"
    # Once answered, the id may be used again.
    again = p.call("echo", {"text": "again"}, id="dup")
    assert again["result"]["content"][0]["text"] == "again"


# --- -32601 ---------------------------------------------------------------------------------


def test_unknown_method(spawn: Spawn) -> None:
    p = spawn(CORE)
    err = assert_error(p.request("unknown/method", id=601), -32601, 601)
    assert "unknown/method" in err["message"]
    assert_error(p.request("resources/list", id="r"), -32601, "r")  # capability not offered


@pytest.mark.parametrize(
    "method",
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"],
)
def test_handshake_methods_with_modern_meta_are_unknown(spawn: Spawn, method: str) -> None:
    p = spawn(CORE)
    params: dict[str, Any] = {"_meta": meta()}
    if method == "initialize":
        params.update(
            protocolVersion="2025-11-25", capabilities={}, clientInfo={"name": "t", "version": "1"}
        )
    if method == "logging/setLevel":
        params["level"] = "info"
    if method.startswith("resources/"):
        params["uri"] = "file:///x"
    err = assert_error(p.request(method, params, id=500), -32601, 500)
    assert "2026-07-28" in err["message"]


# --- -32602 ---------------------------------------------------------------------------------


def _req(id: Any, params: Any, method: str = "server/discover") -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not ...:
        msg["params"] = params
    return line(msg)


def _meta_without(key: str, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    m = meta()
    m.pop(key, None)
    m.update(changes or {})
    return m


PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"

INVALID_PARAMS = [
    ("params missing", _req(101, ...)),
    ("params empty", _req(102, {})),
    ("params array", _req(103, [1, 2])),
    ("params string", _req(104, "x")),
    ("params null", _req(105, None)),
    ("_meta not an object", _req(106, {"_meta": [1]})),
    ("_meta null", _req(107, {"_meta": None})),
    ("protocolVersion missing", _req(108, {"_meta": _meta_without(PV)})),
    ("protocolVersion not a string", _req(109, {"_meta": _meta_without(PV, {PV: 20260728})})),
    ("clientCapabilities missing", _req(110, {"_meta": _meta_without(CC)})),
    ("clientCapabilities not an object", _req(111, {"_meta": _meta_without(CC, {CC: []})})),
    ("clientCapabilities null", _req(112, {"_meta": _meta_without(CC, {CC: None})})),
    (
        "bad logLevel",
        _req(113, {"_meta": meta(None, **{"io.modelcontextprotocol/logLevel": "loud"})}),
    ),
    (
        "logLevel a list",
        _req(123, {"_meta": meta(None, **{"io.modelcontextprotocol/logLevel": []})}),
    ),
    (
        "logLevel an object",
        _req(124, {"_meta": meta(None, **{"io.modelcontextprotocol/logLevel": {}})}),
    ),
    ("bad progressToken", _req(114, {"_meta": meta(progressToken=1.5)})),
    ("unknown tool", _req(115, {"_meta": meta(), "name": "nope"}, "tools/call")),
    ("tool name missing", _req(116, {"_meta": meta()}, "tools/call")),
    ("tool name not a string", _req(117, {"_meta": meta(), "name": 3}, "tools/call")),
    (
        "arguments a list",
        _req(118, {"_meta": meta(), "name": "echo", "arguments": ["x"]}, "tools/call"),
    ),
    (
        "arguments a string",
        _req(119, {"_meta": meta(), "name": "echo", "arguments": "x"}, "tools/call"),
    ),
    (
        "arguments null",
        _req(120, {"_meta": meta(), "name": "echo", "arguments": None}, "tools/call"),
    ),
    ("cursor garbage", _req(121, {"_meta": meta(), "cursor": "garbage!"}, "tools/list")),
    ("cursor not a string", _req(122, {"_meta": meta(), "cursor": 5}, "tools/list")),
]


def test_invalid_params(spawn: Spawn) -> None:
    p = spawn(CORE)
    for name, raw in INVALID_PARAMS:
        rid = json.loads(raw)["id"]
        try:
            err = assert_error(exchange(p, raw), -32602, rid)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        if name.startswith(("params", "_meta", "protocolVersion")):
            # A client that sent no modern _meta learns which versions we speak.
            assert "2026-07-28" in err["message"] or "2026-07-28" in str(err.get("data")), name


def test_client_info_is_optional(spawn: Spawn) -> None:
    p = spawn(CORE)
    m = meta()
    del m[CI]
    resp = exchange(p, _req(105, {"_meta": m}))
    assert resp["id"] == 105 and resp["result"]["supportedVersions"] == ["2026-07-28"]
    m[CI] = "not an object"  # malformed optional identity is ignored, not fatal
    resp = exchange(p, _req(106, {"_meta": m}))
    assert resp["id"] == 106 and "result" in resp


# --- -32022, -32021, -32603 --------------------------------------------------------------


@pytest.mark.parametrize("version", ["v999.0.0", "2025-11-25", ""])
def test_unsupported_version(spawn: Spawn, version: str) -> None:
    p = spawn(CORE)
    raw = _req(301, {"_meta": _meta_without(PV, {PV: version})})
    err = assert_error(exchange(p, raw), -32022, 301)
    assert err["data"]["requested"] == version
    supported = err["data"]["supported"]
    assert supported and isinstance(supported, list)
    discover = p.request("server/discover")["result"]
    assert set(supported) <= set(discover["supportedVersions"])


def test_unsupported_version_checked_before_method(spawn: Spawn) -> None:
    p = spawn(CORE)
    raw = _req(302, {"_meta": _meta_without(PV, {PV: "1999-01-01"})}, "no/such/method")
    assert_error(exchange(p, raw), -32022, 302)


def test_missing_client_capability_via_helper(spawn: Spawn) -> None:
    p = spawn(CORE)
    err = assert_error(p.call("needs_sampling", {}, id=401), -32021, 401)
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}
    ok = p.call("needs_sampling", {}, caps={"sampling": {}})
    assert ok["result"]["content"][0]["text"] == "sampling declared"


@pytest.mark.driver("process")  # the traceback goes to the process's stderr
def test_internal_errors_hide_the_traceback(spawn: Spawn) -> None:
    p = spawn(CORE)
    err = assert_error(p.request("test/crash", id="c1"), -32603, "c1")
    assert "Traceback" not in err["message"] and "boom" not in json.dumps(err)
    err = assert_error(p.call("unencodable", {}, id="c2"), -32603, "c2")
    assert "Traceback" not in json.dumps(err)
    assert "result" in p.request("server/discover")  # still serving
    p.close_stdin()
    assert p.wait() == 0
    stderr = p.stderr
    assert "Traceback" in stderr and "boom: internal failure" in stderr
    assert b"Traceback" not in b"".join(p.raw_out)


def test_never_emits_reserved_or_legacy_codes(spawn: Spawn) -> None:
    """Everything a full error-table run wrote uses only codes the spec defines."""
    p = spawn(CORE)
    for _, raw, _ in PARSE_ERRORS + INVALID_REQUESTS:
        p.send_raw(raw)
    for _, raw in INVALID_PARAMS:
        p.send_raw(raw)
    p.send(p.request_msg("test/crash", id="end-crash"))
    p.send(p.request_msg("server/discover", id="end"))
    seen = []
    while True:
        msg = p.read()
        if msg.get("id") == "end":
            break
        seen.append(msg["error"]["code"])
    allowed = {-32700, -32600, -32601, -32602, -32603, -32021, -32022}
    assert set(seen) <= allowed and -32603 in seen
    assert len(seen) == len(PARSE_ERRORS) + len(INVALID_REQUESTS) + len(INVALID_PARAMS) + 1
