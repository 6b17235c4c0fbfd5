"""Small helpers shared by the implementations."""

from __future__ import annotations

import os
import platform


def machine_line(model: str, memory: int | None) -> str:
    """One line about this machine: CPUs, model, memory (bytes, None if unknown), OS, Python."""
    mem = f"{memory / 2**30:.1f} GiB RAM" if memory else "RAM unknown"
    return (
        f"{os.cpu_count()} × {model}, {mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )
