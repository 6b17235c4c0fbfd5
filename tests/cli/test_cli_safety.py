"""What the CLI shows of server-controlled text, and what it never asks or claims.

Server text on a terminal goes through `for_terminal` (escape sequences, controls and bidi
overrides shown as escapes, Rich markup shown literally); JSON on a pipe stays exact;
capabilities a server never declared are not asked for; a legacy server's stand-in listen
acknowledgement is not printed as if it had crossed the wire; config files may carry a BOM.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from mcpline.terminal import for_terminal, json_for_terminal

from ..client.util import QUICKSTART
from ..proc import FIXTURES
from .test_cli import MCPLINE, PY, cli, one_line_error, run_in_pty

TEXT_SERVER = ["--", PY, str(FIXTURES / "cli_text_server.py")]
HOSTILE = (
    "[/] [red]x[/red] [link=https://evil.example]here[/link] "
    "clip\x1b]52;c;ZXZpbA==\x07 "
    "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 "
    "wipe\x1b[2K\rGONE "
    "c1\x9b31m "
    "bidi\u202eRTL\u202c end"
)
"""What the fixture puts in its tool description, tool result, instructions and errors."""

VISIBLE = [
    "[/]",
    "[red]x[/red]",
    "[link=https://evil.example]here[/link]",
    r"clip\x1b]52;c;ZXZpbA==\x07",
    r"\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07",
    r"wipe\x1b[2K\x0dGONE",
    r"c1\x9b31m",
    r"bidi\u202eRTL\u202c",
]
"""HOSTILE as a terminal must show it (each piece has no space, so no table wraps it)."""

SGR = re.compile(r"\x1b\[[0-9;]*m")  # Rich's own colours and bold
RAW = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


def assert_terminal_safe(shown: str) -> None:
    """Nothing in ``shown`` but Rich's own SGR can act on a terminal (the pty turns each
    newline into CRLF, so only a carriage return not before a newline counts)."""
    leftover = RAW.findall(SGR.sub("", shown))
    assert leftover == [], (leftover, shown)


# --- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain é 中文\ttab\nline", "plain é 中文\ttab\nline"),
        ("a\r\nb", "a\nb"),
        ("keep\roverwrite", r"keep\x0doverwrite"),
        ("\x1b]52;c;ZXZpbA==\x07", r"\x1b]52;c;ZXZpbA==\x07"),
        ("\x1bP1$qm\x1b\\", r"\x1bP1$qm\x1b" + "\\"),
        ("\x00\x08\x7f\x85\x9b", r"\x00\x08\x7f\x85\x9b"),
        (
            "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
            "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069",
        ),
        ("lone \ud800", r"lone \ud800"),
        ("[/] [bold]", "[/] [bold]"),
    ],
)
def test_for_terminal(raw: str, shown: str) -> None:
    assert for_terminal(raw) == shown


def test_json_for_terminal_is_the_same_json_value() -> None:
    value = {"d": HOSTILE + "\ud800\u2066", "n": [1, "é"]}
    dumped = json_for_terminal(json.dumps(value, ensure_ascii=False, indent=2))
    assert json.loads(dumped) == value
    assert RAW.findall(dumped) == [] and "é" in dumped


# --- server text on a terminal ----------------------------------------------------------------


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
@pytest.mark.parametrize(
    "command",
    [["tools"], ["call", "hostile"], ["discover"], ["call", "missing"]],
    ids=["tools", "call", "discover", "server-error"],
)
def test_terminal_shows_hostile_server_text_literally(command: list[str]) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    code, shown = run_in_pty([*command, *TEXT_SERVER], env)
    assert code == (2 if command[-1] == "missing" else 0), shown
    assert "Traceback" not in shown and "MarkupError" not in shown
    assert_terminal_safe(shown)
    # An error is one line on stderr: its whitespace, the \r included, is folded to spaces.
    visible = [p.replace(r"\x0d", " ") for p in VISIBLE] if code == 2 else VISIBLE
    for piece in visible:
        assert piece in shown, (piece, shown)


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_json_forced_on_a_terminal_is_exact_and_safe() -> None:
    code, shown = run_in_pty(["call", "hostile", "--json", *TEXT_SERVER])
    assert code == 0
    assert_terminal_safe(shown)
    assert json.loads(shown)["content"][0]["text"] == HOSTILE


@pytest.mark.parametrize(
    ("command", "path"),
    [(["tools"], ("tools", 0, "description")), (["call", "hostile"], ("content", 0, "text"))],
)
def test_pipe_gets_exact_json(command: list[str], path: tuple[str | int, ...]) -> None:
    proc = cli(*command, *TEXT_SERVER)
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    for key in path:
        value = value[key]
    assert value == HOSTILE


# --- capabilities the server never declared ---------------------------------------------------


def _sent(stderr: str) -> list[str]:
    return [
        json.loads(line[2:]).get("method", "") for line in stderr.splitlines() if line[:2] == "→ "
    ]


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize(
    ("command", "method"), [("resources", "resources/list"), ("prompts", "prompts/list")]
)
def test_undeclared_list_is_not_asked_and_exits_0(era: str, command: str, method: str) -> None:
    proc = cli(command, "--verbose", "--era", era, "--", PY, str(QUICKSTART))
    assert proc.returncode == 0, proc.stderr
    empty: dict[str, list[object]] = (
        {"resources": [], "resourceTemplates": []} if command == "resources" else {command: []}
    )
    assert json.loads(proc.stdout) == empty
    assert f"this server offers no {command}" in proc.stderr
    sent = _sent(proc.stderr)
    assert sent[0] == ("server/discover" if era == "modern" else "initialize")
    assert method not in sent


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_undeclared_list_on_a_terminal_says_so() -> None:
    code, shown = run_in_pty(["resources", "--", PY, str(QUICKSTART)])
    assert code == 0, shown
    assert shown.strip() == "this server offers no resources (it declared no resources capability)"


@pytest.mark.parametrize(
    ("command", "method"),
    [(["read", "mem://a"], "resources/read"), (["get", "greet"], "prompts/get")],
)
def test_undeclared_read_or_get_is_exit_2_without_asking(command: list[str], method: str) -> None:
    proc = cli(*command, "--verbose", "--", PY, str(QUICKSTART))
    assert proc.returncode == 2
    assert "this server offers no" in proc.stderr.splitlines()[-1]
    assert method not in _sent(proc.stderr)
    quiet = cli(*command, "--", PY, str(QUICKSTART))
    assert "offers no" in one_line_error(quiet)


# --- listen on a legacy server ----------------------------------------------------------------


@pytest.mark.posix_only(reason="SIGINT sent to the CLI")
def test_legacy_listen_prints_only_what_arrived() -> None:
    proc = subprocess.Popen(
        [MCPLINE, "listen", "--", PY, str(FIXTURES / "cli_text_server.py"), "legacy"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = json.loads(proc.stdout.readline())
        assert first == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {},
        }
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert all(
            json.loads(line)["method"] == "notifications/tools/list_changed"
            for line in proc.stdout.read().splitlines()
        )
        err = proc.stderr.read()
        assert (
            err == "mcpline listen: legacy server: listening for notifications/tools/list_changed\n"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- config files ---------------------------------------------------------------------------


def test_config_file_with_a_utf8_bom(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"mcpServers": {"calc": {"command": PY, "args": [str(QUICKSTART)]}}}
    config.write_bytes(b"\xef\xbb\xbf" + json.dumps(entry).encode())
    proc = cli("call", "add", "--args", '{"a": 1, "b": 2}', "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"result": 3.0}
