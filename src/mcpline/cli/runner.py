"""Running one client operation: the event loop, signals, server logs, and every failure mapped
to an exit code with one line on stderr (2 for a protocol, transport or usage failure, 130
after Ctrl-C, 143 after SIGTERM)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from ..spec import CANCELLED, LOG_LEVEL_RANK
from .options import EXIT_FAILURE, EXIT_OK, UsageError
from .output import clear_status, note, one_line

EXIT_SIGNAL = 128
"""A command stopped by signal N exits 128 + N (130 for Ctrl-C)."""

SHUTDOWN_OVERRUN = 0.25
"""Seconds the server is given to stop once ``--timeout`` has passed (or is closer than
that): half of it after the end of its input, half after SIGTERM, then SIGKILL."""


class Run:
    """One command's run: what it is doing (for the line a Ctrl-C prints), what the server
    logs, and why it stopped early: a signal, a failure found by a callback (an input that
    cannot be given), or the deadline.

    ``--timeout`` is the deadline of the whole command: counted from the start of the
    process (``args.started``), server start, era probe and requests included, and the
    server's shutdown bounded by what is left of it (at least `SHUTDOWN_OVERRUN`). For
    ``listen`` it is also how long to listen once the server acknowledged the listen
    (`listen_for`): then the command ends with exit 0 (`finish`).
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.method: str | None = None
        self.target = ""
        self.sent = False
        """Whether a request for ``method`` went out."""
        self.told = False
        """Whether ``notifications/cancelled`` went out (the server was told to stop)."""
        self.signal: int | None = None
        self.failure: BaseException | None = None
        self.deadline: Deadline | None = None
        self.listening = False
        """Whether ``listen`` is listening (the server acknowledged it)."""
        self._listen_end: asyncio.TimerHandle | None = None
        self.finished = False
        """Whether ``listen``'s time is up (a success, unlike a deadline)."""
        self.mid_line: Callable[[], bool] = lambda: False
        """Whether a prompt waits on the terminal (a cancellation line starts below it)."""
        self._task: asyncio.Task[Any] | None = None
        self._ids: set[str] = set()
        quiet = getattr(args, "quiet", False)
        self.log_level: str | None = None if quiet else getattr(args, "log_level", None) or "info"

    def doing(self, method: str, target: str = "") -> None:
        """The request the command is about to make (named if it is cancelled)."""
        self.method, self.target, self.sent, self.told = method, target, False, False
        self._ids.clear()

    def trace(self, direction: str, line: bytes) -> None:
        """Every line on the wire: notes what was sent; with ``--verbose`` shows it."""
        if direction == "send":
            self._watch(line)
        if self.args.verbose:
            arrow = "→" if direction == "send" else "←"
            text = line.decode("utf-8", "replace")
            if len(text) > 4000:
                text = text[:4000] + f"… [{len(line)} bytes]"
            note(f"{arrow} {text}")

    def _watch(self, line: bytes) -> None:
        """Remember the ids of the ``method`` requests sent, and whether one was cancelled
        (only lines that name the method or a cancellation are parsed)."""
        method = self.method
        if method is not None and f'"{method}"'.encode() in line:
            msg = _parse(line)
            if msg.get("method") == method and "id" in msg:
                self._ids.add(json.dumps(msg["id"]))
                self.sent = True
        elif f'"{CANCELLED}"'.encode() in line:
            params = _parse(line).get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            if json.dumps(rid) in self._ids:
                self.told = True

    def on_log(self, params: dict[str, Any]) -> None:
        """A ``notifications/message``: one line on stderr at ``--log-level`` and above."""
        if self.log_level is None:
            return
        level = str(params.get("level", ""))
        if LOG_LEVEL_RANK.get(level, LOG_LEVEL_RANK["info"]) < LOG_LEVEL_RANK[self.log_level]:
            return
        data = params.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        logger = params.get("logger")
        where = f" {logger}:" if isinstance(logger, str) and logger else ""
        note(f"[{level}]{where} {text}")

    def stop(self, *, failure: BaseException | None = None, sig: int | None = None) -> None:
        """End the operation now (the first reason given is the one reported)."""
        if self.failure is not None or self.signal is not None:
            return
        self.failure, self.signal = failure, sig
        if self._task is not None:
            self._task.cancel()

    def listen_for(self) -> None:
        """``listen`` is acknowledged: the deadline stops, and ``--timeout`` (if given) is
        from now on how long to listen before `finish`."""
        if self.listening:
            return
        self.listening = True
        timeout = getattr(self.args, "timeout", None)
        if timeout is None:
            return
        if self.deadline is not None:
            self.deadline.cancel()
        self._listen_end = asyncio.get_running_loop().call_later(timeout, self.finish)

    def finish(self) -> None:
        """End a ``listen`` whose time is up: exit 0."""
        if self.failure is not None or self.signal is not None:
            return
        self.finished = True
        if self._task is not None:
            self._task.cancel()

    def _on_signal(self, sig: int) -> None:
        self.stop(sig=sig)

    def keep_deadline(self) -> None:
        """The user may be asked: the deadline's clock stops meanwhile (`Deadline.paused`)
        and its message says so."""
        if self.deadline is not None:
            self.deadline.prompts = True

    def _start_deadline(self, loop: asyncio.AbstractEventLoop) -> None:
        timeout = getattr(self.args, "timeout", None)
        if timeout is None:
            return
        self.deadline = Deadline(timeout, self)
        self.deadline.start(loop, getattr(self.args, "started", None))

    def shutdown_within(self) -> float | None:
        """The seconds the server's shutdown may take: what is left of the deadline, at
        least `SHUTDOWN_OVERRUN` (None: no deadline). The deadline stops here: the work is
        over, and this bounds the rest."""
        deadline = self.deadline
        if deadline is None:
            return None
        deadline.cancel()
        return max(deadline.left(), SHUTDOWN_OVERRUN)

    def cancelled_line(self) -> str:
        """``cancelled: tools/call add (the server was told)``, or as much as is known."""
        if self.method is None:
            return f"cancelled: mcpline {self.args.command}"
        what = f"{self.method} {self.target}".strip()
        if self.told:
            how = "the server was told"
        elif not self.sent:
            how = "before it was sent"
        else:
            how = "nothing was pending on the server"
        return f"cancelled: {what} ({how})"

    async def guarded(self, op: Operation) -> int:
        """Run ``op``; SIGINT/SIGTERM and `stop` end it with what it was doing."""
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        self._start_deadline(loop)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            return await op(self.args, self)
        except asyncio.CancelledError:
            if self.failure is None and self.signal is None and not self.finished:
                raise
        except Exception:
            if self.failure is None:
                raise
        finally:
            if self.deadline is not None:
                self.deadline.cancel()
            if self._listen_end is not None:
                self._listen_end.cancel()
        if self.failure is not None:
            raise self.failure
        if self.finished:
            return EXIT_OK
        return self.interrupted()

    def interrupted(self) -> int:
        """The exit status (and the one line) of a run ended by a signal."""
        if self.args.command == "listen":
            return EXIT_OK  # listen runs until interrupted
        clear_status()
        if self.mid_line():
            print(file=sys.stderr)
        note(self.cancelled_line())
        return EXIT_SIGNAL + (self.signal or signal.SIGINT)


def _parse(line: bytes) -> dict[str, Any]:
    try:
        msg = json.loads(line)
    except ValueError:
        return {}
    return msg if isinstance(msg, dict) else {}


class Deadline:
    """``--timeout``: it ends the run when the time passes; the time spent waiting for the
    user (`paused`) is not counted."""

    def __init__(self, seconds: float, run: Run) -> None:
        self.seconds = seconds
        self.run = run
        self.prompts = False
        """Whether the user may be asked (the message then says that time is not counted)."""
        self._left = seconds
        self._since = 0.0
        self._depth = 0
        self._over = False
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop, since: float | None = None) -> None:
        """Start the clock, as if at ``since`` (loop time) when given."""
        self._loop = loop
        if since is not None:
            self._left -= max(0.0, loop.time() - since)
        self._arm()

    def _arm(self) -> None:
        assert self._loop is not None
        self._since = self._loop.time()
        self._handle = self._loop.call_later(max(0.0, self._left), self._expire)

    def left(self) -> float:
        """Seconds left (zero or less once passed)."""
        if self._loop is None or self._handle is None:
            return self._left
        return self._left - (self._loop.time() - self._since)

    def _expire(self) -> None:
        from ..client import RequestTimeout

        self._handle = None
        self._left = 0.0
        self._over = True
        run = self.run
        what = f"{run.method} {run.target}".strip() if run.method else f"mcpline {run.args.command}"
        note = " (time spent answering prompts not counted)" if self.prompts else ""
        run.stop(
            failure=RequestTimeout(
                f"{what} timed out: the deadline of {self.seconds:g}s passed{note}"
            )
        )

    def cancel(self) -> None:
        """Stop the clock for good (`left` keeps what was left)."""
        self._stop()
        self._over = True

    def _stop(self) -> None:
        if self._handle is not None and self._loop is not None:
            self._handle.cancel()
            self._handle = None
            self._left -= self._loop.time() - self._since

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The clock stops while the user is being asked."""
        if self._loop is None:
            yield
            return
        if self._depth == 0:
            self._stop()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and not self._over:
                self._arm()


Operation = Callable[[argparse.Namespace, Run], Awaitable[int]]


def main_for(args: argparse.Namespace, op: Operation, run: Run | None = None) -> int:
    """Run one client operation; map failures to exit code 2 with one line on stderr."""
    from ..client import ClientError

    _configure_logging(args.verbose)
    run = run if run is not None else Run(args)
    try:
        return asyncio.run(run.guarded(op))
    except UsageError as exc:
        note(f"mcpline {args.command}: {exc}")
        return EXIT_FAILURE
    except ClientError as exc:
        note(f"mcpline {args.command}: {one_line(str(exc))}")
        return EXIT_FAILURE
    except KeyboardInterrupt:  # before the loop's own handler was installed, or after
        run.signal = run.signal or signal.SIGINT
        return run.interrupted()
    except BrokenPipeError:
        # Whoever read our stdout went away (`| head`). Point fd 1 at /dev/null so the
        # final flush at exit cannot raise again.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if args.command == "listen":
            return EXIT_OK  # like an interruption: the listener stops
        print(
            f"mcpline {args.command}: stdout was closed before the output was written",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except Exception as exc:
        # Typically a result whose shape the human-readable view cannot show.
        if args.verbose:
            import traceback

            traceback.print_exc()
        why = one_line(f"{type(exc).__name__}: {exc}")
        note(f"mcpline {args.command}: unexpected response from the server ({why})")
        return EXIT_FAILURE


def _configure_logging(verbose: bool) -> None:
    """Library warnings (restarts, skipped lines) only with --verbose: stderr stays one line."""
    import logging

    if verbose:
        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="mcpline: %(message)s")
        logging.getLogger("mcpline.client.server_stderr").setLevel(logging.WARNING)
        # Request lines would show URLs, whose query may hold a key.
        logging.getLogger("httpx2").setLevel(logging.WARNING)
    else:
        logging.getLogger("mcpline").setLevel(logging.CRITICAL)


__all__ = ["Deadline", "EXIT_SIGNAL", "Operation", "Run", "main_for"]
