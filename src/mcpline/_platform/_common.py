"""Small helpers shared by the implementations."""

from __future__ import annotations

import contextlib
import os
import platform
import sys

TREE_ENV = "MCPLINE_TREE"
"""The environment variable that marks every process of one started server's tree (see
`mcpline._platform.posix.ProcessTree`)."""


def machine_line(model: str, memory: int | None) -> str:
    """One line about this machine: CPUs, model, memory (bytes, None if unknown), OS, Python."""
    mem = f"{memory / 2**30:.1f} GiB RAM" if memory else "RAM unknown"
    return (
        f"{os.cpu_count()} × {model}, {mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def swap_stdio() -> tuple[int, int]:
    """Duplicate fds 0 and 1 for the protocol and return them (input, output); then point
    fd 0 at the null device and fd 1 and ``sys.stdout`` at stderr."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return in_fd, out_fd
