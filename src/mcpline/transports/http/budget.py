"""The byte budget that request bodies share while they are read and served (sans-I/O).

Each request reserves what its body may hold before a byte of it is read: its
``Content-Length``, or the largest body allowed when it is chunked; the reservation is
released when the request has been answered (its parsed body lives that long). A request
whose reservation does not fit is refused before its body is read (503, ``Retry-After``), so
slow or concurrent uploads cannot hold more than the budget between them.
"""

from __future__ import annotations

DEFAULT_MAX_BODY_TOTAL = 64 * 1024 * 1024
"""64 MiB: sixteen bodies of the largest default size at once."""

RETRY_AFTER = b"1"
"""Seconds a refused client is told to wait: bodies in flight are usually read in less."""


class BodyBudget:
    """Bytes of request bodies held at once, bounded by ``total``."""

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("max_body_total_bytes must be positive")
        self.total = total
        self.held = 0

    def reserve(self, size: int) -> bool:
        """Hold ``size`` more bytes; False (and nothing held) when they do not fit."""
        if size < 0:
            raise ValueError("a reservation cannot be negative")
        if self.held + size > self.total:
            return False
        self.held += size
        return True

    def release(self, size: int) -> None:
        """Give back ``size`` bytes of an earlier reservation."""
        self.held = max(0, self.held - size)

    def refusal(self, size: int) -> str:
        """The 503 message for a reservation of ``size`` that did not fit."""
        return (
            f"Service Unavailable: request bodies in progress hold {self.held} of "
            f"{self.total} bytes (max_body_total_bytes); this one may need {size}: retry shortly"
        )


__all__ = ["BodyBudget", "DEFAULT_MAX_BODY_TOTAL", "RETRY_AFTER"]
