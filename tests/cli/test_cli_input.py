"""The server's questions (elicitation, sampling, roots) answered by ``mcpline call``: typed
on a real terminal (a pty), given with ``--input`` over pipes, or refused with exit 2."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ..proc import EXAMPLES, FIXTURES
from .ptys import PtySession
from .test_cli import PY, cli, one_line_error

INPUT_SERVER = ["--", PY, str(FIXTURES / "cli_input_server.py")]
ERAS = ["modern", "legacy"]
pty_only = pytest.mark.posix_only(reason="drives the CLI on a pseudo-terminal (pty)")


def text_of(stdout: str) -> str:
    """The first text block of the CallToolResult on stdout (stdout holds nothing else)."""
    return str(json.loads(stdout)["content"][0]["text"])


# --- on a terminal ---------------------------------------------------------------------------


@pty_only
@pytest.mark.parametrize("era", ERAS)
def test_a_form_is_asked_field_by_field_on_the_terminal(era: str) -> None:
    with PtySession(["call", "profile", "--era", era, *INPUT_SERVER]) as term:
        term.expect("The server asks: Tell me about you")
        term.expect("Fill in the form? [Y]es, [n]o (decline), [c]ancel: ")
        term.send("")
        term.expect("As on your badge\n")
        term.expect("Your name [name] (string, required): ")
        term.send("")
        term.expect("a value is required")
        term.send("Ada")
        term.expect("age (integer, 0 to 150, required): ")
        term.send("old")
        term.expect("'old' is not an integer; try again")
        term.send("200")
        term.expect("200 is greater than the maximum of 150; try again")
        term.send("36")
        term.expect("score (number, optional, default 2.5): ")
        term.send("")  # the default
        term.expect("subscribe (yes/no, optional, default yes): ")
        term.send("n")
        term.expect("email (text, email, optional): ")
        term.send("not-an-email")
        term.expect("try again")
        term.send("")  # optional: left out
        menu = term.expect("color (choose 1-3, required): ")
        assert "1) red" in menu and "3) blue" in menu
        term.send("4")
        term.expect("not one of the choices")
        term.send("2")
        menu = term.expect("size (choose 1-2, required): ")
        assert "1) Small (s)" in menu and "2) Large (l)" in menu
        term.send("large")  # a title works too
        menu = term.expect("tier (choose 1-2, required): ")
        assert "1) Free (f)" in menu and "2) Pro (p)" in menu
        term.send("2")
        menu = term.expect(
            "toppings (choose any of 1-3, separated by commas, at least 1, required): "
        )
        assert "2) egg" in menu
        term.send("1, kale")
        menu = term.expect("extras (choose any of 1-2, separated by commas, optional): ")
        assert "1) Extra one (x1)" in menu
        term.send("2")
        code, shown, out = term.finish()
    assert code == 0, shown
    answer = json.loads(text_of(out))
    assert answer == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "age": 36,
            "score": 2.5,
            "subscribe": False,
            "color": "green",
            "size": "l",
            "tier": "p",
            "toppings": ["ham", "kale"],
            "extras": ["x2"],
        },
    }
    assert "The server asks" in shown and "The server asks" not in out  # stdout: the result


@pty_only
@pytest.mark.parametrize(("key", "action"), [("n", "decline"), ("c", "cancel")])
def test_a_form_can_be_declined_or_cancelled(key: str, action: str) -> None:
    with PtySession(["call", "profile", *INPUT_SERVER]) as term:
        term.expect("[c]ancel: ")
        term.send(key)
        code, shown, out = term.finish()
    assert code == 0, shown
    assert json.loads(text_of(out)) == {"action": action}


@pty_only
def test_end_of_input_in_a_form_cancels_it() -> None:
    with PtySession(["call", "profile", *INPUT_SERVER]) as term:
        term.expect("[c]ancel: ")
        term.send("y")
        term.expect("(string, required): ")
        term.send_raw(b"\x04")  # Ctrl-D on an empty line
        code, shown, out = term.finish()
    assert code == 0, shown
    assert json.loads(text_of(out)) == {"action": "cancel"}


@pty_only
@pytest.mark.parametrize("era", ERAS)
def test_the_mrtr_example_greets_whoever_the_terminal_names(era: str) -> None:
    server = ["--", PY, str(EXAMPLES / "mrtr.py")]
    with PtySession(["call", "greet", "--era", era, *server], stdout_pipe=False) as term:
        term.expect("The server asks: What is your name?")
        term.expect("[c]ancel: ")
        term.send("y")
        term.expect("name (string, required): ")
        term.send("Grace")
        code, shown, _ = term.finish()
    assert code == 0, shown
    assert "Hello, Grace!" in shown


@pty_only
def test_two_rounds_of_questions() -> None:
    with PtySession(["call", "two_forms", *INPUT_SERVER]) as term:
        term.expect("The server asks: First?")
        term.send("")
        term.expect("a (string, required): ")
        term.send("one")
        term.expect("The server asks: Second?")
        term.send("")
        term.expect("b (string, required): ")
        term.send("two")
        code, shown, out = term.finish()
    assert code == 0, shown
    assert text_of(out) == "one+two"


def _browser(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A $BROWSER that records the URL it is given, and prints on its stdout."""
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "a browser talks on stdout"\necho "$1" > {opened}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "BROWSER": str(script)}, opened


@pty_only
@pytest.mark.parametrize("era", ERAS)
def test_url_mode_shows_the_url_opens_it_and_waits(tmp_path: Path, era: str) -> None:
    env, opened = _browser(tmp_path)
    with PtySession(["call", "login", "--era", era, *INPUT_SERVER], env=env) as term:
        term.expect("The server asks you to open a URL: Sign in to continue\n")
        term.expect("https://example.com/login?s=1\n")
        term.expect("(site: example.com)")
        term.expect("Open it in your browser? [Y]es, [s]elf (I'll open it), [n]o (decline), ")
        term.send("")
        term.expect("opened in your browser")
        term.expect("Press Enter once you have finished there (c to cancel): ")
        assert opened.read_text().strip() == "https://example.com/login?s=1"
        term.send("")
        code, shown, out = term.finish()
    assert code == 0, shown
    assert text_of(out) == "login accept"
    assert "a browser talks" in shown and "a browser talks" not in out


@pty_only
@pytest.mark.parametrize(("keys", "outcome"), [(["s", ""], "accept"), (["n"], "decline")])
def test_url_mode_without_the_browser(tmp_path: Path, keys: list[str], outcome: str) -> None:
    env, opened = _browser(tmp_path)
    with PtySession(["call", "login", *INPUT_SERVER], env=env) as term:
        term.expect("[c]ancel: ")
        for key in keys:
            term.send(key)
        code, shown, out = term.finish()
    assert code == 0, shown
    assert text_of(out) == f"login {outcome}" and not opened.exists()


@pty_only
@pytest.mark.parametrize("era", ERAS)
def test_sampling_shows_the_request_and_sends_the_typed_reply(era: str) -> None:
    with PtySession(["call", "haiku", "topic=snow", "--era", era, *INPUT_SERVER]) as term:
        term.expect("The server asks for a language model's reply (sampling), at most 40 tokens")
        term.expect("system: You are a poet.\n")
        term.expect("user: A haiku about snow\n")
        term.expect("end it with an empty line. An empty reply refuses the request.\n> ")
        term.send("white hush")
        term.expect("> ")
        term.send("on the pines")
        term.expect("> ")
        term.send("")
        code, shown, out = term.finish()
    assert code == 0, shown
    assert text_of(out) == "human: white hush\non the pines"


@pty_only
@pytest.mark.parametrize("era", ERAS)
def test_a_refused_sampling_request(era: str) -> None:
    with PtySession(["call", "haiku", "--era", era, *INPUT_SERVER]) as term:
        term.expect("> ")
        term.send("")
        code, shown, out = term.finish()
    if era == "legacy":  # the server got the user-rejected error (-1) and says so
        assert code == 1, shown
        result = json.loads(out)
        assert result["isError"] is True and "the user declined" in text_of(out)
    else:  # an input response cannot carry a refusal: the command ends
        assert code == 2 and out == "", shown
        assert "refused the server's sampling request" in shown


@pty_only
@pytest.mark.parametrize("era", ERAS)
def test_server_text_in_questions_and_logs_is_shown_literally(era: str) -> None:
    from .test_cli_safety import assert_terminal_safe

    escaped = r"clip\x1b]52;c;ZXZpbA==\x07 wipe\x1b[2K\x0dGONE bidi\u202eRTL [red]x[/red]"
    with PtySession(["call", "hostile", "--era", era, *INPUT_SERVER]) as term:
        term.expect(f"[warning] {escaped}: {escaped}\n")
        term.expect(f"The server asks: {escaped}\n")
        term.send("")
        label = escaped.replace(r"\x0d", " ")  # a label is folded to one line first
        term.expect(f"{label} [f] (string, optional): ")
        term.send("ok")
        term.expect(f"system: {escaped}\n")
        term.expect(f"user: {escaped}\n")
        term.expect("> ")
        term.send("fine")
        term.expect("> ")
        term.send("")
        code, shown, out = term.finish()
    assert code == 0, shown
    assert text_of(out) == "accept fine"
    assert_terminal_safe(shown)


# --- roots -----------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_roots_are_the_current_directory_or_each_root(tmp_path: Path, era: str) -> None:
    here = cli("call", "where", "--era", era, *INPUT_SERVER, cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert text_of(here.stdout) == tmp_path.resolve().as_uri()
    (tmp_path / "a").mkdir()
    chosen = cli(
        "call",
        "where",
        "--root",
        "a",
        "--root",
        "file:///srv",
        "--era",
        era,
        *INPUT_SERVER,
        cwd=tmp_path,
    )
    assert chosen.returncode == 0, chosen.stderr
    assert text_of(chosen.stdout) == f"{(tmp_path / 'a').resolve().as_uri()} file:///srv"


# --- --input over pipes ----------------------------------------------------------------------


def _with_input(tool: str, answers: Any, *extra: str, era: str = "modern", **kw: Any) -> Any:
    return cli(
        "call",
        tool,
        "--input",
        "-",
        "--era",
        era,
        *extra,
        *INPUT_SERVER,
        input=json.dumps(answers),
        **kw,
    )


@pytest.mark.parametrize("era", ERAS)
def test_input_answers_each_kind_in_order(tmp_path: Path, era: str) -> None:
    two = _with_input("two_forms", {"elicitation": [{"a": "x"}, {"b": "y"}]}, era=era)
    assert two.returncode == 0, two.stderr
    assert text_of(two.stdout) == "x+y"
    full = {"action": "accept", "content": {"a": "p"}}
    form = _with_input("two_forms", {"elicitation": [full, {"b": "q"}]}, era=era)
    assert text_of(form.stdout) == "p+q"
    declined = _with_input("profile", {"elicitation": ["decline"]}, era=era)
    assert json.loads(text_of(declined.stdout)) == {"action": "decline"}
    url = _with_input("login", {"elicitation": ["accept"]}, era=era)
    assert text_of(url.stdout) == "login accept"
    reply = _with_input("haiku", {"sampling": ["drops on tin"]}, era=era)
    assert text_of(reply.stdout) == "human: drops on tin"
    whole = {"role": "assistant", "model": "m1", "content": {"type": "text", "text": "t"}}
    assert text_of(_with_input("haiku", {"sampling": [whole]}, era=era).stdout) == "m1: t"
    roots = _with_input("where", {"roots": ["/srv/x", "file:///y"]}, era=era)
    assert text_of(roots.stdout) == "file:///srv/x file:///y"


def test_input_from_a_file(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"elicitation": [{"a": "1"}, {"b": "2"}]}))
    proc = cli("call", "two_forms", "--input", str(answers), *INPUT_SERVER)
    assert proc.returncode == 0, proc.stderr
    assert text_of(proc.stdout) == "1+2"


@pytest.mark.parametrize(
    ("tool", "answers", "fragment"),
    [
        ("two_forms", {"elicitation": [{"a": "x"}]}, 'elicitation "Second?" (fields: b), but'),
        ("profile", {"elicitation": [{"name": "Ada"}]}, '"age" is a required property'),
        ("profile", {"elicitation": ["maybe"]}, "an answer is an object or accept/decline/cancel"),
        ("haiku", {"sampling": []}, "no sampling answer left"),
        ("where", {"rots": []}, "unknown key 'rots'; did you mean 'roots'?"),
        ("where", [], "must hold a JSON object"),
    ],
)
def test_input_that_does_not_answer_is_exit_2(tool: str, answers: Any, fragment: str) -> None:
    proc = _with_input(tool, answers)
    assert proc.returncode == 2 and proc.stdout == ""
    assert fragment in one_line_error(proc)


def test_input_refusing_sampling() -> None:
    legacy = _with_input("haiku", {"sampling": [{"action": "decline"}]}, era="legacy")
    assert legacy.returncode == 1 and "the user declined" in text_of(legacy.stdout)
    modern = _with_input("haiku", {"sampling": [{"action": "decline"}]})
    assert modern.returncode == 2 and "refuses the server's sampling" in one_line_error(modern)


# --- no terminal, no --input -----------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("tool", "asked"),
    [
        ("profile", 'elicitation "Tell me about you" (fields: name, age,'),
        ("login", 'URL elicitation "Sign in to continue" (https://example.com/login?s=1)'),
        ("haiku", 'sampling ("A haiku about rain")'),
    ],
)
def test_a_question_without_terminal_or_input_is_exit_2(era: str, tool: str, asked: str) -> None:
    t0 = time.monotonic()
    proc = cli("call", tool, "--era", era, *INPUT_SERVER, stdin=subprocess.DEVNULL)
    assert time.monotonic() - t0 < 30  # never a hang
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_line_error(proc)
    assert f"the server asked for {asked}" in line
    assert "stdin is not a terminal: give the answers with --input FILE" in line


def test_help_documents_the_input_format() -> None:
    proc = cli("call", "--help")
    assert proc.returncode == 0
    assert '{"elicitation": [ANSWER, ...], "sampling": [REPLY, ...], "roots": [PATH, ...]}' in (
        proc.stdout
    )


# --- the deadline on a terminal --------------------------------------------------------------


@pty_only
def test_time_spent_answering_is_not_counted_against_the_timeout() -> None:
    # The deadline runs from the command's start: 6 s leave a busy machine the time to start
    # both processes and ask; then longer than that at a prompt.
    with PtySession(["call", "two_forms", "--timeout", "6", *INPUT_SERVER]) as term:
        term.expect("[c]ancel: ")
        time.sleep(6.5)
        term.send("")
        term.expect("a (string, required): ")
        term.send("slow")
        term.expect("[c]ancel: ")
        term.send("")
        term.expect("b (string, required): ")
        term.send("user")
        code, shown, out = term.finish()
    assert code == 0, shown
    assert text_of(out) == "slow+user"


@pty_only
def test_the_deadline_still_holds_on_a_terminal() -> None:
    t0 = time.monotonic()
    with PtySession(["call", "nap", "--timeout", "1", *INPUT_SERVER]) as term:
        code, shown, out = term.finish()
    assert code == 2 and out == "", shown
    assert "mcpline call: tools/call nap timed out: the deadline of 1s passed" in shown
    assert time.monotonic() - t0 < 30  # the tool naps 60 s
