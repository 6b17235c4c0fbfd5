"""A response cache that honours the result's own caching hints, ``ttlMs`` and ``cacheScope``."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import msgspec

from ..server.owners import owner_key
from ..wire import encode
from ._chain import CallNext, Middleware, MiddlewareContext

_VOLATILE = ("_meta", "inputResponses", "requestState")


class ResponseCacheMiddleware(Middleware):
    """Keep a modern result for as long as its ``ttlMs`` says and answer the same request
    from it: list results (``list_ttl_ms``), ``resources/read`` (``read_ttl_ms``),
    ``server/discover`` (``discover_ttl_ms``), or anything else carrying ``ttlMs``. A result
    with ``cacheScope: "private"`` is kept for its principal only, and not at all for a
    caller without one. The key is the method, the params but ``_meta``, and the protocol
    version. Legacy (initialize) results carry no hints and are never cached, nor are
    MRTR rounds. Bounds: ``max_entries`` results (least recently used go first) of at most
    ``max_entry_bytes`` each. A result is as fresh as ``ttlMs`` told clients it may be:
    a change on the server shows once the entry expires."""

    def __init__(self, *, max_entries: int = 1024, max_entry_bytes: int = 256 * 1024) -> None:
        if max_entries < 1 or max_entry_bytes < 1:
            raise ValueError("max_entries and max_entry_bytes must be positive")
        self.max_entries = max_entries
        self.max_entry_bytes = max_entry_bytes
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, ...], tuple[float, bytes]] = OrderedDict()

    async def on_request(self, mctx: MiddlewareContext, call_next: CallNext) -> Any:
        ctx = mctx.context
        params = mctx.params
        if ctx is None or ctx.legacy or "inputResponses" in params or "requestState" in params:
            return await call_next(mctx)
        try:
            shape = encode({k: v for k, v in sorted(params.items()) if k not in _VOLATILE})
        except TypeError:
            return await call_next(mctx)
        version = ctx.meta.protocol_version if ctx.meta is not None else ""
        public = (mctx.method, version, shape.decode(), "")
        private = None if mctx.principal is None else (*public[:3], owner_key(mctx.principal))
        now = time.monotonic()
        for key in (private, public):
            if key is None:
                continue
            found = self._entries.get(key)
            if found is None:
                continue
            if found[0] > now:
                self._entries.move_to_end(key)
                self.hits += 1
                cached: dict[str, Any] = msgspec.json.decode(found[1])
                return cached
            del self._entries[key]
        self.misses += 1
        result = await call_next(mctx)
        self._keep(result, public, private, now)
        return result

    def _keep(
        self,
        result: Any,
        public: tuple[str, ...],
        private: tuple[str, ...] | None,
        now: float,
    ) -> None:
        if type(result) is not dict or result.get("resultType", "complete") != "complete":
            return
        ttl = result.get("ttlMs")
        if type(ttl) is not int or ttl <= 0:
            return
        key = public if result.get("cacheScope") == "public" else private
        if key is None:
            return
        data = encode(result)
        if len(data) > self.max_entry_bytes:
            return
        self._entries[key] = (now + ttl / 1000, data)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


__all__ = ["ResponseCacheMiddleware"]
