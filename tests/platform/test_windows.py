"""The Windows implementation's logic, on any OS: pure decisions, the Job Object call sequence
against a fake kernel32 (every call and its arguments recorded), the parent handle, the
signal fallback, the stdio claim and the thread transports it serves stdio with."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import pytest

from mcpline._platform import windows as w

from ..proc import REPO

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import TypeVarTuple, Unpack

    Ts = TypeVarTuple("Ts")


class FakeDLL:
    """Records each call as (name, args); answers from ``results`` (a value, or a callable
    given the args), else 1 (success)."""

    def __init__(self, calls: list[tuple[str, tuple[Any, ...]]], **results: Any) -> None:
        self._calls = calls
        self._results = results

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            self._calls.append((name, args))
            result = self._results.get(name, 1)
            return result(*args) if callable(result) else result

        return call


JOB, PROC = 0x70, 0x50


def api(calls: list[tuple[str, tuple[Any, ...]]], last_error: int = 0, **results: Any) -> w.Win32:
    results.setdefault("CreateJobObjectW", JOB)
    results.setdefault("OpenProcess", PROC)
    nt = {"NtResumeProcess": results.pop("NtResumeProcess", 0)}
    return w.Win32(FakeDLL(calls, **results), FakeDLL(calls, **nt), lambda: last_error)


def names(calls: list[tuple[str, tuple[Any, ...]]]) -> list[str]:
    return [name for name, _ in calls]


def struct_of(arg: Any) -> Any:
    """The structure a ``ctypes.byref`` argument points at."""
    return arg._obj


# --- pure decisions ---------------------------------------------------------------------------


def test_creationflags() -> None:
    assert w.creationflags(suspend=False) == 0x200  # CREATE_NEW_PROCESS_GROUP
    assert w.creationflags(suspend=True) == 0x200 | 0x4  # and CREATE_SUSPENDED


def test_an_absent_parent_is_told_from_one_we_may_not_watch() -> None:
    assert w.parent_gone_on_open_error(87)  # ERROR_INVALID_PARAMETER: no such process
    assert not w.parent_gone_on_open_error(5)  # ERROR_ACCESS_DENIED: alive, not ours


def test_shutdown_signals_are_sigint_and_sigbreak_where_they_exist() -> None:
    assert w.SHUTDOWN_SIGNALS == ("SIGINT", "SIGBREAK")
    assert w.shutdown_signal("SIGINT") is signal.SIGINT
    assert w.shutdown_signal("NOSUCHSIG") is None


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="64-bit layouts")
def test_structures_have_the_64_bit_windows_layout() -> None:
    # Same alignment rules on x64 Windows (LLP64) and here (LP64) for these field types.
    assert ctypes.sizeof(w.IO_COUNTERS) == 48
    assert ctypes.sizeof(w.JOBOBJECT_BASIC_LIMIT_INFORMATION) == 64
    assert ctypes.sizeof(w.JOBOBJECT_EXTENDED_LIMIT_INFORMATION) == 144
    assert ctypes.sizeof(w.JOBOBJECT_BASIC_ACCOUNTING_INFORMATION) == 48
    assert w.JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags.offset == 16


def test_without_kernel32_children_are_not_started_suspended(monkeypatch: Any) -> None:
    monkeypatch.setattr(w, "_api", lambda: None)
    assert w.spawn_options() == {"creationflags": 0x200}
    tree = w.adopt(1234)
    assert tree.job is None and tree.handle is None and not tree.alive()
    tree.kill()  # nothing to end it with: no error either
    monkeypatch.setattr(w, "_api", lambda: api([]))
    assert w.spawn_options() == {"creationflags": 0x204}


# --- the Job Object -----------------------------------------------------------------------------


def test_adopt_puts_the_suspended_child_in_a_kill_on_close_job_then_resumes_it() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    tree = w.adopt(4321, api=api(calls))
    assert names(calls) == [
        "OpenProcess",
        "CreateJobObjectW",
        "SetInformationJobObject",
        "AssignProcessToJobObject",
        "NtResumeProcess",
    ]
    assert calls[0][1] == (w.CHILD_ACCESS, False, 4321)
    assert w.CHILD_ACCESS & 0x0100 and w.CHILD_ACCESS & 0x0001 and w.CHILD_ACCESS & 0x0800
    assert calls[1][1] == (None, None)
    job, info_class, info, size = calls[2][1]
    assert (job, info_class, size) == (
        JOB,
        9,
        ctypes.sizeof(w.JOBOBJECT_EXTENDED_LIMIT_INFORMATION),
    )
    assert struct_of(info).BasicLimitInformation.LimitFlags == 0x2000  # KILL_ON_JOB_CLOSE
    assert calls[3][1] == (JOB, PROC)
    assert calls[4][1] == (PROC,)
    assert (tree.pid, tree.pgid, tree.job is not None, tree.handle) == (4321, 4321, True, PROC)


def test_the_tree_is_ended_through_its_job() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    active = [2]

    def query(job: int, info_class: int, info: Any, size: int, returned: Any) -> int:
        assert (job, info_class, size, returned) == (JOB, 1, 48, None)
        struct_of(info).ActiveProcesses = active[0]
        return 1

    breaks: list[int] = []
    tree = w.adopt(99, api=api(calls, QueryInformationJobObject=query))
    tree.send_break = breaks.append
    calls.clear()
    assert tree.descendants() == {} and tree.end_strays({5: 1.0}, force=True) == {}
    assert tree.alive()
    tree.terminate()
    assert breaks == [99]  # Ctrl+Break to its process group
    tree.kill()
    active[0] = 0
    assert not tree.alive()
    tree.release()
    tree.release()  # once only
    assert calls == [
        ("QueryInformationJobObject", calls[0][1]),
        ("TerminateJobObject", (JOB, w.EXIT_KILLED)),
        ("QueryInformationJobObject", calls[2][1]),
        ("CloseHandle", (JOB,)),
        ("CloseHandle", (PROC,)),
    ]


def test_a_refused_job_still_resumes_the_child_and_ends_it_alone(caplog: Any) -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    tree = w.adopt(7, api=api(calls, last_error=5, AssignProcessToJobObject=0))
    assert names(calls) == [
        "OpenProcess",
        "CreateJobObjectW",
        "SetInformationJobObject",
        "AssignProcessToJobObject",
        "CloseHandle",  # the job that was refused
        "NtResumeProcess",
    ]
    assert calls[4][1] == (JOB,)
    assert "no Job Object for process 7" in caplog.text and "error 5" in caplog.text
    assert tree.job is None
    calls.clear()
    tree.kill()
    assert calls == [("TerminateProcess", (PROC, w.EXIT_KILLED))]


def test_a_child_that_cannot_be_resumed_is_terminated_and_the_start_fails() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    with pytest.raises(w.Win32Error, match="NtResumeProcess"):
        w.adopt(8, api=api(calls, NtResumeProcess=0xC0000022))
    assert names(calls)[-3:] == ["TerminateProcess", "CloseHandle", "CloseHandle"]
    assert calls[-3][1] == (PROC, w.EXIT_KILLED)


def test_without_a_job_alive_waits_on_the_process_handle() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    a = api(calls, WaitForSingleObject=w.WAIT_TIMEOUT)
    tree = w.ProcessTree(3, a, None, PROC)
    assert tree.alive()
    assert calls == [("WaitForSingleObject", (PROC, 0))]


def test_a_failed_call_raises_with_its_error_code() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    with pytest.raises(w.Win32Error) as err:
        w.JobObject(api(calls, last_error=1450, SetInformationJobObject=0))
    assert err.value.code == 1450 and "SetInformationJobObject" in str(err.value)
    assert names(calls) == ["CreateJobObjectW", "SetInformationJobObject", "CloseHandle"]


# --- the parent -----------------------------------------------------------------------------------


def test_the_parent_is_watched_through_its_handle() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    state = [w.WAIT_TIMEOUT]
    parent, gone = w.parent_monitor(api=api(calls, WaitForSingleObject=lambda h, ms: state[0]))
    assert parent == os.getppid()
    assert calls == [("OpenProcess", (w.SYNCHRONIZE, False, parent))]
    assert not gone()
    state[0] = w.WAIT_OBJECT_0
    assert gone()
    assert calls[1:] == [("WaitForSingleObject", (PROC, 0))] * 2


def test_a_parent_gone_before_it_is_opened_is_gone_and_one_we_cannot_open_is_not() -> None:
    _, gone = w.parent_monitor(api=api([], last_error=87, OpenProcess=0))
    assert gone()
    _, gone = w.parent_monitor(api=api([], last_error=5, OpenProcess=0))
    assert not gone()


# --- signals ----------------------------------------------------------------------------------


class NoSignalLoop(asyncio.SelectorEventLoop):
    def add_signal_handler(
        self, sig: int, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts]
    ) -> None:
        raise NotImplementedError


def test_signals_fall_back_to_signal_signal_and_reach_the_loop() -> None:
    loop = NoSignalLoop()
    got: list[signal.Signals] = []
    before = signal.getsignal(signal.SIGINT)
    try:
        remove = w.install_shutdown_signals(loop, got.append)
        assert signal.getsignal(signal.SIGINT) is not before
        signal.raise_signal(signal.SIGINT)
        loop.run_until_complete(asyncio.sleep(0.05))
        assert got == [signal.SIGINT]
        remove()
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, before)
        loop.close()


def test_a_loop_with_signal_handlers_is_used_as_it_is_and_the_old_handler_comes_back() -> None:
    def mine(signum: int, frame: Any) -> None:
        """A handler of the host's, there before the server's."""

    loop = asyncio.new_event_loop()
    got: list[signal.Signals] = []
    original = signal.signal(signal.SIGINT, mine)
    try:
        remove = w.install_shutdown_signals(loop, got.append)
        assert signal.getsignal(signal.SIGINT) is not mine  # the loop's own handler
        remove()
        assert signal.getsignal(signal.SIGINT) is mine  # not asyncio's default it resets to
    finally:
        signal.signal(signal.SIGINT, original)
        loop.close()


# --- stdio --------------------------------------------------------------------------------------


def test_claim_stdio_moves_the_fds_sets_binary_mode_and_the_std_handles() -> None:
    code = textwrap.dedent(
        """
        import json, os, sys
        from mcpline._platform import windows as w
        from tests.platform.test_windows import FakeDLL
        calls, modes = [], []
        api = w.Win32(FakeDLL(calls), FakeDLL(calls))
        in_fd, out_fd = w.claim_stdio(set_binary=modes.append, os_handle=lambda fd: 1000 + fd,
                                      api=api)
        again = w.claim_stdio()
        os.write(out_fd, b"protocol\\n")
        print("to stderr")
        os.write(1, b"fd one\\n")
        sys.__stderr__.write(json.dumps([in_fd, out_fd, list(again), modes, calls,
                                         os.read(in_fd, 100).decode(), os.read(0, 10).decode()]))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", code], input=b"input", capture_output=True, cwd=REPO, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == b"protocol\n"
    err = run.stderr.decode()
    assert err.startswith("to stderr\nfd one\n")
    in_fd, out_fd, again, modes, calls, read_in, read_0 = json.loads(err.split("\n", 2)[2])
    assert again == [in_fd, out_fd] and modes == [in_fd, out_fd]
    assert calls == [
        ["SetStdHandle", [w.STD_INPUT_HANDLE, 1000]],
        ["SetStdHandle", [w.STD_OUTPUT_HANDLE, 1001]],
    ]
    assert (read_in, read_0) == ("input", "")  # fd 0 is the null device now


class Sink:
    def __init__(self) -> None:
        self.data = bytearray()
        self.eof = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.data += data

    def eof_received(self) -> None:
        self.eof.set()


def test_the_windows_reader_and_writer_are_threads_over_plain_fds() -> None:
    async def main() -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        sink = Sink()
        pause, resume, close = await w.open_reader(r_in, sink)
        os.write(w_in, b"hello ")
        os.write(w_in, b"world")
        os.close(w_in)
        await asyncio.wait_for(sink.eof.wait(), 5)
        assert bytes(sink.data) == b"hello world"
        close()

        lost = asyncio.get_running_loop().create_future()

        class Proto(asyncio.BaseProtocol):
            def connection_lost(self, exc: Exception | None) -> None:
                lost.set_result(exc)

        opened = await w.open_writer(w_out, Proto)
        assert opened is not None
        transport, _ = opened
        transport.write(b"line\n")
        transport.close()
        assert await asyncio.wait_for(lost, 5) is None
        assert os.read(r_out, 100) == b"line\n"
        for fd in (r_in, r_out, w_out):
            os.close(fd)

    asyncio.run(main())


def test_owner_and_unread_bytes_are_not_known_on_windows() -> None:
    assert w.owned_by_current_user(os.stat("."))
    assert w.unread_pipe_bytes(0) == 0
