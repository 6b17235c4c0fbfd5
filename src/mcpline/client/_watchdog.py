"""Host-death watchdog: ``python -m mcpline.client._watchdog``.

Reads ``+PGID`` / ``-PGID`` lines on stdin from the host process. When stdin reaches EOF
(the host exited, however abruptly) every process group still registered is sent SIGTERM
and, after a grace period, SIGKILL, so that no server outlives its host for long. Where
``/proc`` exists, the descendants of each group's leader that left the group (``setsid``)
are sent the same signals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp, session, …)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode("ascii", "replace").split()


def descendants(root: int) -> dict[int, int]:
    """Every process below ``root`` by parent links (whatever its session or group) or in
    ``root``'s session, mapped to its start time; ``root`` itself is left out.

    Linux only: without ``/proc`` the answer is empty, and the callers' process-group
    signals are all there is. An orphan that already left ``root``'s tree and session
    (re-parented to init) cannot be found.
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    children: dict[int, list[int]] = {}
    started: dict[int, int] = {}
    found: set[int] = set()
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat(name)
        if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
            continue
        pid = int(name)
        started[pid] = int(fields[19])
        children.setdefault(int(fields[1]), []).append(pid)
        if int(fields[3]) == root:
            found.add(pid)
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    found -= {root, os.getpid(), 1}
    return {pid: started[pid] for pid in found}


def running(pid: int, start: int) -> bool:
    """Whether ``pid`` is still the live (not zombie) process that started at ``start``."""
    fields = _stat(pid)
    return (
        fields is not None
        and len(fields) >= 20
        and int(fields[19]) == start
        and fields[0] not in ("Z", "X")
    )


def signal_pids(pids: dict[int, int], sig: int) -> dict[int, int]:
    """Send ``sig`` to each process of ``pids`` (pid → start time, from `descendants`) that
    is still running; return those that were signalled."""
    hit: dict[int, int] = {}
    for pid, start in pids.items():
        if not running(pid, start):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            hit[pid] = start
    return hit


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    grace = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    groups: set[int] = set()
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if len(line) < 2 or not line[1:].isdigit():
            continue
        pgid = int(line[1:])
        if line[:1] == b"+":
            groups.add(pgid)
        elif line[:1] == b"-":
            groups.discard(pgid)
    live = [g for g in groups if g > 1 and g != os.getpgrp()]
    strays: dict[int, int] = {}
    for g in live:
        strays.update(descendants(g))
    for g in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGTERM)
    strays = signal_pids(strays, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while (live or strays) and time.monotonic() < deadline:
        live = [g for g in live if _alive(g)]
        strays = {p: t for p, t in strays.items() if running(p, t)}
        time.sleep(0.05)
    for g in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGKILL)
    signal_pids(strays, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
