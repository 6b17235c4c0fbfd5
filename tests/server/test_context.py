"""The request context through the raw driver (in memory; stderr on a process): progress,
logging and capability checks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ..proc import FIXTURES, ServerProcess

pytestmark = pytest.mark.driver("memory")

CORE = FIXTURES / "core_server.py"
Spawn = Callable[..., ServerProcess]
LOG_KEY = "io.modelcontextprotocol/logLevel"
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


def test_progress_strictly_increasing_before_the_response(spawn: Spawn) -> None:
    p = spawn(CORE)
    for token in ("p-1", 7):
        resp = p.request_msg(
            "tools/call", {"name": "progress", "arguments": {"steps": 6}}, progressToken=token
        )
        p.send(resp)
        final, notes = p.read_until(resp["id"])
        assert final["result"]["content"][0]["text"] == "done"
        progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
        assert len(progress) == 6 and len(notes) == 6
        values = [n["progress"] for n in progress]
        assert values == sorted(set(values)) == [1, 2, 3, 4, 5, 6]
        for n in progress:
            assert n["progressToken"] == token and type(n["progressToken"]) is type(token)
            assert n["total"] == 6 and n["message"].startswith("step ")


def test_no_progress_without_a_token(spawn: Spawn) -> None:
    p = spawn(CORE)
    msg = p.request_msg("tools/call", {"name": "progress", "arguments": {"steps": 4}})
    p.send(msg)
    final, notes = p.read_until(msg["id"])
    assert notes == [] and "result" in final


def test_nothing_is_written_after_the_response(spawn: Spawn) -> None:
    p = spawn(CORE)
    msg = p.request_msg(
        "tools/call",
        {"name": "late_progress", "arguments": {}},
        caps=None,
        progressToken="late",
        **{LOG_KEY: "debug"},
    )
    p.send(msg)
    final, notes = p.read_until(msg["id"])
    assert final["result"]["content"][0]["text"] == "answered"
    assert [n["params"]["progress"] for n in notes] == [1]
    time.sleep(0.5)  # the tool's thread tries to report progress and log after 0.2 s
    p.send(p.request_msg("server/discover", id="fence"))
    first = p.read()
    assert first.get("id") == "fence", f"a message arrived after the response: {first}"
    assert len([r for r in p.raw_out if b'"late"' in r]) == 1
    assert not [r for r in p.raw_out if b"too late" in r]


def collect_logs(p: ServerProcess, **meta_extra: Any) -> list[dict[str, Any]]:
    msg = p.request_msg("tools/call", {"name": "log_levels", "arguments": {}}, **meta_extra)
    p.send(msg)
    final, notes = p.read_until(msg["id"])
    assert final["result"]["content"][0]["text"] == "logged"
    return [n["params"] for n in notes if n["method"] == "notifications/message"]


@pytest.mark.driver("process")  # the records on the process's stderr
def test_logging_only_with_log_level_and_filtered(spawn: Spawn) -> None:
    p = spawn(CORE, env={"MCPLINE_LOG_LEVEL": "DEBUG"})
    assert collect_logs(p) == []
    for threshold in ("debug", "warning", "emergency"):
        logs = collect_logs(p, **{LOG_KEY: threshold})
        want = LEVELS[LEVELS.index(threshold) :]
        assert [entry["level"] for entry in logs] == want
        for entry in logs:
            assert entry["data"] == f"{entry['level']} message"
            assert entry["logger"] == "core-fixture"
    p.close_stdin()
    assert p.wait() == 0
    # Without a logLevel the records went to stderr through `logging`.
    assert "debug message" in p.stderr and "emergency message" in p.stderr
