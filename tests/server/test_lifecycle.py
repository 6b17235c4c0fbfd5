"""Lifecycle over real pipes: EOF, signals, a broken stdout, the parent-death watchdog and
the lifespan hook."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import pytest

from ..proc import FIXTURES, ServerProcess, meta

pytestmark = pytest.mark.linux_only(
    reason="SIGTERM/SIGINT/SIGHUP delivery, killpg, and /proc for the orphan"
)

CORE = FIXTURES / "core_server.py"
LIFESPAN = FIXTURES / "lifespan_server.py"
Spawn = Callable[..., ServerProcess]


def exit_time(p: ServerProcess, action: Callable[[], None], limit: float = 10.0) -> float:
    """Seconds until ``p`` exits 0 after ``action``: under ``limit``, far from the 30 s that
    the tests' stuck work would hold it for."""
    t0 = time.monotonic()
    action()
    code = p.wait(timeout=40)
    elapsed = time.monotonic() - t0
    assert code == 0, (code, p.stderr[-2000:])
    assert elapsed < limit, elapsed
    return elapsed


def no_traceback(p: ServerProcess) -> None:
    assert "Traceback" not in p.stderr, p.stderr[-3000:]


def test_eof_idle_exits_zero_promptly(spawn: Spawn) -> None:
    p = spawn(CORE)
    p.request("server/discover")
    exit_time(p, p.close_stdin)
    no_traceback(p)


@pytest.mark.parametrize("tool", ["sleep", "stuck"])
def test_eof_with_work_in_flight(spawn: Spawn, tool: str) -> None:
    """An async tool is cancelled after the grace period; a sync tool stuck in its thread
    (ignoring cancellation) does not hold the process either."""
    p = spawn(CORE)
    p.request("server/discover")
    args = {"ms": 30_000} if tool == "sleep" else {"seconds": 30}
    for i in range(3):
        p.send(p.request_msg("tools/call", {"name": tool, "arguments": args}, id=i))
    time.sleep(0.2)
    exit_time(p, p.close_stdin)
    no_traceback(p)


def test_quick_work_in_flight_at_eof_is_still_answered(spawn: Spawn) -> None:
    """`printf request | server`: the reply arrives although stdin is already closed."""
    p = spawn(CORE)
    msgs = [
        p.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 100}}, id=i)
        for i in range(5)
    ]
    for m in msgs:
        p.send(m)
    p.close_stdin()
    assert p.wait(timeout=30) == 0
    assert sorted(m["id"] for m in p.drain()) == list(range(5))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("busy", [False, True])
def test_signals_exit_zero(spawn: Spawn, sig: signal.Signals, busy: bool) -> None:
    p = spawn(CORE)
    p.request("server/discover")
    if busy:
        p.send(p.request_msg("tools/call", {"name": "stuck", "arguments": {"seconds": 30}}))
        p.send(p.request_msg("tools/call", {"name": "sleep", "arguments": {"ms": 30_000}}))
        time.sleep(0.2)
    exit_time(p, lambda: p.signal(sig))
    no_traceback(p)


def test_broken_stdout_exits_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(CORE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdout.close()  # the client stops reading: our stdout is a broken pipe
        for i in range(50):
            msg = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "server/discover",
                "params": {"_meta": meta()},
            }
            line = json.dumps(msg) + "\n"
            try:
                proc.stdin.write(line.encode())
                proc.stdin.flush()
            except BrokenPipeError:
                break  # it already exited
            time.sleep(0.01)
        code = proc.wait(timeout=5)
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert code == 0, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_broken_stdout_while_idle_exits_by_itself() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(CORE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        time.sleep(0.5)  # started and idle; stdin stays open
        assert proc.stdout is not None
        proc.stdout.close()
        assert proc.wait(timeout=5) == 0
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdin:
            proc.stdin.close()


LAUNCHER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    server, in_fd, out_fd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    child = subprocess.Popen([sys.executable, server], stdin=in_fd, stdout=out_fd,
                             stderr=subprocess.DEVNULL, pass_fds=(in_fd, out_fd))
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_parent_death_watchdog() -> None:
    """The launcher dies (SIGKILL) while someone else still holds the server's stdin open:
    the server notices it was orphaned and exits by itself."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(CORE), str(in_r), str(out_w)],
        stdout=subprocess.PIPE,
        pass_fds=(in_r, out_w),
        start_new_session=True,
    )
    server_pid = 0
    try:
        assert launcher.stdout is not None
        server_pid = int(launcher.stdout.readline())
        os.close(in_r)
        os.close(out_w)
        req = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}
        os.write(in_w, json.dumps(req).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = os.read(out_r, 65536)
            assert chunk, "server closed stdout before replying"
            reply += chunk
        assert b'"supportedVersions"' in reply
        launcher.kill()
        launcher.wait()
        t0 = time.monotonic()
        # stdin (in_w) is still open here: only the watchdog can end the server.
        while _alive(server_pid) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        assert not _alive(server_pid), "orphaned server is still running"
        assert os.read(out_r, 65536) == b""  # it closed its stdout on the way out
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        if server_pid and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
        for fd in (in_w, out_r):
            with contextlib.suppress(OSError):
                os.close(fd)


# --- lifespan ---------------------------------------------------------------------------------


def test_discover_answered_before_slow_lifespan_and_calls_wait(spawn: Spawn) -> None:
    p = spawn(LIFESPAN, env={"LIFESPAN_DELAY": "1.5"})
    t0 = time.monotonic()
    call = p.request_msg("tools/call", {"name": "which_db", "arguments": {}}, id="call")
    p.send(call)
    # discover is answered while the lifespan still starts: before the waiting call.
    p.send(p.request_msg("server/discover", id="disc"))
    d = p.read(timeout=30)
    assert d["id"] == "disc" and "result" in d, d
    resp, _ = p.read_until("call")
    assert resp["result"]["content"][0]["text"] == "ready"
    assert time.monotonic() - t0 >= 1.4
    p.close_stdin()
    assert p.wait() == 0
    assert "lifespan exited" in p.stderr


def test_failed_lifespan_gives_internal_error(spawn: Spawn) -> None:
    p = spawn(LIFESPAN, env={"LIFESPAN_DELAY": "0", "LIFESPAN_FAIL": "1"})
    resp = p.call("which_db", {})
    assert resp["error"]["code"] == -32603
    assert "unreachable" not in resp["error"]["message"]
    assert "result" in p.request("server/discover")
    p.close_stdin()
    assert p.wait() == 0
    assert "the database is unreachable" in p.stderr


def test_eof_during_slow_lifespan_start_exits_promptly(spawn: Spawn) -> None:
    p = spawn(LIFESPAN, env={"LIFESPAN_DELAY": "30"})
    p.request("server/discover")
    exit_time(p, p.close_stdin)
