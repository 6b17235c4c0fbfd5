"""The Windows implementation: CRT fds, reader/writer threads, SIGINT/SIGBREAK, Job Objects.

What differs from POSIX, and why:

* **stdio.** fds 0 and 1 are moved as on POSIX (`os.dup`/`os.dup2`; ``nul`` for stdin), the
  protocol fds are put in binary mode (``msvcrt.setmode``) and the process's standard handles
  (what a child started without explicit stdio inherits) are pointed at stderr and ``nul``
  with ``SetStdHandle``, as the CRT does for a console program.
* **I/O.** Inherited pipes are not opened for overlapped I/O, so the proactor cannot read or
  write them: stdin is read by a thread, stdout written by a thread (`._threads`).
* **Signals.** There are no SIGTERM/SIGHUP to catch (``TerminateProcess`` cannot be caught)
  and Windows loops do not implement ``add_signal_handler``: SIGINT (Ctrl+C) and SIGBREAK
  (Ctrl+Break, what a client sends a child's process group) go through `signal.signal`.
* **Parent death.** A Windows process is not re-parented: the parent's process handle is
  opened at start and polled (``WaitForSingleObject``).
* **Process trees.** A child is started suspended in a new process group
  (``CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP``), put in a Job Object with
  ``JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`` and only then resumed (``NtResumeProcess``), so
  everything it starts is in the job from its first instruction. Ending it: close stdin,
  wait, Ctrl+Break to its group (heard only by a child sharing our console), wait, then
  ``TerminateJobObject``. The job is also the host-death watchdog: when the host dies, its
  handle closes and the kernel ends the whole job.

`ctypes` is used (`._win32`) rather than pywin32: a handful of kernel32 calls do not justify a
dependency of several megabytes, and a fake ``kernel32`` (any object with the same methods)
lets the tests check the call sequence on any OS. This module imports on any platform;
Windows-only names are reached only inside functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
from collections.abc import Callable
from typing import Any

from . import _psutil as psutil_backend
from . import _win32
from ._common import machine_line, swap_stdio
from ._threads import Controls, Sink, ThreadWriteTransport, open_thread_reader
from ._win32 import (
    CHILD_ACCESS,
    CREATE_NEW_PROCESS_GROUP,
    CREATE_SUSPENDED,
    CTRL_BREAK_EVENT,
    ERROR_ACCESS_DENIED,
    ERROR_INVALID_PARAMETER,
    EXIT_KILLED,
    IO_COUNTERS,
    JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_BASIC_LIMIT_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    O_BINARY,
    PROCESS_QUERY_LIMITED_INFORMATION,
    PROCESS_SET_QUOTA,
    PROCESS_SUSPEND_RESUME,
    PROCESS_TERMINATE,
    STD_INPUT_HANDLE,
    STD_OUTPUT_HANDLE,
    SYNCHRONIZE,
    WAIT_OBJECT_0,
    WAIT_TIMEOUT,
    Win32,
    Win32Error,
)

log = logging.getLogger("mcpline.platform")

NAME = "windows"
HOST_WATCHDOG = False
"""No watchdog process: the Job Object (kill on close) ends a server whose host died."""
HAS_UNIX_SOCKETS = hasattr(socket, "AF_UNIX")
SHUTDOWN_SIGNALS = ("SIGINT", "SIGBREAK")


@functools.lru_cache(maxsize=1)
def _api() -> Win32 | None:
    """The real kernel32/ntdll, loaded once; None where they cannot be loaded."""
    try:
        return _win32.load_dlls()
    except (OSError, AttributeError) as exc:
        log.warning("kernel32 is not usable (%s): only the child itself can be ended", exc)
        return None


# --- pure decisions ---------------------------------------------------------------------------


def creationflags(*, suspend: bool) -> int:
    """The ``creationflags`` a child is started with: a new process group (so Ctrl+Break can
    be aimed at it and our Ctrl+C is not), suspended until it is in its job when ``suspend``."""
    return CREATE_NEW_PROCESS_GROUP | (CREATE_SUSPENDED if suspend else 0)


def parent_gone_on_open_error(code: int) -> bool:
    """Whether ``OpenProcess(parent)`` failing with ``code`` means the parent is already gone
    (no such process: ERROR_INVALID_PARAMETER) rather than that it cannot be watched."""
    return code == ERROR_INVALID_PARAMETER


def shutdown_signal(name: str) -> signal.Signals | None:
    """The signal called ``name`` where this Python has it."""
    sig = getattr(signal, name, None)
    return sig if isinstance(sig, signal.Signals) else None


# --- stdio ------------------------------------------------------------------------------------

_claimed: tuple[int, int] | None = None


def claim_stdio(
    *,
    set_binary: Callable[[int], None] | None = None,
    os_handle: Callable[[int], int] | None = None,
    api: Win32 | None = None,
) -> tuple[int, int]:
    """Take fds 0 and 1 for the protocol; return (input fd, output fd).

    As on POSIX, fd 1 and ``sys.stdout`` then point at stderr and fd 0 at ``nul``; the two
    protocol fds are in binary mode and the standard handles follow fds 0 and 1. The
    keywords replace the CRT and kernel32 (for the tests).
    """
    global _claimed
    if _claimed is not None:
        return _claimed
    in_fd, out_fd = swap_stdio()
    binary = set_binary or _win32.set_binary
    for fd in (in_fd, out_fd):
        with contextlib.suppress(OSError):
            binary(fd)
    api = api if api is not None else _api()
    if api is not None:
        handle_of = os_handle or _win32.os_handle
        for which, fd in ((STD_INPUT_HANDLE, 0), (STD_OUTPUT_HANDLE, 1)):
            with contextlib.suppress(OSError):
                api.set_std_handle(which, handle_of(fd))
    _claimed = (in_fd, out_fd)
    return _claimed


async def open_reader(fd: int, sink: Sink) -> Controls:
    """Start feeding ``fd`` to ``sink`` from a reader thread; return (pause, resume, close)."""
    return open_thread_reader(fd, sink, asyncio.get_running_loop())


async def open_writer(
    fd: int, factory: Callable[[], asyncio.BaseProtocol]
) -> tuple[asyncio.WriteTransport, asyncio.BaseProtocol] | None:
    """A transport writing ``fd`` from a writer thread (never None on Windows)."""
    protocol = factory()
    return ThreadWriteTransport(fd, protocol, asyncio.get_running_loop()), protocol


def install_shutdown_signals(
    loop: asyncio.AbstractEventLoop,
    callback: Callable[[signal.Signals], None],
    *,
    set_handler: Callable[..., Any] = signal.signal,
) -> Callable[[], None]:
    """Call ``callback(sig)`` on the loop for SIGINT and SIGBREAK; return a function that
    removes the handlers.

    The loop's own ``add_signal_handler`` is used where it exists; Windows loops raise
    NotImplementedError, and then `signal.signal` installs a handler that hands the signal
    to the loop (``call_soon_threadsafe`` also wakes it). Outside the main thread nothing is
    installed.
    """
    via_loop: list[tuple[signal.Signals, Any]] = []
    previous: list[tuple[signal.Signals, Any]] = []

    def handler(signum: int, frame: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(callback, signal.Signals(signum))

    for name in SHUTDOWN_SIGNALS:
        sig = shutdown_signal(name)
        if sig is None:
            continue
        before = signal.getsignal(sig)
        try:
            loop.add_signal_handler(sig, callback, sig)
        except NotImplementedError:
            pass
        except (RuntimeError, ValueError):
            continue
        else:
            via_loop.append((sig, before))
            continue
        try:
            previous.append((sig, set_handler(sig, handler)))
        except (ValueError, OSError):  # not the main thread
            continue

    def remove() -> None:
        for sig, before in via_loop:  # the loop restores the default; put back what was there
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
            with contextlib.suppress(ValueError, OSError, TypeError):
                set_handler(sig, before if before is not None else signal.SIG_DFL)
        for sig, old in previous:
            with contextlib.suppress(ValueError, OSError, TypeError):
                set_handler(sig, old if old is not None else signal.SIG_DFL)

    return remove


def parent_monitor(*, api: Win32 | None = None) -> tuple[int, Callable[[], bool]]:
    """(the parent's pid, a check that says whether it is gone), from a handle to the parent
    opened now: Windows does not re-parent orphans, so ``getppid`` would not change."""
    parent = os.getppid()
    api = api if api is not None else _api()
    if api is None:
        return parent, lambda: False
    try:
        handle = api.open_process(parent, SYNCHRONIZE)
    except Win32Error as exc:
        if parent_gone_on_open_error(exc.code):
            return parent, lambda: True
        log.info("cannot watch the parent process %d (%s)", parent, exc)
        return parent, lambda: False
    return parent, lambda: api.wait(handle, 0) == WAIT_OBJECT_0


# --- process trees ----------------------------------------------------------------------------


def spawn_options() -> dict[str, Any]:
    """`subprocess.Popen` / `loop.subprocess_exec` options for a child that `adopt` takes:
    suspended (when kernel32 is usable, to be resumed by `adopt`) in a new process group."""
    return {"creationflags": creationflags(suspend=_api() is not None)}


class JobObject:
    """A Job Object whose processes all die when it is terminated or its last handle closes."""

    def __init__(self, api: Win32) -> None:
        self.api = api
        self.handle = api.create_job()
        try:
            api.set_job_limits(self.handle, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE)
        except OSError:
            api.close(self.handle)
            raise

    def assign(self, process: int) -> None:
        self.api.assign(self.handle, process)

    def terminate(self, code: int = EXIT_KILLED) -> None:
        self.api.terminate_job(self.handle, code)

    def active_processes(self) -> int:
        return self.api.job_active_processes(self.handle)

    def close(self) -> None:
        """Close the handle: what is still running in the job is ended by the kernel."""
        self.api.close(self.handle)


class ProcessTree:
    """A child started with `spawn_options`: its process handle and, normally, its job."""

    def __init__(
        self,
        pid: int,
        api: Win32 | None,
        job: JobObject | None,
        handle: int | None,
        *,
        send_break: Callable[[int], None] = _win32.send_ctrl_break,
    ) -> None:
        self.pid = pid
        self.pgid = pid  # CREATE_NEW_PROCESS_GROUP: its group id is its pid
        self.api = api
        self.job = job
        self.handle = handle
        self.send_break = send_break

    def descendants(self) -> dict[int, float]:
        """Nothing to list: the job holds every descendant."""
        return {}

    def terminate(self) -> None:
        """Ctrl+Break to its process group (heard only if it shares our console)."""
        with contextlib.suppress(OSError):
            self.send_break(self.pgid)

    def kill(self) -> None:
        """``TerminateJobObject`` (or, without a job, ``TerminateProcess``)."""
        with contextlib.suppress(OSError):
            if self.job is not None:
                self.job.terminate()
            elif self.api is not None and self.handle is not None:
                self.api.terminate_process(self.handle, EXIT_KILLED)

    def alive(self) -> bool:
        """Whether any process of the job (without a job: the child) is left."""
        try:
            if self.job is not None:
                return self.job.active_processes() > 0
            if self.api is not None and self.handle is not None:
                return self.api.wait(self.handle, 0) == WAIT_TIMEOUT
        except OSError:
            pass
        return False

    def end_strays(self, strays: dict[int, float], *, force: bool) -> dict[int, float]:
        """Nothing outside the job to end."""
        return {}

    def stray_running(self, pid: int, start: float) -> bool:
        return False

    def release(self) -> None:
        """Close the job (ending what is left in it) and the process handle."""
        job, handle, self.job, self.handle = self.job, self.handle, None, None
        if job is not None:
            with contextlib.suppress(OSError):
                job.close()
        if handle is not None and self.api is not None:
            with contextlib.suppress(OSError):
                self.api.close(handle)


def adopt(pid: int, *, api: Win32 | None = None, marker: str | None = None) -> ProcessTree:
    """Put a child just started with `spawn_options` in a new job, then resume it (the job
    holds every descendant, so ``marker`` is not needed here).

    Without a job (kernel32 unusable, or the job refused) a warning is logged and only the
    child itself can be ended. A child that cannot be resumed is terminated and OSError
    raised.
    """
    api = api if api is not None else _api()
    if api is None:
        return ProcessTree(pid, None, None, None)
    handle = api.open_process(pid, CHILD_ACCESS)
    job: JobObject | None = None
    try:
        job = JobObject(api)
        job.assign(handle)
    except OSError as exc:
        log.warning("no Job Object for process %d (%s): its descendants may outlive it", pid, exc)
        if job is not None:
            with contextlib.suppress(OSError):
                job.close()
        job = None
    try:
        api.resume_process(handle)
    except OSError:
        with contextlib.suppress(OSError):
            api.terminate_process(handle, EXIT_KILLED)
        api.close(handle)
        if job is not None:
            with contextlib.suppress(OSError):
                job.close()
        raise
    return ProcessTree(pid, api, job, handle)


def unread_pipe_bytes(fd: int) -> int:
    """0: Windows does not say what is left unread in a pipe through its write end."""
    return 0


def unsent_socket_bytes(fd: int) -> int:
    """0: Windows does not say what a socket's peer has not acknowledged."""
    return 0


# --- memory and CPU (psutil) --------------------------------------------------------------------


def memory_unavailable() -> str | None:
    """Why process memory cannot be measured here (None when it can)."""
    why = psutil_backend.missing()
    return None if why is None else f"not measured on Windows: {why}"


def tree_rss(pid: int) -> int | None:
    """Resident memory (working set) of ``pid`` and its descendants; None when not measured."""
    return psutil_backend.tree_rss(pid)


def process_memory(pid: int) -> tuple[int, int | None] | None:
    """(working set, peak working set) of ``pid`` alone; None when unknown."""
    return psutil_backend.memory(pid)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid``; OSError when unknown."""
    return psutil_backend.cpu_seconds(pid)


def machine() -> str:
    """One line about this machine: CPUs, model, memory, OS, Python."""
    import platform

    return machine_line(platform.processor() or "unknown CPU", psutil_backend.total_memory())


# --- files --------------------------------------------------------------------------------------


def owned_by_current_user(st: os.stat_result) -> bool:
    """True: Windows has no owner uid in `os.stat` (``st_uid`` is 0); the per-user profile
    directory's ACLs are what keep other users out."""
    return True


def open_file_limit() -> int | None:
    """None: Windows has no per-process limit on sockets of the POSIX ``RLIMIT_NOFILE`` kind."""
    return None


__all__ = [
    "NAME",
    "HOST_WATCHDOG",
    "HAS_UNIX_SOCKETS",
    "SHUTDOWN_SIGNALS",
    "CHILD_ACCESS",
    "CREATE_NEW_PROCESS_GROUP",
    "CREATE_SUSPENDED",
    "CTRL_BREAK_EVENT",
    "ERROR_ACCESS_DENIED",
    "ERROR_INVALID_PARAMETER",
    "EXIT_KILLED",
    "IO_COUNTERS",
    "JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION",
    "JOB_OBJECT_EXTENDED_LIMIT_INFORMATION",
    "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE",
    "JOBOBJECT_BASIC_ACCOUNTING_INFORMATION",
    "JOBOBJECT_BASIC_LIMIT_INFORMATION",
    "JOBOBJECT_EXTENDED_LIMIT_INFORMATION",
    "O_BINARY",
    "PROCESS_QUERY_LIMITED_INFORMATION",
    "PROCESS_SET_QUOTA",
    "PROCESS_SUSPEND_RESUME",
    "PROCESS_TERMINATE",
    "STD_INPUT_HANDLE",
    "STD_OUTPUT_HANDLE",
    "SYNCHRONIZE",
    "WAIT_OBJECT_0",
    "WAIT_TIMEOUT",
    "Win32",
    "Win32Error",
    "creationflags",
    "parent_gone_on_open_error",
    "shutdown_signal",
    "claim_stdio",
    "open_reader",
    "open_writer",
    "install_shutdown_signals",
    "parent_monitor",
    "spawn_options",
    "JobObject",
    "ProcessTree",
    "adopt",
    "unread_pipe_bytes",
    "memory_unavailable",
    "tree_rss",
    "process_memory",
    "cpu_seconds",
    "machine",
    "owned_by_current_user",
    "open_file_limit",
]
