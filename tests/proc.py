"""A raw newline-JSON driver for a real server process, used by the tests.

`ServerProcess` is the package's raw driver (`mcpline.check.runner.ServerProcess`: real
pipes, stdout split into lines and judged as it arrives, the process group reaped at the end)
with the interface the tests use: messages are read in order, requests are written as
``json.dumps`` writes them, and every line is checked against the official schema by
`wirecheck` (rules written apart from the checker's). The `server` and `spawn` fixtures in
conftest fail the test if any line is impure or invalid.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from mcpline.check import runner
from mcpline.protocol.meta import has_modern_meta, modern_meta

from . import wirecheck

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODERN = wirecheck.MODERN
CLIENT_INFO = {"name": "mcpline-tests", "version": "0"}
STDERR_SETTLE = 2.0
"""How long `ServerProcess.wait` waits for the end of stderr after the exit."""


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    m = modern_meta(MODERN, caps if caps is not None else {}, CLIENT_INFO)
    m.update(extra)
    return m


class _Impure:
    """An impure stdout line, in its place among the messages."""

    def __init__(self, detail: str, raw: bytes) -> None:
        self.detail = detail
        self.raw = raw


class ServerProcess(runner.ServerProcess):
    """A server under test, spoken to over real pipes."""

    def __init__(
        self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> None:
        self._init_driver()
        extra = dict(env or {})
        if "PYTHONUNBUFFERED" not in os.environ:
            extra.setdefault("PYTHONUNBUFFERED", "1")
        super().__init__(
            argv, env=extra, cwd=cwd, record=False, sink=self._inbox.append, stderr_keep=None
        )

    def _init_driver(self) -> None:
        """What this driver keeps besides the runner's state."""
        self.raw_out: list[bytes] = []
        """Every stdout line as written, ``\\n`` included."""
        self.methods: dict[Any, str] = {}
        self.legacy = False
        """Validate server messages against the legacy schema (responses to requests that
        carried modern ``_meta`` are still checked against the modern one)."""
        self.modern_ids: set[Any] = set()
        self.problems: list[str] = []
        self._inbox: deque[dict[str, Any] | _Impure] = deque()

    # --- what the driver hands over ----------------------------------------------------------

    def on_line(self, raw: bytes, terminated: bool = True) -> None:
        self.raw_out.append(raw + b"\n" if terminated else raw)
        super().on_line(raw, terminated)

    def on_problem(self, kind: str, detail: str, raw: bytes) -> None:
        super().on_problem(kind, detail, raw)
        self.problems.append(f"{kind} line on stdout ({detail}): {raw[:200]!r}")
        if kind == "impure":
            with self.cond:
                self._inbox.append(_Impure(detail, raw))
                self.cond.notify_all()

    def judge(self, msg: dict[str, Any], raw: bytes) -> None:
        method = self.methods.get(msg.get("id"))
        for p in wirecheck.check_message(msg, method=method, version=self._era(msg)):
            self.problems.append(f"{p} in {raw[:300]!r}")

    def _era(self, msg: dict[str, Any]) -> str:
        """The schema for one server message: a response follows the era of its request
        (modern ``_meta`` or not); anything else follows ``self.legacy``."""
        rid = msg.get("id")
        if isinstance(rid, (str, int)) and "method" not in msg and rid in self.modern_ids:
            return wirecheck.MODERN
        return wirecheck.LEGACY if self.legacy else wirecheck.MODERN

    @property
    def stderr(self) -> str:
        return self.stderr_text

    # --- writing -------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> bool:
        if not super().send_raw(data):
            raise BrokenPipeError(f"the server no longer reads its stdin: {self.argv}")
        return True

    def send(self, msg: Any) -> bool:
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            self.methods[msg["id"]] = msg["method"]
            if has_modern_meta(msg.get("params")):
                self.modern_ids.add(msg["id"])
        return self.send_raw(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    def request_msg(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        id: Any = None,
        caps: dict[str, Any] | None = None,
        **meta_extra: Any,
    ) -> dict[str, Any]:
        p = dict(params or {})
        p.setdefault("_meta", meta(caps, **meta_extra))
        return {
            "jsonrpc": "2.0",
            "id": self.next_id() if id is None else id,
            "method": method,
            "params": p,
        }

    # --- reading -------------------------------------------------------------------------------

    def read(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next message the server writes (`queue.Empty` after ``timeout`` seconds,
        `EOFError` once stdout has closed, `ValueError` for an impure line)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self._inbox:
                left = deadline - time.monotonic()
                if self.stdout_closed:
                    raise EOFError("server closed stdout")
                if left <= 0:
                    raise queue.Empty
                self.cond.wait(left)
            item = self._inbox.popleft()
        if isinstance(item, _Impure):
            raise ValueError(f"impure line on stdout ({item.detail}): {item.raw[:200]!r}")
        return item

    def read_until(
        self, id: Any, timeout: float = 10.0
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Messages up to the response to ``id``: (response, notifications seen before it)."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            msg = self.read(max(0.01, deadline - time.monotonic()))
            if (
                "id" in msg
                and "method" not in msg
                and msg["id"] == id
                and type(msg["id"]) is type(id)
            ):
                return msg, seen
            seen.append(msg)

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0, **kw: Any
    ) -> dict[str, Any]:
        msg = self.request_msg(method, params, **kw)
        self.send(msg)
        resp, _ = self.read_until(msg["id"], timeout)
        return resp

    def call(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.request("tools/call", params, **kw)

    def drain(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Every remaining message until stdout closes (`TimeoutError` when nothing comes
        for ``timeout`` seconds and it is still open)."""
        out = []
        while True:
            try:
                out.append(self.read(timeout))
            except EOFError:
                return out
            except queue.Empty:
                raise TimeoutError(f"stdout still open after {timeout}s of silence") from None

    # --- the process ---------------------------------------------------------------------------

    def wait(self, timeout: float = 5.0) -> int:
        """The exit status, once what the process wrote to stderr has been read as well: the
        reader thread may lag the exit (bounded, for a child that holds stderr open)."""
        code = self.proc.wait(timeout)
        self._threads[1].join(STDERR_SETTLE)
        return code


def python_server(script: str | Path, *args: str, **kw: Any) -> ServerProcess:
    return ServerProcess([sys.executable, str(script), *args], **kw)
