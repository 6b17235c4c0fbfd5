"""Real HTTP MCP servers as processes for the client tests: start one on a free loopback
port, read the URL it prints (``listening on http://…``), stop it afterwards."""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence

STARTUP = 45.0
"""Seconds a server may take to print its URL (the peers import a lot)."""


@contextlib.contextmanager
def serve(command: Sequence[str], startup: float = STARTUP) -> Iterator[str]:
    proc = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    found: list[str] = []
    errors: list[str] = []

    def read_url() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if m := re.search(r"listening on (\S+)", line):
                found.append(m[1])
                break
        proc.stdout.read()

    def drain_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            errors.append(line)
            del errors[:-50]

    threading.Thread(target=read_url, daemon=True).start()
    threading.Thread(target=drain_stderr, daemon=True).start()
    try:
        deadline = threading.Event()
        for _ in range(int(startup * 10)):
            if found or proc.poll() is not None:
                break
            deadline.wait(0.1)
        if not found:
            raise RuntimeError(
                f"{' '.join(command)} printed no URL (exit {proc.poll()}): {''.join(errors)}"
            )
        yield found[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
