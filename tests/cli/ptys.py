"""Drive the CLI on a pseudo-terminal: read what it shows, type answers (POSIX only)."""

from __future__ import annotations

import os
import select
import subprocess
import time
from typing import Any

from .test_cli import MCPLINE


class PtySession:
    """``mcpline ARGS`` with stdin and stderr on a pty (stdout too unless ``stdout_pipe``)."""

    def __init__(
        self, args: list[str], *, stdout_pipe: bool = True, env: dict[str, str] | None = None
    ) -> None:
        import pty  # POSIX only: imported here so that the module loads everywhere

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [MCPLINE, *args],
            stdin=slave,
            stdout=subprocess.PIPE if stdout_pipe else slave,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        self._raw = b""
        self._seen = 0

    @property
    def shown(self) -> str:
        """Everything shown on the terminal so far (the pty's CRLF as LF)."""
        return self._raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def _pump(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the other side is closed (EIO on Linux)
            return False
        self._raw += data
        return bool(data)

    def expect(self, text: str, timeout: float = 30) -> str:
        """Wait until ``text`` is shown after what earlier calls matched; what came before."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.shown.find(text, self._seen)
            if at >= 0:
                before = self.shown[self._seen : at]
                self._seen = at + len(text)
                return before
            if time.monotonic() > deadline or not self._pump(0.2):
                raise AssertionError(f"{text!r} never shown; the terminal shows:\n{self.shown}")

    def send(self, line: str) -> None:
        """Type ``line`` and Enter."""
        os.write(self.master, line.encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        """Wait for the exit: (exit code, all shown, stdout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._pump(0.2):
            if self.proc.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                break
        code = self.proc.wait(max(1.0, deadline - time.monotonic()))
        out = self.proc.stdout.read().decode() if self.proc.stdout is not None else ""
        return code, self.shown, out

    def __enter__(self) -> PtySession:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        os.close(self.master)
