"""Linux ``/proc``: process trees, start times, resident memory and CPU time.

Only `mcpline._platform.posix` uses this, and only on Linux; every reader returns None or an
empty answer where ``/proc`` (or the process) is missing instead of raising.
"""

from __future__ import annotations

import os
import sys

if sys.platform == "win32":
    raise ImportError("mcpline._platform._procfs reads Linux /proc")

_PROC = "/proc"


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp, session, …)."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode("ascii", "replace").split()


def descendants(root: int) -> dict[int, float]:
    """Every process below ``root`` by parent links (whatever its session or group) or in
    ``root``'s session, mapped to its start time; ``root`` itself is left out.

    An orphan that already left ``root``'s tree and session (re-parented to init) cannot be
    found; without ``/proc`` the answer is empty.
    """
    try:
        names = os.listdir(_PROC)
    except OSError:
        return {}
    children: dict[int, list[int]] = {}
    started: dict[int, float] = {}
    found: set[int] = set()
    for name in names:
        if not name.isdigit():
            continue
        fields = stat_fields(name)
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


def marked(entry: bytes) -> dict[int, float]:
    """Every live process (of this user: others' environments are unreadable) whose
    environment holds ``entry`` (``NAME=value``), mapped to its start time; this process
    left out. Finds descendants whatever became of their parents and sessions, unless they
    cleared their environment."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return {}
    me = str(os.getpid())
    found: dict[int, float] = {}
    for name in names:
        if not name.isdigit() or name == me:
            continue
        try:
            with open(f"{_PROC}/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if entry not in env.split(b"\0"):
            continue
        fields = stat_fields(name)
        if fields is not None and len(fields) >= 20 and fields[0] not in ("Z", "X"):
            found[int(name)] = int(fields[19])
    return found


def running(pid: int, start: float) -> bool:
    """Whether ``pid`` is still the live (not zombie) process that started at ``start``."""
    fields = stat_fields(pid)
    return (
        fields is not None
        and len(fields) >= 20
        and int(fields[19]) == start
        and fields[0] not in ("Z", "X")
    )


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir(_PROC):
        if entry.isdigit() and (fields := stat_fields(entry)) is not None:
            kids.setdefault(int(fields[1]), []).append(int(entry))
    return kids


def _status(pid: int, keys: tuple[bytes, ...]) -> dict[bytes, int]:
    """The ``kB`` fields ``keys`` of ``/proc/PID/status``, in bytes (missing ones left out)."""
    out: dict[bytes, int] = {}
    try:
        with open(f"{_PROC}/{pid}/status", "rb") as f:
            for line in f:
                key = line.partition(b":")[0]
                if key in keys:
                    out[key] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def rss_of(pid: int) -> int:
    """VmRSS of ``pid`` in bytes (0 when unknown)."""
    return _status(pid, (b"VmRSS",)).get(b"VmRSS", 0)


def tree_rss(pid: int) -> int | None:
    """Sum of VmRSS over ``pid`` and its descendants; None when ``pid`` does not exist."""
    if not os.path.isdir(f"{_PROC}/{pid}"):
        return None
    kids = _children_map()
    total, stack, seen = 0, [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        total += rss_of(p)
        stack.extend(kids.get(p, []))
    return total


def memory(pid: int) -> tuple[int, int | None] | None:
    """(resident bytes, peak resident bytes) of ``pid`` alone; None when it does not exist."""
    got = _status(pid, (b"VmRSS", b"VmHWM"))
    if b"VmRSS" not in got:
        return None
    return got[b"VmRSS"], got.get(b"VmHWM")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all its threads); OSError when it is gone."""
    with open(f"{_PROC}/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine() -> tuple[str, int]:
    """(CPU model, total memory in bytes) from ``/proc/cpuinfo`` and ``/proc/meminfo``."""
    model = "unknown CPU"
    with open(f"{_PROC}/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open(f"{_PROC}/meminfo") as fh:
        mem_kib = int(fh.readline().split()[1])
    return model, mem_kib * 1024
