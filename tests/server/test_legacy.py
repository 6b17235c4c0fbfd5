"""The legacy (initialize) era through the raw driver (in memory; exit and TCP on processes),
validated against the 2025-11-25 schema."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpline.addresses import auth_line, find_token

from .. import wirecheck
from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

SERVER = FIXTURES / "mrtr_server.py"
Answer = Callable[[dict[str, Any]], dict[str, Any]]


def legacy_request(
    p: ServerProcess, method: str, params: dict[str, Any] | None = None, *, id: Any = None
) -> Any:
    """Send a request without modern ``_meta``; return its id."""
    rid = p.next_id() if id is None else id
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    p.send(msg)
    return rid


def exchange(
    p: ServerProcess, rid: Any, answer: Answer | None = None, timeout: float = 10.0
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Read until the response to ``rid``, answering server requests with ``answer``.

    Returns (response, notifications, server requests).
    """
    notes: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        msg = p.read(max(0.01, deadline - time.monotonic()))
        if "method" in msg and "id" in msg:
            asked.append(msg)
            assert answer is not None, f"unexpected server request {msg}"
            reply = answer(msg)
            p.send({"jsonrpc": "2.0", "id": msg["id"], **reply})
        elif "method" in msg:
            notes.append(msg)
        elif msg.get("id") == rid:
            return msg, notes, asked


def call(
    p: ServerProcess,
    method: str,
    params: dict[str, Any] | None = None,
    answer: Answer | None = None,
) -> dict[str, Any]:
    return exchange(p, legacy_request(p, method, params), answer)[0]


def initialize(
    p: ServerProcess, caps: dict[str, Any] | None = None, version: str = "2025-11-25"
) -> dict[str, Any]:
    p.legacy = True
    resp = call(
        p,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": caps or {},
            "clientInfo": {"name": "legacy-test", "version": "1"},
        },
    )
    p.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return resp


def accept_name(req: dict[str, Any]) -> dict[str, Any]:
    assert req["method"] == "elicitation/create"
    return {"result": {"action": "accept", "content": {"name": "Ada"}}}


def answer_all(req: dict[str, Any]) -> dict[str, Any]:
    method = req["method"]
    if method == "elicitation/create":
        return {"result": {"action": "accept", "content": {"name": "Ada"}}}
    if method == "sampling/createMessage":
        return {
            "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
        }
    return {"result": {"roots": [{"uri": "file:///r"}]}}


ALL = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}


@pytest.fixture
def srv(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(SERVER)


def test_full_legacy_session(srv: ServerProcess) -> None:
    init = initialize(srv, {"elicitation": {}})
    r = init["result"]
    assert r["protocolVersion"] == "2025-11-25"
    assert r["serverInfo"] == {"name": "mrtr-test-server", "version": "1.0.0"}
    assert r["capabilities"]["tools"] == {"listChanged": True}
    assert r["capabilities"]["logging"] == {}
    assert r["instructions"] == "MRTR and legacy tests"
    assert "resultType" not in r and "_meta" not in r
    tools = call(srv, "tools/list")["result"]
    assert {"greet", "multi", "all_three"} <= {t["name"] for t in tools["tools"]}
    assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(tools)
    resp, _, asked = exchange(
        srv, legacy_request(srv, "tools/call", {"name": "greet"}), accept_name
    )
    assert [a["method"] for a in asked] == ["elicitation/create"]
    assert asked[0]["params"]["message"] == "What is your name?"
    assert resp["result"] == {"content": [{"type": "text", "text": "Hello, Ada!"}]}


@pytest.mark.parametrize(
    ("requested", "negotiated"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
def test_version_negotiation(
    spawn: Callable[..., ServerProcess], requested: str, negotiated: str
) -> None:
    p = spawn(SERVER)
    assert initialize(p, {}, requested)["result"]["protocolVersion"] == negotiated


def test_bad_initialize_and_reinitialize(srv: ServerProcess) -> None:
    srv.legacy = True
    assert call(srv, "initialize", {"capabilities": {}})["error"]["code"] == -32602
    assert (
        call(srv, "initialize", {"protocolVersion": "2025-11-25", "capabilities": []})["error"][
            "code"
        ]
        == -32602
    )
    initialize(srv)
    again = call(
        srv,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"},
        },
    )
    assert again["error"]["code"] == -32600


def test_before_initialize_a_request_without_meta_is_32602(srv: ServerProcess) -> None:
    err = call(srv, "tools/list")["error"]
    assert err["code"] == -32602 and "2026-07-28" in err["message"]
    assert err["data"]["supported"] == ["2026-07-28"]
    assert call(srv, "ping")["error"]["code"] == -32602


def test_ping_set_level_and_logging(srv: ServerProcess) -> None:
    initialize(srv)
    assert call(srv, "ping")["result"] == {}
    assert call(srv, "ping", {})["result"] == {}
    _, notes, _ = exchange(srv, legacy_request(srv, "tools/call", {"name": "log_three"}))
    assert [n for n in notes if n["method"] == "notifications/message"] == []
    assert call(srv, "logging/setLevel", {"level": "info"})["result"] == {}
    _, notes, _ = exchange(srv, legacy_request(srv, "tools/call", {"name": "log_three"}))
    logs = [n["params"] for n in notes if n["method"] == "notifications/message"]
    assert [(m["level"], m["data"]) for m in logs] == [
        ("info", "one"),
        ("info", "two"),
        ("info", "three"),
    ]
    assert call(srv, "logging/setLevel", {"level": "debug"})["result"] == {}
    _, notes, _ = exchange(srv, legacy_request(srv, "tools/call", {"name": "log_three"}))
    assert len([n for n in notes if n["method"] == "notifications/message"]) == 4
    assert call(srv, "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    assert call(srv, "logging/setLevel", {"level": ["info"]})["error"]["code"] == -32602
    assert call(srv, "logging/setLevel", {"level": {"info": 1}})["error"]["code"] == -32602


def test_legacy_only_methods_and_modern_only_methods(srv: ServerProcess) -> None:
    initialize(srv)
    assert call(srv, "resources/subscribe", {"uri": "guarded://note/1"})["result"] == {}
    assert call(srv, "resources/unsubscribe", {"uri": "guarded://note/1"})["result"] == {}
    assert call(srv, "resources/subscribe", {"uri": 5})["error"]["code"] == -32602
    assert call(srv, "server/discover")["error"]["code"] == -32601
    assert call(srv, "subscriptions/listen", {"notifications": {}})["error"]["code"] == -32601
    assert call(srv, "no/such")["error"]["code"] == -32601


def test_list_changed_without_listen(srv: ServerProcess) -> None:
    initialize(srv)
    resp, notes, _ = exchange(srv, legacy_request(srv, "tools/call", {"name": "toggle_tool"}))
    assert resp["result"]["content"][0]["text"] == "added"
    assert [n["method"] for n in notes] == ["notifications/tools/list_changed"]


def test_progress_in_legacy(srv: ServerProcess) -> None:
    initialize(srv)
    resp, notes, _ = exchange(
        srv,
        legacy_request(
            srv, "tools/call", {"name": "progress_tool", "_meta": {"progressToken": "t1"}}
        ),
    )
    assert [n["params"]["progress"] for n in notes] == [1, 2]
    assert all(n["params"]["progressToken"] == "t1" for n in notes)


def test_sampling_roots_and_elicitation_as_real_requests(srv: ServerProcess) -> None:
    initialize(srv, ALL)
    resp, _, asked = exchange(
        srv, legacy_request(srv, "tools/call", {"name": "all_three"}), answer_all
    )
    assert sorted(a["method"] for a in asked) == [
        "elicitation/create",
        "roots/list",
        "sampling/createMessage",
    ]
    assert len({a["id"] for a in asked}) == 3
    assert resp["result"]["content"][0]["text"] == "Ada|hi|1|{'kind': 'all'}"


def test_multi_round_in_legacy(srv: ServerProcess) -> None:
    initialize(srv, ALL)

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        props = req["params"]["requestedSchema"]["properties"]
        return {
            "result": {
                "action": "accept",
                "content": {"name": "Ada"} if "name" in props else {"color": "red"},
            }
        }

    resp, _, asked = exchange(srv, legacy_request(srv, "tools/call", {"name": "multi"}), answer)
    assert [a["params"]["message"] for a in asked] == ["Step 1: name?", "Step 2: color?"]
    assert resp["result"]["content"][0]["text"] == "Ada likes red (colors)"
    resp, _, asked = exchange(srv, legacy_request(srv, "tools/call", {"name": "ask_state_only"}))
    assert asked == [] and resp["result"]["content"][0]["text"] == "state again"


def test_capabilities_gate_legacy_requests(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    initialize(p, {})
    err = call(p, "tools/call", {"name": "greet"})["error"]
    assert err["code"] == -32021 and err["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert call(p, "tools/call", {"name": "maybe_sample"})["result"]["content"][0][
        "text"
    ].startswith("no sampling")
    old = spawn(SERVER)
    initialize(old, {"elicitation": {}}, "2025-03-26")  # elicitation did not exist yet
    assert call(old, "tools/call", {"name": "greet"})["error"]["code"] == -32021
    mid = spawn(SERVER)
    initialize(mid, {"elicitation": {"url": {}}}, "2025-06-18")  # no URL mode before 2025-11-25
    assert call(mid, "tools/call", {"name": "url_login"})["error"]["code"] == -32021


def test_2025_06_18_elicitation_has_no_mode(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    initialize(p, {"elicitation": {}}, "2025-06-18")
    resp, _, asked = exchange(p, legacy_request(p, "tools/call", {"name": "greet"}), accept_name)
    assert "mode" not in asked[0]["params"]
    assert resp["result"]["content"][0]["text"] == "Hello, Ada!"


def test_client_error_or_bad_answer_is_a_tool_error(srv: ServerProcess) -> None:
    initialize(srv, ALL)
    resp = call(
        srv,
        "tools/call",
        {"name": "greet"},
        lambda r: {"error": {"code": -1, "message": "User rejected"}},
    )
    assert resp["result"]["isError"] is True
    assert "User rejected" in resp["result"]["content"][0]["text"]
    resp = call(srv, "tools/call", {"name": "greet"}, lambda r: {"result": {"action": "maybe"}})
    assert resp["result"]["isError"] is True and "malformed" in resp["result"]["content"][0]["text"]
    # the prompts/get handler is not a tool: a failed input is a JSON-RPC error
    resp = call(
        srv, "prompts/get", {"name": "p"}, lambda r: {"error": {"code": -1, "message": "no"}}
    )
    assert resp["error"]["code"] == -32603


def test_answer_that_does_not_fit_the_schema_is_not_asked_again(srv: ServerProcess) -> None:
    initialize(srv, ALL)

    def wrong(req: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"action": "accept", "content": {"username": "u", "email": "e@x"}}}

    resp, _, asked = exchange(srv, legacy_request(srv, "tools/call", {"name": "greet"}), wrong)
    assert [a["method"] for a in asked] == ["elicitation/create"]
    assert resp["result"]["isError"] is True
    text = resp["result"]["content"][0]["text"]
    assert "did not match the requested schema" in text
    assert 'content: "name" is a required property' in text
    resp, _, asked = exchange(
        srv,
        legacy_request(srv, "tools/call", {"name": "greet"}),
        lambda r: {"result": {"action": "accept", "content": {"name": 5}}},
    )
    assert (
        len(asked) == 1
        and 'content/name: 5 is not of type "string"' in (resp["result"]["content"][0]["text"])
    )
    # not a tool: the client's bad answer is -32602, never -32603
    resp, _, asked = exchange(srv, legacy_request(srv, "prompts/get", {"name": "p"}), wrong)
    assert len(asked) == 1 and resp["error"]["code"] == -32602
    assert resp["error"]["data"]["inputKey"] == "topic"
    # the session goes on: a fitting answer completes
    assert call(srv, "tools/call", {"name": "greet"}, accept_name)["result"]["content"] == [
        {"type": "text", "text": "Hello, Ada!"}
    ]


def test_cancelling_the_request_cancels_our_request(srv: ServerProcess) -> None:
    initialize(srv, ALL)
    rid = legacy_request(srv, "tools/call", {"name": "slow_elicit"})
    ask = srv.read()
    assert ask["method"] == "elicitation/create"
    srv.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "user"},
        }
    )
    note = srv.read()
    assert note["method"] == "notifications/cancelled" and note["params"]["requestId"] == ask["id"]
    # a late answer is ignored, and nothing is ever sent for the cancelled request
    srv.send(
        {"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"a": "x"}}}
    )
    assert call(srv, "ping")["result"] == {}


def test_unanswered_request_times_out(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER, env={"LEGACY_TIMEOUT": "0.5"})
    initialize(p, ALL)
    rid = legacy_request(p, "tools/call", {"name": "slow_elicit"})
    ask = p.read()
    assert ask["method"] == "elicitation/create"
    resp, notes, _ = exchange(p, rid)
    assert (
        notes[0]["method"] == "notifications/cancelled"
        and notes[0]["params"]["requestId"] == ask["id"]
    )
    assert (
        resp["result"]["isError"] is True
        and "did not answer" in resp["result"]["content"][0]["text"]
    )


@pytest.mark.driver("process")  # the process exits at EOF
def test_closing_stdin_while_waiting_for_the_client(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    initialize(p, ALL)
    legacy_request(p, "tools/call", {"name": "slow_elicit"})
    assert p.read()["method"] == "elicitation/create"
    start = time.monotonic()
    p.close_stdin()
    assert p.wait(30) == 0
    assert time.monotonic() - start < 20  # EOF ends the wait for the client's answer
    p.drain(2)


def test_both_eras_on_one_process(srv: ServerProcess) -> None:
    initialize(srv, {"elicitation": {}})
    # modern: stateless, with resultType and serverInfo, MRTR as InputRequiredResult
    modern = srv.request("tools/call", {"name": "greet"}, caps={"elicitation": {}})
    assert modern["result"]["resultType"] == "input_required"
    assert "io.modelcontextprotocol/serverInfo" in modern["result"]["_meta"]
    disc = srv.request("server/discover")
    assert disc["result"]["supportedVersions"] == ["2026-07-28"]
    # a modern request with no capabilities is not helped by the legacy session's ones
    assert srv.request("tools/call", {"name": "greet"}, caps={})["error"]["code"] == -32021
    # modern removed methods stay -32601 even after initialize
    assert srv.request("ping")["error"]["code"] == -32601
    # legacy: a real server-to-client request
    resp, _, asked = exchange(
        srv, legacy_request(srv, "tools/call", {"name": "greet"}), accept_name
    )
    assert len(asked) == 1 and resp["result"] == {
        "content": [{"type": "text", "text": "Hello, Ada!"}]
    }
    # modern retry completes
    done = srv.request(
        "tools/call",
        {
            "name": "greet",
            "inputResponses": {"who": {"action": "accept", "content": {"name": "Bo"}}},
        },
        caps={"elicitation": {}},
    )
    assert done["result"]["content"][0]["text"] == "Hello, Bo!"
    assert done["result"]["resultType"] == "complete"


@pytest.mark.posix_only(reason="a Unix socket listener in its own session, ended with killpg")
def test_legacy_session_is_per_connection() -> None:
    """Over TCP, one connection's initialize does not make another connection legacy."""
    mcpline = str(Path(sys.executable).with_name("mcpline"))
    proc = subprocess.Popen(
        [mcpline, "run", str(SERVER), "--listen", "tcp:127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        line = b""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and b"listening on" not in line:
            line = proc.stderr.readline()
            if not line:
                break
        address = line.decode().split("listening on", 1)[1].strip()
        host, port = address.removeprefix("tcp:").rsplit(":", 1)

        token = find_token(host, int(port))
        assert token is not None

        def connect() -> tuple[socket.socket, Any]:
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(auth_line(token))
            return s, s.makefile("rwb")

        def rpc(f: Any, msg: dict[str, Any], version: str) -> dict[str, Any]:
            f.write(json.dumps(msg).encode() + b"\n")
            f.flush()
            reply: dict[str, Any] = json.loads(f.readline())
            assert wirecheck.check_message(reply, method=msg["method"], version=version) == []
            return reply

        a, fa = connect()
        b, fb = connect()
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "a", "version": "1"},
        }
        r = rpc(
            fa,
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            wirecheck.LEGACY,
        )
        assert r["result"]["protocolVersion"] == "2025-11-25"
        fa.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        assert (
            rpc(fa, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, wirecheck.LEGACY)["result"] == {}
        )
        # the other connection never initialized: legacy traffic is a malformed modern request
        err = rpc(fb, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, wirecheck.MODERN)["error"]
        assert err["code"] == -32602
        err = rpc(fb, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, wirecheck.MODERN)[
            "error"
        ]
        assert err["code"] == -32602
        for s, f in ((a, fa), (b, fb)):
            f.close()
            s.close()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def test_legacy_version_in_meta_is_32022_within_discover(srv: ServerProcess) -> None:
    """Legacy revisions are reached through initialize only: not in supportedVersions, and
    -32022 ``data.supported`` is a subset of them (the conformance check)."""
    supported = srv.request("server/discover")["result"]["supportedVersions"]
    assert supported == ["2026-07-28"]
    msg = srv.request_msg("tools/list", caps={})
    msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2025-11-25"
    srv.send(msg)
    err = srv.read_until(msg["id"])[0]["error"]
    assert err["code"] == -32022
    assert err["data"]["requested"] == "2025-11-25"
    assert err["data"]["supported"] and set(err["data"]["supported"]) <= set(supported)


def test_resource_read_asks_through_a_real_request(srv: ServerProcess) -> None:
    initialize(srv, {"elicitation": {}})
    resp, _, asked = exchange(
        srv,
        legacy_request(srv, "resources/read", {"uri": "guarded://note/7"}),
        lambda r: {"result": {"action": "accept", "content": {"ok": True}}},
    )
    assert asked[0]["params"]["message"] == "Show note 7?"
    assert resp["result"]["contents"][0]["text"] == "note 7: ok=True state={'id': '7'}"
    assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(resp["result"])


def test_requests_waiting_on_the_client_hold_no_in_flight_slot(
    spawn: Callable[..., ServerProcess],
) -> None:
    """With one slot, three calls that each wait for a client answer still all complete:
    a request waiting on the peer must not stop the server from reading that answer."""
    p = spawn(SERVER, env={"MAX_IN_FLIGHT": "1", "LEGACY_TIMEOUT": "20"})
    initialize(p, {"elicitation": {}})
    rids = [legacy_request(p, "tools/call", {"name": "greet"}) for _ in range(3)]
    results: dict[Any, dict[str, Any]] = {}
    deadline = time.monotonic() + 15
    while len(results) < len(rids):
        msg = p.read(max(0.01, deadline - time.monotonic()))
        if "method" in msg and "id" in msg:
            p.send({"jsonrpc": "2.0", "id": msg["id"], **accept_name(msg)})
        elif msg.get("id") in rids:
            results[msg["id"]] = msg
    assert all(
        r["result"] == {"content": [{"type": "text", "text": "Hello, Ada!"}]}
        for r in results.values()
    )
