"""One bound on input rounds (`mcpline.protocol.MAX_INPUT_ROUNDS`): a tool that never stops
asking gets as many rounds from mcpline's client as a legacy host gets questions through
``mcpline bridge --stdio``, and ``--max-rounds`` changes the bridge's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcpline import Client
from mcpline.errors import ProtocolError, ServerError
from mcpline.protocol import MAX_INPUT_ROUNDS

from .util import bridge_stdio_argv, http_server

pytestmark = pytest.mark.timeout(180)

NAGGING = """\
from mcpline import Context, InputRequired, Server, elicit, sample

server = Server("nagging")


@server.tool()
def nag(ctx: Context) -> str:
    \"\"\"Ask for a name and a completion, again and again.\"\"\"
    rounds = (ctx.state or {}).get("rounds", 0)
    raise InputRequired(
        {"name": elicit("Your name?", {"name": str}), "more": sample("Say more", 10)},
        {"rounds": rounds + 1},
    )
"""


class Host:
    """Input handlers that answer everything and count what they were asked."""

    def __init__(self) -> None:
        self.asked = {"elicitation": 0, "sampling": 0}

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked["elicitation"] += 1
        return {"action": "accept", "content": {"name": "Ada"}}

    def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked["sampling"] += 1
        return {
            "role": "assistant",
            "model": "human",
            "content": {"type": "text", "text": "more"},
        }

    def options(self) -> dict[str, Any]:
        return {"on_elicit": self.elicit, "on_sample": self.sample}


async def through_client(url: str) -> dict[str, int]:
    host = Host()
    async with Client.http(url, era="modern", **host.options()) as c:
        with pytest.raises(ProtocolError, match=f"after {MAX_INPUT_ROUNDS} rounds"):
            await c.call_tool("nag", {})
    return host.asked


async def through_bridge(url: str, *options: str) -> tuple[dict[str, int], ServerError]:
    host = Host()
    argv = bridge_stdio_argv(url, *options)
    async with Client.stdio(argv[0], argv[1:], era="legacy", **host.options()) as c:
        with pytest.raises(ServerError) as caught:
            await c.call_tool("nag", {})
    return host.asked, caught.value


def test_the_client_and_the_bridge_stop_a_nagging_tool_after_the_same_rounds(
    tmp_path: Path,
) -> None:
    server = tmp_path / "nagging.py"
    server.write_text(NAGGING)
    with http_server(server) as (url, _):

        async def main() -> None:
            expected = {"elicitation": MAX_INPUT_ROUNDS, "sampling": MAX_INPUT_ROUNDS}
            assert await through_client(url) == expected
            asked, err = await through_bridge(url)
            assert asked == expected
            assert err.code == -32603 and f"after {MAX_INPUT_ROUNDS} rounds" in err.message
            asked, err = await through_bridge(url, "--max-rounds", "2")
            assert asked == {"elicitation": 2, "sampling": 2}
            assert "after 2 rounds" in err.message

        asyncio.run(asyncio.wait_for(main(), 120))


def test_max_rounds_must_not_be_negative() -> None:
    import subprocess

    proc = subprocess.run(
        [*bridge_stdio_argv("http://127.0.0.1:9/mcp", "--max-rounds", "-1")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--max-rounds must be at least 0" in proc.stderr


def test_the_cli_bound_is_max_rounds(tmp_path: Path) -> None:
    """Enough answers for every round: the command ends at the bound, not for want of one."""
    import json
    import subprocess

    from ..transports.http_util import MCPLINE

    server = tmp_path / "nagging.py"
    server.write_text(NAGGING)
    plenty = MAX_INPUT_ROUNDS + 2
    answers = json.dumps({"elicitation": [{"name": "Ada"}] * plenty, "sampling": ["x"] * plenty})
    for given, rounds in (([], MAX_INPUT_ROUNDS), (["--max-rounds", "2"], 2)):
        proc = subprocess.run(
            [MCPLINE, "call", "nag", "--input", "-", *given, "--", MCPLINE, "run", str(server)],
            input=answers,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        assert f"still wanted input after {rounds} rounds" in proc.stderr, proc.stderr
