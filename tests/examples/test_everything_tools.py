"""The everything fixture's tools through the raw driver (in memory).

One test per scenario: ``tools-list``, ``tools-call-simple-text``, ``-image``, ``-audio``,
``-embedded-resource``, ``-mixed-content``, ``-error``, ``-with-progress``,
``json-schema-2020-12`` (listing passed through unstripped) and the stdio analogue of
``server-sse-multiple-streams``. Every server line is schema-checked by ``spawn``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

PNG_1x1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
SUITE_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
NAME_RE = re.compile(r"^[A-Za-z0-9_./-]+$")

LISTED = [
    ("test_simple_text", "Tests simple text content response"),
    ("test_image_content", "Tests image content response"),
    ("test_audio_content", "Tests audio content response"),
    ("test_embedded_resource", "Tests embedded resource content response"),
    (
        "test_multiple_content_types",
        "Tests response with multiple content types (text, image, resource)",
    ),
    ("test_tool_with_logging", "Tests tool that emits log messages during execution"),
    ("test_tool_with_progress", "Tests tool that reports progress notifications"),
    ("test_error_handling", "Tests error response handling"),
    (
        "test_reconnection",
        "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close "
        "the stream mid-call and send the result after client reconnects.",
    ),
    (
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    ),
    ("test_missing_capability", "Test tool requiring sampling"),
    ("test_streaming_elicitation", "Diagnostic tool validating response progress streams"),
    ("test_logging_tool", "Diagnostic logging validator tool"),
]


@pytest.fixture
def ev(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


def call(
    p: ServerProcess, name: str, arguments: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    resp = p.call(name, arguments, caps=SUITE_CAPS, **kw)
    assert "result" in resp, resp
    result: dict[str, Any] = resp["result"]
    assert result["resultType"] == "complete"
    return result


# tools-list (checks tools-list, tools-name-format)
def test_tools_list(ev: ServerProcess) -> None:
    r = ev.request("tools/list", caps=SUITE_CAPS)["result"]
    assert (r["ttlMs"], r["cacheScope"]) == (300_000, "public")
    assert "nextCursor" not in r  # one page
    tools = {t["name"]: t for t in r["tools"]}
    for name, description in LISTED:
        assert tools[name]["description"] == description
    for t in r["tools"]:
        assert t["name"] and t["description"] and isinstance(t["inputSchema"], dict)
        assert 1 <= len(t["name"]) <= 64 and NAME_RE.match(t["name"])
        assert t["inputSchema"]["type"] == "object"
    assert list(tools)[:9] == [n for n, _ in LISTED[:9]]  # fixture order
    for hidden in ("test_trigger_tool_change", "test_trigger_prompt_change"):
        assert hidden not in tools
    for extra in ("sleep", "stray_print", "trigger_list_changed", "touch_resource"):
        assert extra in tools
    assert tools["test_simple_text"]["inputSchema"] == {"type": "object", "properties": {}}


# tools-call-simple-text: called with no "arguments" key
def test_simple_text(ev: ServerProcess) -> None:
    r = call(ev, "test_simple_text")
    assert r["content"] == [{"type": "text", "text": "This is a simple text response for testing."}]


# tools-call-image
def test_image(ev: ServerProcess) -> None:
    r = call(ev, "test_image_content", {})
    assert r["content"] == [{"type": "image", "data": PNG_1x1, "mimeType": "image/png"}]
    base64.b64decode(r["content"][0]["data"], validate=True)


# tools-call-audio
def test_audio(ev: ServerProcess) -> None:
    (block,) = call(ev, "test_audio_content", {})["content"]
    assert block["type"] == "audio" and block["mimeType"] == "audio/wav"
    assert base64.b64decode(block["data"], validate=True).startswith(b"RIFF")


# tools-call-embedded-resource
def test_embedded_resource(ev: ServerProcess) -> None:
    assert call(ev, "test_embedded_resource", {})["content"] == [
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }
    ]


# tools-call-mixed-content
def test_mixed_content(ev: ServerProcess) -> None:
    content = call(ev, "test_multiple_content_types", {})["content"]
    assert [c["type"] for c in content] == ["text", "image", "resource"]
    assert content[0]["text"] == "Multiple content types test:"
    assert content[1] == {"type": "image", "data": PNG_1x1, "mimeType": "image/png"}
    res = content[2]["resource"]
    assert res["uri"] == "test://mixed-content-resource" and res["mimeType"] == "application/json"
    assert json.loads(res["text"]) == {"test": "data", "value": 123}


# tools-call-error: a result with isError, not a JSON-RPC error
def test_error_result(ev: ServerProcess) -> None:
    r = call(ev, "test_error_handling", {})
    assert r["isError"] is True
    assert r["content"] == [
        {"type": "text", "text": "This tool intentionally returns an error for testing"}
    ]


# tools-call-with-progress: three increasing notifications with the token, before the result
def test_with_progress(ev: ServerProcess) -> None:
    msg = ev.request_msg(
        "tools/call",
        {"name": "test_tool_with_progress", "arguments": {}},
        caps=SUITE_CAPS,
        progressToken="progress-test-1",
    )
    ev.send(msg)
    resp, seen = ev.read_until(msg["id"])
    assert [n["method"] for n in seen] == ["notifications/progress"] * 3
    assert [n["params"] for n in seen] == [
        {
            "progressToken": "progress-test-1",
            "progress": p,
            "total": 100,
            "message": f"Completed step {p} of 100",
        }
        for p in (0, 50, 100)
    ]
    assert resp["result"]["content"] == [{"type": "text", "text": "progress-test-1"}]
    # integer tokens keep their type; no token, no progress (fixture deviation 2 fixed)
    msg = ev.request_msg("tools/call", {"name": "test_tool_with_progress"}, progressToken=7)
    ev.send(msg)
    resp, seen = ev.read_until(msg["id"])
    assert [n["params"]["progressToken"] for n in seen] == [7, 7, 7]
    assert resp["result"]["content"][0]["text"] == "7"
    msg = ev.request_msg("tools/call", {"name": "test_tool_with_progress"})
    ev.send(msg)
    assert ev.read_until(msg["id"])[1] == []


# test_reconnection: stdio has no stream to drop, the result arrives directly
def test_reconnection_tool(ev: ServerProcess) -> None:
    text = call(ev, "test_reconnection", {})["content"][0]["text"]
    assert text.startswith("Reconnection test completed successfully.")


# json-schema-2020-12 (not scored): the schema is listed exactly as written
def test_json_schema_2020_12_passthrough(ev: ServerProcess) -> None:
    tools = {t["name"]: t for t in ev.request("tools/list")["result"]["tools"]}
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert schema["additionalProperties"] is False
    assert schema["allOf"] == [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}]
    assert {"if", "then", "else"} <= set(schema)
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
    r = call(
        ev, "json_schema_2020_12_tool", {"name": "Ann", "contactMethod": "email", "email": "a@b"}
    )
    assert r["content"][0]["text"] == (
        'JSON Schema 2020-12 tool called with: {"name":"Ann","contactMethod":"email","email":"a@b"}'
    )


# server-sse-multiple-streams, stdio analogue: several requests in flight, each answered by id
def test_concurrent_requests_each_answered(ev: ServerProcess) -> None:
    slow = ev.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 400}})
    lists = [ev.request_msg("tools/list") for _ in range(3)]
    ev.send(slow)
    for m in lists:
        ev.send(m)
    answered: list[Any] = []
    while len(answered) < 4:
        msg = ev.read()
        answered.append(msg["id"])
        if msg["id"] == slow["id"]:
            assert msg["result"]["content"][0]["text"] == "slept 400"
        else:
            assert msg["result"]["tools"]
    assert answered[-1] == slow["id"]  # the quick lists overtook the slow call
    assert sorted(answered) == sorted([slow["id"], *(m["id"] for m in lists)])
