"""The Win32 layer of `mcpline._platform.windows`: constants, structure layouts, the checked
kernel32/ntdll calls (`Win32`) and the CRT and console calls, which raise OSError off Windows.

This module imports on any platform; Windows-only names are reached only inside functions.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

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

    def load_dlls() -> Win32:
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

    def set_binary(fd: int) -> None:
        import msvcrt

        msvcrt.setmode(fd, O_BINARY)

    def os_handle(fd: int) -> int:
        import msvcrt

        return msvcrt.get_osfhandle(fd)

    def send_ctrl_break(pid: int) -> None:
        os.kill(pid, signal.CTRL_BREAK_EVENT)

else:

    def load_dlls() -> Win32:
        raise OSError("kernel32 exists only on Windows")

    def set_binary(fd: int) -> None:
        raise OSError("msvcrt exists only on Windows")

    def os_handle(fd: int) -> int:
        raise OSError("msvcrt exists only on Windows")

    def send_ctrl_break(pid: int) -> None:
        raise OSError("Ctrl+Break exists only on Windows")


__all__ = [
    "CREATE_SUSPENDED",
    "CREATE_NEW_PROCESS_GROUP",
    "PROCESS_TERMINATE",
    "PROCESS_SET_QUOTA",
    "PROCESS_SUSPEND_RESUME",
    "PROCESS_QUERY_LIMITED_INFORMATION",
    "SYNCHRONIZE",
    "CHILD_ACCESS",
    "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE",
    "JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION",
    "JOB_OBJECT_EXTENDED_LIMIT_INFORMATION",
    "WAIT_OBJECT_0",
    "WAIT_TIMEOUT",
    "STD_INPUT_HANDLE",
    "STD_OUTPUT_HANDLE",
    "ERROR_ACCESS_DENIED",
    "ERROR_INVALID_PARAMETER",
    "O_BINARY",
    "CTRL_BREAK_EVENT",
    "EXIT_KILLED",
    "IO_COUNTERS",
    "JOBOBJECT_BASIC_LIMIT_INFORMATION",
    "JOBOBJECT_EXTENDED_LIMIT_INFORMATION",
    "JOBOBJECT_BASIC_ACCOUNTING_INFORMATION",
    "Win32Error",
    "Win32",
    "load_dlls",
    "os_handle",
    "send_ctrl_break",
    "set_binary",
]
