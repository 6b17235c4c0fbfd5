"""stdout is sacred: prints, raw fd-1 writes and child processes never reach the protocol
stream (the `spawn` fixture fails the test on any impure stdout line)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ..proc import FIXTURES, ServerProcess

CORE = FIXTURES / "core_server.py"
Spawn = Callable[..., ServerProcess]


@pytest.mark.parametrize(
    ("tool", "expected"),
    [("stray_print", "printed"), ("fd_write", "written"), ("child_print", "children ran")],
)
def test_tool_output_goes_to_stderr(spawn: Spawn, tool: str, expected: str) -> None:
    p = spawn(CORE)
    marker = '{"jsonrpc":"2.0","id":"forged","result":{}}'
    resp = p.call(tool, {"text": marker})
    assert resp["result"]["content"][0]["text"] == expected
    # The next reply follows directly: nothing was injected in between.
    p.send(p.request_msg("server/discover", id="next"))
    assert p.read()["id"] == "next"
    p.close_stdin()
    assert p.wait() == 0
    assert all(b"forged" not in line for line in p.raw_out)
    assert marker in p.stderr


def test_import_time_print_under_mcpline_run(tmp_path: Path) -> None:
    """`mcpline run` claims stdout before user code is imported."""
    script = tmp_path / "banner_server.py"
    script.write_text(
        "print('BANNER at import time')\n"
        "from mcpline import Server\n"
        "app = Server('banner')\n"
        "@app.tool()\n"
        "def hi() -> str:\n"
        "    '''Say hi.'''\n"
        "    print('hello from the tool body')\n"
        "    return 'hi'\n"
    )
    mcpline = Path(sys.executable).parent / "mcpline"
    p = ServerProcess([str(mcpline), "run", str(script)])
    try:
        assert p.call("hi", {})["result"]["content"][0]["text"] == "hi"
        p.close_stdin()
        assert p.wait() == 0
        assert all(b"BANNER" not in line and b"hello" not in line for line in p.raw_out)
        assert "BANNER at import time" in p.stderr
        assert not p.problems, p.problems
    finally:
        p.stop()
