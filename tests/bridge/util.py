"""Real processes for the bridge tests: ``mcpline bridge`` and mcpline's HTTP server, each on
a free loopback port (port 0, the URL read from the ready line), with their process trees."""

from __future__ import annotations

import collections
import contextlib
import http.client
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import psutil

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures"
EVERYTHING = EXAMPLES / "servers" / "everything.py"
BRIDGE_SERVER = FIXTURES / "bridge_server.py"
RAW_SERVER = FIXTURES / "bridge_raw_server.py"
MCPLINE = [sys.executable, "-c", "import sys; from mcpline.cli import main; sys.exit(main())"]
LISTENING = re.compile(r"listening on (http://\S+)")


class Proc:
    """A process whose stderr is read into a bounded tail by a thread."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=REPO,
        )
        self.tail: collections.deque[str] = collections.deque(maxlen=400)
        self.stdout = bytearray()
        self._lines = threading.Condition()
        threading.Thread(target=self._pump_err, daemon=True).start()
        threading.Thread(target=self._pump_out, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._lines:
                self.tail.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._lines.notify_all()
        with self._lines:
            self._lines.notify_all()

    def _pump_out(self) -> None:
        stdout = self.proc.stdout
        assert isinstance(stdout, io.BufferedReader)
        while chunk := stdout.read1(65536):
            if len(self.stdout) < 1 << 20:
                self.stdout += chunk

    def wait_for(self, pattern: str | re.Pattern[str], timeout: float = 30.0) -> re.Match[str]:
        """The first stderr line matching ``pattern``; AssertionError after ``timeout``."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        with self._lines:
            while True:
                for line in self.tail:
                    if m := rx.search(line):
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._more():
                    raise AssertionError(
                        f"no {rx.pattern!r} on stderr of {self.argv[:6]} "
                        f"(exit {self.proc.poll()}):\n" + "\n".join(self.tail)
                    )
                self._lines.wait(min(left, 0.2))

    def _more(self) -> bool:
        return self.proc.stderr is not None and not self.proc.stderr.closed

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def rss(self) -> int:
        return int(psutil.Process(self.pid).memory_info().rss)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Signal it and wait; SIGKILL (and fail) if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"{self.argv[:6]} did not exit {timeout}s after signal {sig}"
            ) from None


def alive(procs: Sequence[psutil.Process]) -> list[psutil.Process]:
    """The processes of ``procs`` still running (zombies count as gone)."""
    out = []
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
    return out


def gone_within(procs: Sequence[psutil.Process], timeout: float = 10.0) -> list[psutil.Process]:
    """Wait until every one of ``procs`` is gone; those still running after ``timeout``."""
    deadline = time.monotonic() + timeout
    left = alive(procs)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = alive(left)
    return left


@contextlib.contextmanager
def bridge_http(
    *server: str | os.PathLike[str],
    options: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Iterator[tuple[str, Proc]]:
    """``mcpline bridge --http 127.0.0.1:0 OPTIONS -- SERVER...``: (its URL, the process);
    afterwards it is stopped and none of its processes may be left."""
    argv = [*MCPLINE, "bridge", "--http", "127.0.0.1:0", *options, "--", *map(str, server)]
    proc = Proc(argv, env)
    try:
        url = proc.wait_for(LISTENING)[1]
        proc.wait_for("mcpline bridge: serving")
        yield url, proc
    finally:
        family = proc.descendants()
        proc.stop()
        left = gone_within(family)
        assert not left, f"left behind: {[p.pid for p in left]}"


@contextlib.contextmanager
def http_server(
    target: str | os.PathLike[str] = EVERYTHING, env: dict[str, str] | None = None
) -> Iterator[tuple[str, Proc]]:
    """``mcpline run TARGET --http 127.0.0.1:0``: (its URL, the process)."""
    proc = Proc([*MCPLINE, "run", str(target), "--http", "127.0.0.1:0"], env)
    try:
        yield proc.wait_for(LISTENING)[1], proc
    finally:
        proc.stop()


def bridge_stdio_argv(url: str, *options: str) -> list[str]:
    """The command line of ``mcpline bridge --stdio --server URL``, for a stdio client."""
    return [*MCPLINE, "bridge", "--stdio", "--server", url, *options]


def python_server(path: Path, *args: str) -> list[str]:
    return [sys.executable, str(path), *args]


__all__ = [
    "BRIDGE_SERVER",
    "EVERYTHING",
    "MCPLINE",
    "Proc",
    "RAW_SERVER",
    "REPO",
    "alive",
    "bridge_http",
    "bridge_stdio_argv",
    "connection",
    "gone_within",
    "http_server",
    "path_of",
    "python_server",
]


def connection(
    url: str, timeout: float = 15.0, source: str | None = None
) -> http.client.HTTPConnection:
    """A new HTTP connection to the host and port of ``url`` (from loopback address
    ``source``, when given)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    bind = None if source is None else (source, 0)
    return http.client.HTTPConnection(
        parts.hostname, parts.port, timeout=timeout, source_address=bind
    )


def path_of(url: str) -> str:
    return urlsplit(url).path or "/mcp"
