"""``mcpline call``: the status of a task the server made of the call, on stderr.

On a terminal: a live line (with rich, if installed, a spinner, a bar when the status message
ends in ``(done/total)``, and the elapsed time; otherwise a plain line rewritten in place).
Not on a terminal: nothing, so that scripts see only the result on stdout.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

from ..terminal import for_terminal

_COUNT = re.compile(r"\((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)\)\s*$")
"""The ``(3/10)`` a server's progress leaves at the end of a status message."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


class TaskStatus:
    """``on_task`` for `mcpline.Client.call_tool`: shows each new state; `done` clears it."""

    def __init__(self, label: str, *, enabled: bool | None = None) -> None:
        self.label = for_terminal(_one_line(label))
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self.shown = False
        self._live: Any = None
        self._bar: Any = None

    def __call__(self, task: dict[str, Any]) -> None:
        if not self.enabled:
            return
        status = str(task.get("status", "?"))
        message = for_terminal(_one_line(str(task.get("statusMessage") or "")))
        tid = str(task.get("taskId", ""))[:8]
        text = f"{self.label} [task {tid}] {status}" + (f": {message}" if message else "")
        count = _COUNT.search(message)
        if self._rich(text, count):
            return
        elapsed = time.monotonic() - self.started
        sys.stderr.write(f"\r\x1b[2K{text[:180]} ({elapsed:.0f}s)")
        sys.stderr.flush()
        self.shown = True

    def _rich(self, text: str, count: re.Match[str] | None) -> bool:
        """Show ``text`` with rich; False when rich is not installed."""
        if self._live is None:
            try:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    Progress,
                    SpinnerColumn,
                    TextColumn,
                    TimeElapsedColumn,
                )
            except ImportError:
                return False
            self._live = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._live.start()
            self._bar = self._live.add_task(text, total=None)
        done, total = (float(count[1]), float(count[2])) if count else (None, None)
        self._live.update(self._bar, description=text[:120], completed=done or 0, total=total)
        self.shown = True
        return True

    def done(self) -> None:
        """Clear the line (rich: stop the live display)."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        elif self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
        self.shown = False


__all__ = [
    "TaskStatus",
]
