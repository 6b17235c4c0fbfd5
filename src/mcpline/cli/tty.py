"""Questions to the user on the terminal: prompts on stderr, answers read from stdin without
blocking the event loop (the session keeps answering the server meanwhile).

Lines are read from the terminal in its own line mode (backspace and Ctrl-U work); Ctrl-D
on an empty line is end of input. On POSIX the event loop watches stdin; where it cannot
(the Windows console), a daemon thread reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .output import ProgressBar, clear_status

T = TypeVar("T")


class Terminal:
    """The user's terminal: stdin for answers, stderr for what is asked."""

    def __init__(self) -> None:
        self.fd = sys.stdin.fileno()
        self._buffer = b""
        self._eof = False
        self.lock = asyncio.Lock()
        """Held while one request is being asked (the server may ask several at once)."""
        self.mid_line = False
        """True while the cursor is after a prompt: no answer ended its line (a prompt
        abandoned by Ctrl-C leaves it so)."""

    def write(self, text: str) -> None:
        """Text on stderr, as given: callers pass server text through `for_terminal`."""
        clear_status()
        sys.stderr.write(text)
        sys.stderr.flush()

    async def ask(self, prompt: str) -> str | None:
        """``prompt`` (already safe to show), then the line typed; None at end of input."""
        self.write(prompt)
        self.mid_line = ProgressBar.held = True
        try:
            line = await self._line()
        finally:
            ProgressBar.held = False
        if line is None:
            self.write("\n")
        self.mid_line = False
        return line

    async def _line(self) -> str | None:
        while b"\n" not in self._buffer:
            chunk = await self._read()
            if not chunk:
                if self._buffer:
                    break
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    async def _read(self) -> bytes:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bytes] = loop.create_future()

        def readable() -> None:
            if not done.done():
                try:
                    done.set_result(os.read(self.fd, 4096))
                except OSError as exc:
                    done.set_exception(exc)

        try:
            loop.add_reader(self.fd, readable)
        except (NotImplementedError, ValueError, OSError):
            return await in_daemon_thread(lambda: os.read(self.fd, 4096))
        try:
            return await done
        finally:
            loop.remove_reader(self.fd)


async def in_daemon_thread(work: Callable[[], T]) -> T:
    """``work()`` in a daemon thread: unlike the default executor's, an abandoned one (the
    user pressed Ctrl-C) never holds up the exit."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def deliver(value: Any, failed: bool) -> None:
        if not done.done():
            if failed:
                done.set_exception(value)
            else:
                done.set_result(value)

    def run() -> None:
        try:
            value: Any = work()
            failed = False
        except Exception as exc:
            value, failed = exc, True
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(deliver, value, failed)

    threading.Thread(target=run, name="mcpline-cli", daemon=True).start()
    return await done


__all__ = ["Terminal", "in_daemon_thread"]
