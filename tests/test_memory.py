"""The in-process driver (`tests.memory.MemoryServer`) judges lines exactly as the process
driver does, so a test moved onto it can still fail on a bad line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .memory import MemoryServer, ProcessOnly
from .proc import EXAMPLES, REPO, ServerProcess, python_server

# A server that breaks the rules on request: a banner line and a CRLF line written straight
# to its connection, and a tools/list result that does not fit the schema.
BAD_SERVER = r'''
from mcpline import Context, Server
from mcpline.server.eras import Method

server = Server("bad-memory-fixture")


@server.tool()
def write_raw(ctx: Context) -> str:
    """Write a banner and a CRLF-terminated message before the reply."""
    conn = ctx._exchange.peer
    conn.send(b"a banner\n")
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}'
    conn.send(note + b"\r\n")
    return "wrote"


async def _bad_list(ctx, params):
    return {"tools": "not a list"}


server._dispatch.methods["tools/list"] = Method(_bad_list)

if __name__ == "__main__":
    server.run()
'''


@pytest.fixture
def bad_server(tmp_path: Path) -> Path:
    path = tmp_path / "bad_server.py"
    path.write_text(BAD_SERVER)
    return path


def _misbehave(p: ServerProcess) -> list[str]:
    """Drive the bad server through its faults; the problems found, in order."""
    p.send(p.request_msg("tools/call", {"name": "write_raw", "arguments": {}}, id="raw"))
    with pytest.raises(ValueError, match="a banner"):
        p.read()
    assert p.read()["method"] == "notifications/message"  # CRLF: judged, still delivered
    assert p.read()["id"] == "raw"
    listed = p.request("tools/list", id="list")
    assert listed["result"]["tools"] == "not a list"
    assert p.stop() == 0
    return p.problems


def test_both_drivers_find_the_same_problems(bad_server: Path) -> None:
    by_process = _misbehave(python_server(bad_server))
    in_memory = _misbehave(MemoryServer(bad_server))
    assert in_memory == by_process
    assert in_memory[0].startswith("impure line on stdout") and "a banner" in in_memory[0]
    assert in_memory[1].startswith("crlf line on stdout")
    assert any("not a list" in problem for problem in in_memory[2:]), in_memory


def test_a_good_server_has_no_problems_in_memory() -> None:
    p = MemoryServer(EXAMPLES / "quickstart.py")
    assert p.call("add", {"a": 2, "b": 3})["result"]["structuredContent"] == {"result": 5.0}
    p.close_stdin()
    assert p.drain() == []  # stdout closes once the input has
    assert p.stop() == 0 and p.problems == []
    with pytest.raises(BrokenPipeError):
        p.send_raw(b"{}\n")


def test_the_memory_driver_keeps_every_attribute_of_the_process_driver() -> None:
    """`MemoryServer` sets up the runner's state by hand: nothing may be missing from it."""
    process = ServerProcess([sys.executable, "-c", "import sys; sys.stdin.read()"])
    memory = MemoryServer(EXAMPLES / "quickstart.py")
    try:
        process_only = {"proc", "tree"}  # properties of MemoryServer that raise ProcessOnly
        missing = set(vars(process)) - set(vars(memory)) - process_only
        assert not missing, f"MemoryServer.__init__ lacks {sorted(missing)}"
    finally:
        process.stop()
        memory.stop()


def test_what_only_a_process_has_is_refused(bad_server: Path) -> None:
    p = MemoryServer(bad_server)
    try:
        for ask in (lambda: p.stderr, lambda: p.wait(), lambda: p.signal(), lambda: p.proc):
            with pytest.raises(ProcessOnly):
                ask()
        with pytest.raises(ProcessOnly):
            MemoryServer(bad_server, cwd="/")
    finally:
        p.stop()


def test_env_and_args_are_seen_at_import_and_restored(tmp_path: Path) -> None:
    script = tmp_path / "configured.py"
    script.write_text(
        "import os, sys\n"
        "from mcpline import Server\n"
        "server = Server('configured', os.environ['MEMORY_TEST_VERSION'] + '-' + sys.argv[1])\n"
    )
    argv = list(sys.argv)
    p = MemoryServer(script, "arg", env={"MEMORY_TEST_VERSION": "7"})
    try:
        info = p.request("server/discover")["result"]["_meta"]
        assert info["io.modelcontextprotocol/serverInfo"]["version"] == "7-arg"
        assert "MEMORY_TEST_VERSION" not in os.environ and sys.argv == argv
    finally:
        assert p.stop() == 0


def test_a_file_that_serves_when_imported_is_refused(tmp_path: Path) -> None:
    """``Server(...).run()`` at import would serve this process's own stdin and stdout."""
    script = tmp_path / "bare.py"
    script.write_text("from mcpline import Server\nServer('bare').run()\n")
    stdout = sys.stdout
    with pytest.raises(ProcessOnly, match="run"):
        MemoryServer(script)
    assert sys.stdout is stdout


INNER = """
import pytest
from tests.conftest import spawn  # noqa: F401  (the fixture under test)

BAD = {bad!r}


@pytest.mark.driver("process")
def test_process(spawn):
    assert spawn(BAD).request("tools/list")["result"]["tools"] == "not a list"


@pytest.mark.driver("memory")
def test_memory(spawn):
    assert spawn(BAD).request("tools/list")["result"]["tools"] == "not a list"
"""


def test_the_spawn_fixture_fails_a_test_on_a_bad_line_with_either_driver(
    bad_server: Path, tmp_path: Path
) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pytest.ini").write_text("[pytest]\nmarkers =\n    driver(name): the driver\n")
    (inner / "test_inner.py").write_text(INNER.format(bad=str(bad_server)))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        capture_output=True,
        text=True,
        cwd=inner,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "2 passed, 2 errors" in out, out
    for name in ("test_process", "test_memory"):
        assert f"ERROR test_inner.py::{name} - AssertionError: server wrote invalid" in out, out
