"""`CallbackTasks`: the async progress and log callbacks of a client, run as bounded tasks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("mcpline.client")

MAX_CALLBACK_TASKS = 256
"""Async progress/log callbacks running at once; more notifications skip their callback."""


class CallbackTasks:
    """Runs async callbacks (progress, log) as tasks: at most ``limit`` at once, the rest
    skipped with a warning; a failure is logged, never left unretrieved."""

    def __init__(self, limit: int = MAX_CALLBACK_TASKS) -> None:
        self.limit = limit
        self.tasks: set[asyncio.Task[Any]] = set()
        self.skipped = 0

    def run(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        if len(self.tasks) >= self.limit:
            coro.close()
            self.skipped += 1
            if self.skipped == 1 or self.skipped % 1000 == 0:
                log.warning(
                    "%d %s callbacks are still running; skipped %d so far",
                    self.limit,
                    what,
                    self.skipped,
                )
            return
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("an async callback failed", exc_info=task.exception())


__all__ = ["MAX_CALLBACK_TASKS", "CallbackTasks"]
