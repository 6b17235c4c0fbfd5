"""The tests' driver (`tests.proc.ServerProcess`) judges every line a server writes."""

from __future__ import annotations

import queue
import sys

import pytest

from .proc import ServerProcess

SCRIPT = r"""
import sys
sys.stdin.readline()
w = sys.stdout.write
w('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}\n')
w("a banner\n")
w('{"jsonrpc":"2.0","id":1,"result":{"tools":"not a list"}}\n')
w('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\r\n')
w('{"jsonrpc":"2.0","id":2,"result":{}}')
sys.stdout.flush()
"""


def test_lines_are_read_in_order_and_every_broken_one_is_a_problem() -> None:
    p = ServerProcess([sys.executable, "-c", SCRIPT])
    try:
        p.send(p.request_msg("tools/list", id=1))
        assert p.read()["method"] == "notifications/message"
        with pytest.raises(ValueError, match="a banner"):
            p.read()
        assert p.read()["id"] == 1
        assert p.read()["method"] == "notifications/progress"
        with pytest.raises(ValueError, match="unterminated"):
            p.read()
        with pytest.raises(EOFError):
            p.read()
    finally:
        p.stop()
    assert (
        p.raw_out[1] == b"a banner\n" and p.raw_out[-1] == b'{"jsonrpc":"2.0","id":2,"result":{}}'
    )
    kinds = [problem.split(" ", 1)[0] for problem in p.problems]
    assert len(p.problems) == 4, p.problems
    assert kinds.count("impure") == 2 and "crlf" in kinds
    assert any("tools" in problem and "in b'" in problem for problem in p.problems)


def test_a_quiet_server_times_out_and_a_closed_pipe_raises() -> None:
    p = ServerProcess([sys.executable, "-c", "import sys; sys.stdin.readline()"])
    try:
        with pytest.raises(queue.Empty):
            p.read(timeout=0.2)
        p.send_raw(b"\n")
        assert p.wait() == 0
        with pytest.raises(BrokenPipeError):
            p.send_raw(b"x" * 1_000_000)
    finally:
        p.stop()
    assert p.problems == []
