"""Prompts through the raw driver (in memory): definitions, typed string arguments, messages,
errors."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Server, text, user
from mcpline.server.prompts import make_prompt, to_result

from ..proc import EXAMPLES, FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

Spawn = Callable[..., ServerProcess]


@pytest.fixture
def features(spawn: Spawn) -> ServerProcess:
    return spawn(FIXTURES / "features_server.py")


def get(p: ServerProcess, name: str, arguments: Any = None, **kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return p.request("prompts/get", params, **kw)


def list_all(p: ServerProcess) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        r = p.request("prompts/list", params)["result"]
        assert r["ttlMs"] == 1000 and r["cacheScope"] == "public"
        out += r["prompts"]
        if "nextCursor" not in r:
            return out
        params = {"cursor": r["nextCursor"]}


def test_definitions_from_signatures(features: ServerProcess) -> None:
    prompts = {p["name"]: p for p in list_all(features)}
    assert list(prompts) == [
        "greet",
        "rich",
        "described",
        "moody",
        "contextual",
        "failing",
        "malformed",
    ]
    assert prompts["greet"] == {
        "name": "greet",
        "description": "Greet someone.",
        "arguments": [
            {"name": "name", "description": "Who to greet.", "required": True},
            {"name": "times", "description": "How many times.", "required": False},
        ],
    }
    assert prompts["rich"]["title"] == "Rich"
    assert prompts["rich"]["arguments"] == [
        {"name": "topic", "title": "Topic", "description": "What to talk about", "required": True}
    ]
    assert "arguments" not in prompts["contextual"]  # the Context parameter is not an argument


def test_string_arguments_are_converted_to_annotated_types(features: ServerProcess) -> None:
    r = get(features, "greet", {"name": "Ada", "times": "2"})["result"]
    assert r["resultType"] == "complete"
    assert r["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Hello, Ada! Hello, Ada!"}}
    ]
    r = get(features, "greet", {"name": "Bo"})["result"]  # optional argument omitted
    assert r["messages"][0]["content"]["text"] == "Hello, Bo!"
    assert (
        get(features, "moody", {"mood": "sad", "level": "3"})["result"]["messages"][0]["content"][
            "text"
        ]
        == "sad:3"
    )


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("greet", {}, "missing required argument 'name'"),
        ("greet", None, "missing required argument 'name'"),
        ("greet", {"name": "x", "times": "many"}, "bad argument"),
        ("greet", {"name": "x", "bogus": "1"}, "no argument 'bogus'"),
        ("greet", {"name": 5}, "strings"),
        ("greet", ["name"], "object"),
        ("moody", {"mood": "angry"}, "bad argument"),
        ("no_such_prompt", {}, "Unknown prompt"),
    ],
)
def test_invalid_requests_are_32602(
    features: ServerProcess, name: str, arguments: Any, fragment: str
) -> None:
    err = get(features, name, arguments)["error"]
    assert err["code"] == -32602
    assert fragment in err["message"]


def test_name_must_be_a_string(features: ServerProcess) -> None:
    assert features.request("prompts/get", {"name": 3})["error"]["code"] == -32602
    assert features.request("prompts/get", {})["error"]["code"] == -32602


def test_every_content_kind(features: ServerProcess) -> None:
    msgs = get(features, "rich", {"topic": "owls"})["result"]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "user", "user", "assistant"]
    assert msgs[0]["content"] == {"type": "text", "text": "Tell me about owls."}
    assert msgs[2]["content"]["type"] == "image" and msgs[2]["content"]["mimeType"] == "image/png"
    base64.b64decode(msgs[2]["content"]["data"], validate=True)
    assert msgs[3]["content"] == {
        "type": "audio",
        "data": base64.b64encode(b"RIFF0000WAVE").decode(),
        "mimeType": "audio/wav",
    }
    res = msgs[4]["content"]
    assert res["type"] == "resource" and res["resource"]["uri"] == "bin://logo"
    assert res["resource"]["mimeType"] == "image/png" and res["resource"]["blob"]
    assert msgs[5]["content"] == {"type": "text", "text": "done"}


def test_full_result_with_description_and_context(features: ServerProcess) -> None:
    r = get(features, "described", {"subject": "tea"})["result"]
    assert r["description"] == "About tea"
    assert r["messages"] == [{"role": "user", "content": {"type": "text", "text": "tea"}}]
    r = get(features, "contextual", caps={"sampling": {}})["result"]
    assert r["messages"][0]["content"]["text"] == "caps=['sampling']"


def test_failures_are_internal_errors(features: ServerProcess) -> None:
    err = get(features, "failing")["error"]
    assert err["code"] == -32603 and "internals" not in err["message"]
    assert get(features, "malformed")["error"]["code"] == -32603


def test_runtime_add_and_remove(features: ServerProcess) -> None:
    features.call("add_things")
    assert get(features, "late_prompt")["result"]["messages"][0]["content"]["text"] == "late"
    assert "late_prompt" in [p["name"] for p in list_all(features)]
    features.call("remove_things")
    assert get(features, "late_prompt")["error"]["code"] == -32602


def test_capability_only_when_prompts_exist(features: ServerProcess, spawn: Spawn) -> None:
    caps = features.request("server/discover")["result"]["capabilities"]
    assert caps["prompts"] == {"listChanged": True}
    quick = spawn(EXAMPLES / "quickstart.py")
    assert "prompts" not in quick.request("server/discover")["result"]["capabilities"]
    assert quick.request("prompts/list")["error"]["code"] == -32601
    assert get(quick, "x")["error"]["code"] == -32601


# --- shaping and registration (no process needed) -----------------------------------------------


def test_return_shapes() -> None:
    assert to_result("hi") == {"messages": [user("hi")]}
    assert to_result(text("hi")) == {"messages": [user("hi")]}
    assert to_result({"role": "assistant", "content": "ok"}) == {
        "messages": [{"role": "assistant", "content": {"type": "text", "text": "ok"}}]
    }
    with pytest.raises(ValueError):
        to_result({"role": "system", "content": "no"})
    with pytest.raises(TypeError):
        to_result([3])


def test_registration() -> None:
    s = Server("t")
    s.add_prompt(lambda: "x", name="p")
    with pytest.raises(ValueError, match="already registered"):
        s.add_prompt(lambda: "y", name="p")
    with pytest.raises(ValueError, match="argument_titles"):
        make_prompt(lambda a: a, name="q", argument_titles={"b": "B"})
    with pytest.raises(KeyError):
        s.remove_prompt("nope")
