"""The everything fixture's resources, prompts, completion and caching hints.

Scenarios: ``resources-list``, ``resources-read-text``, ``resources-read-binary``,
``resources-templates-read``, ``sep-2164-resource-not-found``, ``prompts-list``,
``prompts-get-simple``, ``-with-args``, ``-embedded-resource``, ``-with-image``,
``completion-complete`` and ``caching``. Every server line is schema-checked by ``spawn``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

SUITE_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
PNG_1x1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@pytest.fixture
def ev(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


def ok(resp: dict[str, Any]) -> dict[str, Any]:
    assert "result" in resp, resp
    result: dict[str, Any] = resp["result"]
    assert result["resultType"] == "complete"
    return result


def read(p: ServerProcess, uri: str) -> dict[str, Any]:
    return p.request("resources/read", {"uri": uri}, caps=SUITE_CAPS)


def get_prompt(
    p: ServerProcess, name: str, arguments: dict[str, str] | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return ok(p.request("prompts/get", params, caps=SUITE_CAPS))


# resources-list
def test_resources_list(ev: ServerProcess) -> None:
    r = ok(ev.request("resources/list", caps=SUITE_CAPS))
    assert (r["ttlMs"], r["cacheScope"]) == (300_000, "public")
    assert [
        (x["uri"], x["name"], x.get("title"), x["description"], x["mimeType"])
        for x in r["resources"]
    ] == [
        (
            "test://static-text",
            "static-text",
            "Static Text Resource",
            "A static text resource for testing",
            "text/plain",
        ),
        (
            "test://static-binary",
            "static-binary",
            "Static Binary Resource",
            "A static binary resource (image) for testing",
            "image/png",
        ),
        (
            "test://watched-resource",
            "watched-resource",
            "Watched Resource",
            "A resource that auto-updates every 3 seconds",
            "text/plain",
        ),
        (
            "test://stateless-static-text",
            "Stateless Static Text",
            None,
            "A static text resource served on the draft path",
            "text/plain",
        ),
    ]


# resources-read-text (and the caching scenario's read of the first listed resource)
def test_read_text(ev: ServerProcess) -> None:
    r = ok(read(ev, "test://static-text"))
    assert r["contents"] == [
        {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
    ]
    assert (r["ttlMs"], r["cacheScope"]) == (300_000, "private")
    assert (
        ok(read(ev, "test://watched-resource"))["contents"][0]["text"] == "Watched resource content"
    )
    stateless = ok(read(ev, "test://stateless-static-text"))["contents"][0]["text"]
    assert stateless == "Static text content from the stateless draft path."


# resources-read-binary
def test_read_binary(ev: ServerProcess) -> None:
    (entry,) = ok(read(ev, "test://static-binary"))["contents"]
    assert entry == {"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG_1x1}
    assert base64.b64decode(entry["blob"], validate=True).startswith(b"\x89PNG")


# resources-templates-read
def test_templates_read(ev: ServerProcess) -> None:
    r = ok(ev.request("resources/templates/list", caps=SUITE_CAPS))
    assert r["resourceTemplates"] == [
        {
            "uriTemplate": "test://template/{id}/data",
            "name": "template",
            "title": "Resource Template",
            "description": "A resource template with parameter substitution",
            "mimeType": "application/json",
        }
    ]
    (entry,) = ok(read(ev, "test://template/123/data"))["contents"]
    assert entry["uri"] == "test://template/123/data" and entry["mimeType"] == "application/json"
    assert "123" in entry["text"]
    assert json.loads(entry["text"]) == {
        "id": "123",
        "templateTest": True,
        "data": "Data for ID: 123",
    }
    assert entry["text"] == '{"id":"123","templateTest":true,"data":"Data for ID: 123"}'


# sep-2164-resource-not-found: -32602 with data.uri, never empty contents, never -32002
def test_resource_not_found(ev: ServerProcess) -> None:
    uri = "test://nonexistent-resource-for-conformance-testing"
    resp = read(ev, uri)
    assert "result" not in resp
    assert resp["error"]["code"] == -32602
    assert resp["error"]["data"] == {"uri": uri}


# prompts-list
def test_prompts_list(ev: ServerProcess) -> None:
    r = ok(ev.request("prompts/list", caps=SUITE_CAPS))
    assert (r["ttlMs"], r["cacheScope"]) == (300_000, "public")
    prompts = {p["name"]: p for p in r["prompts"]}
    for p in r["prompts"]:
        assert p["name"] and p["description"]
    assert prompts["test_simple_prompt"] == {
        "name": "test_simple_prompt",
        "title": "Simple Test Prompt",
        "description": "A simple prompt without arguments",
    }
    assert prompts["test_prompt_with_arguments"]["arguments"] == [
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True},
    ]
    assert prompts["test_prompt_with_embedded_resource"]["title"] == "Prompt With Embedded Resource"
    assert prompts["test_prompt_with_embedded_resource"]["arguments"] == [
        {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}
    ]
    assert (
        prompts["test_prompt_with_image"]["description"] == "A prompt that includes image content"
    )
    assert list(prompts)[:4] == [
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
    ]


# prompts-get-simple (no "arguments" key)
def test_prompt_simple(ev: ServerProcess) -> None:
    r = get_prompt(ev, "test_simple_prompt")
    assert r["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "This is a simple prompt for testing."},
        }
    ]
    assert "description" not in r


# prompts-get-with-args
def test_prompt_with_args(ev: ServerProcess) -> None:
    r = get_prompt(ev, "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
    assert r["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'",
            },
        }
    ]
    err = ev.request(
        "prompts/get", {"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}
    )
    assert err["error"]["code"] == -32602  # missing required argument
    err = ev.request("prompts/get", {"name": "no_such_prompt"})
    assert err["error"]["code"] == -32602  # unknown prompt


# prompts-get-embedded-resource
def test_prompt_embedded_resource(ev: ServerProcess) -> None:
    r = get_prompt(
        ev, "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
    )
    assert r["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {
                    "uri": "test://example-resource",
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                },
            },
        },
        {
            "role": "user",
            "content": {"type": "text", "text": "Please process the embedded resource above."},
        },
    ]


# prompts-get-with-image
def test_prompt_with_image(ev: ServerProcess) -> None:
    r = get_prompt(ev, "test_prompt_with_image")
    assert r["messages"] == [
        {"role": "user", "content": {"type": "image", "data": PNG_1x1, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


# completion-complete
def test_completion(ev: ServerProcess) -> None:
    caps = ev.request("server/discover")["result"]["capabilities"]
    assert caps["completions"] == {}  # fixture gap fixed
    r = ok(
        ev.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "test"},
            },
            caps=SUITE_CAPS,
        )
    )
    values = r["completion"]["values"]
    assert isinstance(values, list) and len(values) <= 100
    assert values and all(v.startswith("test") for v in values)
    r = ok(
        ev.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
                "argument": {"name": "id", "value": "1"},
                "context": {"arguments": {}},
            },
        )
    )
    assert r["completion"]["values"] == ["1", "123"]


# caching: every cacheable result carries an integer ttlMs >= 0 and a valid cacheScope
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("server/discover", {}),
        ("tools/list", {}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "test://static-text"}),
        ("resources/read", {"uri": "test://template/9/data"}),
    ],
)
def test_caching_hints(ev: ServerProcess, method: str, params: dict[str, Any]) -> None:
    r = ok(ev.request(method, params, caps=SUITE_CAPS))
    assert type(r["ttlMs"]) is int and r["ttlMs"] >= 0
    assert r["cacheScope"] in ("public", "private")


def test_not_cacheable_results_carry_no_hints(ev: ServerProcess) -> None:
    r = get_prompt(ev, "test_simple_prompt")
    assert "ttlMs" not in r and "cacheScope" not in r
    r = ok(ev.call("test_simple_text", caps=SUITE_CAPS))
    assert "ttlMs" not in r
