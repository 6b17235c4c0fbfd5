"""Launching a stdio server: its own process group, continuous stderr draining, the
binding's shutdown sequence, and a watchdog so servers die with their host.

A server that dies before it answers anything and without having read its input (a syntax
or import error, a script that never serves, a wrapper whose command is missing) is a
start-up failure: its loss is not retriable and carries the tail of its stderr. A server
that read its first request and then died may be a legacy server that exits on unknown
traffic, or a flaky one: that loss stays retriable. Whether the input was read is told by
the bytes still waiting in the server's stdin pipe (``FIONREAD``, Linux); elsewhere only a
server that closed its stdin before we wrote to it is recognised at once.

How the server's process tree is started and ended on each OS (a process group and signals
on POSIX, a Job Object on Windows) is `mcpline._platform`'s.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _platform
from ..errors import ConnectionLost
from ..wire import LineBuffer, Oversized
from .session import Session

log = logging.getLogger("mcpline.client")
stderr_log = logging.getLogger("mcpline.client.server_stderr")

STDERR_LINE_LIMIT = 64 * 1024
STDERR_TAIL = 40
STARTUP_TAIL_LINES = 20
STARTUP_TAIL_BYTES = 4096
STARTUP_MESSAGE_CHARS = 1800
"""A start-up failure's stderr in its error: the final exception line whole (up to this),
then the end of the traceback before it, as much as fits."""
EXIT_SETTLE = 1.0
"""After the process exits, how long to wait for its stdout to close before declaring it gone."""

StderrCallback = Callable[[str], None]


class _Watchdog:
    """One helper process per host that kills registered process groups when the host dies
    (POSIX: on Windows each server's Job Object does that, see `_platform.HOST_WATCHDOG`)."""

    _lock = threading.Lock()
    _proc: subprocess.Popen[bytes] | None = None
    _pid = 0

    @classmethod
    def _ensure(cls) -> subprocess.Popen[bytes] | None:
        if cls._proc is not None and cls._pid == os.getpid() and cls._proc.poll() is None:
            return cls._proc
        try:
            cls._proc = subprocess.Popen(
                [sys.executable, "-m", "mcpline.client._watchdog"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
            cls._pid = os.getpid()
        except OSError as exc:
            log.warning("could not start the host-death watchdog: %s", exc)
            cls._proc = None
        return cls._proc

    @classmethod
    def _send(cls, line: bytes) -> None:
        with cls._lock:
            proc = cls._ensure()
            if proc is None or proc.stdin is None:
                return
            try:
                proc.stdin.write(line)
                proc.stdin.flush()
            except OSError:
                cls._proc = None

    @classmethod
    def register(cls, pgid: int) -> None:
        cls._send(b"+%d\n" % pgid)

    @classmethod
    def unregister(cls, pgid: int) -> None:
        if cls._proc is not None:
            cls._send(b"-%d\n" % pgid)


class _StderrDrain:
    """Splits stderr into bounded lines for a callback (or `logging`) and keeps a short tail."""

    def __init__(self, label: str, callback: StderrCallback | None) -> None:
        self.label = label
        self.callback = callback
        self.lines = LineBuffer(STDERR_LINE_LIMIT)
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self.closed = asyncio.Event()

    def feed(self, data: bytes) -> None:
        for item in self.lines.feed(data):
            self._emit(item)

    def eof(self) -> None:
        for item in self.lines.eof():
            self._emit(item)
        self.closed.set()

    def _emit(self, item: bytes | Oversized) -> None:
        if isinstance(item, Oversized):
            text = item.prefix[:2000].decode("utf-8", "replace") + f" …[{item.size} bytes]"
        else:
            text = item.decode("utf-8", "replace")
        self.tail.append(text)
        if self.callback is not None:
            try:
                self.callback(text)
            except Exception:
                log.exception("stderr callback failed")
        else:
            stderr_log.info("[%s] %s", self.label, text)

    def summary(self, lines: int = 5, limit: int = 300) -> str:
        """The last ``lines`` non-blank lines, joined with `` | ``, each cut to ``limit``
        characters, the whole to its last ``limit * lines``."""
        tail = [t.strip()[:limit] for t in self.tail if t.strip()][-lines:]
        return " | ".join(tail)[-limit * lines :]

    def startup_summary(self) -> str:
        """A dead server's stderr as its start-up error quotes it: the final exception line
        first (`final_exception`), then the end of the traceback before it."""
        lines = [t for t in self.tail if t.strip()]
        found = final_exception(lines)
        if found is None:
            return self.summary(STARTUP_TAIL_LINES, STARTUP_TAIL_BYTES // 20)
        text, at = found
        lines = [t.strip() for t in lines]
        text = text if len(text) <= STARTUP_MESSAGE_CHARS else text[:STARTUP_MESSAGE_CHARS] + "…"
        room = STARTUP_MESSAGE_CHARS - len(text)
        before = " | ".join(lines[max(0, at - STARTUP_TAIL_LINES) : at])
        if room < 200 or not before:
            return text
        if len(before) > room:
            before = "…" + before[-room:]
        return f"{text}; traceback tail: {before}"


_QUALIFIED = r"((?:[A-Za-z_]\w*\.)*)"
_RAISED = re.compile(_QUALIFIED + r"([A-Za-z_]\w*)(:.*)?")
_ERROR = re.compile(_QUALIFIED + r"([A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning))(:.*)?")
_TRACEBACK = "Traceback (most recent call last):"


def final_exception(lines: Sequence[str]) -> tuple[str, int] | None:
    """The line of a Python traceback naming the exception that ended it (its class named
    without its module) and that line's index in ``lines``; None if there is none.

    It is the first unindented line after the last ``Traceback`` header; without one (a
    ``SyntaxError``, or a header scrolled out of the tail), the last line that reads
    ``SomeError: message``.
    """
    start = max((i for i, line in enumerate(lines) if line.strip() == _TRACEBACK), default=-1)
    if start >= 0:
        for i in range(start + 1, len(lines)):
            line = lines[i]
            if line and not line[0].isspace():
                match = _RAISED.fullmatch(line.rstrip())
                if match is not None:
                    return match[2] + (match[3] or ""), i
    for i in range(len(lines) - 1, -1, -1):
        match = _ERROR.fullmatch(lines[i].rstrip())
        if match is not None and not lines[i][:1].isspace():
            return match[2] + (match[3] or ""), i
    return None


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, channel: ProcessChannel) -> None:
        self.channel = channel
        self.transport: asyncio.SubprocessTransport | None = None
        self.can_write = asyncio.Event()
        self.can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.channel.session.feed(data)
        else:
            self.channel.stderr.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.channel.stdout_closed()
        elif fd == 2:
            self.channel.stderr.eof()
        elif fd == 0:
            self.can_write.set()

    def pause_writing(self) -> None:
        self.can_write.clear()

    def resume_writing(self) -> None:
        self.can_write.set()

    def process_exited(self) -> None:
        self.channel.process_exited()


class _DirectStdout(asyncio.Protocol):
    """The server's stdout, fed to the session as each chunk is read.

    asyncio's subprocess transport hands pipe data to its protocol one loop pass later
    (``call_soon``): an extra loop iteration and poll per reply. This protocol, set on the
    stdout pipe transport, skips that hop; end of stream and close still go to the
    subprocess transport's own pipe protocol (its bookkeeping of pipes and exit).
    """

    def __init__(self, inner: asyncio.BaseProtocol, channel: ProcessChannel) -> None:
        self.inner = inner
        self.channel = channel

    def data_received(self, data: bytes) -> None:
        self.channel.session.feed(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()  # type: ignore[attr-defined,no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)


class _StdinWatch(asyncio.BaseProtocol):
    """The server's stdin pipe: notes, as the pipe is lost and before its fd is closed,
    whether the server left our bytes unread."""

    def __init__(self, inner: asyncio.BaseProtocol, channel: ProcessChannel, fd: int) -> None:
        self.inner = inner
        self.channel = channel
        self.fd = fd

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.channel.stdin_lost(_platform.unread_pipe_bytes(self.fd))
        self.inner.connection_lost(exc)


class ProcessChannel:
    """A running stdio server. Create with `start`; end with `aclose`."""

    def __init__(
        self,
        session: Session,
        label: str,
        *,
        on_stderr: StderrCallback | None,
        close_grace: float,
        term_grace: float,
    ) -> None:
        self.session = session
        self.label = label
        self.stderr = _StderrDrain(label, on_stderr)
        self.close_grace = close_grace
        self.term_grace = term_grace
        self.loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[int] = self.loop.create_future()
        self.closing = False
        self.pid = 0
        self.pgid = 0
        self.tree: _platform.ProcessTree | None = None
        self._transport: asyncio.SubprocessTransport | None = None
        self._protocol: _Protocol | None = None
        self._settle: asyncio.TimerHandle | None = None
        self._closed = False
        self._wrote = False
        self._input_unread: bool | None = None
        """Set when stdin is lost: did the server leave our input unread?"""

    @classmethod
    async def start(
        cls,
        session: Session,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        on_stderr: StderrCallback | None = None,
        close_grace: float = 2.0,
        term_grace: float = 2.0,
        watchdog: bool = True,
    ) -> ProcessChannel:
        """Launch ``command args`` in a new process group (Windows: a Job Object), stdio on
        pipes."""
        full_env = dict(os.environ) if inherit_env else {}
        if env:
            full_env.update(env)
        marker = secrets.token_hex(8)
        full_env[_platform.TREE_ENV] = marker
        label = os.path.basename(command) + (f" {args[0]}" if args else "")
        chan = cls(
            session, label, on_stderr=on_stderr, close_grace=close_grace, term_grace=term_grace
        )
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _Protocol(chan),
                command,
                *args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                cwd=cwd,
                **_platform.spawn_options(),
            )
        except OSError as exc:
            raise ConnectionLost(f"cannot start {command!r}: {exc}", retriable=False) from exc
        try:
            chan.tree = _platform.adopt(transport.get_pid(), marker=marker)
        except OSError as exc:
            transport.close()
            raise ConnectionLost(f"cannot start {command!r}: {exc}", retriable=False) from exc
        chan._transport = transport
        chan._protocol = protocol
        stdout = transport.get_pipe_transport(1)
        inner = stdout.get_protocol() if stdout is not None else None
        if (
            stdout is not None
            and hasattr(inner, "eof_received")
            and hasattr(inner, "connection_lost")
            and not stdout.is_closing()
        ):
            # Before any await: chunks queued by the transport so far still come first.
            stdout.set_protocol(_DirectStdout(inner, chan))  # type: ignore[arg-type]
        stdin = transport.get_pipe_transport(0)
        pipe = stdin.get_extra_info("pipe") if stdin is not None else None
        if stdin is not None and pipe is not None and not stdin.is_closing():
            stdin.set_protocol(_StdinWatch(stdin.get_protocol(), chan, pipe.fileno()))
        chan.pid = chan.tree.pid
        chan.pgid = chan.tree.pgid
        if watchdog and _platform.HOST_WATCHDOG:
            await loop.run_in_executor(None, _Watchdog.register, chan.pgid)
        session.channel = chan
        return chan

    # --- Channel interface --------------------------------------------------------------

    def send(self, message: dict[str, Any], line: bytes) -> None:
        pipe = self._transport.get_pipe_transport(0) if self._transport is not None else None
        if pipe is None or pipe.is_closing() or self.exited.done():
            if not self._wrote and not self.closing:
                # Gone before we wrote a byte: the end of its output reports the start-up
                # failure, with the exit status and stderr this error could not yet quote.
                self._wrote = self._input_unread = True
                return
            raise ConnectionLost(f"{self.label}: cannot write, the server's stdin is closed")
        first = not self._wrote
        self._wrote = True
        pipe.write(line)  # type: ignore[attr-defined]
        if first and pipe.is_closing():  # the very first write found no reader
            self._input_unread = True

    def buffered(self) -> int:
        """Bytes written to the server's stdin that it has not read yet (the pipe's buffer)."""
        pipe = self._transport.get_pipe_transport(0) if self._transport is not None else None
        return pipe.get_write_buffer_size() if pipe is not None else 0  # type: ignore[attr-defined]

    def abort(self) -> None:
        """Close the server's stdin at once, discarding what it has not read."""
        pipe = self._transport.get_pipe_transport(0) if self._transport is not None else None
        if pipe is not None:
            pipe.abort()  # type: ignore[attr-defined]

    async def drain(self) -> None:
        if self._protocol is not None and not self._protocol.can_write.is_set():
            lost: asyncio.Future[Any] = self.session.lost
            waiter: asyncio.Future[Any] = self.loop.create_task(self._protocol.can_write.wait())
            await asyncio.wait([waiter, lost], return_when=asyncio.FIRST_COMPLETED)
            if not waiter.done():
                waiter.cancel()
                raise self.session.close_reason or ConnectionLost(f"{self.label} is gone")

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode() if self._transport is not None else None

    def _describe_exit(self, *, with_stderr: bool = True) -> str:
        rc = self.returncode
        if rc is None:
            what = f"{self.label} closed its stdout"
        elif rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = str(-rc)
            what = f"{self.label} was killed by {name}"
        else:
            what = f"{self.label} exited with code {rc}"
        tail = self.stderr.summary() if with_stderr else ""
        return f"{what}; stderr: {tail}" if tail else what

    def stdin_lost(self, unread: int) -> None:
        """The server closed its stdin with ``unread`` bytes of ours left in the pipe."""
        if self._input_unread is None:
            self._input_unread = unread > 0 or not self._wrote

    def never_read_input(self) -> bool:
        """Whether the server gave up its stdin without reading what we wrote (or before we
        wrote anything) and never answered: it failed at start-up, whatever we sent."""
        if self.session.answered:
            return False
        if self._input_unread is not None:
            return self._input_unread
        pipe = self._transport.get_pipe_transport(0) if self._transport is not None else None
        fileobj = pipe.get_extra_info("pipe") if pipe is not None else None
        if fileobj is None:
            return False
        try:  # a file object on POSIX; on Windows a PipeHandle, which has no `closed`
            fd = None if getattr(fileobj, "closed", False) else fileobj.fileno()
        except (ValueError, OSError):
            fd = None
        if fd is None:  # stdin was gone before its watch could be set (a fast exit)
            return not self._wrote
        return _platform.unread_pipe_bytes(fd) > 0

    def _loss(self) -> ConnectionLost:
        """Why the connection ended, as the error that fails the requests in flight."""
        if self.closing:
            return ConnectionLost(f"{self.label} was shut down")
        if self.never_read_input() and self.exited.done():
            tail = self.stderr.startup_summary()
            what = self._describe_exit(with_stderr=False)
            ran_out = (
                "; does the file call server.run()? (or serve it with: mcpline run FILE)"
                if self.returncode == 0
                else ""
            )
            return ConnectionLost(
                f"{what} before answering its first request (it never read its input)"
                + (f"; stderr: {tail}" if tail else "; nothing on stderr")
                + ran_out,
                retriable=False,
            )
        return ConnectionLost(self._describe_exit())

    def stdout_closed(self) -> None:
        """The server closed its stdout: the session ends (once the exit status is known)."""
        if self._settle is not None:
            self._settle.cancel()
        if self.closing:
            self.session.eof(self._loss())
        else:
            self.loop.create_task(self._eof_after_exit())

    async def _eof_after_exit(self) -> None:
        """Wait briefly for the exit status and the end of stderr, which the error quotes
        (bounded: a grandchild may hold stderr open)."""
        await self._wait_exit(0.5)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.stderr.closed.wait(), 0.5)
        self.session.eof(self._loss())

    def process_exited(self) -> None:
        """The server process exited."""
        if not self.exited.done():
            self.exited.set_result(self.returncode if self.returncode is not None else -1)
        # Output may still be in the pipe; give it a moment, then give up on it (a
        # grandchild may hold stdout open after the server itself is gone).
        if not self.session.closed:
            self._settle = self.loop.call_later(EXIT_SETTLE, self._gone)

    def _gone(self) -> None:
        self.session.connection_lost(self._loss())

    async def _wait_exit(self, timeout: float) -> bool:
        if self.exited.done():
            return True
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def aclose(self, within: float | None = None) -> None:
        """Close stdin, wait, SIGTERM the group, wait, SIGKILL; then clear the rest of the tree.

        ``within`` (seconds) cuts each wait to half of it (a deadline has passed, say): a
        server that has not exited by then is killed.

        The server's descendants are listed first (`ProcessTree.descendants`: Linux ``/proc``,
        else psutil), so that those that left its process group (``setsid``) are ended too,
        even once the server's exit has re-parented them; without them only the group is
        signalled. On Windows SIGTERM is Ctrl+Break to the server's process group and SIGKILL
        ``TerminateJobObject``; the job holds every descendant.
        """
        if self._closed:
            return
        self._closed = True
        self.closing = True
        transport = self._transport
        tree = self.tree
        if transport is None or tree is None:
            return
        close_grace, term_grace = self.close_grace, self.term_grace
        if within is not None:
            close_grace = min(close_grace, within / 2)
            term_grace = min(term_grace, within / 2)
        try:
            strays = await self.loop.run_in_executor(None, tree.descendants)
            stdin = transport.get_pipe_transport(0)
            if stdin is not None:
                stdin.close()
            if not await self._wait_exit(close_grace):
                log.info("%s did not exit after stdin closed; sending SIGTERM", self.label)
                tree.terminate()
                if not await self._wait_exit(term_grace):
                    log.warning("%s ignored SIGTERM; sending SIGKILL", self.label)
                    tree.kill()
                    await self._wait_exit(5.0)
            await self._clear_group(tree, term_grace)
            await self._clear_strays(tree, strays, term_grace)
        finally:
            if self._settle is not None:
                self._settle.cancel()
            self.session.connection_lost(
                ConnectionLost(f"{self.label} was shut down", retriable=False)
            )
            transport.close()
            tree.release()
            if _platform.HOST_WATCHDOG:
                await self.loop.run_in_executor(None, _Watchdog.unregister, self.pgid)

    async def _clear_group(self, tree: _platform.ProcessTree, grace: float) -> None:
        """Processes the server started (a wrapper's children) must not outlive it."""
        if not tree.alive():
            return
        tree.terminate()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            if not tree.alive():
                return
        tree.kill()

    async def _clear_strays(
        self, tree: _platform.ProcessTree, strays: dict[int, float], grace: float
    ) -> None:
        """SIGTERM, then SIGKILL, the listed descendants still running outside the group."""
        live = tree.end_strays(strays, force=False)
        if live:
            log.info("%s left %d process(es) outside its group; ending them", self.label, len(live))
        deadline = time.monotonic() + grace
        while live and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            live = {pid: start for pid, start in live.items() if tree.stray_running(pid, start)}
        tree.end_strays(live, force=True)


__all__ = ["ProcessChannel", "StderrCallback"]
