"""What a terminal shows, on a real pty: results pretty-printed (compact JSON on a pipe),
parameter types in the tools table, and a yes/no question asked as one prompt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .ptys import PtySession
from .test_cli import PY, cli

pytestmark = pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")

SERVER = """\
from typing import Literal

from mcpline import Context, Server

server = Server("shown")


@server.tool()
def stats(tags: list[str], level: Literal["low", "high"] = "low", limit: int | None = None) -> dict:
    \"\"\"Statistics.\"\"\"
    return {"tags": tags, "level": level, "nested": {"limit": limit}}


@server.tool()
async def delete(ctx: Context, name: str) -> str:
    \"\"\"Delete something, once the user says yes.\"\"\"
    answer = await ctx.elicit(f"Delete {name}?", bool)
    return f"{answer.action} {answer.data!r}"


if __name__ == "__main__":
    server.run()
"""


@pytest.fixture
def server(tmp_path: Path) -> list[str]:
    path = tmp_path / "shown.py"
    path.write_text(SERVER)
    return ["--", PY, str(path)]


def on_a_terminal(args: list[str]) -> tuple[int, str]:
    env = {**os.environ, "COLUMNS": "200"}
    with PtySession(args, stdout_pipe=False, env=env) as session:
        code, shown, _ = session.finish()
    return code, shown


def test_a_result_is_indented_on_a_terminal_and_compact_on_a_pipe(server: list[str]) -> None:
    args = ["call", "stats", "tags=a", "tags=b", *server]
    code, shown = on_a_terminal(args)
    assert code == 0, shown
    assert '{\n  "tags": [\n    "a",\n    "b"\n  ],\n  "level": "low",' in shown, shown
    piped = cli(*args)
    assert piped.returncode == 0
    assert "\n" not in piped.stdout.strip()  # one line of JSON
    assert json.loads(piped.stdout)["structuredContent"]["tags"] == ["a", "b"]


def test_the_tools_table_shows_parameter_types(server: list[str]) -> None:
    code, shown = on_a_terminal(["tools", *server])
    assert code == 0, shown
    flat = " ".join(shown.split())
    want = '(tags: array[string], level: "low" | "high" = "low", limit: integer | null = null)'
    assert want in flat, flat
    assert "(name: string)" in flat


@pytest.mark.parametrize(("typed", "said"), [("y", "accept True"), ("n", "accept False")])
def test_a_yes_no_question_is_one_prompt_worded_as_the_question(
    server: list[str], typed: str, said: str
) -> None:
    with PtySession(["call", "delete", "name=notes.txt", *server]) as session:
        before = session.expect("Delete notes.txt? [y]es, [n]o, [d]ecline, [c]ancel: ")
        assert "Fill in the form" not in before and "The server asks" not in before
        session.send(typed)
        code, shown, out = session.finish()
    assert code == 0, shown
    assert json.loads(out)["content"][0]["text"] == said
    assert "(yes/no)" not in shown  # no second prompt for the field


def test_a_yes_no_question_can_still_be_declined(server: list[str]) -> None:
    with PtySession(["call", "delete", "name=notes.txt", *server]) as session:
        session.expect("[c]ancel: ")
        session.send("maybe")
        session.expect("type y or n (or d to decline, c to cancel): ")
        session.send("d")
        code, shown, out = session.finish()
    assert code == 0, shown
    assert json.loads(out)["content"][0]["text"] == "decline None"
