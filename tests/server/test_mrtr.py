"""MRTR through the raw driver (in memory; state carried across processes on real ones): rounds,
sealed state, capability gating, validation."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from mcpline.client import Client, ServerError

from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

ELICIT_CAPS: dict[str, Any] = {"elicitation": {}}
ALL_CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
SERVER = FIXTURES / "mrtr_server.py"


@pytest.fixture
def srv(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(SERVER)


def call(
    p: ServerProcess,
    name: str,
    args: dict[str, Any] | None = None,
    *,
    caps: Any = ALL_CAPS,
    **extra: Any,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, **extra}
    if args is not None:
        params["arguments"] = args
    return p.request("tools/call", params, caps=caps)


def result(resp: dict[str, Any]) -> dict[str, Any]:
    assert "result" in resp, resp
    out: dict[str, Any] = resp["result"]
    return out


def error(resp: dict[str, Any], code: int) -> dict[str, Any]:
    assert "error" in resp, resp
    assert resp["error"]["code"] == code, resp
    out: dict[str, Any] = resp["error"]
    return out


def text_of(resp: dict[str, Any]) -> str:
    r = result(resp)
    assert r["resultType"] == "complete", r
    text: str = r["content"][0]["text"]
    return text


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def test_elicitation_round_trip_without_state(srv: ServerProcess) -> None:
    r1 = result(call(srv, "greet", caps=ELICIT_CAPS))
    assert r1["resultType"] == "input_required"
    assert "requestState" not in r1
    req = r1["inputRequests"]["who"]
    assert req["method"] == "elicitation/create"
    assert req["params"]["requestedSchema"]["required"] == ["name"]
    r2 = call(srv, "greet", caps=ELICIT_CAPS, inputResponses={"who": accept(name="Ada")})
    assert text_of(r2) == "Hello, Ada!"


def test_decline_completes(srv: ServerProcess) -> None:
    r = call(srv, "greet", caps=ELICIT_CAPS, inputResponses={"who": {"action": "decline"}})
    assert text_of(r) == "No name (decline)."


def test_multi_round_with_changing_state(srv: ServerProcess) -> None:
    r1 = result(call(srv, "multi", {"topic": "art"}, caps=ELICIT_CAPS))
    s1 = r1["requestState"]
    assert list(r1["inputRequests"]) == ["step1"]
    r2 = result(
        call(
            srv,
            "multi",
            {"topic": "art"},
            caps=ELICIT_CAPS,
            requestState=s1,
            inputResponses={"step1": accept(name="Ada")},
        )
    )
    assert r2["resultType"] == "input_required"
    s2 = r2["requestState"]
    assert s2 != s1 and list(r2["inputRequests"]) == ["step2"]
    r3 = call(
        srv,
        "multi",
        {"topic": "art"},
        caps=ELICIT_CAPS,
        requestState=s2,
        inputResponses={"step2": accept(color="blue")},
    )
    assert text_of(r3) == "Ada likes blue (art)"


def _count(srv: ServerProcess) -> int:
    count: int = result(call(srv, "call_count"))["structuredContent"]["result"]
    return count


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s + "-TAMPERED",
        lambda s: s[:-2] + ("00" if s[-2:] != "00" else "11"),
        lambda s: s[:10] + ("A" if s[10] != "A" else "B") + s[11:],
        lambda s: s.split(".")[0],
        lambda s: s.replace("e", "E"),
    ],
)
def test_tampered_state_never_reaches_the_handler(
    srv: ServerProcess, mutate: Callable[[str], str]
) -> None:
    state = result(call(srv, "counted", {"n": 1}))["requestState"]
    before = _count(srv)
    err = error(
        call(
            srv,
            "counted",
            {"n": 1},
            requestState=mutate(state),
            inputResponses={"c": accept(go=True)},
        ),
        -32602,
    )
    assert "requestState" in err["message"]
    assert _count(srv) == before
    assert (
        text_of(
            call(
                srv, "counted", {"n": 1}, requestState=state, inputResponses={"c": accept(go=True)}
            )
        )
        == "counted state n=1"
    )


def test_state_is_bound_to_tool_and_arguments(srv: ServerProcess) -> None:
    state = result(call(srv, "counted", {"n": 1}))["requestState"]
    before = _count(srv)
    err = error(call(srv, "counted", {"n": 2}, requestState=state), -32602)
    assert "other parameters" in err["message"]
    err = error(call(srv, "greet", requestState=state), -32602)
    assert "other parameters" in err["message"]
    assert _count(srv) == before


def test_state_is_bound_to_the_method(srv: ServerProcess) -> None:
    state = result(call(srv, "counted", {"n": 1}))["requestState"]
    # Same salient params on prompts/get: only the method differs.
    params = {"name": "counted", "arguments": {"n": 1}, "requestState": state}
    err = error(srv.request("prompts/get", params, caps=ALL_CAPS), -32602)
    assert "tools/call" in err["message"]
    # prompts/get asks for input through the same machinery.
    r = result(srv.request("prompts/get", {"name": "p"}, caps=ALL_CAPS))
    assert r["resultType"] == "input_required"
    r = result(
        srv.request(
            "prompts/get",
            {"name": "p", "inputResponses": {"topic": accept(topic="x")}},
            caps=ALL_CAPS,
        )
    )
    assert r["messages"][0]["content"]["text"] == "Prompt about x"


def test_resource_read_asks_and_its_state_is_bound_to_the_uri(srv: ServerProcess) -> None:
    r1 = result(srv.request("resources/read", {"uri": "guarded://note/1"}, caps=ELICIT_CAPS))
    assert r1["resultType"] == "input_required"
    assert r1["inputRequests"]["confirm"]["params"]["message"] == "Show note 1?"
    state = r1["requestState"]
    answers = {"confirm": accept(ok=True)}
    done = result(
        srv.request(
            "resources/read",
            {"uri": "guarded://note/1", "requestState": state, "inputResponses": answers},
            caps=ELICIT_CAPS,
        )
    )
    assert done["resultType"] == "complete"
    assert done["contents"][0]["text"] == "note 1: ok=True state={'id': '1'}"
    other = srv.request(
        "resources/read",
        {"uri": "guarded://note/2", "requestState": state, "inputResponses": answers},
        caps=ELICIT_CAPS,
    )
    assert "other parameters" in error(other, -32602)["message"]
    on_tool = call(srv, "counted", {"n": 1}, requestState=state)
    error(on_tool, -32602)


def test_expired_state(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER, env={"STATE_TTL": "1"})
    state = result(call(p, "counted", {"n": 1}))["requestState"]
    time.sleep(2.1)
    err = error(call(p, "counted", {"n": 1}, requestState=state), -32602)
    assert "expired" in err["message"]


@pytest.mark.driver("process")  # two processes, two random keys
def test_state_from_another_process_is_rejected(spawn: Callable[..., ServerProcess]) -> None:
    a, b = spawn(SERVER), spawn(SERVER)
    state = result(call(a, "counted", {"n": 1}))["requestState"]
    err = error(call(b, "counted", {"n": 1}, requestState=state), -32602)
    assert "integrity check" in err["message"]
    assert text_of(call(a, "counted", {"n": 1}, requestState=state)) == "counted state n=1"


@pytest.mark.driver("process")  # a restarted process
def test_shared_key_lets_a_restarted_server_accept_state(
    spawn: Callable[..., ServerProcess],
) -> None:
    env = {"MCPLINE_STATE_KEY": "a-deployment-wide-secret-key"}
    a = spawn(SERVER, env=env)
    state = result(call(a, "counted", {"n": 3}))["requestState"]
    a.stop()
    b = spawn(SERVER, env=env)
    r = call(b, "counted", {"n": 3}, requestState=state, inputResponses={"c": accept(go=True)})
    assert text_of(r) == "counted state n=3"


def test_state_must_be_a_string(srv: ServerProcess) -> None:
    err = error(call(srv, "counted", {"n": 1}, requestState={"n": 1}), -32602)
    assert "requestState must be a string" in err["message"]


# --- capabilities ---------------------------------------------------------------------------


def test_undeclared_elicitation_is_32021(srv: ServerProcess) -> None:
    err = error(call(srv, "greet", caps={}), -32021)
    assert err["data"]["requiredCapabilities"] == {"elicitation": {}}


def test_url_mode_needs_elicitation_url(srv: ServerProcess) -> None:
    err = error(call(srv, "url_login", caps={"elicitation": {}}), -32021)
    assert err["data"]["requiredCapabilities"] == {"elicitation": {"url": {}}}
    r = result(call(srv, "url_login", caps={"elicitation": {"url": {}}}))
    assert r["inputRequests"]["login"]["params"]["mode"] == "url"


def test_url_only_client_cannot_get_a_form(srv: ServerProcess) -> None:
    err = error(call(srv, "greet", caps={"elicitation": {"url": {}}}), -32021)
    assert err["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
    assert (
        result(call(srv, "greet", caps={"elicitation": {"form": {}}}))["resultType"]
        == "input_required"
    )


def test_handler_can_do_without(srv: ServerProcess) -> None:
    assert text_of(call(srv, "maybe_sample", caps={})) == "no sampling: used a default"
    r = result(call(srv, "maybe_sample", caps={"sampling": {}}))
    assert r["inputRequests"]["n"]["method"] == "sampling/createMessage"


def test_drop_undeclared_requests(srv: ServerProcess) -> None:
    r = result(call(srv, "drop_undeclared", caps={"sampling": {}}))
    assert [v["method"] for v in r["inputRequests"].values()] == ["sampling/createMessage"]
    r = result(call(srv, "drop_undeclared", caps={"elicitation": {}, "sampling": {}}))
    assert sorted(r["inputRequests"]) == ["e", "s"]
    err = error(call(srv, "drop_undeclared", caps={}), -32021)
    assert err["data"]["requiredCapabilities"] == {"elicitation": {}, "sampling": {}}


# --- responses ------------------------------------------------------------------------------


def test_missing_response_asks_again(srv: ServerProcess) -> None:
    r = result(call(srv, "greet", caps=ELICIT_CAPS, inputResponses={"wrong_key": accept(name="x")}))
    assert r["resultType"] == "input_required" and "who" in r["inputRequests"]


def test_unknown_extra_responses_are_ignored(srv: ServerProcess) -> None:
    r = call(
        srv,
        "greet",
        caps=ELICIT_CAPS,
        inputResponses={"who": accept(name="Ada"), "unknown_extra_key": {"x": 1}, "another": {}},
    )
    assert text_of(r) == "Hello, Ada!"


@pytest.mark.parametrize(
    "responses",
    [
        None,
        [],
        "x",
        {"who": 12345},
        {"who": None},
        {"who": {"action": "maybe"}},
        {"who": {"action": ["accept"]}},
        {"who": {"action": {"accept": True}}},
        {"who": {"content": {"name": "x"}}},
        {"who": {"action": "accept", "content": {"name": {"nested": 1}}}},
        {"who": {"action": "accept", "content": "Ada"}},
    ],
)
def test_malformed_responses_are_32602(srv: ServerProcess, responses: Any) -> None:
    error(call(srv, "greet", caps=ELICIT_CAPS, inputResponses=responses), -32602)


def test_wrong_shape_for_the_recorded_method_is_32602(srv: ServerProcess) -> None:
    r1 = result(call(srv, "multi", caps=ELICIT_CAPS))
    sampling_answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    err = error(
        call(
            srv,
            "multi",
            caps=ELICIT_CAPS,
            requestState=r1["requestState"],
            inputResponses={"step1": sampling_answer},
        ),
        -32602,
    )
    assert "step1" in err["message"]


def test_unhashable_action_for_a_recorded_key_is_32602(srv: ServerProcess) -> None:
    # Checked by the framework before the handler runs (the key is in the sealed state).
    r1 = result(call(srv, "multi", caps=ELICIT_CAPS))
    err = error(
        call(
            srv,
            "multi",
            caps=ELICIT_CAPS,
            requestState=r1["requestState"],
            inputResponses={"step1": {"action": ["accept"]}},
        ),
        -32602,
    )
    assert "step1" in err["message"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"name": 5}, 'content/name: 5 is not of type "string"'),
        ({"username": "testuser"}, 'content: "name" is a required property'),
    ],
)
def test_content_that_does_not_fit_the_schema_is_32602_not_asked_again(
    srv: ServerProcess, content: dict[str, Any], problem: str
) -> None:
    first = result(call(srv, "greet", caps=ELICIT_CAPS))
    assert list(first["inputRequests"]) == ["who"]  # the one and only question
    bad = {"who": {"action": "accept", "content": content}}
    err = error(call(srv, "greet", caps=ELICIT_CAPS, inputResponses=bad), -32602)
    assert "inputResponses['who'] does not match the requested schema" in err["message"]
    assert problem in err["message"]
    assert err["data"] == {"inputKey": "who", "problems": [problem]}
    # declining needs no content, and a fitting answer still completes
    declined = {"who": {"action": "decline"}}
    assert text_of(call(srv, "greet", caps=ELICIT_CAPS, inputResponses=declined)) == (
        "No name (decline)."
    )


def test_several_inputs_at_once(srv: ServerProcess) -> None:
    r1 = result(call(srv, "all_three"))
    methods = {k: v["method"] for k, v in r1["inputRequests"].items()}
    assert methods == {
        "name": "elicitation/create",
        "llm": "sampling/createMessage",
        "roots": "roots/list",
    }
    answers = {
        "name": accept(name="Ada"),
        "llm": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]},
    }
    partial = result(
        call(
            srv,
            "all_three",
            requestState=r1["requestState"],
            inputResponses={"name": answers["name"]},
        )
    )
    assert partial["resultType"] == "input_required" and len(partial["inputRequests"]) == 3
    done = call(srv, "all_three", requestState=partial["requestState"], inputResponses=answers)
    assert text_of(done) == "Ada|hi|2|{'kind': 'all'}"


def test_returned_input_required_and_state_only(srv: ServerProcess) -> None:
    r = result(call(srv, "returns_input_required"))
    assert r["resultType"] == "input_required" and "ok" in r["inputRequests"]
    assert (
        text_of(call(srv, "returns_input_required", inputResponses={"ok": accept(ok=True)}))
        == "returned ok"
    )
    r = result(call(srv, "ask_state_only"))
    assert "inputRequests" not in r and isinstance(r["requestState"], str)
    assert text_of(call(srv, "ask_state_only", requestState=r["requestState"])) == "state again"


def test_only_three_methods_may_ask(srv: ServerProcess) -> None:
    err = error(srv.request("test/asks", {}), -32603)
    assert "cannot ask the client for input" in err["message"]
    listed = result(srv.request("tools/list", {}))
    assert listed["resultType"] == "complete"


# --- the capability rules themselves (sans-I/O) -------------------------------------------


def test_capability_rules_for_each_kind_of_request() -> None:
    from mcpline import elicit, elicit_url, list_roots, sample
    from mcpline.server.mrtr import InputRequest, can_ask, missing_capabilities

    form, url = elicit("m", {"x": str}), elicit_url("m", "https://example.com/x")
    plain = sample("hi", 5)
    with_tools = sample("hi", 5, tools=[{"name": "t", "inputSchema": {"type": "object"}}])
    with_context = sample("hi", 5, include_context="thisServer")
    none_context = sample("hi", 5, include_context="none")
    roots = list_roots()
    cases: list[tuple[dict[str, Any], InputRequest, bool]] = [
        ({}, form, False),
        ({"elicitation": {}}, form, True),
        ({"elicitation": {"form": {}}}, form, True),
        ({"elicitation": {"url": {}}}, form, False),
        ({"elicitation": {"form": {}, "url": {}}}, url, True),
        ({"elicitation": {}}, url, False),
        ({"elicitation": True}, form, False),
        ({"sampling": {}}, plain, True),
        ({"sampling": {}}, with_tools, False),
        ({"sampling": {"tools": {}}}, with_tools, True),
        ({"sampling": {}}, with_context, False),
        ({"sampling": {"context": {}}}, with_context, True),
        ({"sampling": {}}, none_context, True),
        ({"roots": {}}, roots, True),
        ({"roots": {"listChanged": True}}, roots, True),
        ({"sampling": {}}, roots, False),
    ]
    for caps, request, expected in cases:
        assert can_ask(caps, request) is expected, (caps, request)
    assert missing_capabilities({"sampling": {}}, [with_tools, with_context, roots]) == {
        "sampling": {"tools": {}, "context": {}},
        "roots": {},
    }
    # legacy revisions: no elicitation before 2025-06-18, no URL mode before 2025-11-25
    assert not can_ask({"elicitation": {}}, form, "2025-03-26")
    assert can_ask({"elicitation": {}}, form, "2025-06-18")
    assert not can_ask({"elicitation": {"url": {}}}, url, "2025-06-18")
    assert can_ask({"elicitation": {"url": {}}}, url, "2025-11-25")


def test_input_required_refuses_nonsense() -> None:
    from mcpline import InputRequired, elicit
    from mcpline.server.mrtr import InputRequest

    with pytest.raises(ValueError):
        InputRequired()
    with pytest.raises(TypeError):
        InputRequired({"k": {"method": "elicitation/create"}})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        InputRequired({"": elicit("m", {"x": str})})
    with pytest.raises(ValueError):
        InputRequest("tools/call", {})


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_our_client_answering_off_schema_is_asked_once_in_either_era(era: str) -> None:
    asked: list[dict[str, Any]] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"username": "u"}}

    async def main() -> Any:
        async with Client.stdio(sys.executable, [str(SERVER)], era=era, on_elicit=on_elicit) as c:
            try:
                return await c.call_tool("greet", timeout=30)
            except ServerError as exc:
                return exc

    outcome = asyncio.run(asyncio.wait_for(main(), 60))
    assert len(asked) == 1
    if era == "modern":
        assert isinstance(outcome, ServerError) and outcome.code == -32602
        assert "does not match the requested schema" in outcome.message
    else:
        assert outcome["isError"] is True
        assert "did not match the requested schema" in outcome["content"][0]["text"]


def test_elicit_shorthand_takes_python_types_and_property_schemas() -> None:
    from mcpline import elicit

    day = {"type": "string", "enum": ["mon", "tue"]}
    req = elicit("When?", {"day": day, "hour": int, "sure": bool}, required=["day"])
    assert req.params["requestedSchema"] == {
        "type": "object",
        "properties": {"day": day, "hour": {"type": "integer"}, "sure": {"type": "boolean"}},
        "required": ["day"],
    }
    with pytest.raises(TypeError, match="field 'when'"):
        elicit("When?", {"when": list})
    with pytest.raises(TypeError, match="field 'when'"):
        elicit("When?", {"when": ["not", "a", "schema"]})
