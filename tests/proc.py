"""A raw newline-JSON driver for a real server process, used by the tests.

Every line the server writes is recorded and checked against the official schema; the
`server` fixture in conftest fails the test if any line is impure or invalid.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import wirecheck

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODERN = "2026-07-28"


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcpline-tests", "version": "0"},
    }
    m.update(extra)
    return m


class ServerProcess:
    """A server under test, spoken to over real pipes."""

    def __init__(
        self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> None:
        full_env = dict(os.environ)
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        if env:
            full_env.update(env)
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw_out: list[bytes] = []
        self.stderr_chunks: list[bytes] = []
        self.methods: dict[Any, str] = {}
        self.legacy = False
        """Validate server messages against the legacy schema (responses to requests that
        carried modern ``_meta`` are still checked against the modern one)."""
        self.modern_ids: set[Any] = set()
        self.problems: list[str] = []
        self._ids = itertools.count(1)
        threading.Thread(target=self._pump_out, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    # --- plumbing --------------------------------------------------------------------------

    def _pump_out(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.raw_out.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            self.methods[msg["id"]] = msg["method"]
            params = msg.get("params")
            if (
                isinstance(params, dict)
                and isinstance(params.get("_meta"), dict)
                and ("io.modelcontextprotocol/protocolVersion" in params["_meta"])
            ):
                self.modern_ids.add(msg["id"])
        self.send_raw(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    def next_id(self) -> int:
        return next(self._ids)

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

    def read(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next message the server writes (checked against the schema)."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError("server closed stdout")
        try:
            msg = json.loads(line)
        except ValueError:
            self.problems.append(f"non-JSON line on stdout: {line[:200]!r}")
            raise
        self._check(msg, line)
        return msg

    def _check(self, msg: Any, line: bytes) -> None:
        """Record the schema problems of one message the server wrote."""
        method = self.methods.get(msg.get("id")) if isinstance(msg, dict) else None
        for p in wirecheck.check_message(msg, method=method, version=self._era(msg)):
            self.problems.append(f"{p} in {line[:300]!r}")

    def _era(self, msg: Any) -> str:
        """The schema for one server message: a response follows the era of its request
        (modern ``_meta`` or not); anything else follows ``self.legacy``."""
        rid = msg.get("id") if isinstance(msg, dict) else None
        if isinstance(rid, (str, int)) and "method" not in msg and rid in self.modern_ids:
            return wirecheck.MODERN
        return wirecheck.LEGACY if self.legacy else wirecheck.MODERN

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

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def wait(self, timeout: float = 5.0) -> int:
        return self.proc.wait(timeout)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def drain(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Every remaining message until stdout closes."""
        out = []
        while True:
            try:
                out.append(self.read(timeout))
            except (EOFError, queue.Empty):
                return out

    def stop(self) -> None:
        self.close_stdin()
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(3)
        for line in self._remaining_lines():
            try:
                msg = json.loads(line)
            except ValueError:
                self.problems.append(f"non-JSON line on stdout: {line[:200]!r}")
                continue
            self._check(msg, line)

    def _remaining_lines(self) -> list[bytes]:
        out = []
        while True:
            try:
                line = self.lines.get(timeout=2)
            except queue.Empty:
                return out
            if line is None:
                return out
            out.append(line)


def python_server(script: str | Path, *args: str, **kw: Any) -> ServerProcess:
    return ServerProcess([sys.executable, str(script), *args], **kw)
