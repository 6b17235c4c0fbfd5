"""The middleware chain runs once per request, not once per MRTR round: on a real stdio
process and a real ``mcpline run --http`` server, a later round whose sealed ``requestState``
verifies skips the middlewares that run once (a middleware with ``every_round`` sees each
round, ``mctx.retry`` true on the later ones), while a round with a forged, replayed or absent
state goes through the whole chain as a first round (rate limits count it)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpline.middleware import Chain, Middleware, MiddlewareContext, every_round
from mcpline.middleware._chain import CallNext, runs_every_round

from ..proc import FIXTURES, ServerProcess
from ..transports.http_util import MCPLINE, HttpServer, call

SERVER = FIXTURES / "rounds_server.py"
CAPS: dict[str, Any] = {"elicitation": {}}


class Rounds:
    """The rounds server on one transport, spoken to the same way on both."""

    def __init__(self, transport: str, spawn: Callable[..., ServerProcess], env: dict[str, str]):
        self.ids = 0
        self.proc: ServerProcess | None = None
        self.http: HttpServer | None = None
        if transport == "stdio":
            self.proc = spawn(SERVER, env=env)
        else:
            self.http = HttpServer([MCPLINE, "run", str(SERVER), "--http", "127.0.0.1:0"], env)

    def tool(self, name: str, **extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, **extra}
        if self.proc is not None:
            return self.proc.request("tools/call", params, caps=CAPS)
        assert self.http is not None
        self.ids += 1
        found: dict[str, Any] = call(self.http, self.ids, "tools/call", params, caps=CAPS).json
        return found

    def counts(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = self.tool("counts")["result"]["structuredContent"]
        return found

    def stop(self) -> None:
        if self.http is not None:
            assert self.http.stop() == 0
            assert self.http.stdout == b""


@pytest.fixture(params=("stdio", "http"))
def rounds(
    spawn: Callable[..., ServerProcess], request: pytest.FixtureRequest
) -> Iterator[Callable[[dict[str, str]], Rounds]]:
    started: list[Rounds] = []

    def start(env: dict[str, str]) -> Rounds:
        served = Rounds(request.param, spawn, env)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


def answer(first: dict[str, Any], value: str) -> dict[str, Any]:
    """The params of the next round: an answer to the one question, the state sent back."""
    result = first["result"]
    assert result["resultType"] == "input_required", result
    (key,) = result["inputRequests"]
    return {
        "inputResponses": {key: {"action": "accept", "content": {"value": value}}},
        "requestState": result["requestState"],
    }


def three_rounds(s: Rounds) -> dict[str, Any]:
    first = s.tool("three")
    second = s.tool("three", **answer(first, "Ada"))
    return s.tool("three", **answer(second, "Lovelace"))


def test_a_three_round_call_runs_the_chain_once(rounds: Callable[..., Rounds]) -> None:
    s = rounds({})
    done = three_rounds(s)
    assert done["result"]["content"][0]["text"] == "Ada Lovelace"
    assert s.counts() == {
        "once": ["three retry=False"],
        "every": ["three retry=False", "three retry=True", "three retry=True"],
    }


def test_a_forged_replayed_or_absent_state_runs_the_chain(rounds: Callable[..., Rounds]) -> None:
    s = rounds({})
    first = s.tool("three")
    later = answer(first, "Ada")
    body, _, mac = later["requestState"].rpartition(".")
    forged = {**later, "requestState": body + "." + ("0" if mac[0] != "0" else "1") + mac[1:]}
    assert s.tool("three", **forged)["error"]["code"] == -32602
    assert s.tool("three", **later)["result"]["resultType"] == "input_required"
    replayed = s.tool("three", **later)  # each state opens once
    assert replayed["error"]["code"] == -32602
    absent = s.tool("three", inputResponses=later["inputResponses"])
    assert absent["result"]["resultType"] == "input_required"  # the first question, answered
    assert s.counts() == {
        "once": ["three retry=False"] * 4,  # all but the verified round
        "every": ["three retry=False"] * 2 + ["three retry=True"] + ["three retry=False"] * 2,
    }


def test_rate_limits_count_requests_not_rounds(rounds: Callable[..., Rounds]) -> None:
    s = rounds({"MW_RATE": "0.001", "MW_BURST": "2"})
    assert three_rounds(s)["result"]["content"][0]["text"] == "Ada Lovelace"  # one token
    first = s.tool("three")  # the second token
    later = answer(first, "Ada")
    absent = s.tool("three", inputResponses=later["inputResponses"])
    assert absent["error"]["code"] == -32011  # claiming a later round does not dodge the limit
    forged = s.tool("three", **{**later, "requestState": "x" * 10 + "." + "0" * 64})
    assert forged["error"]["code"] == -32011
    assert s.tool("three", **later)["result"]["resultType"] == "input_required"


def test_a_state_sealed_for_another_principal_is_refused_after_the_chain_ran() -> None:
    srv = HttpServer([sys.executable, str(SERVER), "--http-auth"])
    try:

        def tool(token: str, **params: Any) -> dict[str, Any]:
            auth = {"Authorization": f"Bearer {token}"}
            body = {"name": "three", **params}
            found: dict[str, Any] = call(srv, 1, "tools/call", body, auth, caps=CAPS).json
            return found

        first = tool("alice-token")
        stolen = tool("bob-token", **answer(first, "Ada"))  # alice's state, bob's request
        assert stolen["error"]["code"] == -32602
        assert "issued to another client" in stolen["error"]["message"]
        second = tool("alice-token", **answer(first, "Ada"))  # bob's try did not use it up
        assert second["result"]["resultType"] == "input_required"
        third = tool("alice-token", **answer(second, "Lovelace"))
        assert third["result"]["content"][0]["text"] == "Ada Lovelace"
        counts = call(
            srv, 2, "tools/call", {"name": "counts"}, {"Authorization": "Bearer bob-token"}
        )
        # alice's request once, and bob's refused one: the chain ran for it
        assert counts.json["result"]["structuredContent"]["once"] == ["three retry=False"] * 2
    finally:
        assert srv.stop() == 0


# --- units ---------------------------------------------------------------------------------


class _Plain(Middleware):
    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        return await call_next(mctx)


class _Each(_Plain):
    every_round = True


@every_round
async def _each_fn(mctx: MiddlewareContext, call_next: CallNext) -> Any:
    return await call_next(mctx)


async def _plain_fn(mctx: MiddlewareContext, call_next: CallNext) -> Any:
    return await call_next(mctx)


def test_only_every_round_middlewares_are_planned_for_later_rounds() -> None:
    chain = Chain()
    for item in (_Plain(), _Each(), _each_fn, _plain_fn):
        chain.add(item)
    assert [runs_every_round(i) for i in chain.items] == [False, True, True, False]
    assert len(chain.plan("tools/call", "request")) == 4
    later = chain.plan("tools/call", "request", later=True)
    assert [getattr(f, "__self__", f).__class__.__name__ for f in later] == ["_Each", "function"]
