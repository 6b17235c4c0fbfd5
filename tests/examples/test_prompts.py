"""examples/prompts.py through the raw driver (in memory): typed prompt arguments, completers
(with context) and a ``Literal`` argument that completes itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

INVALID_PARAMS = -32602


@pytest.fixture
def prompts(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "prompts.py")


def get(p: ServerProcess, name: str, **arguments: str) -> dict[str, Any]:
    return p.request("prompts/get", {"name": name, "arguments": arguments})


def complete(p: ServerProcess, prompt: str, argument: str, value: str, **chosen: str) -> list[str]:
    params: dict[str, Any] = {
        "ref": {"type": "ref/prompt", "name": prompt},
        "argument": {"name": argument, "value": value},
    }
    if chosen:
        params["context"] = {"arguments": chosen}
    r = p.request("completion/complete", params)
    assert "result" in r, r
    return list(r["result"]["completion"]["values"])


def test_prompts_and_their_arguments_are_listed(prompts: ServerProcess) -> None:
    caps = prompts.request("server/discover")["result"]["capabilities"]
    assert "prompts" in caps and "completions" in caps
    listed = {p["name"]: p for p in prompts.request("prompts/list")["result"]["prompts"]}
    assert sorted(listed) == ["explain", "review"]
    review = listed["review"]
    assert review["title"] == "Code review"
    assert [(a["name"], a["required"]) for a in review["arguments"]] == [
        ("code", True),
        ("language", True),
        ("tone", False),
    ]
    assert review["arguments"][0]["description"] == "The code to review"


def test_review_renders_user_and_assistant_messages(prompts: ServerProcess) -> None:
    messages = get(prompts, "review", code="x = 1", language="python")["result"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == {
        "type": "text",
        "text": "Review this python code. Be gentle.\n\nx = 1",
    }
    direct = get(prompts, "review", code="x", language="go", tone="direct")["result"]
    assert "Be direct." in direct["messages"][0]["content"]["text"]


def test_arguments_are_checked_and_converted(prompts: ServerProcess) -> None:
    r = get(prompts, "explain", language="go", function="make", words="50")["result"]
    assert r["messages"][0]["content"]["text"] == "Explain go's make in at most 50 words."
    default = get(prompts, "explain", language="go", function="len")["result"]
    assert default["messages"][0]["content"]["text"].endswith("at most 100 words.")
    for bad in (
        {"language": "go", "function": "len", "words": "fifty"},
        {"code": "x", "language": "go", "tone": "rude"},
        {"language": "go"},
    ):
        name = "review" if "code" in bad else "explain"
        r = get(prompts, name, **bad)
        assert r["error"]["code"] == INVALID_PARAMS, (bad, r)


def test_a_completer_suggests_languages(prompts: ServerProcess) -> None:
    assert complete(prompts, "explain", "language", "") == ["go", "python", "rust"]
    assert complete(prompts, "review", "language", "R") == ["rust"]
    assert complete(prompts, "review", "language", "java") == []


def test_a_completer_sees_the_arguments_already_chosen(prompts: ServerProcess) -> None:
    assert complete(prompts, "explain", "function", "", language="go") == ["append", "len", "make"]
    assert complete(prompts, "explain", "function", "l", language="python") == ["len"]
    assert complete(prompts, "explain", "function", "c") == ["clone"]


def test_a_literal_argument_completes_itself(prompts: ServerProcess) -> None:
    assert sorted(complete(prompts, "review", "tone", "")) == ["direct", "gentle"]
    assert complete(prompts, "review", "tone", "d") == ["direct"]
    # code has neither a completer nor a closed set of values.
    assert complete(prompts, "review", "code", "x") == []
