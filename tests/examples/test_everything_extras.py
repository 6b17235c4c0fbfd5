"""The everything fixture's four stdio extras: sleep, stray_print, trigger_list_changed,
touch_resource. Every server line is schema-checked (and must be JSON) by ``spawn``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

SUB = "io.modelcontextprotocol/subscriptionId"


@pytest.fixture
def ev(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


def test_sleep_answers_after_waiting(ev: ServerProcess) -> None:
    started = time.monotonic()
    r = ev.call("sleep", {"ms": 150})["result"]
    assert r["content"] == [{"type": "text", "text": "slept 150"}]
    assert time.monotonic() - started >= 0.15
    assert ev.call("sleep", {"ms": -1})["result"]["isError"] is True
    assert ev.call("sleep", {"ms": "soon"})["result"]["isError"] is True


@pytest.mark.driver("process")  # the process exits at EOF
def test_sleep_is_cancellable(ev: ServerProcess) -> None:
    slow = ev.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 60_000}})
    ev.send(slow)
    time.sleep(0.1)
    ev.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": slow["id"], "reason": "test"},
        }
    )
    # the server keeps serving, and never answers the cancelled request
    assert ev.call("sleep", {"ms": 1})["result"]["content"][0]["text"] == "slept 1"
    ev.close_stdin()
    rest = ev.drain()
    assert ev.wait() == 0
    assert all(m.get("id") != slow["id"] for m in rest)


@pytest.mark.driver("process")  # print() and the process's stderr
def test_stray_print_keeps_stdout_pure(ev: ServerProcess) -> None:
    marker = '{"jsonrpc":"2.0","id":999,"result":{"forged":true}}'
    r = ev.call("stray_print", {"text": marker})["result"]
    assert r["content"][0]["text"] == "printed"
    deadline = time.monotonic() + 5
    while marker not in ev.stderr and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker in ev.stderr  # diverted to stderr
    ev.close_stdin()
    ev.drain()
    assert ev.wait() == 0
    assert not any(b"forged" in line for line in ev.raw_out)


def test_trigger_list_changed_toggles_dynamic_tool(ev: ServerProcess) -> None:
    ev.send(
        ev.request_msg(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id="L"
        )
    )
    assert ev.read()["method"] == "notifications/subscriptions/acknowledged"

    def names() -> list[str]:
        return [t["name"] for t in ev.request("tools/list")["result"]["tools"]]

    assert "dynamic_tool" not in names()
    for expected_text, present in (("added dynamic_tool", True), ("removed dynamic_tool", False)):
        msg = ev.request_msg("tools/call", {"name": "trigger_list_changed", "arguments": {}})
        ev.send(msg)
        resp, seen = ev.read_until(msg["id"])
        assert resp["result"]["content"][0]["text"] == expected_text
        assert seen == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {SUB: "L"}},
            }
        ]
        assert ("dynamic_tool" in names()) is present


def test_touch_resource_notifies_its_listeners(ev: ServerProcess) -> None:
    ev.send(
        ev.request_msg(
            "subscriptions/listen",
            {"notifications": {"resourceSubscriptions": ["test://watched-resource"]}},
            id="W",
        )
    )
    ack = ev.read()
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["test://watched-resource"]}
    msg = ev.request_msg(
        "tools/call", {"name": "touch_resource", "arguments": {"uri": "test://watched-resource"}}
    )
    ev.send(msg)
    resp, seen = ev.read_until(msg["id"])
    assert "result" in resp
    assert seen == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"_meta": {SUB: "W"}, "uri": "test://watched-resource"},
        }
    ]
    msg = ev.request_msg(
        "tools/call", {"name": "touch_resource", "arguments": {"uri": "test://static-text"}}
    )
    ev.send(msg)
    assert ev.read_until(msg["id"])[1] == []
