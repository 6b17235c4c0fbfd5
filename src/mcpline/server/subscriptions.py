"""``subscriptions/listen``: long-lived requests that carry list-changed and updated notices.

Each listen is identified by its request id. Its first message is the acknowledgement with
the honoured filter; every notification of it carries ``_meta.subscriptionId`` = that id
(same JSON type); types it did not ask for are never sent. ``notifications/cancelled`` ends
it silently; when the connection closes, each open listen is answered with its graceful
completion result before the process exits. So is each listen of a peer that stops reading
once its outbound buffer is full (`mcpline.server.outbound`): notifications are never queued
past the bound.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import JsonRpcError
from ..jsonrpc import notification, result_response
from ..spec import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, SUBSCRIPTION_ID_KEY
from .context import Context
from .outbound import Kind

if TYPE_CHECKING:
    from .core import Server
    from .runtime import Connection

log = logging.getLogger("mcpline.server")

STATE_KEY = "mcpline.listens"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
LIST_CHANGED = {
    "tools": ("toolsListChanged", "notifications/tools/list_changed"),
    "prompts": ("promptsListChanged", "notifications/prompts/list_changed"),
    "resources": ("resourcesListChanged", "notifications/resources/list_changed"),
}
RESOURCE_UPDATED = "notifications/resources/updated"
FLAG_CAPABILITY = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}


@dataclass
class Listen:
    """One open subscription."""

    ctx: Context
    honoured: dict[str, Any]
    uris: tuple[str, ...]
    done: asyncio.Future[None]

    @property
    def id(self) -> Any:
        return self.ctx.request_id

    def meta(self) -> dict[str, Any]:
        return {SUBSCRIPTION_ID_KEY: self.ctx.request_id}


def honour(requested: Any, capabilities: dict[str, Any], watchable: Any) -> dict[str, Any]:
    """The part of a ``SubscriptionFilter`` this server will serve (-32602 if malformed).

    List-changed flags are honoured when the matching ``listChanged`` capability is
    advertised; resource URIs when ``resources.subscribe`` is and ``watchable(uri)`` says the
    URI (or something under it) is a resource we serve.
    """
    if not isinstance(requested, dict):
        raise JsonRpcError(
            INVALID_PARAMS, "Invalid params: subscriptions/listen needs a 'notifications' object"
        )
    out: dict[str, Any] = {}
    for flag, cap in FLAG_CAPABILITY.items():
        value = requested.get(flag)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise JsonRpcError(
                INVALID_PARAMS, f"Invalid params: notifications.{flag} must be a boolean"
            )
        if value and capabilities.get(cap, {}).get("listChanged") is True:
            out[flag] = True
    uris = requested.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise JsonRpcError(
                INVALID_PARAMS,
                "Invalid params: notifications.resourceSubscriptions must be an array of strings",
            )
        if capabilities.get("resources", {}).get("subscribe") is True:
            kept = [u for u in dict.fromkeys(uris) if watchable(u)]
            out["resourceSubscriptions"] = kept
    return out


def _covers(subscribed: str, uri: str) -> bool:
    """``uri`` is the subscribed resource or a sub-resource of it."""
    if uri == subscribed:
        return True
    base = subscribed if subscribed.endswith("/") else subscribed + "/"
    return uri.startswith(base)


class Subscriptions:
    """Open listens of every connection of one server, and delivery to them."""

    max_per_connection = 1024

    def __init__(self, server: Server) -> None:
        self.server = server

    def available(self) -> bool:
        """Whether anything can be listened to (else ``subscriptions/listen`` is -32601)."""
        caps = self.server.capabilities()
        return any(
            caps.get(c, {}).get("listChanged") for c in ("tools", "prompts", "resources")
        ) or bool(caps.get("resources", {}).get("subscribe"))

    @staticmethod
    def listens(conn: Connection) -> dict[tuple[type, Any], Listen]:
        found: dict[tuple[type, Any], Listen] | None = conn.state.get(STATE_KEY)
        if found is None:
            found = conn.state[STATE_KEY] = {}
        return found

    async def listen(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """The ``subscriptions/listen`` handler: acknowledge, then wait until ended."""
        if not self.available():
            raise JsonRpcError(
                METHOD_NOT_FOUND,
                "Method not found: subscriptions/listen (this server advertises no "
                "listChanged or subscribe capability)",
            )
        honoured = honour(
            params.get("notifications"), self.server.capabilities(), self.server.watchable
        )
        conn: Connection = ctx._conn
        table = self.listens(conn)
        if len(table) >= self.max_per_connection:
            raise JsonRpcError(
                INTERNAL_ERROR,
                f"Too many open subscriptions on this connection (limit {self.max_per_connection})",
            )
        if not conn.state.get(STATE_KEY + ".hooked"):
            conn.state[STATE_KEY + ".hooked"] = True
            conn.close_hooks.append(self.close_all)
            conn.overflow_hooks.append(self.close_all)
        sub = Listen(
            ctx,
            honoured,
            tuple(honoured.get("resourceSubscriptions", ())),
            conn.loop.create_future(),
        )
        key = (type(ctx.request_id), ctx.request_id)
        table[key] = sub
        try:
            conn.send_for(
                ctx,
                notification(ACKNOWLEDGED, {"_meta": sub.meta(), "notifications": honoured}),
                Kind.STREAM,
            )
            if not conn.closing.is_set():  # else the close hooks already ran: end it now
                await sub.done
        finally:
            if table.get(key) is sub:
                del table[key]
        return {"_meta": sub.meta()}

    # --- delivery (on the connection's loop thread) ---

    def list_changed(self, conn: Connection, kind: str) -> None:
        flag, method = LIST_CHANGED[kind]
        for sub in list(self.listens(conn).values()):
            if sub.honoured.get(flag):
                conn.send_for(sub.ctx, notification(method, {"_meta": sub.meta()}), Kind.STREAM)

    def resource_updated(self, conn: Connection, uri: str) -> None:
        for sub in list(self.listens(conn).values()):
            if any(_covers(s, uri) for s in sub.uris):
                conn.send_for(
                    sub.ctx,
                    notification(RESOURCE_UPDATED, {"_meta": sub.meta(), "uri": uri}),
                    Kind.STREAM,
                )

    def close_all(self, conn: Connection) -> None:
        """Close and overflow hook: answer every open listen with its graceful completion."""
        for key, sub in list(self.listens(conn).items()):
            del self.listens(conn)[key]
            if not sub.ctx.closed:
                sub.ctx.closed = True
                result = self.server.finish_result({"_meta": sub.meta()})
                conn.send(result_response(sub.id, result))
            if not sub.done.done():
                sub.done.set_result(None)
