"""``complete``, templates in ``resources``, KEY=VALUE arguments, ``--version``, "did you
mean", server logs and Ctrl-C, each through the real ``mcpline`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Any

import pytest

from mcpline import __version__

from ..proc import FIXTURES
from .test_cli import MCPLINE, PY, SERVER, cli, one_line_error, run_in_pty

INPUT_SERVER = ["--", PY, str(FIXTURES / "cli_input_server.py")]
ERAS = ["modern", "legacy"]


def text_of(stdout: str) -> str:
    return str(json.loads(stdout)["content"][0]["text"])


# --- complete ----------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_complete_a_prompt_argument_with_context(era: str) -> None:
    plain = cli("complete", "prompt", "story", "topic", "d", "--era", era, *INPUT_SERVER)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["completion"]["values"] == ["dragons", "dogs", "dune"]
    ctx = cli("complete", "prompt", "story", "topic", "d", "--context", "style=long", *INPUT_SERVER)
    assert json.loads(ctx.stdout)["completion"]["values"] == [
        "dragons",
        "dogs",
        "dune",
        "deep time",
    ]


def test_complete_a_template_variable_and_an_empty_value() -> None:
    proc = cli("complete", "resource", "notes://{id}", "id", "1", *INPUT_SERVER)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["completion"]["values"] == ["1", "12"]
    empty = cli("complete", "resource", "notes://{id}", "id", *INPUT_SERVER)
    assert json.loads(empty.stdout)["completion"]["values"] == ["1", "2", "3", "12"]


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_complete_on_a_terminal_prints_one_value_a_line() -> None:
    code, shown = run_in_pty(["complete", "prompt", "story", "topic", "d", *INPUT_SERVER])
    assert code == 0, shown
    assert shown.split() == ["dragons", "dogs", "dune"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["prompt", "stroy", "topic"], "unknown prompt 'stroy'; did you mean 'story'?"),
        (["resource", "notes://{idd}", "id"], "did you mean 'notes://{id}'?"),
        (["prompt", "story", "topic", "--context", "style"], "expected KEY=VALUE, got 'style'"),
    ],
)
def test_complete_failures_are_one_line(args: list[str], fragment: str) -> None:
    proc = cli("complete", *args, *INPUT_SERVER)
    assert proc.returncode == 2 and proc.stdout == ""
    assert fragment in one_line_error(proc)


def test_complete_needs_the_completions_capability() -> None:
    proc = cli("complete", "prompt", "p", "a", *SERVER)
    assert proc.returncode == 2
    assert "this server offers no completions" in one_line_error(proc)


# --- resources lists templates -----------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_resources_lists_templates_too(era: str) -> None:
    proc = cli("resources", "--era", era, *INPUT_SERVER)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [r["uri"] for r in listed["resources"]] == ["notes://index"]
    assert [t["uriTemplate"] for t in listed["resourceTemplates"]] == ["notes://{id}"]


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_resources_table_marks_templates() -> None:
    code, shown = run_in_pty(["resources", *INPUT_SERVER], {**os.environ, "COLUMNS": "120"})
    assert code == 0, shown
    rows = {line.split()[1]: line for line in shown.splitlines() if "notes://" in line}
    assert "resource" in rows["notes://index"] and "template" in rows["notes://{id}"]


# --- KEY=VALUE arguments ---------------------------------------------------------------------


def test_key_value_arguments_are_typed_by_the_input_schema() -> None:
    proc = cli(
        "call", "typed", "count=3", "ratio=2", "flag=true", "tags=a", "tags=b",
        "nums=[1,2]", "nums=3", 'opts={"k": [1]}', "name=007", *INPUT_SERVER,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(text_of(proc.stdout)) == {
        "count": 3,
        "ratio": 2,
        "flag": True,
        "tags": ["a", "b"],
        "nums": [1, 2, 3],
        "opts": {"k": [1]},
        "name": "007",
    }


def test_key_value_words_apply_over_args_and_may_follow_options() -> None:
    proc = cli(
        "call", "typed", "--args", '{"count": 1, "name": "x"}', "--json", "name=y", "opts=null",
        *INPUT_SERVER,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(text_of(proc.stdout))
    assert (got["count"], got["name"], got["opts"]) == (1, "y", None)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["count=three"], "argument 'count' expects an integer, got 'three'"),
        (["count=1.5"], "argument 'count' expects an integer, got '1.5'"),
        (["count=1", "ratio=fast"], "argument 'ratio' expects a number, got 'fast'"),
        (["count=1", "ratio=inf"], "argument 'ratio' expects a number, got 'inf'"),
        (["count=1", "flag=yes"], "argument 'flag' expects a boolean (true or false), got 'yes'"),
        (["count=1", "opts=[1]"], "argument 'opts' expects a JSON object or null, got '[1]'"),
        (["count=1", "nums=x"], "each item of argument 'nums' expects an integer, got 'x'"),
        (["count=1", "count=2"], "argument 'count' is given twice (only an array may repeat)"),
        (["cout=1"], "tool 'typed' has no argument 'cout'; did you mean 'count'?"),
        (["zzz=1"], "tool 'typed' has no argument 'zzz' (it takes count, ratio, flag,"),
        (["count"], "expected KEY=VALUE, got 'count'"),
        (["=1"], "expected KEY=VALUE, got '=1'"),
    ],
)
def test_a_key_value_that_does_not_fit_is_a_usage_error(words: list[str], message: str) -> None:
    proc = cli("call", "typed", *words, *INPUT_SERVER)
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_line_error(proc).startswith(f"mcpline call: {message}")


def test_prompt_key_values_are_strings() -> None:
    proc = cli("get", "story", "topic=42", "style=long", *INPUT_SERVER)
    assert proc.returncode == 0, proc.stderr
    text = json.loads(proc.stdout)["messages"][0]["content"]["text"]
    assert text == "Tell a long story about 42."
    twice = cli("get", "story", "topic=a", "topic=b", *INPUT_SERVER)
    assert twice.returncode == 2 and "'topic' is given twice" in one_line_error(twice)


# --- --version and did you mean --------------------------------------------------------------


def test_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout == f"mcpline {__version__}\n"


def test_a_misspelt_subcommand_gets_a_suggestion() -> None:
    proc = cli("cal", "add")
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(
        "mcpline: error: unknown command 'cal'; did you mean 'call'?"
    )
    far = cli("zzzz")
    assert far.returncode == 2 and "(commands: run, call, tools," in far.stderr


@pytest.mark.parametrize("era", ERAS)
def test_a_misspelt_tool_gets_a_suggestion(era: str) -> None:
    proc = cli("call", "ad", "--era", era, *SERVER)
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_line_error(proc)
    assert line.startswith("mcpline call: unknown tool 'ad'; did you mean 'add'?")
    assert "-32602" in line  # what the server said is kept
    far = cli("call", "zzz", *SERVER)
    assert "unknown tool 'zzz'; the server has add, divide" in one_line_error(far)


def test_a_misspelt_tool_with_key_values_is_caught_before_calling() -> None:
    proc = cli("call", "typd", "count=1", "--verbose", *INPUT_SERVER)
    assert proc.returncode == 2
    assert (
        proc.stderr.splitlines()[-1] == "mcpline call: unknown tool 'typd'; did you mean 'typed'?"
    )
    assert '"method":"tools/call"' not in proc.stderr


def test_the_happy_path_lists_nothing() -> None:
    proc = cli("call", "add", "a=1", "b=2", "--verbose", *SERVER)
    assert proc.returncode == 0
    sent = [line for line in proc.stderr.splitlines() if line.startswith("→ ")]
    assert [json.loads(s[2:]).get("method") for s in sent] == [
        "server/discover",
        "tools/list",  # for the input schema of the KEY=VALUE words
        "tools/call",
    ]
    plain = cli("call", "add", "--args", '{"a": 1, "b": 2}', "--verbose", *SERVER)
    assert "tools/list" not in plain.stderr


@pytest.mark.parametrize("era", ERAS)
def test_a_misspelt_prompt_gets_a_suggestion(era: str) -> None:
    proc = cli("get", "stroy", "topic=x", "--era", era, *INPUT_SERVER)
    assert proc.returncode == 2
    assert one_line_error(proc).startswith(
        "mcpline get: unknown prompt 'stroy'; did you mean 'story'?"
    )


# --- server logs -----------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("flags", "shown"),
    [
        ([], ["info", "warning", "error"]),
        (["--log-level", "debug"], ["debug", "info", "warning", "error"]),
        (["--log-level", "warning"], ["warning", "error"]),
        (["-q"], []),
    ],
    ids=["default", "debug", "warning", "quiet"],
)
def test_server_logs_on_stderr(era: str, flags: list[str], shown: list[str]) -> None:
    proc = cli("call", "chatty", "--era", era, *flags, *INPUT_SERVER)
    assert proc.returncode == 0, proc.stderr
    assert text_of(proc.stdout) == "chatted"
    assert proc.stderr.splitlines() == [f"[{level}] chat: {level} message" for level in shown]


def test_quiet_asks_for_no_logs() -> None:
    proc = cli("call", "chatty", "-q", "--verbose", *INPUT_SERVER)
    assert "logLevel" not in proc.stderr and "[info]" not in proc.stderr
    both = cli("call", "chatty", "-q", "--log-level", "info", *INPUT_SERVER)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_server_log_text_is_made_safe_on_a_terminal() -> None:
    code, shown = run_in_pty(["call", "chatty", *INPUT_SERVER])
    assert code == 0
    assert "[warning] chat: warning message" in shown


# --- Ctrl-C ----------------------------------------------------------------------------------


def _interrupt(args: list[str], *, after: str = "", sig: int = signal.SIGINT) -> Any:
    """Start ``mcpline ARGS --verbose``, wait for ``after`` on its stderr (the wire), send
    ``sig``; return (exit code, stderr lines not from --verbose, the wire's outbound lines)."""
    proc = subprocess.Popen(
        [MCPLINE, *args[:-3], "--verbose", *args[-3:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if after in line:
                break
        time.sleep(0.2)
        proc.send_signal(sig)
        code = proc.wait(20)
        lines += proc.stderr.read().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # --verbose also narrates the shutdown's escalation when a busy machine keeps the server
    # from exiting within its grace after stdin closed: that is the library at work, not output.
    own = [
        x.rstrip("\n")
        for x in lines
        if x.strip()
        and not x.startswith(("→", "←", "["))
        and "did not exit after stdin closed" not in x
    ]
    wire = [x for x in lines if x.startswith("→ ")]
    return code, own, wire


@pytest.mark.posix_only(reason="SIGINT sent to the CLI")
@pytest.mark.parametrize("era", ERAS)
def test_ctrl_c_while_a_tool_sleeps(era: str) -> None:
    code, own, wire = _interrupt(
        ["call", "nap", "--era", era, *INPUT_SERVER], after='"method":"tools/call"'
    )
    assert code == 130
    assert own == ["cancelled: tools/call nap (the server was told)"]
    assert any("notifications/cancelled" in w for w in wire)


@pytest.mark.posix_only(reason="SIGTERM sent to the CLI")
def test_sigterm_is_the_same_line_and_143() -> None:
    code, own, _ = _interrupt(
        ["call", "nap", *INPUT_SERVER], after='"method":"tools/call"', sig=signal.SIGTERM
    )
    assert code == 143 and own == ["cancelled: tools/call nap (the server was told)"]


@pytest.mark.posix_only(reason="SIGINT sent to the CLI")
def test_ctrl_c_before_the_request_was_sent() -> None:
    code, own, _ = _interrupt(["call", "nap", *INPUT_SERVER], after='"method":"server/discover"')
    assert code == 130
    assert own[-1] in (
        "cancelled: tools/call nap (before it was sent)",
        "cancelled: tools/call nap (the server was told)",  # a slow machine: sent meanwhile
    )
    assert len(own) == 1 and "Traceback" not in "".join(own)


@pytest.mark.posix_only(reason="SIGINT sent to the CLI while it waits on a pty")
def test_ctrl_c_at_a_prompt_ends_on_its_own_line() -> None:
    from .ptys import PtySession

    with PtySession(["call", "profile", *INPUT_SERVER]) as term:
        term.expect("[c]ancel: ")
        term.proc.send_signal(signal.SIGINT)
        code, shown, out = term.finish()
    assert code == 130 and out == ""
    assert shown.rstrip().endswith(
        "[c]ancel: \ncancelled: tools/call profile (nothing was pending on the server)"
    )
