"""The Context FastMCP users recognise, over real pipes, in both eras.

``await ctx.info(...)``/``ctx.info(...)``, ``await ctx.report_progress(...)`` and
``await ctx.elicit(...)``/``ctx.elicit(...)`` (on MRTR: a modern client gets
``input_required`` results, a legacy one real ``elicitation/create`` requests),
``ctx.remember`` across the re-run, and the typed accessors.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from mcpline import Client, Context, ElicitResult, Server
from mcpline.server.context import DONE, Ready
from mcpline.server.signature.schema import elicitation_form

from ..proc import FIXTURES, ServerProcess
from .test_legacy import exchange, initialize, legacy_request

Spawn = Callable[..., ServerProcess]
SERVER = FIXTURES / "context_server.py"
LOG_KEY = "io.modelcontextprotocol/logLevel"
ELICIT_CAPS: dict[str, Any] = {"elicitation": {}}
LEVELS = ["debug", "info", "warning", "error", "notice"]


@pytest.fixture
def srv(spawn: Spawn) -> ServerProcess:
    return spawn(SERVER)


def text_of(resp: dict[str, Any]) -> str:
    assert "result" in resp, resp
    text: str = resp["result"]["content"][0]["text"]
    return text


# --- reporting: awaited in async tools, called in sync ones ----------------------------------


@pytest.mark.parametrize("tool", ["report_async", "report_sync"])
def test_reporting_methods_send_once_whether_awaited_or_not(srv: ServerProcess, tool: str) -> None:
    msg = srv.request_msg(
        "tools/call",
        {"name": tool, "arguments": {}},
        caps=None,
        progressToken="t",
        **{LOG_KEY: "debug"},
    )
    srv.send(msg)
    final, notes = srv.read_until(msg["id"])
    assert text_of(final) == "reported"
    logs = [n["params"] for n in notes if n["method"] == "notifications/message"]
    assert [entry["level"] for entry in logs] == LEVELS
    assert logs[-1] == {"level": "notice", "logger": "custom", "data": {"structured": True}}
    progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    assert progress == [
        {"progressToken": "t", "progress": 1, "total": 2, "message": "half"},
        {"progressToken": "t", "progress": 2, "total": 2},
    ]
    srv.close_stdin()
    assert srv.wait() == 0
    assert "await" not in srv.stderr and "Traceback" not in srv.stderr, srv.stderr


def test_the_returned_awaitables_are_already_done() -> None:
    async def main() -> None:
        await DONE
        assert await Ready(3) == 3
        result: ElicitResult[int] = ElicitResult("accept", 4, {"value": 4})
        assert (await result) is result and result.accepted

    asyncio.run(main())


# --- ctx.elicit on MRTR -----------------------------------------------------------------------


def test_modern_elicit_asks_in_rounds_and_keeps_earlier_answers(srv: ServerProcess) -> None:
    def call(**extra: Any) -> dict[str, Any]:
        params = {"name": "signup", "arguments": {}, **extra}
        resp = srv.request("tools/call", params, caps=ELICIT_CAPS)
        assert "result" in resp, resp
        result: dict[str, Any] = resp["result"]
        return result

    r1 = call()
    assert r1["resultType"] == "input_required"
    ((key1, req1),) = r1["inputRequests"].items()
    assert req1["method"] == "elicitation/create"
    assert req1["params"] == {
        "message": "Your name?",
        "requestedSchema": {
            "type": "object",
            "properties": {"value": {"type": "string"}},
            "required": ["value"],
        },
    }
    # The key is stable: a fresh first round asks under the same key.
    assert call()["inputRequests"].keys() == {key1}
    name = {"action": "accept", "content": {"value": "Ada"}}
    r2 = call(inputResponses={key1: name})
    ((key2, req2),) = r2["inputRequests"].items()
    assert key2 != key1
    assert req2["params"]["requestedSchema"]["properties"]["value"] == {"type": "integer"}
    # The retry carries only the latest answer; the name comes back from the sealed state.
    age = {"action": "accept", "content": {"value": 36}}
    r3 = call(inputResponses={key2: age}, requestState=r2["requestState"])
    assert r3["resultType"] == "complete"
    assert r3["content"][0]["text"] == "Ada is 36"
    # An answer off the form's schema is refused, naming the field (each state is good
    # for one retry: start again).
    state = call(inputResponses={key1: name})["requestState"]
    bad = srv.request(
        "tools/call",
        {
            "name": "signup",
            "arguments": {},
            "inputResponses": {key2: {"action": "accept", "content": {"value": "old"}}},
            "requestState": state,
        },
        caps=ELICIT_CAPS,
    )
    assert bad["error"]["code"] == -32602 and "content/value" in bad["error"]["message"]


def test_elicit_without_the_capability_is_32021(srv: ServerProcess) -> None:
    resp = srv.request("tools/call", {"name": "signup", "arguments": {}}, caps={})
    assert resp["error"]["code"] == -32021


def test_legacy_elicit_sends_real_elicitation_requests(srv: ServerProcess) -> None:
    initialize(srv, {"elicitation": {}})
    answers = iter([{"value": "Ada"}, {"value": 36}])

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        assert req["method"] == "elicitation/create"
        return {"result": {"action": "accept", "content": next(answers)}}

    rid = legacy_request(srv, "tools/call", {"name": "signup", "arguments": {}})
    resp, _, asked = exchange(srv, rid, answer)
    assert resp["result"]["content"][0]["text"] == "Ada is 36"
    assert [a["params"]["message"] for a in asked] == ["Your name?", "Your age?"]
    assert asked[1]["params"]["requestedSchema"]["properties"]["value"] == {"type": "integer"}


@dataclass
class Log:
    entries: list[Any]


def answer_everything(asked: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        message = params["message"]
        contents: dict[str, dict[str, Any]] = {
            "Your name?": {"value": "Ada"},
            "Your age?": {"value": 36},
            "Tell us about you": {"name": "Bo", "age": 4},
            "Which size?": {"value": "large"},
            "Which tone?": {"value": "cold"},
            "Which colour?": {"value": "red"},
        }
        if message == "Sure?":
            return {"action": "accept", "content": {"value": len(asked) == 2}}
        if "Confirm" in message:
            return {"action": "accept", "content": {"value": True}}
        return {"action": "accept", "content": contents.get(message, {"x": "X", "y": "Y"})}

    return on_elicit


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_every_context_form_in_either_era(era: str) -> None:
    """The same handlers answer a modern client (input_required results) and a legacy one
    (real elicitation/create requests): typed forms, choices, repeated questions, work kept
    with ctx.remember (run once though the handler runs twice), ctx.state_as, the typed
    lifespan and client name, resource URIs and completion order."""
    asked: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []

    progress: list[tuple[float, float | None, str | None]] = []

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client.stdio(
            sys.executable,
            [str(SERVER)],
            era=era,
            on_elicit=answer_everything(asked),
            log_level="debug",
            on_log=logs.append,
            timeout=20,
        ) as client:
            for tool in ("report_async", "report_sync"):
                result = await client.call_tool(tool, {}, on_progress=on_progress)
                out[tool] = result["content"][0]["text"]
            out["reports"] = [e["data"] for e in logs]
            logs.clear()
            for name, args in [
                ("signup", {}),
                ("profile", {}),
                ("pick", {}),
                ("confirm_twice", {}),
                ("order", {"item": "tea"}),
                ("order_sync", {"item": "tea"}),
                ("rounds", {}),
                ("who", {}),
            ]:
                asked.clear()
                result = await client.call_tool(name, args)
                out[name] = (result["content"][0]["text"], len(asked))
            out["note"] = (await client.read_resource("note://abc"))["contents"][0]["text"]
            out["here"] = (await client.read_resource("static://here"))["contents"][0]["text"]
            done = await client.complete(
                {"type": "ref/prompt", "name": "animal"}, {"name": "kind", "value": ""}
            )
            out["complete"] = done["completion"]["values"]
        return out

    out = asyncio.run(asyncio.wait_for(main(), 90))
    # Awaited (async tool) or not (sync tool): each log and progress report once, in order.
    assert out["report_async"] == out["report_sync"] == "reported"
    expected: list[Any] = []
    for kind in ("async", "sync"):
        expected += [f"{level} from {kind}" for level in LEVELS[:4]] + [{"structured": True}]
    assert out["reports"] == expected
    assert progress == [(1, 2, "half"), (2, 2, None)] * 2
    assert out["signup"] == ("Ada is 36", 2)
    assert out["profile"] == ("Bo (4) newsletter=False", 1)
    assert out["pick"] == ("Size.LARGE cold red", 3)
    assert out["confirm_twice"] == ("False True", 2)
    assert out["order"] == ("order-1 confirmed=True runs=1", 1)
    assert out["order_sync"] == ("sync-1 confirmed=True runs=1", 1)
    assert out["rounds"] == ("X 1 Y X", 2)
    assert out["who"][0].startswith("Welcome, mcpline ")
    assert out["note"] == "abc read as note://abc"
    assert out["here"] == "read as static://here"
    assert out["complete"] == ["zebra", "apple", "mango"]  # declaration order
    # The re-run rule, visible: the log before the questions went out once per run.
    assert [e["data"] for e in logs].count("starting signup") == 3


# --- in process: forms, typing, papercuts ----------------------------------------------------


@dataclass
class Signup:
    email: str
    plan: Literal["pro", "free"] = "free"
    seats: int | None = None


def test_elicitation_forms_from_types() -> None:
    form, convert = elicitation_form(Signup)
    assert form == {
        "type": "object",
        "properties": {
            "email": {"type": "string"},
            "plan": {"type": "string", "enum": ["pro", "free"], "default": "free"},
            "seats": {"type": "integer"},
        },
        "required": ["email"],
    }
    assert convert({"email": "a@b", "seats": 2}) == Signup("a@b", "free", 2)
    assert elicitation_form(None)[0] == {"type": "object", "properties": {}}
    choices, pick = elicitation_form(["a", "b"])
    assert choices["properties"]["value"] == {"type": "string", "enum": ["a", "b"]}
    assert pick({"value": "b"}) == "b"

    @dataclass
    class Nested:
        inner: Signup

    with pytest.raises(TypeError, match="field 'inner'"):
        elicitation_form(Nested)
    with pytest.raises(TypeError, match="cannot ask for"):
        elicitation_form(list[int])


def test_pydantic_models_make_forms_too() -> None:
    from pydantic import BaseModel, Field

    class Booking(BaseModel):
        guests: int = Field(ge=1, le=8, description="How many")
        vegetarian: bool = False

    form, convert = elicitation_form(Booking)
    assert form["properties"]["guests"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 8,
        "description": "How many",
    }
    assert form["required"] == ["guests"]
    assert convert({"guests": 2}) == Booking(guests=2)


def test_context_parameter_may_be_optional_or_generic() -> None:
    from mcpline.server._userfn import wants_context

    @dataclass
    class State:
        n: int

    assert wants_context(Context)
    assert wants_context(Context[State])
    assert wants_context(Context | None)
    assert wants_context(Context[State] | None)
    assert not wants_context(int | None)
    assert not wants_context(Context | int)

    server = Server("optional-ctx")

    @server.tool()
    def f(x: int, ctx: Context | None = None) -> str:
        """Takes the context when the framework calls it."""
        return f"{x} {ctx is not None and ctx.client_name}"

    async def main() -> str:
        async with Client.memory(
            server, timeout=5, client_info={"name": "me", "version": "1"}
        ) as c:
            result = await c.call_tool("f", {"x": 1})
            text: str = result["content"][0]["text"]
            return text

    assert "inputSchema" in server.tools["f"].definition
    assert set(server.tools["f"].definition["inputSchema"]["properties"]) == {"x"}
    assert asyncio.run(main()) == "1 me"


def test_client_name_is_a_string_even_when_the_client_sent_no_info(srv: ServerProcess) -> None:
    msg = srv.request_msg("tools/call", {"name": "who", "arguments": {}})
    del msg["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    srv.send(msg)
    final, _ = srv.read_until(msg["id"])
    assert text_of(final) == "Welcome, stranger "
    assert text_of(srv.call("who", {})) == "Welcome, mcpline-tests 0"
