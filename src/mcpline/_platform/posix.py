"""The POSIX implementation (Linux, macOS, the BSDs): fds, signals, sessions, process groups.

Process trees: a server is started in a session of its own (``start_new_session``), so its
process group is ended with ``killpg`` (SIGTERM, then SIGKILL). Descendants that left the
group (``setsid``) are listed beforehand from Linux ``/proc``; elsewhere from `psutil` when it
is installed, else not at all (logged once): by parent links, and by the `TREE_ENV` entry the
client put in the server's environment, which a double-forked daemon still carries once its
parent has exited and it was re-parented to init. Memory likewise: ``/proc`` on Linux, else psutil.

On Windows this module refuses to load (and so mypy ``--platform win32`` skips it); on any
POSIX system it imports without touching anything that some POSIX systems lack (``fcntl``
and ``/proc`` are reached only inside functions).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import logging
import os
import resource
import selectors
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable
from typing import Any

from ._common import TREE_ENV, machine_line, swap_stdio
from ._threads import Controls, Sink, open_thread_reader

if sys.platform == "win32":
    raise ImportError("mcpline._platform.posix is the POSIX implementation; see .windows")

log = logging.getLogger("mcpline.platform")

LINUX = sys.platform.startswith("linux")
NAME = "linux" if LINUX else ("macos" if sys.platform == "darwin" else sys.platform)
HOST_WATCHDOG = True
"""A host-death watchdog process is needed: nothing in the kernel ends a session with us."""
HAS_UNIX_SOCKETS = hasattr(socket, "AF_UNIX")
SHUTDOWN_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
"""What a server treats as "shut down" (by name: resolved when handlers are installed)."""

# --- stdio --------------------------------------------------------------------------------

_claimed: tuple[int, int] | None = None


def claim_stdio() -> tuple[int, int]:
    """Take fds 0 and 1 for the protocol; return (input fd, output fd).

    Afterwards fd 1 and ``sys.stdout`` point at stderr and fd 0 at ``/dev/null``. Calling
    it again returns the same pair, so a launcher can claim before importing user code.
    """
    global _claimed
    if _claimed is not None:
        return _claimed
    in_fd, out_fd = swap_stdio()
    _claimed = (in_fd, out_fd)
    return _claimed


def pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: pipes, sockets and terminals can; regular
    files and ``/dev/null`` (which epoll refuses) cannot."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    return True


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.eof = False

    def data_received(self, data: bytes) -> None:
        self.sink.data_received(data)

    def eof_received(self) -> bool:
        self.eof = True
        self.sink.eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.eof:
            self.sink.eof_received()


async def open_reader(fd: int, sink: Sink) -> Controls:
    """Start feeding ``fd`` to ``sink``; return (pause, resume, close).

    A pipe, socket or terminal is read by the loop (``connect_read_pipe``); anything the loop
    cannot poll (a regular file, ``/dev/null``) by a thread.
    """
    loop = asyncio.get_running_loop()
    if pollable(fd):
        pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
        try:
            transport, _ = await loop.connect_read_pipe(lambda: _ReadProtocol(sink), pipe)
        except OSError:
            pass  # e.g. /dev/null, which epoll refuses: read on a thread instead
        else:

            def close() -> None:
                transport.close()
                loop.call_soon(_close_fd, fd)

            return transport.pause_reading, transport.resume_reading, close
    return open_thread_reader(fd, sink, loop)


async def open_writer(
    fd: int, factory: Callable[[], asyncio.BaseProtocol]
) -> tuple[asyncio.WriteTransport, asyncio.BaseProtocol] | None:
    """A loop transport writing ``fd``, or None where the caller must write it blocking
    (a regular file, ``/dev/null``)."""
    if not pollable(fd):
        return None
    pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
    try:
        return await asyncio.get_running_loop().connect_write_pipe(factory, pipe)
    except OSError:
        return None  # e.g. /dev/null, which epoll refuses: fall back to blocking writes


def install_shutdown_signals(
    loop: asyncio.AbstractEventLoop, callback: Callable[[signal.Signals], None]
) -> Callable[[], None]:
    """Call ``callback(sig)`` on the loop for SIGTERM, SIGINT and SIGHUP; return a function
    that removes the handlers and puts back those that were there before (asyncio's removal
    alone resets each to its default). Outside the main thread nothing is installed."""
    installed: list[tuple[signal.Signals, Any]] = []
    for name in SHUTDOWN_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        before = signal.getsignal(sig)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, callback, sig)
            installed.append((sig, before))

    def remove() -> None:
        for sig, before in installed:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, before if before is not None else signal.SIG_DFL)

    return remove


def parent_monitor() -> tuple[int, Callable[[], bool]]:
    """(the parent's pid, a check that says whether it is gone).

    An orphan is re-parented (to init or a subreaper), so a changed parent pid means the
    launcher died, even if something else still holds our stdin open.
    """
    parent = os.getppid()
    return parent, lambda: os.getppid() != parent


# --- process trees ------------------------------------------------------------------------

_noted_no_descendants = False


def descendants(root: int) -> dict[int, float]:
    """Processes below ``root`` (by parent links, or in its session on Linux) mapped to their
    start times, so that those that left its process group can be ended too.

    Linux reads ``/proc``; elsewhere psutil (parent links only) when installed; without it
    the answer is empty and a note is logged once.
    """
    global _noted_no_descendants
    if LINUX:
        from . import _procfs

        return _procfs.descendants(root)
    from . import _psutil as psutil_backend

    if psutil_backend.module() is not None:
        return psutil_backend.descendants(root)
    if not _noted_no_descendants:
        _noted_no_descendants = True
        log.info(
            "descendants that leave a server's process group (setsid) are not tracked on %s "
            "without psutil; %s",
            NAME,
            psutil_backend.INSTALL_HINT,
        )
    return {}


def marked(marker: str) -> dict[int, float]:
    """Processes whose environment has ``TREE_ENV=marker``, mapped to their start times
    (``/proc`` on Linux, else psutil, else none)."""
    if LINUX:
        from . import _procfs

        return _procfs.marked(f"{TREE_ENV}={marker}".encode())
    from . import _psutil as psutil_backend

    return psutil_backend.marked(TREE_ENV, marker)


def running(pid: int, start: float) -> bool:
    """Whether ``pid`` is still the live process that started at ``start`` (`descendants`)."""
    if LINUX:
        from . import _procfs

        return _procfs.running(pid, start)
    from . import _psutil as psutil_backend

    return psutil_backend.running(pid, start)


def signal_pids(pids: dict[int, float], sig: int) -> dict[int, float]:
    """Send ``sig`` to each process of ``pids`` (pid → start time, from `descendants`) that
    is still running; return those that were signalled."""
    hit: dict[int, float] = {}
    for pid, start in pids.items():
        if not running(pid, start):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            hit[pid] = start
    return hit


def signal_group(pgid: int, sig: int) -> None:
    """``killpg``, ignoring a group that is gone or not ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a member we may signal."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def end_groups(groups: set[int], grace: float) -> None:
    """The host-death watchdog's work (`mcpline.client._watchdog`): SIGTERM every group of
    ``groups`` and the descendants of its leader that left it, wait up to ``grace`` seconds,
    then SIGKILL what is left. Our own group and init's are never signalled."""
    live = [g for g in groups if g > 1 and g != os.getpgrp()]
    strays: dict[int, float] = {}
    for g in live:
        strays.update(descendants(g))
    for g in live:
        signal_group(g, signal.SIGTERM)
    strays = signal_pids(strays, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while (live or strays) and time.monotonic() < deadline:
        live = [g for g in live if group_alive(g)]
        strays = {p: t for p, t in strays.items() if running(p, t)}
        time.sleep(0.05)
    for g in live:
        signal_group(g, signal.SIGKILL)
    signal_pids(strays, signal.SIGKILL)


class ProcessTree:
    """A child started with `spawn_options`: the leader of its own process group, with the
    ``marker`` its environment's `TREE_ENV` entry carries (if it was given one)."""

    def __init__(self, pid: int, marker: str | None = None) -> None:
        self.pid = pid
        self.pgid = pid  # start_new_session makes it the leader of its own group
        self.marker = marker

    def descendants(self) -> dict[int, float]:
        """Its descendants now: by parent links or session (the module's `descendants`),
        and every process carrying its marker, wherever it was re-parented."""
        found = descendants(self.pid)
        if self.marker is not None:
            found.update(marked(self.marker))
            found.pop(self.pid, None)
        return found

    def terminate(self) -> None:
        """SIGTERM to the group."""
        signal_group(self.pgid, signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to the group."""
        signal_group(self.pgid, signal.SIGKILL)

    def alive(self) -> bool:
        """Whether any process of the group is left."""
        return group_alive(self.pgid)

    def end_strays(self, strays: dict[int, float], *, force: bool) -> dict[int, float]:
        """SIGTERM (or with ``force`` SIGKILL) those of ``strays`` still running; return them."""
        return signal_pids(strays, signal.SIGKILL if force else signal.SIGTERM)

    def stray_running(self, pid: int, start: float) -> bool:
        return running(pid, start)

    def release(self) -> None:
        """Nothing to release on POSIX."""


def spawn_options() -> dict[str, Any]:
    """`subprocess.Popen` / `loop.subprocess_exec` options for a child that `adopt` takes: a
    session (and so a process group) of its own."""
    return {"start_new_session": True}


def adopt(pid: int, *, marker: str | None = None) -> ProcessTree:
    """The tree of a child just started with `spawn_options` (with ``TREE_ENV=marker`` in
    its environment, when ``marker`` is given)."""
    return ProcessTree(pid, marker)


def unread_pipe_bytes(fd: int) -> int:
    """Bytes written to the pipe ``fd`` (our end) that its reader has not taken yet; 0 where
    the platform does not say (``FIONREAD`` on a pipe's write end is Linux behaviour)."""
    try:
        import fcntl
        import termios

        buf = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, buf)
    except (ImportError, OSError):
        return 0
    return buf[0]


def unsent_socket_bytes(fd: int) -> int:
    """Bytes written to the socket ``fd`` that its peer has not acknowledged yet (Linux's
    ``SIOCOUTQ``); 0 where the platform does not say."""
    if not LINUX:
        return 0
    try:
        import fcntl
        import termios

        buf = array.array("i", [0])
        fcntl.ioctl(fd, termios.TIOCOUTQ, buf)  # SIOCOUTQ on a socket
    except (ImportError, OSError):
        return 0
    return buf[0]


# --- memory and CPU -----------------------------------------------------------------------


def memory_unavailable() -> str | None:
    """Why process memory cannot be measured here (None when it can)."""
    if LINUX:
        return None
    from . import _psutil as psutil_backend

    why = psutil_backend.missing()
    return None if why is None else f"not measured on {NAME}: {why}"


def tree_rss(pid: int) -> int | None:
    """Resident memory of ``pid`` and its descendants in bytes; None when not measured."""
    if LINUX:
        from . import _procfs

        return _procfs.tree_rss(pid)
    from . import _psutil as psutil_backend

    return psutil_backend.tree_rss(pid)


def process_memory(pid: int) -> tuple[int, int | None] | None:
    """(resident bytes, peak resident bytes or None) of ``pid`` alone; None when unknown."""
    if LINUX:
        from . import _procfs

        return _procfs.memory(pid)
    from . import _psutil as psutil_backend

    return psutil_backend.memory(pid)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid``; OSError when unknown."""
    if LINUX:
        from . import _procfs

        return _procfs.cpu_seconds(pid)
    from . import _psutil as psutil_backend

    return psutil_backend.cpu_seconds(pid)


def machine() -> str:
    """One line about this machine: CPUs, model, memory, OS, Python."""
    if LINUX:
        from . import _procfs

        model, mem = _procfs.machine()
        return machine_line(model, mem)
    import platform

    from . import _psutil as psutil_backend

    return machine_line(platform.processor() or "unknown CPU", psutil_backend.total_memory())


# --- files --------------------------------------------------------------------------------


def owned_by_current_user(st: os.stat_result) -> bool:
    """Whether the file of ``st`` belongs to the user running this process."""
    return st.st_uid == os.getuid()


def open_file_limit() -> int | None:
    """The soft limit on this process's open file descriptors (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft
