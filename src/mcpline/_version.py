"""The installed package's version, read from its metadata on first use (importing
`importlib.metadata` costs more than the rest of a client's start-up imports)."""

from __future__ import annotations

import functools


@functools.cache
def version() -> str:
    """mcpline's version as installed, or ``"0+unknown"`` when it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("mcpline")
    except PackageNotFoundError:
        return "0+unknown"


__all__ = ["version"]
