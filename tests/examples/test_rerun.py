"""examples/rerun.py: ``await ctx.elicit`` in rounds and ``ctx.remember`` across the re-run,
on the wire (modern) and through the client in both eras."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from mcpline import Client

from ..proc import EXAMPLES, ServerProcess

RERUN = EXAMPLES / "rerun.py"
ELICIT: dict[str, Any] = {"elicitation": {}}


def call(p: ServerProcess, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    resp = p.request("tools/call", {"name": name, "arguments": arguments, **extra}, caps=ELICIT)
    assert "result" in resp, resp
    result: dict[str, Any] = resp["result"]
    return result


def test_remembered_work_runs_once_although_the_handler_runs_twice(
    spawn: Callable[..., ServerProcess],
) -> None:
    p = spawn(RERUN)
    first = call(p, "refund", {"order_id": "A-1"})
    assert first["resultType"] == "input_required"
    ((key, request),) = first["inputRequests"].items()
    assert request["params"]["message"] == "Refund 42.5 EUR for A-1?"
    yes = {"action": "accept", "content": {"value": True}}
    done = call(
        p,
        "refund",
        {"order_id": "A-1"},
        inputResponses={key: yes},
        requestState=first["requestState"],
    )
    assert done["content"][0]["text"] == "Refund R-1 of 42.5 EUR sent."
    p.close_stdin()
    assert p.wait() == 0
    assert p.stderr.count("drafted refund") == 1, p.stderr


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_both_tools_through_the_client(era: str) -> None:
    stderr: list[str] = []
    asked: list[str] = []

    def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        if params["message"] == "Where to?":
            return {"action": "accept", "content": {"street": "1 Elm St", "city": "Oslo"}}
        if params["message"] == "Gift wrap?":
            return {"action": "accept", "content": {"value": "box"}}
        return {"action": "accept", "content": {"value": True}}

    async def main() -> list[str]:
        async with Client.stdio(
            sys.executable,
            [str(RERUN)],
            era=era,
            on_elicit=on_elicit,
            on_stderr=stderr.append,
            timeout=20,
        ) as client:
            texts = []
            for name, args in [
                ("refund", {"order_id": "A-1"}),
                ("refund", {"order_id": "A-2"}),
                ("ship", {"parcel": "Books"}),
            ]:
                result = await client.call_tool(name, args)
                texts.append(result["content"][0]["text"])
            return texts

    texts = asyncio.run(asyncio.wait_for(main(), 60))
    assert texts == [
        "Refund R-1 of 42.5 EUR sent.",
        "Refund R-2 of 42.5 EUR sent.",
        "Books goes standard to 1 Elm St, Oslo (box wrap).",
    ]
    assert asked == [
        "Refund 42.5 EUR for A-1?",
        "Refund 42.5 EUR for A-2?",
        "Where to?",
        "Gift wrap?",
    ]
    drafted = [line for line in stderr if "drafted refund" in line]
    assert drafted == ["drafted refund 1 for A-1", "drafted refund 2 for A-2"], stderr
