"""The everything fixture's MRTR surface through the raw driver (in memory).

One test per ``input-required-result-*`` conformance scenario, with the suite's requests and
client answers; every server line is checked against the 2026-07-28 schema by ``spawn``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

SUITE_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "The capital of France is Paris."},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


@pytest.fixture
def ev(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(EXAMPLES / "servers" / "everything.py")


def call(p: ServerProcess, tool: str, caps: Any = SUITE_CAPS, **extra: Any) -> dict[str, Any]:
    return p.request("tools/call", {"name": tool, "arguments": {}, **extra}, caps=caps)


def irr(resp: dict[str, Any]) -> dict[str, Any]:
    assert "result" in resp, resp
    result: dict[str, Any] = resp["result"]
    assert result["resultType"] == "input_required", resp
    return result


def complete_text(resp: dict[str, Any]) -> str:
    assert "result" in resp, resp
    assert resp["result"]["resultType"] == "complete", resp
    text: str = resp["result"]["content"][0]["text"]
    return text


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


# input-required-result-basic-elicitation
def test_basic_elicitation(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_elicitation"))
    assert "requestState" not in r
    req = r["inputRequests"]["user_name"]
    assert req["method"] == "elicitation/create"
    assert req["params"]["message"] == "What is your name?"
    assert req["params"]["requestedSchema"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    done = call(
        ev,
        "test_input_required_result_elicitation",
        inputResponses={"user_name": accept(name="Alice")},
    )
    assert complete_text(done) == "Hello, Alice!"


# input-required-result-result-type
def test_result_type_is_literally_present(ev: ServerProcess) -> None:
    ev.send(
        ev.request_msg(
            "tools/call",
            {"name": "test_input_required_result_elicitation"},
            caps=SUITE_CAPS,
            id=900,
        )
    )
    raw = None
    while raw is None:
        msg = ev.read()
        if msg.get("id") == 900:
            raw = msg
    assert raw["result"]["resultType"] == "input_required"


# input-required-result-missing-input-response
def test_missing_input_response_rerequests(ev: ServerProcess) -> None:
    r = irr(
        call(
            ev,
            "test_input_required_result_elicitation",
            inputResponses={"wrong_key": accept(name="x")},
        )
    )
    assert "user_name" in r["inputRequests"]


# input-required-result-ignore-extra-params
def test_ignore_extra_params(ev: ServerProcess) -> None:
    responses = {
        "user_name": accept(name="Alice"),
        "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        "another_unexpected": {"x": 1},
    }
    done = call(ev, "test_input_required_result_elicitation", inputResponses=responses)
    assert complete_text(done) == "Hello, Alice!"


# input-required-result-validate-input
@pytest.mark.parametrize("responses", [{"user_name": 12345}, None])
def test_validate_input(ev: ServerProcess, responses: Any) -> None:
    resp = call(ev, "test_input_required_result_elicitation", inputResponses=responses)
    assert resp.get("error", {}).get("code") == -32602, resp


# input-required-result-basic-sampling
def test_basic_sampling(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_sampling"))
    ((key, req),) = r["inputRequests"].items()
    assert req == {
        "method": "sampling/createMessage",
        "params": {
            "messages": [
                {
                    "role": "user",
                    "content": {"type": "text", "text": "What is the capital of France?"},
                }
            ],
            "maxTokens": 100,
        },
    }
    done = call(ev, "test_input_required_result_sampling", inputResponses={key: SAMPLED})
    assert complete_text(done) == "Sampling result: The capital of France is Paris."


# input-required-result-basic-list-roots
def test_basic_list_roots(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_list_roots"))
    assert r["inputRequests"] == {"roots_request": {"method": "roots/list", "params": {}}}
    done = call(
        ev, "test_input_required_result_list_roots", inputResponses={"roots_request": ROOTS}
    )
    assert complete_text(done) == "Found 1 root(s)"


# input-required-result-request-state
def test_request_state(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_request_state"))
    assert isinstance(r["requestState"], str)
    assert r["inputRequests"]["confirm"]["params"]["message"] == "Please confirm"
    done = call(
        ev,
        "test_input_required_result_request_state",
        requestState=r["requestState"],
        inputResponses={"confirm": accept(ok=True)},
    )
    assert "state-ok" in complete_text(done)
    # a state is accepted once
    replay = call(
        ev,
        "test_input_required_result_request_state",
        requestState=r["requestState"],
        inputResponses={"confirm": accept(ok=True)},
    )
    assert replay["error"]["code"] == -32602
    assert "already used" in replay["error"]["message"]
    # without the state, or with ok=false: asked again
    irr(
        call(
            ev,
            "test_input_required_result_request_state",
            inputResponses={"confirm": accept(ok=True)},
        )
    )
    fresh = irr(call(ev, "test_input_required_result_request_state"))
    irr(
        call(
            ev,
            "test_input_required_result_request_state",
            requestState=fresh["requestState"],
            inputResponses={"confirm": accept(ok=False)},
        )
    )


# input-required-result-multiple-input-requests
def test_multiple_input_requests(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_multiple_inputs"))
    methods = {k: v["method"] for k, v in r["inputRequests"].items()}
    assert methods == {
        "user_name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "client_roots": "roots/list",
    }
    assert r["inputRequests"]["greeting"]["params"]["maxTokens"] == 50
    answers = {
        "user_name": accept(name="Alice"),
        "greeting": {**SAMPLED, "content": {"type": "text", "text": "Hello there!"}},
        "client_roots": ROOTS,
    }
    partial = {"user_name": answers["user_name"]}
    again = irr(
        call(
            ev,
            "test_input_required_result_multiple_inputs",
            requestState=r["requestState"],
            inputResponses=partial,
        )
    )
    assert again["requestState"] != r["requestState"]
    done = call(
        ev,
        "test_input_required_result_multiple_inputs",
        requestState=again["requestState"],
        inputResponses=answers,
    )
    assert complete_text(done) == "Name: Alice; Greeting: Hello there!; Roots: 1"


# input-required-result-multi-round
def test_multi_round(ev: ServerProcess) -> None:
    r1 = irr(call(ev, "test_input_required_result_multi_round"))
    assert r1["inputRequests"]["step1"]["params"]["message"] == "Step 1: What is your name?"
    r2 = irr(
        call(
            ev,
            "test_input_required_result_multi_round",
            requestState=r1["requestState"],
            inputResponses={"step1": accept(name="Alice")},
        )
    )
    assert r2["requestState"] != r1["requestState"]
    assert (
        r2["inputRequests"]["step2"]["params"]["message"] == "Step 2: What is your favorite color?"
    )
    done = call(
        ev,
        "test_input_required_result_multi_round",
        requestState=r2["requestState"],
        inputResponses={"step2": accept(color="blue")},
    )
    assert complete_text(done) == "Multi-round complete for Alice who likes blue"
    # a used state is refused; a round-2 answer to a round-1 state restarts at round 1
    replay = call(
        ev,
        "test_input_required_result_multi_round",
        requestState=r2["requestState"],
        inputResponses={"step2": accept(color="blue")},
    )
    assert replay["error"]["code"] == -32602
    fresh = irr(call(ev, "test_input_required_result_multi_round"))
    again = irr(
        call(
            ev,
            "test_input_required_result_multi_round",
            requestState=fresh["requestState"],
            inputResponses={"step2": accept(color="blue")},
        )
    )
    assert "step1" in again["inputRequests"]


# input-required-result-tampered-state
def test_tampered_state(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_tampered_state"))
    state = r["requestState"]
    bad = call(
        ev,
        "test_input_required_result_tampered_state",
        requestState=state + "-TAMPERED",
        inputResponses={"confirm": accept(ok=True)},
    )
    assert bad["error"]["code"] == -32602
    good = call(
        ev,
        "test_input_required_result_tampered_state",
        requestState=state,
        inputResponses={"confirm": accept(ok=True)},
    )
    assert complete_text(good) == "integrity-ok: state verified"
    fresh = irr(call(ev, "test_input_required_result_tampered_state"))["requestState"]
    irr(call(ev, "test_input_required_result_tampered_state", requestState=fresh))


# input-required-result-capability-check
def test_capability_check(ev: ServerProcess) -> None:
    r = irr(call(ev, "test_input_required_result_capabilities", caps={"sampling": {}}))
    assert [v["method"] for v in r["inputRequests"].values()] == ["sampling/createMessage"]
    r2 = irr(call(ev, "test_input_required_result_capabilities", caps=SUITE_CAPS))
    assert sorted(r2["inputRequests"]) == ["elicit_input", "sample_input"]
    assert complete_text(call(ev, "test_input_required_result_capabilities", caps={})) == (
        "No supported capabilities declared"
    )
    done = call(
        ev,
        "test_input_required_result_capabilities",
        caps={"sampling": {}},
        requestState=r["requestState"],
        inputResponses={"sample_input": SAMPLED},
    )
    assert complete_text(done) == "capabilities-ok: received sample_input"


# input-required-result-non-tool-request
def test_prompt_asks_for_input(ev: ServerProcess) -> None:
    r = irr(
        ev.request("prompts/get", {"name": "test_input_required_result_prompt"}, caps=SUITE_CAPS)
    )
    req = r["inputRequests"]["user_context"]
    assert req["params"]["message"] == "What context should the prompt use?"
    done = ev.request(
        "prompts/get",
        {
            "name": "test_input_required_result_prompt",
            "inputResponses": {"user_context": accept(context="test context")},
        },
        caps=SUITE_CAPS,
    )
    assert done["result"]["resultType"] == "complete"
    assert done["result"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Prompt with context: test context"}}
    ]


# input-required-result-unsupported-methods
def test_not_on_unsupported_requests(ev: ServerProcess) -> None:
    for method in ("tools/list", "prompts/list", "resources/list", "server/discover"):
        resp = ev.request(method, {}, caps=SUITE_CAPS)
        assert resp["result"]["resultType"] == "complete", (method, resp)


# --- beyond the suite: replay, capability enforcement, test_missing_capability ---------------


def test_state_replay_on_another_method_or_tool(ev: ServerProcess) -> None:
    state = irr(call(ev, "test_input_required_result_request_state"))["requestState"]
    answers = {"confirm": accept(ok=True), "user_context": accept(context="x")}
    on_prompt = ev.request(
        "prompts/get",
        {
            "name": "test_input_required_result_prompt",
            "requestState": state,
            "inputResponses": answers,
        },
        caps=SUITE_CAPS,
    )
    assert on_prompt["error"]["code"] == -32602
    on_tool = call(
        ev, "test_input_required_result_tampered_state", requestState=state, inputResponses=answers
    )
    assert on_tool["error"]["code"] == -32602
    other_args = ev.request(
        "tools/call",
        {
            "name": "test_input_required_result_request_state",
            "arguments": {"x": 1},
            "requestState": state,
            "inputResponses": answers,
        },
        caps=SUITE_CAPS,
    )
    assert other_args["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("tool", "required"),
    [
        ("test_input_required_result_elicitation", {"elicitation": {}}),
        ("test_input_required_result_sampling", {"sampling": {}}),
        ("test_input_required_result_list_roots", {"roots": {}}),
    ],
)
def test_undeclared_capability_is_32021(
    ev: ServerProcess, tool: str, required: dict[str, Any]
) -> None:
    resp = call(ev, tool, caps={})
    assert resp["error"]["code"] == -32021
    assert resp["error"]["data"]["requiredCapabilities"] == required


def test_missing_capability_tool(ev: ServerProcess) -> None:
    resp = call(ev, "test_missing_capability", caps={})
    assert resp["error"]["code"] == -32021
    assert resp["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    assert complete_text(call(ev, "test_missing_capability", caps={"sampling": {}})) == "Success"


def test_listing_of_the_mrtr_surface(ev: ServerProcess) -> None:
    tools = {t["name"]: t for t in ev.request("tools/list")["result"]["tools"]}
    irr_ = "MRTR: returns InputRequiredResult with"
    expected = {
        "test_missing_capability": "Test tool requiring sampling",
        "test_input_required_result_elicitation": f"{irr_} elicitation request",
        "test_input_required_result_sampling": f"{irr_} sampling request",
        "test_input_required_result_list_roots": f"{irr_} roots/list request",
        "test_input_required_result_request_state": f"{irr_} requestState",
        "test_input_required_result_multiple_inputs": f"{irr_} multiple input requests",
        "test_input_required_result_multi_round": "MRTR: multi-round InputRequiredResult workflow",
        "test_input_required_result_tampered_state": (
            "MRTR: HMAC-signed requestState integrity test"
        ),
        "test_input_required_result_capabilities": (
            "MRTR: respects client capabilities in inputRequests"
        ),
    }
    for name, description in expected.items():
        assert tools[name]["description"] == description
        assert tools[name]["inputSchema"]["type"] == "object"
    prompts = {p["name"]: p for p in ev.request("prompts/list")["result"]["prompts"]}
    assert (
        prompts["test_input_required_result_prompt"]["description"]
        == "MRTR: prompt that requires elicitation input"
    )
