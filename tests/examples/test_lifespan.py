"""examples/lifespan.py through the raw driver (a real process where its exit and stderr are
checked, else in memory): one SQLite connection opened at start-up, shared by
every request through ``ctx.lifespan``, closed at exit; a hook that fails is -32603."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..proc import EXAMPLES, ServerProcess

pytestmark = pytest.mark.driver("memory")

LIFESPAN = EXAMPLES / "lifespan.py"
INTERNAL_ERROR = -32603


def stderr_once_it_says(p: ServerProcess, text: str, timeout: float = 10.0) -> str:
    """The server's stderr, once ``text`` is in it (its reader thread may lag the exit)."""
    deadline = time.monotonic() + timeout
    while text not in p.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text in p.stderr, p.stderr
    return p.stderr


def structured(r: dict[str, Any]) -> Any:
    assert "result" in r and not r["result"].get("isError"), r
    return r["result"]["structuredContent"]["result"]


@pytest.mark.driver("process")  # the exit and the process's stderr
def test_requests_share_the_connection_and_exit_closes_it(
    spawn: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    db_file = tmp_path / "guests.db"
    p = spawn(LIFESPAN, env={"GUESTBOOK_DB": str(db_file)})
    assert structured(p.call("sign", {"name": "Ada"})) == 1
    assert structured(p.call("sign", {"name": "Grace"})) == 2
    assert structured(p.call("guests", {})) == ["Ada", "Grace"]
    p.close_stdin()
    assert p.wait() == 0
    stderr = stderr_once_it_says(p, f"guestbook: closed {db_file}")
    assert stderr.count(f"guestbook: opened {db_file}") == 1
    with sqlite3.connect(db_file) as db:
        assert db.execute("SELECT name FROM guests ORDER BY rowid").fetchall() == [
            ("Ada",),
            ("Grace",),
        ]


def test_concurrent_calls_all_land(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(LIFESPAN)  # in memory
    names = [f"guest-{i}" for i in range(20)]
    calls = [p.request_msg("tools/call", {"name": "sign", "arguments": {"name": n}}) for n in names]
    for msg in calls:
        p.send(msg)  # all in flight at once: sync tools run on several worker threads
    answers: dict[Any, dict[str, Any]] = {}
    while len(answers) < len(calls):
        msg = p.read()
        if "id" in msg:
            answers[msg["id"]] = msg
    assert sorted(structured(r) for r in answers.values()) == list(range(1, 21))
    assert sorted(structured(p.call("guests", {}))) == sorted(names)


@pytest.mark.driver("process")  # the process's stderr
def test_a_failed_hook_answers_internal_error(
    spawn: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    p = spawn(LIFESPAN, env={"GUESTBOOK_DB": str(tmp_path / "no-such-dir" / "guests.db")})
    assert "result" in p.request("server/discover")  # discover does not wait for the hook
    r = p.call("sign", {"name": "Ada"})
    assert r["error"]["code"] == INTERNAL_ERROR
    stderr_once_it_says(p, "unable to open database file")
