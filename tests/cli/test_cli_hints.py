"""Usage hints of the client CLI: the fix is in the message (a server command without ``--``,
two servers at once, a server file that never serves, the shape of a one-value answer), and
``get --args`` sends strings, as prompt arguments are."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from ..client.util import QUICKSTART
from .test_cli import MCPLINE, PY, cli, one_line_error

QUICK = str(QUICKSTART)


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (["tools", PY, QUICK], ["tools", "--", PY, QUICK]),
        (["call", "add", "a=2", "b=3", PY, QUICK], ["call", "add", "a=2", "b=3", "--", PY, QUICK]),
        (
            ["call", "add", "--args", '{"a": 2, "b": 3}', PY, QUICK, "--json"],
            ["call", "add", "--args", '{"a": 2, "b": 3}', "--", PY, QUICK, "--json"],
        ),
    ],
    ids=["tools", "call-pairs", "call-args"],
)
def test_a_server_command_without_dash_dash_is_shown_with_it(
    args: list[str], fixed: list[str]
) -> None:
    proc = cli(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_line_error(proc)
    suggested = f"mcpline {shlex.join(fixed)}"
    assert line == f"mcpline {args[0]}: a server command goes after --: {suggested}"
    # The suggestion works as given.
    again = cli(*shlex.split(suggested)[1:])
    assert again.returncode == 0, again.stderr


def test_a_stray_word_with_a_server_given_is_not_called_a_server_command() -> None:
    proc = cli("call", "add", "oops", "--", PY, QUICK)
    assert proc.returncode == 2
    assert "expected KEY=VALUE, got 'oops'" in one_line_error(proc)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (["--config", "mcp.json", "--name", "calc"], "-- SERVER_CMD and --config"),
        (["--server", "tcp:127.0.0.1:9"], "-- SERVER_CMD and --server"),
    ],
)
def test_two_servers_at_once_exclude_each_other(given: list[str], named: str) -> None:
    proc = cli("tools", *given, "--", PY, QUICK)
    assert proc.returncode == 2
    assert one_line_error(proc) == f"mcpline tools: {named} exclude each other: give one server"


def test_a_server_file_that_never_serves_is_asked_about_server_run(tmp_path: Path) -> None:
    script = tmp_path / "forgot.py"
    script.write_text(
        "from mcpline import Server\n"
        'server = Server("forgot")\n'
        "@server.tool()\n"
        "def hi() -> str:\n"
        '    """Hi."""\n'
        '    return "hi"\n'
    )
    proc = cli("tools", "--", PY, str(script))
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "exited with code 0 before answering its first request" in line
    assert line.endswith("does the file call server.run()? (or serve it with: mcpline run FILE)")
    served = cli("tools", "--", MCPLINE, "run", str(script))
    assert served.returncode == 0 and json.loads(served.stdout)["tools"][0]["name"] == "hi"


SCALAR = """\
from mcpline import Context, Server

server = Server("scalar")


@server.tool()
async def pick(ctx: Context) -> str:
    \"\"\"Ask for a number.\"\"\"
    answer = await ctx.elicit("How many?", int)
    return f"got {answer.data!r}"


if __name__ == "__main__":
    server.run()
"""


@pytest.mark.parametrize(
    ("answers", "fragment"),
    [
        (None, "but stdin is not a terminal"),
        ([42], "an answer is an object or accept/decline/cancel"),
        ([{"count": 42}], "does not fit"),
    ],
    ids=["no-input", "bare-number", "wrong-key"],
)
def test_a_one_value_question_names_its_answer_shape(
    tmp_path: Path, answers: list[object] | None, fragment: str
) -> None:
    server = tmp_path / "scalar.py"
    server.write_text(SCALAR)
    given = [] if answers is None else ["--input", "-"]
    text = "" if answers is None else json.dumps({"elicitation": answers})
    proc = cli("call", "pick", *given, "--", PY, str(server), input=text)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert fragment in line and '(its answer is {"value": …})' in line, line


def test_a_one_value_question_answered_in_its_shape(tmp_path: Path) -> None:
    server = tmp_path / "scalar.py"
    server.write_text(SCALAR)
    text = json.dumps({"elicitation": [{"value": 42}]})
    proc = cli("call", "pick", "--input", "-", "--", PY, str(server), input=text)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"] == "got 42"


PROMPTS = """\
from mcpline import Server

server = Server("echo")


@server.prompt()
def show(n: str, flag: str, tags: str, name: str) -> str:
    \"\"\"Show the arguments as received.\"\"\"
    return repr((n, flag, tags, name))


if __name__ == "__main__":
    server.run()
"""


def test_get_args_values_are_sent_as_strings(tmp_path: Path) -> None:
    server = tmp_path / "prompts.py"
    server.write_text(PROMPTS)
    args = json.dumps({"n": 3, "flag": True, "tags": ["a", "b"], "name": "Ada"})
    proc = cli("get", "show", "--args", args, "--json", "--", PY, str(server))
    assert proc.returncode == 0, proc.stderr
    text = json.loads(proc.stdout)["messages"][0]["content"]["text"]
    assert text == repr(("3", "true", '["a", "b"]', "Ada"))
