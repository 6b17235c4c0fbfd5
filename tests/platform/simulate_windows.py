"""Import every mcpline module as Windows would: ``python -m tests.platform.simulate_windows``.

Run in a fresh interpreter (the simulation cannot be undone). The standard library and the
dependencies are imported first, as they are on this machine, with the real platform: the
simulation is about what *mcpline's* modules do at import. Then:

* modules Windows does not have (``fcntl``, ``termios``, ``pty``, ``resource``, ``grp``…)
  cannot be imported any more;
* names Windows lacks are deleted from ``os``, ``signal`` and ``socket`` (``killpg``,
  ``getuid``, ``SIGHUP``, ``SIGKILL``, ``AF_UNIX``…) and Windows' own are added
  (``SIGBREAK``, ``CTRL_BREAK_EVENT``);
* ``sys.platform`` is ``"win32"`` (``os.name`` stays: `pathlib` would build ``WindowsPath``
  objects, which cannot exist here; no mcpline module reads ``os.name``).

Every ``mcpline.*`` module (and the shipped examples) is then imported; the POSIX-only
modules of the platform layer must refuse with ImportError. One JSON object is printed:
``{"name": ..., "imported": [...], "failed": {module: error}, "refused": {...}}``. Extra
arguments name more modules to import (the tests pass a deliberately broken one).

``--serve SCRIPT`` instead runs the server file SCRIPT as ``__main__`` under the simulation
(stdio served by the Windows implementation: reader and writer threads, SIGINT/SIGBREAK
through `signal.signal` where the loop has no handlers, no kernel32, a stand-in ``msvcrt``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.abc
import json
import os
import pkgutil
import signal
import socket
import sys
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import TypeVarTuple, Unpack

    Ts = TypeVarTuple("Ts")

MISSING_MODULES = {"fcntl", "termios", "pty", "tty", "resource", "grp", "pwd", "posix_spawn"}
MISSING_OS = [
    "killpg",
    "getpgid",
    "getpgrp",
    "setpgid",
    "setsid",
    "getsid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "setuid",
    "fork",
    "forkpty",
    "openpty",
    "wait3",
    "wait4",
    "WNOHANG",
    "sysconf",
    "confstr",
    "pathconf",
    "O_NONBLOCK",
    "mkfifo",
    "pipe2",
    "getloadavg",
    "uname",
    "chown",
    "lchown",
    "fchown",
    "sched_getaffinity",
]
MISSING_SIGNALS = [
    "SIGHUP",
    "SIGKILL",
    "SIGQUIT",
    "SIGUSR1",
    "SIGUSR2",
    "SIGCHLD",
    "SIGPIPE",
    "SIGALRM",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGWINCH",
    "SIGPROF",
    "SIGVTALRM",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGBUS",
    "SIGSYS",
    "SIGTRAP",
    "SIGURG",
    "SIGIO",
    "SIGPOLL",
    "SIGPWR",
    "SIGRTMIN",
    "SIGRTMAX",
    "alarm",
    "pause",
    "setitimer",
    "getitimer",
    "siginterrupt",
    "pthread_kill",
    "pthread_sigmask",
    "sigpending",
    "sigwait",
    "SIG_BLOCK",
    "SIG_UNBLOCK",
    "SIG_SETMASK",
]
MISSING_SOCKET = ["AF_UNIX"]
EXPECTED_REFUSALS = {"mcpline._platform.posix", "mcpline._platform._procfs"}
"""POSIX implementation modules: on Windows they raise ImportError by design."""


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] in MISSING_MODULES:
            raise ImportError(f"No module named {name!r} (simulated Windows)")
        return None


def _modules() -> list[str]:
    import mcpline

    names = ["mcpline"] + [m.name for m in pkgutil.walk_packages(mcpline.__path__, "mcpline.")]
    try:
        examples = importlib.import_module("mcpline._examples")
    except ImportError:
        pass
    else:
        names += ["mcpline._examples"] + [
            m.name for m in pkgutil.iter_modules(examples.__path__, "mcpline._examples.")
        ]
    return names


def _preload() -> None:
    """Import, as this machine has them, the outside modules mcpline imports at import."""
    import ctypes  # noqa: F401
    import selectors  # noqa: F401
    import subprocess  # noqa: F401

    names = _modules()
    for name in names:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    # What they imported stays loaded; mcpline's own modules are imported again.
    for name in [m for m in sys.modules if m.startswith("mcpline")]:
        del sys.modules[name]


def simulate() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in MISSING_MODULES:
            del sys.modules[name]
    sys.meta_path.insert(0, _Refuse())
    for mod, names in ((os, MISSING_OS), (signal, MISSING_SIGNALS), (socket, MISSING_SOCKET)):
        for attr in names:
            if hasattr(mod, attr):
                delattr(mod, attr)
    # Windows' socketpair() is an emulation over loopback TCP; here the default family
    # (AF_UNIX, just removed) must still be used.
    native, unix = socket.socketpair, socket._socket.AF_UNIX  # type: ignore[attr-defined]
    socket.socketpair = lambda family=None, *a: native(unix if family is None else family, *a)
    signal.SIGBREAK = 21  # type: ignore[attr-defined]
    signal.CTRL_C_EVENT = 0  # type: ignore[attr-defined]
    signal.CTRL_BREAK_EVENT = 1  # type: ignore[attr-defined]
    sys.platform = "win32"


class _NoLoopSignals(asyncio.SelectorEventLoop):
    """A loop without ``add_signal_handler``, as Windows loops are."""

    def add_signal_handler(
        self, sig: int, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts]
    ) -> None:
        raise NotImplementedError

    def remove_signal_handler(self, sig: int) -> bool:
        raise NotImplementedError


def serve(script: str) -> int:
    """Run ``script`` as ``__main__`` on the Windows implementation (see the docstring)."""
    import runpy
    import types

    msvcrt = types.ModuleType("msvcrt")
    msvcrt.setmode = lambda fd, mode: mode  # type: ignore[attr-defined]
    msvcrt.get_osfhandle = lambda fd: fd  # type: ignore[attr-defined]
    sys.modules["msvcrt"] = msvcrt
    asyncio.new_event_loop = _NoLoopSignals
    from mcpline import _platform

    assert _platform.impl.__name__ == "mcpline._platform.windows", _platform.impl
    runpy.run_path(script, run_name="__main__")
    return 0


def main(extra: list[str]) -> int:
    _preload()
    simulate()
    if extra[:1] == ["--serve"]:
        return serve(extra[1])
    imported: list[str] = []
    failed: dict[str, str] = {}
    refused: dict[str, str] = {}
    for name in _modules() + extra:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if name in EXPECTED_REFUSALS:
                refused[name] = str(exc)
            else:
                failed[name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        except Exception as exc:
            failed[name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        else:
            if name in EXPECTED_REFUSALS:
                failed[name] = "imported, but it must refuse to load on Windows"
            else:
                imported.append(name)
    from mcpline import _platform

    report = {
        "name": _platform.NAME,
        "impl": _platform.impl.__name__,
        "spawn_options": _platform.spawn_options(),
        "imported": imported,
        "failed": failed,
        "refused": refused,
    }
    sys.__stdout__.write(json.dumps(report) + "\n")  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
