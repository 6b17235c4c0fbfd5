"""Helpers for the client tests: the fake server, its wire log, and process checks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from ..proc import EXAMPLES, FIXTURES

FAKE = FIXTURES / "client_fake_server.py"
QUICKSTART = EXAMPLES / "quickstart.py"
T = TypeVar("T")


def run(coro: Awaitable[T], timeout: float = 45.0) -> T:
    """Run a coroutine to completion with a generous overall bound."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


class Fake:
    """Arguments and observation files for one fake server configuration."""

    def __init__(self, tmp: Path, flags: str = "", **env: str) -> None:
        self.tmp = tmp
        self.flags = flags
        self.log = tmp / "wire.log"
        self.pidfile = tmp / "pid"
        state = tmp / "state"
        state.mkdir(exist_ok=True)
        self.env = {
            "FAKE_LOG": str(self.log),
            "FAKE_PIDFILE": str(self.pidfile),
            "FAKE_STATE": str(state),
            "PYTHONUNBUFFERED": "1",
            **env,
        }

    @property
    def argv(self) -> list[str]:
        return [str(FAKE), self.flags or "modern"]

    def client_kwargs(self, **kw: Any) -> dict[str, Any]:
        return {"command": sys.executable, "args": self.argv, "env": self.env, **kw}

    def received(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"unparsable": line.decode("utf-8", "replace")})
        return out

    def methods(self) -> list[str]:
        return [m.get("method", "<response>") for m in self.received()]

    def pid(self) -> int:
        return int(self.pidfile.read_text())


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def kill_if_alive(pid: int) -> None:
    import signal

    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
