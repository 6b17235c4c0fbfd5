"""Redis for a server run as several processes: `RedisBus` and `RedisNonceLedger`.

Both need the ``redis`` extra (``pip install 'mcpline[redis]'``, redis-py 5.0.1 or later)
and import it only when first used, so a server without them starts as fast as before.

`RedisBus` carries list changes and resource updates over Redis pub/sub (see
`mcpline.server.scale.bus`). Each message is compact JSON::

    {"origin":"4711-3f2a9c01b2d4","kind":"list_changed","value":"tools"}

``origin`` names the publishing process (its pid and a random part, chosen at `start`, so
forked workers differ): a bus skips its own messages, since the server has told its own
peers already. Publishing never blocks: changes wait in a bounded, de-duplicated queue that
the bus's task sends from the server's loop. While Redis is unreachable the queue keeps at
most ``max_pending`` distinct changes (the rest are dropped: one warning when that starts,
one with the count once the queue has drained), the bus
retries with capped, jittered exponential backoff and logs one warning per outage. Pub/sub
keeps nothing for a subscriber that is away, so after an outage the bus tells its own peers
that every list may have changed (they fetch again); resource updates published elsewhere
during an outage are lost.

Changes published before `RedisBus.start` (registration at import) are not sent: the
registry a process starts with is what its clients list anyway.

`RedisNonceLedger` makes sealed ``requestState`` single-use across replicas
(`mcpline.protocol.state`): one ``SET key 1 NX PX ttl`` per claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import random
import threading
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

import msgspec

from .bus import LIST_KINDS, Change, Deliver

if TYPE_CHECKING:
    import redis
    import redis.asyncio
    import redis.asyncio.client

log = logging.getLogger("mcpline.server.scale.bus")

DEFAULT_URL = "redis://127.0.0.1:6379/0"
READ_POLL = 5.0
"""Seconds a read waits for a message before the connection's health is checked again."""


def _require_redis(what: str) -> None:
    if importlib.util.find_spec("redis") is None:
        raise ImportError(f"{what} needs redis-py: pip install 'mcpline[redis]'")


def redact(url: str) -> str:
    """``url`` without its password, for logs."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urllib.parse.urlunsplit(parts._replace(netloc=user + host))


class RedisBus:
    """A `NotificationBus` over Redis pub/sub: ``Server(bus=RedisBus(url))``.

    ``channel`` defaults to ``mcpline:<server name>``; processes of one server share it, other
    servers on the same Redis should not. ``max_pending`` bounds the changes waiting to be
    sent; ``backoff`` is the first and the longest wait between reconnection attempts;
    ``timeout`` bounds connecting and each command; `start` waits at most ``start_wait``
    seconds for the first subscription (a Redis that is down delays the start by that much,
    then the bus goes on trying in the background).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        channel: str | None = None,
        *,
        max_pending: int = 1024,
        backoff: tuple[float, float] = (0.05, 5.0),
        timeout: float = 5.0,
        start_wait: float = 2.0,
    ) -> None:
        _require_redis("RedisBus")
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        if not 0 < backoff[0] <= backoff[1]:
            raise ValueError("backoff must be (first, longest) with 0 < first <= longest")
        self.url = url
        self.channel = channel
        self.max_pending = max_pending
        self.backoff = backoff
        self.timeout = timeout
        self.start_wait = start_wait
        self.origin = ""
        """This process's tag on its messages (set by `start`)."""
        self.connected = False
        """Subscribed and able to publish right now."""
        self.outages = 0
        """Times the connection was lost, or could not be made, since `start`."""
        self._lock = threading.Lock()
        self._pending: dict[Change, None] = {}
        self._dropped = 0
        self._wake_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._wake: asyncio.Event | None = None
        self._subscribed: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._deliver: Deliver | None = None
        self._bad_messages = 0
        self._channel = ""

    @property
    def pending(self) -> int:
        """Changes waiting to be sent."""
        return len(self._pending)

    # --- the NotificationBus protocol ------------------------------------------------------

    async def start(self, deliver: Deliver, scope: str) -> None:
        if self._task is not None:
            raise RuntimeError("this RedisBus is already started")
        from redis.asyncio.connection import parse_url

        parse_url(self.url)  # a malformed URL is raised here (ValueError), not retried
        loop = asyncio.get_running_loop()
        self._deliver = deliver
        self._channel = self.channel or f"mcpline:{scope}"
        self.origin = f"{os.getpid()}-{os.urandom(6).hex()}"
        self._wake = asyncio.Event()
        self._subscribed = asyncio.Event()
        with self._lock:
            self._loop = loop
            self._loop_thread = threading.get_ident()
            self._wake_scheduled = False
        self._task = loop.create_task(self._run(), name="mcpline-redis-bus")
        with contextlib.suppress(asyncio.TimeoutError):  # logged by the task; it keeps trying
            await asyncio.wait_for(self._subscribed.wait(), self.start_wait)

    def publish(self, change: Change) -> None:
        with self._lock:
            loop = self._loop
            if loop is None:
                return
            if change in self._pending:
                return
            if len(self._pending) >= self.max_pending:
                self._dropped += 1
                if self._dropped == 1:
                    log.warning(
                        "redis bus: %d changes wait to be sent; dropping new ones",
                        len(self._pending),
                    )
                return
            self._pending[change] = None
            if self._wake_scheduled:
                return
            self._wake_scheduled = True
        if threading.get_ident() == self._loop_thread:
            self._wakeup()
        else:
            with contextlib.suppress(RuntimeError):  # a closed loop: the server is gone
                loop.call_soon_threadsafe(self._wakeup)

    async def aclose(self) -> None:
        task = self._task
        if task is None:
            return
        deadline = time.monotonic() + min(1.0, self.timeout)
        while self._pending and self.connected and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # let what is queued go out
        with self._lock:
            self._loop = None
            self._pending.clear()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self._task = None
        self.connected = False

    # --- the task ---------------------------------------------------------------------------

    def _wakeup(self) -> None:
        with self._lock:
            self._wake_scheduled = False
        if self._wake is not None:
            self._wake.set()

    def _client(self) -> redis.asyncio.Redis:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # No retries inside redis-py: this bus reconnects itself, and must see each outage.
        client: redis.asyncio.Redis = Redis.from_url(
            self.url,
            retry=Retry(NoBackoff(), 0),
            socket_connect_timeout=self.timeout,
            socket_timeout=self.timeout,
            socket_keepalive=True,
            health_check_interval=int(READ_POLL * 2),
        )
        return client

    async def _run(self) -> None:
        from redis.exceptions import RedisError

        first, longest = self.backoff
        delay = first
        failed = False
        while True:
            client = self._client()
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                self._connected(failed)
                failed = False
                delay = first
                await self._serve(client, pubsub)
            except (RedisError, OSError) as exc:
                failed = self._lost(exc, failed)
            except Exception as exc:
                if not failed:
                    log.exception("redis bus: unexpected error")
                failed = self._lost(exc, failed)
            finally:
                self.connected = False
                await self._close(client, pubsub)
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, longest)

    def _connected(self, after_failure: bool) -> None:
        self.connected = True
        assert self._subscribed is not None
        self._subscribed.set()
        if not after_failure:
            return
        log.warning("redis bus: connected to %s again", redact(self.url))
        for kind in LIST_KINDS:  # what other processes changed meanwhile was not received
            self._hand_over(Change("list_changed", kind))

    def _lost(self, exc: BaseException, failed: bool) -> bool:
        if not failed:
            self.outages += 1
            log.warning(
                "redis bus: cannot reach %s (%s: %s); changes of other processes are not "
                "received until it is back, retrying",
                redact(self.url),
                type(exc).__name__,
                exc,
            )
        return True

    @staticmethod
    async def _close(client: redis.asyncio.Redis, pubsub: redis.asyncio.client.PubSub) -> None:
        for closing in (pubsub.aclose, client.aclose):
            try:
                await asyncio.wait_for(closing(), 1.0)
            except Exception:
                log.debug("redis bus: closing a connection failed", exc_info=True)

    async def _serve(
        self, client: redis.asyncio.Redis, pubsub: redis.asyncio.client.PubSub
    ) -> None:
        """Receive and send until either fails (its exception is raised)."""
        tasks = {
            asyncio.ensure_future(self._receive(pubsub)),
            asyncio.ensure_future(self._send(client)),
        }
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _receive(self, pubsub: redis.asyncio.client.PubSub) -> None:
        while True:
            msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=READ_POLL)
            if msg is not None and msg.get("type") == "message":
                self._on_message(msg["data"])

    async def _send(self, client: redis.asyncio.Redis) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while (change := self._take()) is not None:
                try:
                    await client.publish(self._channel, self._pack(change))
                except BaseException:
                    self._put_back(change)
                    raise
            with self._lock:
                dropped, self._dropped = self._dropped, 0
            if dropped:
                log.warning("redis bus: %d changes were dropped (the queue was full)", dropped)

    def _take(self) -> Change | None:
        with self._lock:
            for change in self._pending:
                del self._pending[change]
                return change
        return None

    def _put_back(self, change: Change) -> None:
        with self._lock:
            if len(self._pending) < self.max_pending:
                self._pending = {change: None, **self._pending}
        if self._wake is not None:
            self._wake.set()

    def _pack(self, change: Change) -> bytes:
        return msgspec.json.encode({"origin": self.origin, **change.as_dict()})

    def _on_message(self, data: Any) -> None:
        try:
            obj = msgspec.json.decode(data)
            origin = obj.pop("origin") if type(obj) is dict else None
            if type(origin) is not str:
                raise ValueError("no origin")
            change = Change.from_dict(obj)
        except (ValueError, TypeError, msgspec.DecodeError) as exc:
            self._bad_messages += 1
            if self._bad_messages == 1:
                log.warning(
                    "redis bus: ignoring a message on %s that is not a change (%s)",
                    self._channel,
                    exc,
                )
            return
        if origin != self.origin:
            self._hand_over(change)

    def _hand_over(self, change: Change) -> None:
        assert self._deliver is not None
        try:
            self._deliver(change)
        except Exception:
            log.exception("redis bus: delivering %s failed", change)


class RedisNonceLedger:
    """A `NonceLedger` shared by replicas: ``Server(state_single_use=RedisNonceLedger(url))``.

    Each claim is one ``SET <prefix><nonce> 1 NX PX <ms until expiry>``, made on the calling
    thread (the server's loop) and bounded by ``timeout`` seconds. When Redis cannot answer
    the claim fails closed: the state is refused and the client starts over.
    """

    def __init__(
        self, url: str = DEFAULT_URL, *, prefix: str = "mcpline:nonce:", timeout: float = 0.5
    ) -> None:
        _require_redis("RedisNonceLedger")
        self.url = url
        self.prefix = prefix
        self.timeout = timeout
        self._redis: redis.Redis | None = None
        self._failing = False

    def _client(self) -> redis.Redis:
        if self._redis is None:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            self._redis = redis.Redis.from_url(
                self.url,
                retry=Retry(NoBackoff(), 0),
                socket_connect_timeout=self.timeout,
                socket_timeout=self.timeout,
            )
        return self._redis

    def claim(self, nonce: str, expiry: int) -> bool:
        ttl_ms = max(1000, int((expiry - time.time()) * 1000))
        try:
            claimed = bool(self._client().set(self.prefix + nonce, b"1", nx=True, px=ttl_ms))
        except Exception as exc:
            if not self._failing:
                log.warning(
                    "nonce ledger: cannot reach %s (%s: %s); sealed states are refused until "
                    "it is back",
                    redact(self.url),
                    type(exc).__name__,
                    exc,
                )
            self._failing = True
            return False
        if self._failing:
            log.warning("nonce ledger: %s answers again", redact(self.url))
            self._failing = False
        return claimed


__all__ = [
    "DEFAULT_URL",
    "READ_POLL",
    "redact",
    "RedisBus",
    "RedisNonceLedger",
]
