"""`mcpline run FILE[:OBJECT]` serves a Server defined in a file, over real pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..proc import EXAMPLES, ServerProcess

MCPLINE = str(Path(sys.executable).parent / "mcpline")

TWO_SERVERS = '''
from mcpline import Server

first = Server("first")
second = Server("second")


@first.tool()
def which() -> str:
    """Name this server."""
    return "first"


@second.tool()
def which2() -> str:
    """Name this server."""
    return "second"


if __name__ == "__main__":
    raise SystemExit("the __main__ block must not run under mcpline run")
'''


def serve(*args: str) -> ServerProcess:
    return ServerProcess([MCPLINE, "run", *args])


def finish(p: ServerProcess) -> None:
    p.close_stdin()
    assert p.wait() == 0
    p.stop()
    assert not p.problems, p.problems


def test_run_file_finds_the_server() -> None:
    p = serve(str(EXAMPLES / "quickstart.py"))
    try:
        info = p.request("server/discover")["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
        assert info["name"] == "calculator"
        assert p.call("add", {"a": 1, "b": 2})["result"]["structuredContent"] == {"result": 3.0}
        finish(p)
    finally:
        p.stop()


def test_run_file_colon_object(tmp_path: Path) -> None:
    script = tmp_path / "two.py"
    script.write_text(TWO_SERVERS)
    for obj, tool in (("first", "which"), ("second", "which2")):
        p = serve(f"{script}:{obj}")
        try:
            assert p.call(tool, {})["result"]["content"][0]["text"] == obj
            finish(p)
        finally:
            p.stop()


@pytest.mark.parametrize(
    ("target", "expect"),
    [
        ("{dir}/missing.py", "no such file"),
        ("{dir}/two.py", "several Servers"),
        ("{dir}/two.py:nope", "no Server named 'nope'"),
    ],
)
def test_run_reports_bad_targets(tmp_path: Path, target: str, expect: str) -> None:
    (tmp_path / "two.py").write_text(TWO_SERVERS)
    proc = subprocess.run(
        [MCPLINE, "run", target.format(dir=tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode != 0
    assert expect in proc.stderr.decode()
    assert proc.stdout == b""
