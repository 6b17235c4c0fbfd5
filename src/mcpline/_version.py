"""mcpline's version: the one place it is written (the build reads it from here into the
package metadata, so the two cannot disagree, and no metadata lookup costs start-up time)."""

from __future__ import annotations

__version__ = "0.1.0"


def version() -> str:
    """mcpline's version."""
    return __version__


__all__ = ["__version__", "version"]
