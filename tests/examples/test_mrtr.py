"""examples/mrtr.py: one question with ``ctx.ask``, and two rounds with
``InputRequired(requests, state)``, on the wire (the raw driver, in memory) and through the client
(a real process)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Client

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

MRTR = EXAMPLES / "mrtr.py"
ELICIT: dict[str, Any] = {"elicitation": {}}
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602


@pytest.fixture
def mrtr(spawn: Callable[..., ServerProcess]) -> ServerProcess:
    return spawn(MRTR)


def call(p: ServerProcess, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return p.request("tools/call", {"name": name, "arguments": arguments, **extra}, caps=ELICIT)


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def test_greet_asks_then_answers(mrtr: ServerProcess) -> None:
    first = call(mrtr, "greet", {})["result"]
    assert first["resultType"] == "input_required"
    ask = first["inputRequests"]["who"]
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["requestedSchema"]["properties"] == {"name": {"type": "string"}}
    done = call(mrtr, "greet", {}, inputResponses={"who": accept(name="Ada")})["result"]
    assert done["resultType"] == "complete" and text(done) == "Hello, Ada!"
    declined = call(mrtr, "greet", {}, inputResponses={"who": {"action": "decline"}})["result"]
    assert text(declined) == "Hello, whoever you are!"


def test_greet_needs_a_client_that_can_elicit(mrtr: ServerProcess) -> None:
    r = mrtr.request("tools/call", {"name": "greet", "arguments": {}}, caps={})
    assert r["error"]["code"] == MISSING_CAPABILITY


def test_booking_takes_two_rounds_and_carries_the_day_in_the_state(mrtr: ServerProcess) -> None:
    args = {"guests": 4}
    round1 = call(mrtr, "book_table", args)["result"]
    assert set(round1["inputRequests"]) == {"day"} and "requestState" not in round1
    day = round1["inputRequests"]["day"]["params"]["requestedSchema"]["properties"]["day"]
    assert day["enum"] == ["friday", "saturday"]

    round2 = call(mrtr, "book_table", args, inputResponses={"day": accept(day="saturday")})
    result2 = round2["result"]
    assert result2["resultType"] == "input_required" and set(result2["inputRequests"]) == {"time"}
    time_ask = result2["inputRequests"]["time"]["params"]
    assert time_ask["message"] == "What time on saturday?"
    assert time_ask["requestedSchema"]["properties"]["time"]["enum"] == ["12:30", "20:00"]
    state = result2["requestState"]

    done = call(
        mrtr, "book_table", args, inputResponses={"time": accept(time="20:00")}, requestState=state
    )["result"]
    assert done["resultType"] == "complete"
    assert text(done) == "Booked a table for 4 on saturday at 20:00."
    # Each state is accepted once.
    again = call(
        mrtr, "book_table", args, inputResponses={"time": accept(time="20:00")}, requestState=state
    )
    assert again["error"]["code"] == INVALID_PARAMS


def test_a_time_not_free_that_day_never_reaches_the_tool(mrtr: ServerProcess) -> None:
    args = {"guests": 2}
    round2 = call(mrtr, "book_table", args, inputResponses={"day": accept(day="saturday")})
    state = round2["result"]["requestState"]
    # 19:00 is free on friday only: the answer breaks the requested schema, so -32602.
    wrong = call(
        mrtr, "book_table", args, inputResponses={"time": accept(time="19:00")}, requestState=state
    )
    assert wrong["error"]["code"] == INVALID_PARAMS and "content/time" in wrong["error"]["message"]


def test_a_tampered_state_never_reaches_the_tool(mrtr: ServerProcess) -> None:
    args = {"guests": 2}
    round2 = call(mrtr, "book_table", args, inputResponses={"day": accept(day="friday")})
    state = round2["result"]["requestState"]
    forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    r = call(
        mrtr, "book_table", args, inputResponses={"time": accept(time="19:00")}, requestState=forged
    )
    assert r["error"]["code"] == INVALID_PARAMS


def test_the_client_answers_every_round() -> None:
    asked: list[str] = []
    answers = {"What is your name?": {"name": "Grace"}, "Which day?": {"day": "friday"}}

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        message = params["message"]
        asked.append(message)
        content = answers.get(message, {"time": "21:30"})
        return {"action": "accept", "content": content}

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client.stdio(sys.executable, [str(MRTR)], on_elicit=on_elicit) as client:
            greeting = await client.call_tool("greet", {}, timeout=30)
            booking = await client.call_tool("book_table", {"guests": 3}, timeout=30)
            return greeting, booking

    greeting, booking = asyncio.run(asyncio.wait_for(main(), 60))
    assert text(greeting) == "Hello, Grace!"
    assert text(booking) == "Booked a table for 3 on friday at 21:30."
    assert asked == ["What is your name?", "Which day?", "What time on friday?"]
