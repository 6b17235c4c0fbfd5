"""The `mcpline` client CLI contract, run as real processes."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..client.util import FAKE, QUICKSTART, Fake
from ..proc import FIXTURES

MCPLINE = str(Path(sys.executable).with_name("mcpline"))
PY = sys.executable
SERVER = ["--", PY, str(QUICKSTART)]


def cli(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPLINE, *args], capture_output=True, text=True, timeout=timeout, **kw)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# --- call and exit codes ----------------------------------------------------------------


def test_call_success_prints_the_result_and_exits_0() -> None:
    proc = cli("call", "add", "--args", '{"a": 2, "b": 3}', *SERVER)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["structuredContent"] == {"result": 5.0}
    assert proc.stderr == ""


def test_call_tool_error_exits_1() -> None:
    proc = cli("call", "divide", "--args", '{"a": 1, "b": 0}', *SERVER)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["isError"] is True and "zero" in result["content"][0]["text"]


def test_protocol_error_exits_2_with_one_line() -> None:
    proc = cli("call", "nope", *SERVER)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "-32602" in one_line_error(proc)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["call", "add", "--args", "{not json", *SERVER], "not valid JSON"),
        (["call", "add", "--args", "[1]", *SERVER], "JSON object"),
        (["tools"], "give the server"),
        (["tools", "--server", "bogus:addr"], "bad address"),
        (["tools", "--", "/nonexistent/server"], "cannot start"),
        (["tools", "--server", "unix:/nonexistent/dir/s.sock"], "nothing is listening"),
    ],
)
def test_failures_exit_2_with_one_line(args: list[str], fragment: str) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    assert fragment in one_line_error(proc)


def test_timeout_exits_2(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    # The deadline runs from the command's start: long enough to send the call on a busy
    # machine, so that there is a call to cancel.
    env = {**os.environ, **fake.env}
    proc = cli("call", "slow", "--timeout", "4", "--", PY, *fake.argv, env=env)
    assert proc.returncode == 2 and "timed out" in one_line_error(proc)
    cancels = [m for m in fake.received() if m.get("method") == "notifications/cancelled"]
    assert len(cancels) == 1


# --- other commands -----------------------------------------------------------------------


def test_tools_and_discover() -> None:
    tools = cli("tools", *SERVER)
    assert tools.returncode == 0
    assert [t["name"] for t in json.loads(tools.stdout)["tools"]] == ["add", "divide"]
    disc = cli("discover", *SERVER)
    assert disc.returncode == 0
    info = json.loads(disc.stdout)
    assert info["era"] == "modern" and info["protocolVersion"] == "2026-07-28"
    assert info["serverInfo"]["name"] == "calculator" and "tools" in info["capabilities"]


def test_resources_read_prompts_get(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    env = {**os.environ, **fake.env}
    server = ["--", PY, *fake.argv]
    res = cli("resources", *server, env=env)
    assert res.returncode == 0 and json.loads(res.stdout)["resources"][0]["uri"] == "mem://a"
    read = cli("read", "mem://a", *server, env=env)
    assert read.returncode == 0 and json.loads(read.stdout)["contents"][0]["text"] == "hello from a"
    missing = cli("read", "mem://zzz", *server, env=env)
    assert missing.returncode == 2 and "-32602" in one_line_error(missing)
    prompts = cli("prompts", *server, env=env)
    assert prompts.returncode == 0 and json.loads(prompts.stdout)["prompts"][0]["name"] == "greet"
    got = cli("get", "greet", "--args", '{"who": "Ada"}', *server, env=env)
    assert got.returncode == 0
    assert json.loads(got.stdout)["messages"][0]["content"]["text"] == "Hello, Ada!"


def test_legacy_server_through_the_cli(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "legacy")
    proc = cli("discover", "--", PY, *fake.argv, env={**os.environ, **fake.env})
    assert proc.returncode == 0
    info = json.loads(proc.stdout)
    assert info["era"] == "legacy" and info["protocolVersion"] == "2025-11-25"


def test_verbose_shows_the_wire_on_stderr() -> None:
    proc = cli("call", "add", "--args", '{"a": 1, "b": 1}', "--verbose", *SERVER)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["structuredContent"] == {"result": 2.0}
    sent = [line for line in proc.stderr.splitlines() if line.startswith("→ ")]
    got = [line for line in proc.stderr.splitlines() if line.startswith("← ")]
    assert json.loads(sent[0][2:])["method"] == "server/discover"
    assert json.loads(got[-1][2:])["result"]["structuredContent"] == {"result": 2.0}


def test_config_file_selects_the_server(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "calc": {"command": PY, "args": [str(QUICKSTART)], "env": {"X_TEST": "1"}},
                    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
                }
            }
        )
    )
    proc = cli(
        "call", "add", "--args", '{"a": 1, "b": 2}', "--config", str(config), "--name", "calc"
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["structuredContent"] == {"result": 3.0}
    missing = cli("tools", "--config", str(config), "--name", "nope")
    assert missing.returncode == 2 and "no server named 'nope'" in one_line_error(missing)
    web = cli("tools", "--config", str(config), "--name", "web", "--timeout", "10")
    assert (
        web.returncode == 2
        and "nothing is listening on http://127.0.0.1:9/mcp" in one_line_error(web)
    )
    both = cli("tools", "--config", str(config), "--name", "calc", "--", PY, str(QUICKSTART))
    assert both.returncode == 2


@pytest.mark.posix_only(reason="a Unix socket listener, ended by a signal")
def test_server_address(tmp_path: Path) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mcpl-") as d:
        sock = f"unix:{d}/cli.sock"
        srv = subprocess.Popen(
            [MCPLINE, "run", str(QUICKSTART), "--listen", sock],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            assert srv.stderr is not None and b"listening on" in srv.stderr.readline()
            proc = cli("call", "add", "--args", '{"a": 4, "b": 4}', "--server", sock)
            assert proc.returncode == 0, proc.stderr
            assert json.loads(proc.stdout)["structuredContent"] == {"result": 8.0}
        finally:
            srv.send_signal(signal.SIGTERM)
            srv.wait(10)


@pytest.mark.linux_only(reason="SIGINT to the CLI, then /proc for the server's exit")
def test_listen_prints_json_lines_until_interrupted(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    proc = subprocess.Popen(
        [MCPLINE, "listen", "--", PY, *fake.argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **fake.env},
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        second = json.loads(proc.stdout.readline())
        assert first["method"] == "notifications/subscriptions/acknowledged"
        assert second["method"] == "notifications/tools/list_changed"
        server_pid = fake.pid()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    cancels = [m for m in fake.received() if m.get("method") == "notifications/cancelled"]
    listen = next(m for m in fake.received() if m.get("method") == "subscriptions/listen")
    assert [c["params"]["requestId"] for c in cancels] == [listen["id"]]
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{server_pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{server_pid}")


def test_listen_timeout_is_how_long_to_listen(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    t0 = time.monotonic()
    proc = cli("listen", "--timeout", "5", "--", PY, *fake.argv, env={**os.environ, **fake.env})
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0]["method"] == "notifications/subscriptions/acknowledged"
    assert lines[1]["method"] == "notifications/tools/list_changed"
    assert elapsed >= 5.0  # it listened the whole time, and then ended by itself
    cancels = [m for m in fake.received() if m.get("method") == "notifications/cancelled"]
    listen = next(m for m in fake.received() if m.get("method") == "subscriptions/listen")
    assert [c["params"]["requestId"] for c in cancels] == [listen["id"]]


def test_listen_timeout_before_the_listen_is_acknowledged_is_a_timeout(tmp_path: Path) -> None:
    mute = tmp_path / "mute.py"
    mute.write_text("import time\ntime.sleep(60)\n")
    proc = cli("listen", "--timeout", "1", "--", PY, str(mute))
    assert proc.returncode == 2
    assert "timed out: the deadline of 1s passed" in one_line_error(proc)


def test_listen_help_says_what_timeout_means() -> None:
    text = " ".join(cli("listen", "--help").stdout.split())
    assert "listen this long once the server acknowledged, then exit 0" in text
    assert "(default: until interrupted)" in text


# --- terminals ------------------------------------------------------------------------------


def run_in_pty(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal; return (exit code, everything shown)."""
    import pty  # POSIX only: imported here so that the module loads everywhere

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [MCPLINE, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    code = proc.wait(10)
    return code, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_terminal_gets_tables_and_json_flag_forces_json() -> None:
    env = {**os.environ, "COLUMNS": "120"}
    code, shown = run_in_pty(["tools", *SERVER], env)
    assert code == 0
    assert "add" in shown and "Add two numbers." in shown and '"inputSchema"' not in shown
    code, shown = run_in_pty(["tools", "--json", *SERVER], env)
    assert code == 0 and '"inputSchema"' in shown


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_terminal_shows_progress_bar_on_stderr(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    code, shown = run_in_pty(["call", "count", "--", PY, *fake.argv], {**os.environ, **fake.env})
    assert code == 0
    assert "█" in shown and "3/3" in shown and "counted" in shown


@pytest.mark.posix_only(reason="runs the CLI on a pseudo-terminal (pty)")
def test_terminal_rendering_of_malformed_results_is_exit_2_with_one_line(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "badtools")
    code, shown = run_in_pty(["tools", "--", PY, *fake.argv], {**os.environ, **fake.env})
    assert code == 2, shown
    assert "Traceback" not in shown
    lines = [line for line in shown.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("mcpline tools:"), shown


# --- demo ---------------------------------------------------------------------------------


def test_demo() -> None:
    proc = cli("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for fragment in (
        "era:          modern",
        "2026-07-28",
        "calculator 1.0.0",
        "add(a, b)",
        "result: 5.0",
        "Cannot divide by zero",
        "exited with code 0",
    ):
        assert fragment in out, out


def test_server_that_fails_at_startup_is_one_line_with_its_stderr(tmp_path: Path) -> None:
    bad, starts = tmp_path / "bad.py", tmp_path / "starts"
    bad.write_text(
        f"with open({str(starts)!r}, 'a') as f:\n    f.write('start\\n')\n"
        "import mcpline_no_such_module_anywhere\n"
    )
    proc = cli("tools", "--", PY, str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_line_error(proc)
    assert "before answering its first request" in line
    assert "ModuleNotFoundError: No module named 'mcpline_no_such_module_anywhere'" in line
    assert starts.read_text() == "start\n"  # started once: no restarts


SCHEMA_FAILS = """\
from mcpline import Server

server = Server("bad")


class Thing:
    pass


@server.tool()
def use(t: Thing) -> str:
    \"\"\"Use a thing.\"\"\"
    return "used"


if __name__ == "__main__":
    server.run()
"""


def test_startup_failure_names_the_exception_first_then_the_traceback_tail(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(SCHEMA_FAILS)
    proc = cli("tools", "--", PY, str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_line_error(proc)
    head, _, rest = line.partition("; stderr: ")
    assert head.endswith(
        "exited with code 1 before answering its first request (it never read its input)"
    )
    exception, _, tail = rest.partition("; traceback tail: ")
    assert exception.startswith("SchemaError: use: parameter 't': cannot derive a JSON Schema")
    assert exception.endswith("or pydantic models with pydantic installed"), exception
    assert f'File "{bad}", line 10, in <module>' in tail
    assert "SchemaError: use" not in tail  # said once, first


TIMEOUT_SERVER = str(FIXTURES / "timeout_server.py")


@pytest.mark.parametrize(
    ("command", "server", "flags"),
    [
        (["call", "nap"], [PY, TIMEOUT_SERVER, "sleep"], ""),
        (["tools"], [PY, TIMEOUT_SERVER, "mute"], ""),
        (["discover"], [PY, TIMEOUT_SERVER, "mute"], ""),
        (["call", "slow"], [PY, str(FAKE)], "ignore-eof,ignore-term"),
    ],
    ids=["tool-sleeps-60s", "never-answers-discover", "discover-never-answered", "stubborn"],
)
def test_timeout_is_an_overall_deadline(
    tmp_path: Path, command: list[str], server: list[str], flags: str
) -> None:
    fake = Fake(tmp_path, flags)
    if flags:
        server = [*server, flags]
    t0 = time.monotonic()
    proc = cli(*command, "--timeout", "1", "--", *server, env={**os.environ, **fake.env})
    wall = time.monotonic() - t0
    assert proc.returncode == 2 and "timed out" in one_line_error(proc)
    # 1 s of requests, then at most 1 s of stdin grace, 1 s after SIGTERM and the SIGKILL
    # Without the overall deadline these take 60 s or never end; a 3x slower machine: 9 s.
    assert wall <= 15.0, f"--timeout 1 took {wall:.1f}s"
