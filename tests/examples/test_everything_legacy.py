"""The everything fixture to a legacy 2025-11-25 client (the suite's 2025-11-25 scenarios).

Server-to-client requests are real and answered by the test; every server line is checked
against the 2025-11-25 schema (responses to modern requests against the 2026-07-28 one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess
from ..server.test_legacy import call, exchange, initialize, legacy_request

pytestmark = pytest.mark.driver("memory")

LOGGER = "conformance-test-server"
SUITE_CAPS = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}


@pytest.fixture
def ev(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    p = spawn(EXAMPLES / "servers" / "everything.py")
    initialize(p, SUITE_CAPS)
    return p


def logs(notes: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [
        (n["params"]["level"], n["params"]["data"])
        for n in notes
        if n["method"] == "notifications/message"
    ]


def tool(
    p: ServerProcess, name: str, args: dict[str, Any] | None = None, answer: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    params: dict[str, Any] = {"name": name}
    if args is not None:
        params["arguments"] = args
    return exchange(p, legacy_request(p, "tools/call", params), answer)


def text(resp: dict[str, Any]) -> str:
    result = resp["result"]
    assert "resultType" not in result and "_meta" not in result, result
    text: str = result["content"][0]["text"]
    return text


# server-initialize
def test_legacy_identity(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(EXAMPLES / "servers" / "everything.py")
    r = initialize(p, SUITE_CAPS)["result"]
    assert r["protocolVersion"] == "2025-11-25"
    assert r["serverInfo"] == {"name": "mcp-conformance-test-server", "version": "1.0.0"}
    assert r["capabilities"] == {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "logging": {},
        "completions": {},
    }


# ping, logging-set-level
def test_ping_and_set_level(ev: ServerProcess) -> None:
    assert call(ev, "ping")["result"] == {}
    resp, notes, _ = exchange(ev, legacy_request(ev, "logging/setLevel", {"level": "info"}))
    assert resp["result"] == {}
    assert logs(notes) == [("info", "Log level set to: info")]
    assert notes[0]["params"]["logger"] == LOGGER


# tools-call-with-logging
def test_tool_with_logging(ev: ServerProcess) -> None:
    call(ev, "logging/setLevel", {"level": "debug"})
    resp, notes, _ = tool(ev, "test_tool_with_logging", {})
    assert logs(notes) == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]
    assert text(resp) == "Tool with logging executed successfully"


# resources-subscribe, resources-unsubscribe, and updates without a listen stream
def test_subscribe_updates_unsubscribe(ev: ServerProcess) -> None:
    call(ev, "logging/setLevel", {"level": "info"})
    uri = "test://watched-resource"
    resp, notes, _ = exchange(ev, legacy_request(ev, "resources/subscribe", {"uri": uri}))
    assert resp["result"] == {} and logs(notes) == [("info", f"Subscribed to resource: {uri}")]
    resp, notes, _ = tool(ev, "touch_resource", {"uri": uri})
    assert [n["params"] for n in notes if n["method"] == "notifications/resources/updated"] == [
        {"uri": uri}
    ]
    resp, notes, _ = tool(ev, "touch_resource", {"uri": "test://static-text"})
    assert not [n for n in notes if n["method"] == "notifications/resources/updated"]
    resp, notes, _ = exchange(ev, legacy_request(ev, "resources/unsubscribe", {"uri": uri}))
    assert resp["result"] == {} and logs(notes) == [("info", f"Unsubscribed from resource: {uri}")]
    resp, notes, _ = tool(ev, "touch_resource", {"uri": uri})
    assert not [n for n in notes if n["method"] == "notifications/resources/updated"]


def test_list_changed_without_listen(ev: ServerProcess) -> None:
    _, notes, _ = tool(ev, "trigger_list_changed", {})
    assert [n["method"] for n in notes] == ["notifications/tools/list_changed"]


# tools-call-sampling
def test_sampling_is_a_real_request(ev: ServerProcess) -> None:
    def answer(req: dict[str, Any]) -> dict[str, Any]:
        return {
            "result": {
                "role": "assistant",
                "content": {"type": "text", "text": "Paris"},
                "model": "m",
            }
        }

    resp, _, asked = tool(ev, "test_sampling", {"prompt": "Capital of France?"}, answer)
    assert [a["method"] for a in asked] == ["sampling/createMessage"]
    assert asked[0]["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
        "maxTokens": 100,
    }
    assert text(resp) == "LLM response: Paris"


# tools-call-elicitation
def test_elicitation_is_a_real_request(ev: ServerProcess) -> None:
    def answer(req: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"action": "accept", "content": {"response": "yes"}}}

    resp, _, asked = tool(ev, "test_elicitation", {"message": "Do it?"}, answer)
    assert asked[0]["method"] == "elicitation/create"
    assert asked[0]["params"]["message"] == "Do it?"
    assert asked[0]["params"]["requestedSchema"] == {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    assert text(resp) == 'User response: action=accept, content={"response":"yes"}'


# elicitation-sep1034-defaults
def test_sep1034_defaults(ev: ServerProcess) -> None:
    resp, _, asked = tool(
        ev, "test_elicitation_sep1034_defaults", {}, lambda r: {"result": {"action": "decline"}}
    )
    props = asked[0]["params"]["requestedSchema"]["properties"]
    assert {k: (v["type"], v["default"]) for k, v in props.items()} == {
        "name": ("string", "John Doe"),
        "age": ("integer", 30),
        "score": ("number", 95.5),
        "status": ("string", "active"),
        "verified": ("boolean", True),
    }
    assert props["status"]["enum"] == ["active", "inactive", "pending"]
    assert asked[0]["params"]["requestedSchema"]["required"] == []
    assert text(resp) == "Elicitation completed: action=decline, content={}"


# elicitation-sep1330-enums
def test_sep1330_enums(ev: ServerProcess) -> None:
    chosen = {"untitledSingle": "option2", "titledMulti": ["value1", "value3"]}
    resp, _, asked = tool(
        ev,
        "test_elicitation_sep1330_enums",
        {},
        lambda r: {"result": {"action": "accept", "content": chosen}},
    )
    props = asked[0]["params"]["requestedSchema"]["properties"]
    assert props["untitledSingle"]["enum"] == ["option1", "option2", "option3"]
    assert [o["title"] for o in props["titledSingle"]["oneOf"]] == [
        "First Option",
        "Second Option",
        "Third Option",
    ]
    assert props["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]
    assert props["untitledMulti"]["items"]["enum"] == ["option1", "option2", "option3"]
    assert (props["untitledMulti"]["minItems"], props["untitledMulti"]["maxItems"]) == (1, 3)
    assert [o["const"] for o in props["titledMulti"]["items"]["anyOf"]] == [
        "value1",
        "value2",
        "value3",
    ]
    content = '{"untitledSingle":"option2","titledMulti":["value1","value3"]}'
    assert text(resp) == f"Elicitation completed: action=accept, content={content}"


# an MRTR tool written once works for a legacy client (several rounds of real requests)
def test_mrtr_tool_in_a_legacy_session(ev: ServerProcess) -> None:
    def answer(req: dict[str, Any]) -> dict[str, Any]:
        props = req["params"]["requestedSchema"]["properties"]
        return {
            "result": {
                "action": "accept",
                "content": {"name": "Alice"} if "name" in props else {"color": "blue"},
            }
        }

    resp, _, asked = tool(ev, "test_input_required_result_multi_round", {}, answer)
    assert len(asked) == 2
    assert text(resp) == "Multi-round complete for Alice who likes blue"
    resp = exchange(
        ev,
        legacy_request(ev, "prompts/get", {"name": "test_input_required_result_prompt"}),
        lambda r: {"result": {"action": "accept", "content": {"context": "legacy"}}},
    )[0]
    assert resp["result"]["messages"][0]["content"]["text"] == "Prompt with context: legacy"


# the shared surface, legacy-shaped (tools-list, tools-call-*, resources-*, prompts-*, completion)
def test_shared_surface_is_legacy_shaped(ev: ServerProcess) -> None:
    for method, params in [
        ("tools/list", None),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("prompts/list", {}),
        ("resources/read", {"uri": "test://static-text"}),
        ("resources/read", {"uri": "test://template/123/data"}),
        (
            "prompts/get",
            {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}},
        ),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "test"},
            },
        ),
    ]:
        result = call(ev, method, params)["result"]
        assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(result), (method, result)
    assert text(tool(ev, "test_simple_text")[0]) == "This is a simple text response for testing."
    assert tool(ev, "test_image_content")[0]["result"]["content"][0]["type"] == "image"
    assert tool(ev, "test_error_handling")[0]["result"]["isError"] is True
    resp, notes, _ = exchange(
        ev,
        legacy_request(
            ev, "tools/call", {"name": "test_tool_with_progress", "_meta": {"progressToken": "p1"}}
        ),
    )
    assert [n["params"]["progress"] for n in notes if n["method"] == "notifications/progress"] == [
        0,
        50,
        100,
    ]
    assert text(resp) == "p1"


def test_missing_resource_is_32002_in_legacy_and_32602_in_modern(ev: ServerProcess) -> None:
    uri = "test://nonexistent-resource-for-conformance-testing"
    err = call(ev, "resources/read", {"uri": uri})["error"]
    assert err["code"] == -32002 and err["data"] == {"uri": uri}
    modern = ev.request("resources/read", {"uri": uri})
    assert modern["error"]["code"] == -32602 and modern["error"]["data"] == {"uri": uri}


def test_modern_requests_on_the_same_process(ev: ServerProcess) -> None:
    modern = ev.request(
        "tools/call", {"name": "test_input_required_result_elicitation"}, caps=SUITE_CAPS
    )
    assert modern["result"]["resultType"] == "input_required"
    listed = ev.request("tools/list")
    assert listed["result"]["resultType"] == "complete" and listed["result"]["ttlMs"] == 300000
    resp, _, asked = tool(
        ev,
        "test_input_required_result_elicitation",
        {},
        lambda r: {"result": {"action": "accept", "content": {"name": "Alice"}}},
    )
    assert len(asked) == 1 and text(resp) == "Hello, Alice!"
