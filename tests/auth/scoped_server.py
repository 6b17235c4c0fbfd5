"""The MCP server behind the test authorization server: tools, a prompt and resources with
required scopes, and ``whoami``, which shows what reached ``ctx.principal``."""

from __future__ import annotations

import json

from mcpline import Context, Server

server = Server("scoped")


@server.tool
def whoami(ctx: Context) -> str:
    """The caller's principal."""
    p = ctx.principal
    return json.dumps(
        {
            "subject": p.subject,
            "scopes": sorted(p.scopes),
            "client_id": p.client_id,
            "claims_sub": p.claims.get("sub"),
            "jkt": p.jkt,
        }
    )


@server.tool(scopes=["notes:read"])
def read_notes() -> str:
    """Read the notes."""
    return "the notes"


@server.tool(scopes=["notes:write", "notes:read"])
def write_notes(text: str) -> str:
    """Write a note."""
    return f"wrote {text}"


@server.prompt(scopes=["notes:write"])
def draft() -> str:
    """A drafting prompt."""
    return "Draft a note."


@server.resource("notes://all", scopes=["notes:read"])
def all_notes() -> str:
    return "all the notes"


@server.resource("notes://admin/{name}", scopes=["notes:admin"])
def admin_note(name: str) -> str:
    return f"admin note {name}"
