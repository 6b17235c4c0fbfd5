"""``subscriptions/listen``: long-lived requests that carry list-changed and updated notices,
and (tasks extension) ``notifications/tasks`` for the ``taskIds`` a listen names.

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
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import JsonRpcError
from ..jsonrpc import notification, result_response
from ..spec import (
    ACKNOWLEDGED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LIST_CHANGED,
    METHOD_NOT_FOUND,
    RESOURCE_UPDATED,
    SUBSCRIPTION_ID_KEY,
    TASK_STATUS,
)
from .context import Context
from .outbound import Kind

if TYPE_CHECKING:
    from .engine import Exchange, Peer

log = logging.getLogger("mcpline.server")

LISTENS_KEY = "mcpline.listens"
"""Where a peer keeps its open listens in ``peer.scoped``."""
FLAG_CAPABILITY = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}


class TaskListens(Protocol):
    """What a listen asks of the tasks extension (`mcpline.server.tasks.manager.TaskManager`)."""

    async def listen_ids(self, ctx: Context, requested: Any) -> list[str]:
        """The ``taskIds`` of ``requested`` this caller may watch."""
        ...

    async def announce(self, sub: Listen) -> None:
        """Send ``sub`` the current state of each task it watches."""
        ...


class ListenHost(Protocol):
    """What listens ask of the server's method table (`mcpline.server.methods`)."""

    def capabilities(self) -> dict[str, Any]: ...

    def offers(self, capability: str) -> bool: ...

    def watchable(self, uri: str) -> bool: ...

    @property
    def tasks(self) -> TaskListens: ...

    def finish_result(self, result: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class Listen:
    """One open subscription."""

    exchange: Exchange
    honoured: dict[str, Any]
    uris: tuple[str, ...]
    done: asyncio.Future[None]
    task_ids: tuple[str, ...] = ()
    """Tasks whose ``notifications/tasks`` this listen gets (tasks extension)."""

    @property
    def id(self) -> Any:
        return self.exchange.id

    def meta(self) -> dict[str, Any]:
        return {SUBSCRIPTION_ID_KEY: self.exchange.id}


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

    def __init__(self, dispatch: ListenHost) -> None:
        self._dispatch = dispatch

    def available(self) -> bool:
        """Whether anything can be listened to (else ``subscriptions/listen`` is -32601)."""
        caps = self._dispatch.capabilities()
        return (
            any(caps.get(c, {}).get("listChanged") for c in ("tools", "prompts", "resources"))
            or bool(caps.get("resources", {}).get("subscribe"))
            or self._dispatch.offers("tasks")
        )

    @staticmethod
    def listens(peer: Peer) -> dict[tuple[type, Any], Listen]:
        """The open listens of ``peer`` (empty if it never opened one)."""
        found: dict[tuple[type, Any], Listen] = peer.scoped.get(LISTENS_KEY, {})
        return found

    def _table(self, peer: Peer) -> dict[tuple[type, Any], Listen]:
        found: dict[tuple[type, Any], Listen] | None = peer.scoped.get(LISTENS_KEY)
        if found is None:
            found = peer.scoped[LISTENS_KEY] = {}
            peer.close_hooks.append(self.close_all)
            peer.overflow_hooks.append(self.close_all)
        return found

    async def listen(self, ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        """The ``subscriptions/listen`` handler: acknowledge, then wait until ended."""
        if not self.available():
            raise JsonRpcError(
                METHOD_NOT_FOUND,
                "Method not found: subscriptions/listen (this server advertises no "
                "listChanged or subscribe capability)",
            )
        d = self._dispatch
        requested = params.get("notifications")
        honoured = honour(requested, d.capabilities(), d.watchable)
        wanted_tasks = requested.get("taskIds") if isinstance(requested, dict) else None
        if wanted_tasks is not None and d.offers("tasks"):
            honoured["taskIds"] = await d.tasks.listen_ids(ctx, wanted_tasks)
        exchange = ctx.exchange
        peer = exchange.peer
        table = self._table(peer)
        if len(table) >= self.max_per_connection:
            raise JsonRpcError(
                INTERNAL_ERROR,
                f"Too many open subscriptions on this connection (limit {self.max_per_connection})",
            )
        sub = Listen(
            exchange,
            honoured,
            tuple(honoured.get("resourceSubscriptions", ())),
            peer.loop.create_future(),
            tuple(honoured.get("taskIds", ())),
        )
        key = (type(exchange.id), exchange.id)
        table[key] = sub
        try:
            exchange.send(
                notification(ACKNOWLEDGED, {"_meta": sub.meta(), "notifications": honoured}),
                Kind.STREAM,
            )
            if sub.task_ids:
                await d.tasks.announce(sub)
            if not peer.closing.is_set():  # else the close hooks already ran: end it now
                await sub.done
        finally:
            if table.get(key) is sub:
                del table[key]
        return {"_meta": sub.meta()}

    # --- delivery (on the peer's loop thread) ---

    def list_changed(self, peer: Peer, kind: str) -> None:
        flag, method = LIST_CHANGED[kind]
        for sub in list(self.listens(peer).values()):
            if sub.honoured.get(flag):
                sub.exchange.send(notification(method, {"_meta": sub.meta()}), Kind.STREAM)

    def resource_updated(self, peer: Peer, uri: str) -> None:
        for sub in list(self.listens(peer).values()):
            if any(_covers(s, uri) for s in sub.uris):
                sub.exchange.send(
                    notification(RESOURCE_UPDATED, {"_meta": sub.meta(), "uri": uri}),
                    Kind.STREAM,
                )

    def task_changed(self, peer: Peer, task_id: str, task: dict[str, Any]) -> bool:
        """Send ``task`` (a ``DetailedTask``) to each listen of ``peer`` watching it; whether
        one was."""
        sent = False
        for sub in list(self.listens(peer).values()):
            if task_id in sub.task_ids:
                self.send_task(sub, task)
                sent = True
        return sent

    @staticmethod
    def send_task(sub: Listen, task: dict[str, Any]) -> None:
        sub.exchange.send(notification(TASK_STATUS, {**task, "_meta": sub.meta()}), Kind.STREAM)

    def close_all(self, peer: Peer) -> None:
        """Close and overflow hook: answer every open listen with its graceful completion."""
        table = self.listens(peer)
        for key, sub in list(table.items()):
            del table[key]
            if sub.exchange.open:
                result = self._dispatch.finish_result({"_meta": sub.meta()})
                sub.exchange.reply(result_response(sub.id, result))
            if not sub.done.done():
                sub.done.set_result(None)


__all__ = [
    "FLAG_CAPABILITY",
    "honour",
    "Listen",
    "ListenHost",
    "LISTENS_KEY",
    "Subscriptions",
    "TaskListens",
]
