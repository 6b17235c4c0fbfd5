"""completion/complete through the raw driver (in memory)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcpline.server.completion import Completion, shape

from ..proc import EXAMPLES, FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

Spawn = Callable[..., ServerProcess]


@pytest.fixture
def features(spawn: Spawn) -> ServerProcess:
    return spawn(FIXTURES / "features_server.py")


def complete(
    p: ServerProcess, ref: dict[str, Any], name: str, value: str, context: Any = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = context
    return p.request("completion/complete", params)


def prompt(name: str) -> dict[str, str]:
    return {"type": "ref/prompt", "name": name}


def template(uri: str) -> dict[str, str]:
    return {"type": "ref/resource", "uri": uri}


def test_capability_declared(features: ServerProcess) -> None:
    assert features.request("server/discover")["result"]["capabilities"]["completions"] == {}


def test_at_most_100_values_with_total_and_has_more(features: ServerProcess) -> None:
    c = complete(features, prompt("greet"), "name", "name")["result"]["completion"]
    assert len(c["values"]) == 100 and c["values"][0] == "name000"
    assert c["total"] == 150 and c["hasMore"] is True
    c = complete(features, prompt("greet"), "name", "name14")["result"]["completion"]
    assert c == {"values": [f"name14{i}" for i in range(10)], "total": 10, "hasMore": False}


def test_template_completer_sees_context(features: ServerProcess) -> None:
    r = complete(features, template("items://{id}"), "id", "4", {"arguments": {"x": "y"}})
    assert r["result"]["completion"] == {"values": ["40", "41"], "total": 20, "hasMore": True}


def test_context_arguments_and_request_context_reach_the_completer(features: ServerProcess) -> None:
    r = complete(features, prompt("rich"), "topic", "ow", {"arguments": {"other": "v"}})
    assert r["result"]["completion"]["values"] == ["ow|v|completion/complete"]


def test_closed_choices_complete_themselves(features: ServerProcess) -> None:
    c = complete(features, prompt("moody"), "mood", "s")["result"]["completion"]
    assert c == {"values": ["sad", "sleepy"], "total": 2, "hasMore": False}
    c = complete(features, template("colors://{color}/{shade}"), "shade", "")["result"]
    assert sorted(c["completion"]["values"]) == ["dark", "light"]
    c = complete(features, template("colors://{color}/{shade}"), "color", "G")["result"]
    assert c["completion"]["values"] == ["green"]
    # an open-ended argument without a completer: a valid, empty answer
    c = complete(features, prompt("described"), "subject", "a")["result"]["completion"]
    assert c["values"] == []


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"ref": prompt("nope"), "argument": {"name": "a", "value": ""}}, "Unknown prompt"),
        (
            {"ref": template("nope://{x}"), "argument": {"name": "x", "value": ""}},
            "Unknown resource",
        ),
        ({"ref": prompt("greet"), "argument": {"name": "zzz", "value": ""}}, "no argument"),
        ({"ref": template("items://{id}"), "argument": {"name": "q", "value": ""}}, "no argument"),
        ({"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}}, "ref.type"),
        ({"ref": prompt("greet")}, "argument"),
        ({"ref": prompt("greet"), "argument": {"name": "name", "value": 3}}, "argument"),
        (
            {"ref": prompt("greet"), "argument": {"name": "name", "value": ""}, "context": []},
            "context",
        ),
        ({"argument": {"name": "name", "value": ""}}, "ref"),
    ],
)
def test_bad_requests_are_32602(
    features: ServerProcess, params: dict[str, Any], fragment: str
) -> None:
    err = features.request("completion/complete", params)["error"]
    assert err["code"] == -32602
    assert fragment in err["message"]


def test_no_completion_handler_means_method_not_found(spawn: Spawn) -> None:
    quick = spawn(EXAMPLES / "quickstart.py")
    assert "completions" not in quick.request("server/discover")["result"]["capabilities"]
    r = complete(quick, prompt("x"), "a", "")
    assert r["error"]["code"] == -32601


def test_shape() -> None:
    assert shape(["a"]) == {"values": ["a"], "total": 1, "hasMore": False}
    assert shape(Completion(["a"])) == {"values": ["a"], "hasMore": False}
    assert shape(Completion(["a"], has_more=True)) == {"values": ["a"], "hasMore": True}
    big = shape(str(i) for i in range(250))
    assert len(big["values"]) == 100 and big["total"] == 250 and big["hasMore"]
    with pytest.raises(TypeError):
        shape("abc")
    with pytest.raises(TypeError):
        shape([1, 2])
