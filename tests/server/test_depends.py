"""``Depends(...)``: parameters filled by the framework, not the client (left out of the
input schema), nested, sync or async, with the context; ``once=True`` keeps one value per
request across MRTR re-runs (modern rounds and a legacy session's re-runs, on a real stdio
process); `override` replaces a dependency for tests; what cannot be filled fails at
registration."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Client, Context, Depends, Server
from mcpline.server.depends import override

from ..proc import FIXTURES, ServerProcess
from .test_legacy import call as legacy_call
from .test_legacy import initialize

SERVER = FIXTURES / "middleware_server.py"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def name_it(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"value": "Ada"}}


def make() -> tuple[Server, list[str]]:
    calls: list[str] = []
    server = Server("deps")

    def get_db() -> dict[str, str]:
        calls.append("db")
        return {"name": "prod"}

    async def get_user(ctx: Context, db: dict[str, str] = Depends(get_db)) -> str:
        calls.append("user")
        return f"{ctx.client_name}@{db['name']}"

    @server.tool
    def whoami(greeting: str, user: str = Depends(get_user)) -> str:
        """Greet the caller."""
        return f"{greeting}, {user}"

    @server.tool
    def every_run(ctx: Context, db: dict[str, str] = Depends(get_db)) -> str:
        """A dependency without once runs before every run of the body."""
        return f"{ctx.elicit('Name?', str).data} on {db['name']}"

    @server.tool
    def one_run(ctx: Context, db: dict[str, str] = Depends(get_db, once=True)) -> str:
        """With once=True it runs once per request."""
        return f"{ctx.elicit('Name?', str).data} on {db['name']}"

    server.get_db = get_db  # type: ignore[attr-defined]
    return server, calls


def test_dependencies_are_not_arguments_and_are_filled_nested() -> None:
    server, calls = make()

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client.memory(server) as client:
            listed = {t["name"]: t for t in (await client.request("tools/list"))["tools"]}
            return listed["whoami"], await client.call_tool("whoami", {"greeting": "hi"})

    tool, result = run(main())
    assert tool["inputSchema"]["properties"].keys() == {"greeting"}
    assert result["content"][0]["text"] == "hi, mcpline@prod"
    assert calls == ["db", "user"]


def test_once_keeps_one_value_across_the_rounds_of_a_request() -> None:
    server, calls = make()

    async def main() -> tuple[str, str]:
        async with Client.memory(server, on_elicit=name_it) as client:
            every = await client.call_tool("every_run")
            n_every = len(calls)
            once = await client.call_tool("one_run")
            assert (n_every, len(calls) - n_every) == (2, 1)
            return every["content"][0]["text"], once["content"][0]["text"]

    assert run(main()) == ("Ada on prod", "Ada on prod")


def test_override_replaces_a_dependency() -> None:
    server, calls = make()

    async def main() -> str:
        async with Client.memory(server) as client:
            with override(server.get_db, lambda: {"name": "test"}):  # type: ignore[attr-defined]
                got = await client.call_tool("whoami", {"greeting": "hey"})
        text: str = got["content"][0]["text"]
        return text

    assert run(main()) == "hey, mcpline@test"
    assert calls == ["user"]


def test_what_a_dependency_cannot_take_fails_at_registration() -> None:
    server = Server("bad")

    def needs_arg(x: int) -> int:
        return x

    def tool(v: int = Depends(needs_arg)) -> int:
        """Never registered."""
        return v

    with pytest.raises(TypeError, match="neither a Context nor a Depends"):
        server.add_tool(tool)
    with pytest.raises(TypeError):
        Depends(42)  # type: ignore[arg-type]


def test_once_on_a_real_process_in_both_eras(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER)
    first = p.call("depends", caps={"elicitation": {}})["result"]
    assert first["resultType"] == "input_required"
    (key,) = first["inputRequests"]
    params = {
        "name": "depends",
        "inputResponses": {key: {"action": "accept", "content": {"value": "Bo"}}},
        "requestState": first["requestState"],  # carries the dependency's value
    }
    done = p.request("tools/call", params, caps={"elicitation": {}})["result"]
    assert done["content"][0]["text"] == "Bo via mcpline-tests (dependency run 1)"
    initialize(p, {"elicitation": {}})

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        return {"result": {"action": "accept", "content": {"value": "Cy"}}}

    resp = legacy_call(p, "tools/call", {"name": "depends"}, answer)
    assert resp["result"]["content"][0]["text"] == "Cy via legacy-test (dependency run 2)"
