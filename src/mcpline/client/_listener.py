"""`Listener`, a ``subscriptions/listen`` stream of a `mcpline.client.Client`, and the
`ServerNotification` items it yields."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import jsonrpc
from ..errors import ClientClosed, ClientError, ConnectionLost, ServerError
from ..jsonrpc import RequestId
from ..spec import ACKNOWLEDGED, LIST_CHANGED, LISTEN, RESOURCE_UPDATED, SUBSCRIBE
from .era import MODERN
from .mrtr import result_type

if TYPE_CHECKING:
    from ._link import Link
    from .client import Client

log = logging.getLogger("mcpline.client")


@dataclass(frozen=True)
class ServerNotification:
    """A notification delivered on a listen stream. ``synthesized`` marks the stand-in
    acknowledgement of a legacy server, which has no ``subscriptions/listen``: it never
    crossed the wire."""

    method: str
    params: dict[str, Any]
    synthesized: bool = False

    def to_message(self) -> dict[str, Any]:
        return jsonrpc.notification(self.method, self.params)


_END: Any = object()

_LEGACY_KINDS = {notification: flag for flag, notification in LIST_CHANGED.values()}
"""A legacy server's list-changed notification → the listen filter flag that asks for it."""


class Listener:
    """A ``subscriptions/listen`` stream (legacy era: the session's unsolicited notifications)."""

    def __init__(
        self, client: Client, notifications: dict[str, Any], max_queue: int = 10_000
    ) -> None:
        self.client = client
        self.filter = notifications
        self.acknowledged: dict[str, Any] | None = None
        self.request_id: RequestId | None = None
        self.establishments = 0
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._max_queue = max_queue
        self.dropped = 0
        """Notifications dropped, oldest first, because the reader fell behind."""
        self._task: asyncio.Task[None] | None = None
        self._legacy_active = False

    def __aiter__(self) -> AsyncIterator[ServerNotification]:
        self._start()
        return self

    async def __aenter__(self) -> Listener:
        self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _start(self) -> None:
        if self._task is None:
            if self.client.links.closed:
                raise ClientClosed("the client is closed")
            self.client.links.listeners.add(self)
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def __anext__(self) -> ServerNotification:
        self._start()
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.put_nowait(_END)
            raise item
        return item  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Stop listening (``notifications/cancelled`` is sent for the listen request)."""
        self.client.links.listeners.discard(self)
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ClientError):
                await task
        self._queue.put_nowait(_END)

    def _put(self, item: Any) -> None:
        if self._queue.qsize() >= self._max_queue:
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "listen queue full (%d): dropped %d notifications so far, oldest first",
                    self._max_queue,
                    self.dropped,
                )
        self._queue.put_nowait(item)

    def _deliver(self, method: str, params: Any, *, synthesized: bool = False) -> None:
        params = params if isinstance(params, dict) else {}
        if method == ACKNOWLEDGED:
            ack = params.get("notifications")
            self.acknowledged = ack if isinstance(ack, dict) else {}
        self._put(ServerNotification(method, params, synthesized))

    def legacy_notification(self, method: str, params: Any) -> None:
        """A notification of a legacy server, delivered when this listen asked for it."""
        if not self._legacy_active:
            return
        kind = _LEGACY_KINDS.get(method)
        if (
            kind is not None
            and self.filter.get(kind)
            or method == RESOURCE_UPDATED
            and self.filter.get("resourceSubscriptions")
        ):
            self._deliver(method, params)

    async def _run(self) -> None:
        client = self.client
        loop = asyncio.get_running_loop()
        quick = 0
        try:
            while True:
                link = await client.links.ensure()
                self.establishments += 1
                began = loop.time()
                try:
                    if link.description.era == MODERN:
                        await self._listen_modern(link)
                        self._put(_END)  # the server closed the stream gracefully
                        return
                    await self._listen_legacy(link)
                except ConnectionLost as exc:
                    if not exc.retriable or client.links.closed:
                        raise
                    log.info("listen stream lost (%s); re-establishing it", exc)
                    # A stream the server keeps ending at once (HTTP) is retried with backoff.
                    o = client.options
                    quick = quick + 1 if loop.time() - began < o.stable_after else 0
                    if quick > 1:
                        await asyncio.sleep(
                            min(o.restart_backoff * 2 ** (quick - 2), o.max_backoff)
                        )
        except Exception as exc:  # a ClientError, or anything unexpected: the reader sees it
            self._put(exc)

    async def _listen_modern(self, link: Link) -> None:
        def sent(rid: RequestId) -> None:
            self.request_id = rid

        params = self.client.links.params(link, {"notifications": self.filter})
        result = await link.session.request(
            LISTEN,
            params,
            timeout=None,
            max_timeout=None,
            on_notification=self._deliver,
            on_sent=sent,
        )
        result_type(result, LISTEN)

    async def _listen_legacy(self, link: Link) -> None:
        caps = link.description.capabilities
        honoured: dict[str, Any] = {}
        for cap, (kind, _) in LIST_CHANGED.items():
            if (
                self.filter.get(kind)
                and isinstance(caps.get(cap), dict)
                and caps[cap].get("listChanged")
            ):
                honoured[kind] = True
        uris = self.filter.get("resourceSubscriptions") or []
        res_caps = caps.get("resources")
        if uris and isinstance(res_caps, dict) and res_caps.get("subscribe"):
            done = []
            for uri in uris:
                try:
                    await link.session.request(
                        SUBSCRIBE, {"uri": uri}, timeout=self.client.options.timeout
                    )
                    done.append(uri)
                except ServerError as exc:
                    log.info("%s %s refused: %s", SUBSCRIBE, uri, exc)
            if done:
                honoured["resourceSubscriptions"] = done
        self._legacy_active = True
        self._deliver(
            ACKNOWLEDGED,
            {"notifications": honoured},
            synthesized=True,
        )
        try:
            lost = await asyncio.shield(link.session.lost)
        finally:
            self._legacy_active = False
        raise lost


__all__ = ["Listener", "ServerNotification"]
