"""The ``server-stateless`` scenario through the raw driver (in memory).

The transport-agnostic checks, with the suite's probe ids: ``_meta`` validation, discover and
identity, capability/handler consistency, ``-32022``/``-32021`` data, removed and unknown
methods, id echo, no server-to-client requests, no log without ``logLevel``, and the listen
checks (ack, tagging, filter, tools/prompts list-changed). HTTP status and header checks do
not apply to stdio.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, MODERN, ServerProcess

pytestmark = pytest.mark.driver("memory")

SUITE_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
SUB = "io.modelcontextprotocol/subscriptionId"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
SUITE_INFO = {"name": "conformance-test-client", "version": "1.0.0"}


@pytest.fixture
def ev(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


def send(p: ServerProcess, id: Any, method: str, params: Any) -> dict[str, Any]:
    p.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    return p.read_until(id)[0]


def suite_meta(**overrides: Any) -> dict[str, Any]:
    m: dict[str, Any] = {PV: MODERN, CI: SUITE_INFO, CC: SUITE_CAPS}
    m.update(overrides)
    return {k: v for k, v in m.items() if v is not None}


def error(resp: dict[str, Any], code: int, id: Any) -> dict[str, Any]:
    assert resp.get("id") == id and type(resp.get("id")) is type(id), resp  # ...-error-jsonrpc-id
    assert "error" in resp, resp
    error: dict[str, Any] = resp["error"]
    assert error["code"] == code, resp
    return error


# sep-2575-request-meta-invalid-missing-meta, ...-invalid-missing-protocol-version,
# ...-invalid-missing-client-capabilities
@pytest.mark.parametrize(
    ("id", "params"),
    [
        (101, {}),
        (102, {"_meta": suite_meta(**{PV: None})}),
        (104, {"_meta": suite_meta(**{CC: None})}),
    ],
)
def test_request_meta_invalid(ev: ServerProcess, id: int, params: dict[str, Any]) -> None:
    error(send(ev, id, "server/discover", params), -32602, id)


# sep-2575-request-meta-client-info-optional
def test_client_info_optional(ev: ServerProcess) -> None:
    r = send(ev, 105, "server/discover", {"_meta": suite_meta(**{CI: None})})
    assert r["result"]["supportedVersions"] == [MODERN]


# sep-2575-server-implements-discover, sep-2575-server-identifies-in-result-meta (gaps fixed)
def test_discover_and_identity(ev: ServerProcess) -> None:
    r = send(ev, 201, "server/discover", {"_meta": suite_meta()})["result"]
    assert r["resultType"] == "complete"
    assert r["supportedVersions"] == [MODERN]
    assert r["capabilities"] == {
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "completions": {},
        "logging": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }
    assert r["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "everything-stateless-server",
        "version": "1.0.0",
    }
    assert "serverInfo" not in r and "instructions" not in r
    assert type(r["ttlMs"]) is int and r["ttlMs"] >= 0 and r["cacheScope"] in ("public", "private")


# sep-2575-discover-capabilities-match-handlers, sep-2575-server-declares-prompts-in-discover
def test_capabilities_match_handlers(ev: ServerProcess) -> None:
    tools = send(ev, 202, "tools/list", {"_meta": suite_meta()})
    assert isinstance(tools["result"]["tools"], list)
    prompts = send(ev, 203, "prompts/list", {"_meta": suite_meta()})
    assert isinstance(prompts["result"]["prompts"], list)
    # every result carries serverInfo, not only discover (fixture deviation 6 fixed)
    for r in (tools, prompts):
        assert r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]


# sep-2575-server-unsupported-version-error
@pytest.mark.parametrize("version", ["v999.0.0", "2025-11-25"])
def test_unsupported_version(ev: ServerProcess, version: str) -> None:
    err = error(
        send(ev, 301, "server/discover", {"_meta": suite_meta(**{PV: version})}), -32022, 301
    )
    assert err["data"]["requested"] == version
    assert err["data"]["supported"] and set(err["data"]["supported"]) <= {MODERN}


# sep-2575-server-rejects-undeclared-capability
def test_rejects_undeclared_capability(ev: ServerProcess) -> None:
    params = {"name": "test_missing_capability", "arguments": {}, "_meta": suite_meta(**{CC: {}})}
    err = error(send(ev, 401, "tools/call", params), -32021, 401)
    assert err["data"] == {"requiredCapabilities": {"sampling": {}}}
    params["_meta"] = suite_meta()
    assert send(ev, 402, "tools/call", params)["result"]["content"][0]["text"] == "Success"


# sep-2575-http-server-method-not-found-404-<method> (code part) and ...-404 for unknown methods
@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ],
)
def test_removed_and_unknown_methods(ev: ServerProcess, method: str) -> None:
    params: dict[str, Any] = {"_meta": suite_meta()}
    if method == "initialize":
        params.update(protocolVersion=MODERN, capabilities={}, clientInfo=SUITE_INFO)
    if method == "logging/setLevel":
        params["level"] = "debug"
    if method.startswith("resources/"):
        params["uri"] = "test://watched-resource"
    rid = 601 if method == "unknown/method" else 500
    error(send(ev, rid, method, params), -32601, rid)
    # the process was not switched into the legacy era: modern requests keep working
    assert send(ev, 502, "tools/list", {"_meta": suite_meta()})["result"]["tools"]


# sep-2575-http-server-no-independent-requests-on-stream
def test_no_server_requests(ev: ServerProcess) -> None:
    params = {
        "name": "test_streaming_elicitation",
        "arguments": {},
        "_meta": {**suite_meta(**{CC: {"elicitation": {}}}), "progressToken": "pt"},
    }
    ev.send({"jsonrpc": "2.0", "id": 701, "method": "tools/call", "params": params})
    resp, seen = ev.read_until(701)
    assert resp["result"]["content"] == [{"type": "text", "text": "Streaming complete"}]
    assert all(m["method"].startswith("notifications/") and "id" not in m for m in seen)
    assert [m["params"]["progressToken"] for m in seen] == ["pt"]  # echoes the request's token


# sep-2575-server-no-log-without-loglevel (and the level is honoured: fixture deviation 4 fixed)
@pytest.mark.parametrize(
    ("level", "logged"), [(None, False), ("info", True), ("debug", True), ("error", False)]
)
def test_logging_tool(ev: ServerProcess, level: str | None, logged: bool) -> None:
    extra = {} if level is None else {"io.modelcontextprotocol/logLevel": level}
    msg = ev.request_msg(
        "tools/call", {"name": "test_logging_tool", "arguments": {}}, caps=SUITE_CAPS, **extra
    )
    ev.send(msg)
    resp, seen = ev.read_until(msg["id"])
    assert resp["result"]["content"][0]["text"] == "Logging evaluated"
    expected = (
        [
            {
                "level": "info",
                "logger": "conformance-test-server",
                "data": "Diagnostic trace logging activated",
            }
        ]
        if logged
        else []
    )
    assert [m["params"] for m in seen if m["method"] == "notifications/message"] == expected


# --- listen checks; the suite uses Date.now() ids for listens ----------------------------


def open_listen(p: ServerProcess, filt: dict[str, Any]) -> int:
    lid = int(time.time() * 1000)
    p.send(p.request_msg("subscriptions/listen", {"notifications": filt}, id=lid, caps=SUITE_CAPS))
    first = p.read()
    # sep-2575-server-sends-subscription-ack: the first frame is the ack
    assert first["method"] == "notifications/subscriptions/acknowledged"
    assert first["params"]["_meta"][SUB] == lid
    return lid


def trigger(p: ServerProcess, tool: str) -> list[dict[str, Any]]:
    msg = p.request_msg("tools/call", {"name": tool, "arguments": {}}, caps=SUITE_CAPS)
    p.send(msg)
    resp, seen = p.read_until(msg["id"])
    assert resp["result"]["content"][0]["text"] == "Mutation triggered"
    return seen


# sep-2575-server-sends-subscription-ack, -tags-subscription-id,
# -sends-tools-list-changed-on-subscription
def test_listen_ack_tags_and_tools_list_changed(ev: ServerProcess) -> None:
    lid = open_listen(ev, {"toolsListChanged": True})
    seen = trigger(ev, "test_trigger_tool_change")
    assert seen == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUB: lid}},
        }
    ]


# sep-2575-server-sends-prompts-list-changed-on-subscription
def test_listen_prompts_list_changed(ev: ServerProcess) -> None:
    lid = open_listen(ev, {"promptsListChanged": True})
    seen = trigger(ev, "test_trigger_prompt_change")
    assert [(m["method"], m["params"]["_meta"][SUB]) for m in seen] == [
        ("notifications/prompts/list_changed", lid)
    ]


# sep-2575-server-honors-notification-filter
def test_listen_honours_filter(ev: ServerProcess) -> None:
    open_listen(ev, {"promptsListChanged": True})
    assert trigger(ev, "test_trigger_tool_change") == []
