"""Every OS-specific operation of mcpline, behind one interface chosen once, at import.

`posix` serves Linux, macOS and the BSDs; `windows` serves Windows. Nothing outside this
package tests ``sys.platform`` or ``os.name`` or uses ``killpg``, ``SIGHUP`` or ``/proc``:

* stdio — `claim_stdio` (protocol fds; fd 1 and ``sys.stdout`` to stderr, fd 0 to the null
  device), `open_reader` / `open_writer` (the loop's pipes on POSIX, threads on Windows);
* signals — `install_shutdown_signals` (SIGTERM/SIGINT/SIGHUP, or SIGINT/SIGBREAK);
* parent death — `parent_monitor` (``getppid`` polling, or the parent's process handle);
* process trees — `spawn_options` and `adopt` (a session and process group, or a suspended
  start in a new process group and a Job Object), the `ProcessTree` they give (terminate,
  kill, alive, descendants outside the group, also found by the `TREE_ENV` marker of their
  environment), `HOST_WATCHDOG`, `unread_pipe_bytes`, `unsent_socket_bytes`;
* memory and CPU — `tree_rss`, `process_memory`, `cpu_seconds`, `memory_unavailable`,
  `machine` (``/proc`` on Linux, the optional `psutil` elsewhere);
* the rest — `HAS_UNIX_SOCKETS` / `unix_sockets_unavailable`, `owned_by_current_user`,
  `open_file_limit`.
"""

from __future__ import annotations

import sys

from ._common import TREE_ENV as TREE_ENV

if sys.platform == "win32":
    from . import windows as impl
    from .windows import ProcessTree as ProcessTree
else:
    from . import posix as impl
    from .posix import ProcessTree as ProcessTree

NAME: str = impl.NAME
"""``linux``, ``macos``, ``windows`` or another POSIX ``sys.platform``."""
WINDOWS = NAME == "windows"
HOST_WATCHDOG: bool = impl.HOST_WATCHDOG
"""Whether a client needs the watchdog process to end its servers if it dies."""
HAS_UNIX_SOCKETS: bool = impl.HAS_UNIX_SOCKETS
SHUTDOWN_SIGNALS: tuple[str, ...] = impl.SHUTDOWN_SIGNALS
"""The signals a stdio or socket server treats as "shut down", by name."""

claim_stdio = impl.claim_stdio
open_reader = impl.open_reader
open_writer = impl.open_writer
install_shutdown_signals = impl.install_shutdown_signals
parent_monitor = impl.parent_monitor
spawn_options = impl.spawn_options
adopt = impl.adopt
unread_pipe_bytes = impl.unread_pipe_bytes
unsent_socket_bytes = impl.unsent_socket_bytes
memory_unavailable = impl.memory_unavailable
tree_rss = impl.tree_rss
process_memory = impl.process_memory
cpu_seconds = impl.cpu_seconds
machine = impl.machine
owned_by_current_user = impl.owned_by_current_user
open_file_limit = impl.open_file_limit

API = (
    "NAME",
    "HOST_WATCHDOG",
    "HAS_UNIX_SOCKETS",
    "SHUTDOWN_SIGNALS",
    "ProcessTree",
    "claim_stdio",
    "open_reader",
    "open_writer",
    "install_shutdown_signals",
    "parent_monitor",
    "spawn_options",
    "adopt",
    "unread_pipe_bytes",
    "unsent_socket_bytes",
    "memory_unavailable",
    "tree_rss",
    "process_memory",
    "cpu_seconds",
    "machine",
    "owned_by_current_user",
    "open_file_limit",
)
"""What each implementation module provides (the tests hold both to it)."""


def unix_sockets_unavailable() -> str | None:
    """Why ``unix:`` addresses cannot be used here (None when they can)."""
    if HAS_UNIX_SOCKETS:
        return None
    return (
        f"unix: sockets are not available on {NAME} (this Python has no socket.AF_UNIX); "
        "use tcp:HOST:PORT"
    )


__all__ = [*API, "TREE_ENV", "WINDOWS", "unix_sockets_unavailable"]
