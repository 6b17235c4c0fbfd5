"""The optional `psutil` backend (``pip install 'mcpline[psutil]'``): process trees and memory
where there is no Linux ``/proc`` (macOS, Windows, the BSDs).

`psutil` is imported on first use, not with mcpline; every function answers "unknown" (None or
empty) when it is not installed, and `missing` says so in words.
"""

from __future__ import annotations

import contextlib
import functools
import os
from types import ModuleType
from typing import Any

INSTALL_HINT = "install psutil (pip install 'mcpline[psutil]')"


@functools.lru_cache(maxsize=1)
def module() -> ModuleType | None:
    """The `psutil` module, or None when it is not installed."""
    try:
        import psutil  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    mod: ModuleType = psutil
    return mod


def missing() -> str | None:
    """Why psutil cannot answer (None when it can)."""
    return None if module() is not None else f"psutil is not installed: {INSTALL_HINT}"


def _process(pid: int) -> Any:
    ps = module()
    if ps is None:
        return None
    try:
        return ps.Process(pid)
    except Exception:  # NoSuchProcess, AccessDenied, ZombieProcess
        return None


def descendants(root: int) -> dict[int, float]:
    """Every live process below ``root`` by parent links, mapped to its creation time."""
    proc = _process(root)
    if proc is None:
        return {}
    out: dict[int, float] = {}
    with contextlib.suppress(Exception):
        for child in proc.children(recursive=True):
            with contextlib.suppress(Exception):
                out[child.pid] = float(child.create_time())
    return out


def marked(name: str, value: str) -> dict[int, float]:
    """Every live process whose environment has ``name`` set to ``value`` (those of other
    users are unreadable), mapped to its creation time; this process left out."""
    ps = module()
    if ps is None:
        return {}
    me = os.getpid()
    out: dict[int, float] = {}
    with contextlib.suppress(Exception):
        for proc in ps.process_iter():
            if proc.pid == me:
                continue
            with contextlib.suppress(Exception):
                if proc.environ().get(name) == value:
                    out[proc.pid] = float(proc.create_time())
    return out


def running(pid: int, start: float) -> bool:
    """Whether ``pid`` is still the live (not zombie) process created at ``start``."""
    ps, proc = module(), _process(pid)
    if ps is None or proc is None:
        return False
    try:
        return bool(float(proc.create_time()) == start and proc.status() != ps.STATUS_ZOMBIE)
    except Exception:
        return False


def tree_rss(pid: int) -> int | None:
    """Sum of resident memory over ``pid`` and its descendants; None when unknown."""
    proc = _process(pid)
    if proc is None:
        return None
    try:
        total = int(proc.memory_info().rss)
        children = proc.children(recursive=True)
    except Exception:
        return None
    for child in children:
        with contextlib.suppress(Exception):
            total += int(child.memory_info().rss)
    return total


def memory(pid: int) -> tuple[int, int | None] | None:
    """(resident bytes, peak resident bytes where the OS keeps it) of ``pid``."""
    proc = _process(pid)
    if proc is None:
        return None
    try:
        info = proc.memory_info()
    except Exception:
        return None
    peak = getattr(info, "peak_wset", None)  # Windows keeps the peak working set
    return int(info.rss), None if peak is None else int(peak)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid``; OSError when unknown."""
    proc = _process(pid)
    if proc is None:
        raise OSError(f"no CPU times for process {pid}: {missing() or 'it is gone'}")
    try:
        times = proc.cpu_times()
    except Exception as exc:
        raise OSError(f"no CPU times for process {pid}: {exc}") from None
    return float(times.user + times.system)


def total_memory() -> int | None:
    """Physical memory in bytes, or None."""
    ps = module()
    return None if ps is None else int(ps.virtual_memory().total)
