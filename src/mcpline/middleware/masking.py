"""Error masking: no exception text reaches a client unless allowed."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from ..server.tools import TOOL_FAILURE, error_result
from ._chain import CallNext, Middleware, MiddlewareContext

log = logging.getLogger("mcpline.middleware")


class ErrorMaskingMiddleware(Middleware):
    """A tool that raises (anything but `mcpline.ToolError`, whose message is meant for the
    client) answers ``Tool 'name' failed (reference …)`` instead of the exception's type and
    text; the reference is logged on stderr with the exception's type, beside its traceback.
    ``expose`` names exception types whose text may still be sent. Other exceptions never
    reach a client as text anyway: they become -32603 naming only the method."""

    every_round = True

    def __init__(self, *, expose: tuple[type[BaseException], ...] = ()) -> None:
        self.expose = expose
        self.masked = 0
        """Tool failures masked so far."""

    async def on_call_tool(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        token = TOOL_FAILURE.set(None)
        try:
            result = await call_next(mctx)
            failure = TOOL_FAILURE.get()
        finally:
            TOOL_FAILURE.reset(token)
        if (
            failure is None
            or issubclass(failure, self.expose)
            or type(result) is not dict
            or result.get("isError") is not True
        ):
            return result
        self.masked += 1
        ref = secrets.token_hex(4)
        log.warning(
            "tool %r failed with %s (reference %s sent to the client)",
            mctx.name,
            failure.__name__,
            ref,
        )
        masked = {**result, **error_result(f"Tool {mctx.name!r} failed (reference {ref})")}
        return masked


__all__ = ["ErrorMaskingMiddleware"]
