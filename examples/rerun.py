"""FastMCP-style ``await ctx.elicit(...)``, and the re-run rule it rests on, over stdio.

Start it as ``python examples/rerun.py`` (or ``mcpline run examples/rerun.py``) from a client
that answers elicitations; with mcpline's client::

    def on_elicit(params: dict) -> dict:  # params: message, requestedSchema
        return {"action": "accept", "content": {"value": True}}

    async with Client.stdio(sys.executable, ["examples/rerun.py"], on_elicit=on_elicit) as c:
        print(await c.call_tool("refund", {"order_id": "A-1001"}))

**The re-run rule.** A question stops the handler: the client is asked, and the handler runs
again *from the top* with the answer (a modern client retries the call; a legacy one gets a
real ``elicitation/create`` and the server re-runs the handler). So whatever a handler does
before a question, it does once per run:

* ask first when you can (``ship`` asks before doing anything);
* keep what runs before a question idempotent (reads, ``ctx.info``: the log goes out again);
* keep work that must happen once with ``ctx.remember(key, fn)`` (``refund``): the first run
  calls ``fn`` and the framework keeps its value (JSON data) in the request's sealed state,
  so later runs get that value without calling ``fn`` again.

Earlier answers are kept the same way, so questions can follow one another (``ship`` asks
two). The keys of ``ctx.elicit`` come from the message, the form and the order of the
questions in the run: stable as long as the code before each question is.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import Literal

from mcpline import Context, Server

server = Server("rerun-example", version="1.0.0")

_draft_ids = itertools.count(1)


def draft_refund(order_id: str) -> dict[str, object]:
    """Stands for a call to a payments API: it must not happen twice for one request."""
    number = next(_draft_ids)
    print(f"drafted refund {number} for {order_id}", file=sys.stderr)
    return {"draft": f"R-{number}", "order": order_id, "amount": 42.5}


@server.tool()
async def refund(order_id: str, ctx: Context) -> str:
    """Refund an order after the user confirms the amount."""
    await ctx.info(f"refund requested for {order_id}")  # sent again on the re-run: harmless
    draft = ctx.remember("draft", lambda: draft_refund(order_id))  # drafted once per request
    answer = await ctx.elicit(f"Refund {draft['amount']} EUR for {order_id}?", bool)
    if not answer.accepted or not answer.data:
        return f"Refund {draft['draft']} cancelled."
    return f"Refund {draft['draft']} of {draft['amount']} EUR sent."


@dataclass
class Address:
    street: str
    city: str
    express: bool = False


@server.tool()
async def ship(parcel: str, ctx: Context) -> str:
    """Ship a parcel: asks where, then how to wrap it, before doing anything."""
    where = await ctx.elicit("Where to?", Address)
    if where.data is None:
        return "Not shipped."
    wrap = await ctx.elicit("Gift wrap?", Literal["none", "paper", "box"])
    speed = "express" if where.data.express else "standard"
    return f"{parcel} goes {speed} to {where.data.street}, {where.data.city} ({wrap.data} wrap)."


if __name__ == "__main__":
    server.run()
