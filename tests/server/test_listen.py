"""subscriptions/listen through the raw driver: ack, tagging, filtering, demultiplexing, cancel,
close (in memory; the closing tests on a real process)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..proc import EXAMPLES, FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

Spawn = Callable[..., ServerProcess]
SUB = "io.modelcontextprotocol/subscriptionId"
ACK = "notifications/subscriptions/acknowledged"
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
UPDATED = "notifications/resources/updated"


@pytest.fixture
def everything(spawn: Spawn) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


@pytest.fixture
def features(spawn: Spawn) -> ServerProcess:
    return spawn(FIXTURES / "features_server.py")


def listen(p: ServerProcess, id: Any, **filter: Any) -> dict[str, Any]:
    """Open a listen and return its acknowledgement (which must be the next message)."""
    p.send(p.request_msg("subscriptions/listen", {"notifications": filter}, id=id))
    ack = p.read()
    assert ack["method"] == ACK, ack
    assert ack["params"]["_meta"][SUB] == id and type(ack["params"]["_meta"][SUB]) is type(id)
    notifications: dict[str, Any] = ack["params"]["notifications"]
    return notifications


def call_collect(
    p: ServerProcess, name: str, arguments: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Call a tool; return the notifications written before its response."""
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    msg = p.request_msg("tools/call", params)
    p.send(msg)
    resp, seen = p.read_until(msg["id"])
    assert "result" in resp, resp
    return seen


def tags(notes: list[dict[str, Any]], method: str) -> list[Any]:
    return [n["params"]["_meta"][SUB] for n in notes if n.get("method") == method]


def quiet(p: ServerProcess) -> list[dict[str, Any]]:
    """Everything the server writes before answering a fresh discover (nothing expected)."""
    msg = p.request_msg("server/discover")
    p.send(msg)
    return p.read_until(msg["id"])[1]


def test_ack_first_with_honoured_filter(everything: ServerProcess) -> None:
    honoured = listen(
        everything,
        41,
        toolsListChanged=True,
        promptsListChanged=True,
        resourcesListChanged=False,
        resourceSubscriptions=[
            "test://watched-resource",
            "test://unknown",
            "test://template/7/data",
        ],
    )
    assert honoured == {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourceSubscriptions": ["test://watched-resource", "test://template/7/data"],
    }
    assert listen(everything, "s-1") == {}  # an empty filter is acknowledged as empty


def test_notifications_tagged_and_demultiplexed(everything: ServerProcess) -> None:
    listen(everything, 1001, toolsListChanged=True)
    listen(everything, "two", toolsListChanged=True, promptsListChanged=True)
    listen(everything, 1003, promptsListChanged=True)
    seen = call_collect(everything, "test_trigger_tool_change")
    assert sorted(map(str, tags(seen, TOOLS_CHANGED))) == ["1001", "two"]
    assert all(n["method"] == TOOLS_CHANGED for n in seen)
    assert all(set(n["params"]) == {"_meta"} and set(n["params"]["_meta"]) == {SUB} for n in seen)
    seen = call_collect(everything, "test_trigger_prompt_change")
    assert [n["method"] for n in seen] == [PROMPTS_CHANGED, PROMPTS_CHANGED]
    assert sorted(map(str, tags(seen, PROMPTS_CHANGED))) == ["1003", "two"]
    # the same id value with another JSON type is another subscription
    listen(everything, "1001", promptsListChanged=True)
    seen = call_collect(everything, "test_trigger_prompt_change")
    assert sorted(tags(seen, PROMPTS_CHANGED), key=repr) == sorted(["two", 1003, "1001"], key=repr)


def test_types_not_asked_for_are_never_sent(everything: ServerProcess) -> None:
    listen(everything, 1005, promptsListChanged=True)  # the honours-notification-filter probe
    listen(everything, 1006)
    assert call_collect(everything, "test_trigger_tool_change") == []
    assert call_collect(everything, "trigger_list_changed") == []
    assert call_collect(everything, "touch_resource", {"uri": "test://watched-resource"}) == []
    assert quiet(everything) == []


def test_runtime_tool_changes_notify(everything: ServerProcess) -> None:
    listen(everything, 1009, toolsListChanged=True)
    seen = call_collect(everything, "trigger_list_changed")
    assert tags(seen, TOOLS_CHANGED) == [1009]
    names = [t["name"] for t in everything.request("tools/list")["result"]["tools"]]
    assert "dynamic_tool" in names
    assert "test_trigger_tool_change" not in names  # hidden but callable
    assert everything.call("dynamic_tool")["result"]["content"][0]["text"] == "dynamic tool called"
    seen = call_collect(everything, "trigger_list_changed")
    assert tags(seen, TOOLS_CHANGED) == [1009]
    assert everything.call("dynamic_tool")["error"]["code"] == -32602


def test_runtime_prompt_and_resource_changes_notify(features: ServerProcess) -> None:
    listen(features, "p", promptsListChanged=True)
    listen(features, "r", resourcesListChanged=True)
    seen = call_collect(features, "add_things")
    assert [(n["method"], n["params"]["_meta"][SUB]) for n in seen] == [
        (PROMPTS_CHANGED, "p"),
        (RESOURCES_CHANGED, "r"),
    ]
    seen = call_collect(features, "remove_things")
    assert [n["method"] for n in seen] == [PROMPTS_CHANGED, RESOURCES_CHANGED]


def test_resource_updates_reach_subscribers_only(features: ServerProcess) -> None:
    honoured = listen(features, 1001, resourceSubscriptions=["note://hello", "dir://docs"])
    assert honoured == {"resourceSubscriptions": ["note://hello", "dir://docs"]}
    listen(features, 1002, resourceSubscriptions=["items://5"])
    seen = call_collect(features, "touch", {"uri": "note://hello"})
    assert seen == [
        {
            "jsonrpc": "2.0",
            "method": UPDATED,
            "params": {"_meta": {SUB: 1001}, "uri": "note://hello"},
        }
    ]
    seen = call_collect(features, "touch", {"uri": "dir://docs/readme"})  # a sub-resource
    assert [(n["params"]["_meta"][SUB], n["params"]["uri"]) for n in seen] == [
        (1001, "dir://docs/readme")
    ]
    seen = call_collect(features, "touch", {"uri": "items://5"})
    assert [(n["params"]["_meta"][SUB], n["params"]["uri"]) for n in seen] == [(1002, "items://5")]
    assert call_collect(features, "touch", {"uri": "items://6"}) == []
    assert call_collect(features, "touch", {"uri": "note://hellox"}) == []


@pytest.mark.driver("process")  # the process exits at EOF
def test_cancel_ends_a_listen_silently(everything: ServerProcess) -> None:
    listen(everything, 1010, toolsListChanged=True)
    listen(everything, 1011, toolsListChanged=True)
    everything.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1010}}
    )
    seen = call_collect(everything, "test_trigger_tool_change")
    assert tags(seen, TOOLS_CHANGED) == [1011]
    everything.close_stdin()
    rest = everything.drain()
    assert everything.wait() == 0
    # only the still-open listen gets its graceful result; the cancelled one gets nothing
    assert [m.get("id") for m in rest] == [1011]


@pytest.mark.driver("process")  # the process exits at EOF
def test_graceful_close_answers_every_open_listen(everything: ServerProcess) -> None:
    listen(everything, 1001, toolsListChanged=True)
    listen(everything, "b", promptsListChanged=True)
    sleeper = everything.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 60_000}})
    everything.send(sleeper)
    time.sleep(0.2)
    everything.close_stdin()
    rest = everything.drain()
    assert everything.wait() == 0
    results = {m["id"]: m["result"] for m in rest if "result" in m}
    assert set(results) == {1001, "b"}
    for sid, result in results.items():
        assert result["resultType"] == "complete"
        assert result["_meta"][SUB] == sid
        assert (
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
            == "everything-stateless-server"
        )
    assert sleeper["id"] not in results


@pytest.mark.driver("process")  # the process exits at EOF
def test_listen_arriving_with_end_of_input_still_completes(everything: ServerProcess) -> None:
    everything.send(
        everything.request_msg("subscriptions/listen", {"notifications": {}}, id="last")
    )
    everything.close_stdin()
    rest = everything.drain()
    assert everything.wait() == 0
    assert [m.get("method") or m.get("id") for m in rest] == [ACK, "last"]
    assert rest[1]["result"]["_meta"][SUB] == "last"


@pytest.mark.posix_only(reason="a catchable SIGTERM")
@pytest.mark.driver("process")  # a signal
def test_graceful_close_on_sigterm(everything: ServerProcess) -> None:
    listen(everything, 1077, toolsListChanged=True)
    everything.signal(signal.SIGTERM)
    rest = everything.drain()
    assert everything.wait() == 0
    assert [(m["id"], m["result"]["_meta"][SUB]) for m in rest] == [(1077, 1077)]


def test_listens_do_not_hold_the_in_flight_limit(spawn: Spawn) -> None:
    p = spawn(FIXTURES / "features_server.py", "2")  # max_in_flight = 2
    for i in range(6):
        listen(p, f"l{i}", toolsListChanged=True)
    # the pipe must still be read: two calls run side by side, a third waits its turn
    a = p.request_msg("tools/call", {"name": "wait", "arguments": {"ms": 300}})
    b = p.request_msg("tools/call", {"name": "wait", "arguments": {"ms": 300}})
    c = p.request_msg("tools/call", {"name": "wait", "arguments": {"ms": 1}})
    for m in (a, b, c):
        p.send(m)
    for m in (a, b, c):
        assert p.read_until(m["id"])[0]["result"]["content"][0]["text"] == "waited"
    # cancelling listens keeps the bookkeeping straight
    for i in range(6):
        p.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": f"l{i}"},
            }
        )
    assert p.call("wait", {"ms": 1})["result"]["content"][0]["text"] == "waited"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"notifications": None},
        {"notifications": []},
        {"notifications": {"toolsListChanged": "yes"}},
        {"notifications": {"resourceSubscriptions": "test://watched-resource"}},
        {"notifications": {"resourceSubscriptions": [1]}},
    ],
)
def test_malformed_filter_is_32602(everything: ServerProcess, params: dict[str, Any]) -> None:
    assert everything.request("subscriptions/listen", params)["error"]["code"] == -32602


def test_listen_needs_modern_meta(everything: ServerProcess) -> None:
    msg = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {}},
    }
    everything.send(msg)
    assert everything.read_until(1)[0]["error"]["code"] == -32602


@pytest.mark.driver("process")  # the file calls run() when imported
def test_nothing_to_listen_to_is_method_not_found(spawn: Spawn, tmp_path: Path) -> None:
    script = tmp_path / "bare.py"
    script.write_text("from mcpline import Server\nServer('bare').run()\n")
    p = spawn(script)
    caps = p.request("server/discover")["result"]["capabilities"]
    assert not any(k in caps for k in ("tools", "prompts", "resources"))
    r = p.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert r["error"]["code"] == -32601


def test_progress_and_logs_never_travel_on_a_listen(everything: ServerProcess) -> None:
    listen(everything, 1001, toolsListChanged=True, promptsListChanged=True)
    msg = everything.request_msg(
        "tools/call",
        {"name": "test_tool_with_logging"},
        caps=None,
        **{"io.modelcontextprotocol/logLevel": "debug", "progressToken": "t"},
    )
    everything.send(msg)
    _, seen = everything.read_until(msg["id"])
    assert [n["method"] for n in seen] == ["notifications/message"] * 3
    assert all("_meta" not in n["params"] for n in seen)
