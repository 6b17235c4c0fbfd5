"""A server that shows what ``ctx.access_token`` and ``mctx.access_token`` hold: the ``token``
tool returns the token's fields as JSON (``null`` without one), whether its claims can be
changed, and its ``repr``; a middleware records the subject it saw (the ``seen`` tool)."""

from __future__ import annotations

import json
from typing import Any

from mcpline import Context, Server
from mcpline.middleware import CallNext, MiddlewareContext

SEEN: list[str | None] = []


async def record(mctx: MiddlewareContext, call_next: CallNext) -> Any:
    if mctx.name == "token":
        token = mctx.access_token
        SEEN.append(None if token is None else token.subject)
    return await call_next(mctx)


server = Server("token-server", middleware=[record])


@server.tool
def token(ctx: Context) -> str:
    """The verified access token of this request, as JSON."""
    found = ctx.access_token
    if found is None:
        return json.dumps(None)
    try:
        found.claims["sub"] = "mallory"  # type: ignore[index]
        writable = True
    except TypeError:
        writable = False
    return json.dumps(
        {
            "subject": found.subject,
            "client_id": found.client_id,
            "scopes": sorted(found.scopes),
            "expires_at": found.expires_at,
            "audience": list(found.audience),
            "claims": dict(found.claims),
            "claims_writable": writable,
            "same_as_principal": found is ctx.principal,
            "repr": repr(found),
        }
    )


@server.tool
def seen() -> list[str | None]:
    """The subjects the middleware saw (then forget them)."""
    out = list(SEEN)
    SEEN.clear()
    return out


if __name__ == "__main__":
    server.run()
