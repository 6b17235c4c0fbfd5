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

`ctypes` is used rather than pywin32: a handful of kernel32 calls do not justify a
dependency of several megabytes, and a fake ``kernel32`` (any object with the same methods)
lets the tests check the call sequence on any OS. This module imports on any platform;
Windows-only names are reached only inside functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from . import _psutil as psutil_backend
from ._common import machine_line
from ._threads import Controls, Sink, ThreadWriteTransport, open_thread_reader

log = logging.getLogger("mcpline.platform")

NAME = "windows"
HOST_WATCHDOG = False
"""No watchdog process: the Job Object (kill on close) ends a server whose host died."""
HAS_UNIX_SOCKETS = hasattr(socket, "AF_UNIX")
SHUTDOWN_SIGNALS = ("SIGINT", "SIGBREAK")

# --- Win32 constants ------------------------------------------------------------------------

CREATE_SUSPENDED = 0x00000004
CREATE_NEW_PROCESS_GROUP = 0x00000200
PROCESS_TERMINATE = 0x0001
PROCESS_SET_QUOTA = 0x0100
PROCESS_SUSPEND_RESUME = 0x0800
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
SYNCHRONIZE = 0x00100000
CHILD_ACCESS = (
    PROCESS_TERMINATE
    | PROCESS_SET_QUOTA
    | PROCESS_SUSPEND_RESUME
    | PROCESS_QUERY_LIMITED_INFORMATION
    | SYNCHRONIZE
)
"""What `adopt` needs on a child: put it in a job (set quota + terminate), resume it, wait."""
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000
JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION = 1
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
WAIT_OBJECT_0 = 0x00000000
WAIT_TIMEOUT = 0x00000102
STD_INPUT_HANDLE = 0xFFFFFFF6  # (DWORD)-10
STD_OUTPUT_HANDLE = 0xFFFFFFF5  # (DWORD)-11
ERROR_ACCESS_DENIED = 5
ERROR_INVALID_PARAMETER = 87
O_BINARY = 0x8000
CTRL_BREAK_EVENT = 1
EXIT_KILLED = 1
"""The exit status of processes ended by `ProcessTree.kill` (``TerminateJobObject``)."""


class IO_COUNTERS(ctypes.Structure):
    _fields_ = [
        ("ReadOperationCount", ctypes.c_uint64),
        ("WriteOperationCount", ctypes.c_uint64),
        ("OtherOperationCount", ctypes.c_uint64),
        ("ReadTransferCount", ctypes.c_uint64),
        ("WriteTransferCount", ctypes.c_uint64),
        ("OtherTransferCount", ctypes.c_uint64),
    ]


class JOBOBJECT_BASIC_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = [
        ("PerProcessUserTimeLimit", ctypes.c_int64),
        ("PerJobUserTimeLimit", ctypes.c_int64),
        ("LimitFlags", ctypes.c_uint32),
        ("MinimumWorkingSetSize", ctypes.c_size_t),
        ("MaximumWorkingSetSize", ctypes.c_size_t),
        ("ActiveProcessLimit", ctypes.c_uint32),
        ("Affinity", ctypes.c_size_t),
        ("PriorityClass", ctypes.c_uint32),
        ("SchedulingClass", ctypes.c_uint32),
    ]


class JOBOBJECT_EXTENDED_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = [
        ("BasicLimitInformation", JOBOBJECT_BASIC_LIMIT_INFORMATION),
        ("IoInfo", IO_COUNTERS),
        ("ProcessMemoryLimit", ctypes.c_size_t),
        ("JobMemoryLimit", ctypes.c_size_t),
        ("PeakProcessMemoryUsed", ctypes.c_size_t),
        ("PeakJobMemoryUsed", ctypes.c_size_t),
    ]


class JOBOBJECT_BASIC_ACCOUNTING_INFORMATION(ctypes.Structure):
    _fields_ = [
        ("TotalUserTime", ctypes.c_int64),
        ("TotalKernelTime", ctypes.c_int64),
        ("ThisPeriodTotalUserTime", ctypes.c_int64),
        ("ThisPeriodTotalKernelTime", ctypes.c_int64),
        ("TotalPageFaultCount", ctypes.c_uint32),
        ("TotalProcesses", ctypes.c_uint32),
        ("ActiveProcesses", ctypes.c_uint32),
        ("TotalTerminatedProcesses", ctypes.c_uint32),
    ]


class Win32Error(OSError):
    """A failed Win32 call, with its ``GetLastError`` code (or NTSTATUS)."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what} failed (Windows error {code})")
        self.code = code


class Win32:
    """The kernel32 (and one ntdll) calls this module makes, each checked.

    ``kernel32`` and ``ntdll`` are the DLLs (`ctypes.WinDLL`) or fakes with the same methods;
    ``last_error`` returns the error code of the last failed call.
    """

    def __init__(
        self, kernel32: Any, ntdll: Any, last_error: Callable[[], int] = lambda: 0
    ) -> None:
        self.k = kernel32
        self.nt = ntdll
        self.last_error = last_error

    def _ok(self, result: Any, what: str) -> Any:
        if not result:
            raise Win32Error(what, self.last_error())
        return result

    def open_process(self, pid: int, access: int) -> int:
        return int(self._ok(self.k.OpenProcess(access, False, pid), f"OpenProcess({pid})"))

    def close(self, handle: int) -> None:
        self.k.CloseHandle(handle)

    def wait(self, handle: int, milliseconds: int) -> int:
        return int(self.k.WaitForSingleObject(handle, milliseconds))

    def terminate_process(self, handle: int, code: int) -> None:
        self._ok(self.k.TerminateProcess(handle, code), "TerminateProcess")

    def resume_process(self, handle: int) -> None:
        status = int(self.nt.NtResumeProcess(handle))
        if status != 0:
            raise Win32Error("NtResumeProcess", status & 0xFFFFFFFF)

    def create_job(self) -> int:
        return int(self._ok(self.k.CreateJobObjectW(None, None), "CreateJobObjectW"))

    def set_job_limits(self, job: int, flags: int) -> None:
        info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION()
        info.BasicLimitInformation.LimitFlags = flags
        self._ok(
            self.k.SetInformationJobObject(
                job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info)
            ),
            "SetInformationJobObject",
        )

    def assign(self, job: int, process: int) -> None:
        self._ok(self.k.AssignProcessToJobObject(job, process), "AssignProcessToJobObject")

    def terminate_job(self, job: int, code: int) -> None:
        self._ok(self.k.TerminateJobObject(job, code), "TerminateJobObject")

    def job_active_processes(self, job: int) -> int:
        info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION()
        self._ok(
            self.k.QueryInformationJobObject(
                job,
                JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION,
                ctypes.byref(info),
                ctypes.sizeof(info),
                None,
            ),
            "QueryInformationJobObject",
        )
        return int(info.ActiveProcesses)

    def set_std_handle(self, which: int, handle: int) -> None:
        self._ok(self.k.SetStdHandle(which, handle), "SetStdHandle")


if sys.platform == "win32":

    def _load_dlls() -> Win32:
        from ctypes import wintypes

        k = ctypes.WinDLL("kernel32", use_last_error=True)
        nt = ctypes.WinDLL("ntdll")
        handle, dword, boolean = wintypes.HANDLE, wintypes.DWORD, wintypes.BOOL
        for name, restype, argtypes in (
            ("OpenProcess", handle, (dword, boolean, dword)),
            ("CloseHandle", boolean, (handle,)),
            ("WaitForSingleObject", dword, (handle, dword)),
            ("TerminateProcess", boolean, (handle, ctypes.c_uint)),
            ("CreateJobObjectW", handle, (ctypes.c_void_p, ctypes.c_wchar_p)),
            ("SetInformationJobObject", boolean, (handle, ctypes.c_int, ctypes.c_void_p, dword)),
            (
                "QueryInformationJobObject",
                boolean,
                (handle, ctypes.c_int, ctypes.c_void_p, dword, ctypes.c_void_p),
            ),
            ("AssignProcessToJobObject", boolean, (handle, handle)),
            ("TerminateJobObject", boolean, (handle, ctypes.c_uint)),
            ("SetStdHandle", boolean, (dword, handle)),
        ):
            fn = getattr(k, name)
            fn.restype, fn.argtypes = restype, argtypes
        nt.NtResumeProcess.restype = ctypes.c_long
        nt.NtResumeProcess.argtypes = (handle,)
        return Win32(k, nt, ctypes.get_last_error)

    def _set_binary(fd: int) -> None:
        import msvcrt

        msvcrt.setmode(fd, O_BINARY)

    def _os_handle(fd: int) -> int:
        import msvcrt

        return msvcrt.get_osfhandle(fd)

    def _send_ctrl_break(pid: int) -> None:
        os.kill(pid, signal.CTRL_BREAK_EVENT)

else:

    def _load_dlls() -> Win32:
        raise OSError("kernel32 exists only on Windows")

    def _set_binary(fd: int) -> None:
        raise OSError("msvcrt exists only on Windows")

    def _os_handle(fd: int) -> int:
        raise OSError("msvcrt exists only on Windows")

    def _send_ctrl_break(pid: int) -> None:
        raise OSError("Ctrl+Break exists only on Windows")


@functools.lru_cache(maxsize=1)
def _api() -> Win32 | None:
    """The real kernel32/ntdll, loaded once; None where they cannot be loaded."""
    try:
        return _load_dlls()
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
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    binary = set_binary or _set_binary
    for fd in (in_fd, out_fd):
        with contextlib.suppress(OSError):
            binary(fd)
    api = api if api is not None else _api()
    if api is not None:
        handle_of = os_handle or _os_handle
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
    via_loop: list[signal.Signals] = []
    previous: list[tuple[signal.Signals, Any]] = []

    def handler(signum: int, frame: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(callback, signal.Signals(signum))

    for name in SHUTDOWN_SIGNALS:
        sig = shutdown_signal(name)
        if sig is None:
            continue
        try:
            loop.add_signal_handler(sig, callback, sig)
        except NotImplementedError:
            pass
        except (RuntimeError, ValueError):
            continue
        else:
            via_loop.append(sig)
            continue
        try:
            previous.append((sig, set_handler(sig, handler)))
        except (ValueError, OSError):  # not the main thread
            continue

    def remove() -> None:
        for sig in via_loop:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
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
        send_break: Callable[[int], None] = _send_ctrl_break,
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


def adopt(pid: int, *, api: Win32 | None = None) -> ProcessTree:
    """Put a child just started with `spawn_options` in a new job, then resume it.

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
