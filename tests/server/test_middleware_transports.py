"""The same middleware chain on every transport: Unix sockets and TCP (``mcpline run
--listen``), the bridge (its own server's chain, in front of a server with its own), and
the background runs of tasks (error masking reaches a task's stored result)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpline.client import Client

from ..proc import FIXTURES, ServerProcess
from ..tasks.wire import get, start
from ..transports.test_sockets import Listening, short_tmp, token_dir  # noqa: F401

SERVER = FIXTURES / "middleware_server.py"
BRIDGE = FIXTURES / "middleware_bridge.py"


@pytest.mark.posix_only(reason="Unix socket listeners")
@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_the_chain_on_socket_listeners(kind: str, short_tmp: Path) -> None:  # noqa: F811
    address = f"unix:{short_tmp / 'mw.sock'}" if kind == "unix" else "tcp:127.0.0.1:0"
    srv = Listening(address, target=SERVER, env={"MW": "mask"})

    async def use() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        async with Client.connect(srv.address) as c:
            answered = await c.call_tool("answered", {})
            masked = await c.call_tool("boom", {"secret": "hunter2"})
            seen = await c.call_tool("seen", {})
            return answered, masked, seen["structuredContent"]["result"]

    try:
        answered, masked, seen = asyncio.run(asyncio.wait_for(use(), 40))
    finally:
        srv.stop()
    assert answered["content"][0]["text"] == "from middleware"
    assert "hunter2" not in json.dumps(masked) and masked["isError"] is True
    assert "call_tool boom principal=None same=tools/call" in seen


def test_a_task_run_goes_through_the_chain(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(SERVER, env={"MW": "mask"})
    task_id = start(p, "task_boom", {"secret": "hunter2"})
    deadline = time.monotonic() + 30
    while True:
        task = get(p, task_id)["result"]
        if task["status"] != "working" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert task["status"] == "completed", task
    text = task["result"]["content"][0]["text"]
    assert task["result"]["isError"] is True
    assert "hunter2" not in text and text.startswith("Tool 'task_boom' failed (reference ")


def test_the_bridge_serves_through_its_own_chain(spawn: Callable[..., ServerProcess]) -> None:
    p = spawn(BRIDGE)
    resp = p.call("echo", {"text": "through"})
    assert resp["result"]["content"][0]["text"] == "through"
    assert p.call("answered")["result"]["content"][0]["text"] == "from middleware"  # the child's
    deadline = time.monotonic() + 30
    while '"target": "echo"' not in p.stderr and time.monotonic() < deadline:
        time.sleep(0.02)
    line = next(ln for ln in p.stderr.splitlines() if '"target": "echo"' in ln)
    record = json.loads(line[line.index("{") :])
    assert record["method"] == "tools/call" and record["outcome"] == "ok"
