"""`PeerState`: what every `mcpline.server.engine.Peer` holds, whatever carries it.

A stdio or socket `mcpline.server.connection.Connection`, a 2026-07-28 HTTP POST, a legacy
HTTP session and a task's context each build on it: a name for logs, the event loop (and
its thread) it lives on, the event set once it is going away, what features keep for it
(``scoped``: its listens, its legacy session) and the hooks run when it closes or its
output is full.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("mcpline.server")

CloseHook = Callable[[Any], Awaitable[None] | None]
"""Run with the peer when it closes (awaited when it returns an awaitable)."""
OverflowHook = Callable[[Any], None]
"""Run with the peer when a stream notification finds its output full."""


class PeerState:
    """What every peer holds; built on the event loop the peer serves on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.closing = asyncio.Event()
        """Set once the peer is going away (no new listens are kept open)."""
        self.scoped: dict[str, Any] = {}
        """What features keep for this peer (its listens, a legacy session), by feature key."""
        self.close_hooks: list[CloseHook] = []
        self.overflow_hooks: list[OverflowHook] = []

    async def run_close_hooks(self) -> None:
        """Run every close hook in order; one that fails is logged and the rest still run."""
        for hook in self.close_hooks:
            try:
                result = hook(self)
                if result is not None:
                    await result
            except Exception:
                log.exception("close hook failed")

    def run_overflow_hooks(self) -> None:
        """The peer's output is full: run every overflow hook (they end the streams)."""
        for hook in list(self.overflow_hooks):
            hook(self)


__all__ = ["CloseHook", "OverflowHook", "PeerState"]
