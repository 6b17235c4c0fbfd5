"""The OAuth proxy's stores (registered clients, pending authorizations, codes, refresh
tokens): one bounded, expiring map each, with a limit in total and one per owner.

What happens at a limit is the store's ``when_full``: ``"refuse"`` (`StoreFull` is raised and
nothing is stored) or ``"evict"`` (the owner's oldest entry leaves, else the store's oldest).
Expired entries are dropped before either. Pure: the clock is given.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

V = TypeVar("V")


class StoreFull(Exception):
    """A store at its limit refused an entry; ``per_owner`` says which limit."""

    def __init__(self, store: str, limit: int, per_owner: bool, owner: str) -> None:
        whose = f"for one {owner}" if per_owner else "in all"
        super().__init__(f"{store}: {limit} {whose}, the limit")
        self.store = store
        self.limit = limit
        self.per_owner = per_owner


@dataclass
class _Entry(Generic[V]):
    value: V
    owner: str
    expires: float | None


class Store(Generic[V]):
    """At most ``limit`` entries, ``per_owner`` of them for one owner (an ``owner`` such as
    "client" or "address", as messages name it), each kept ``ttl`` seconds (None: until
    evicted); ``when_full`` as the module says."""

    def __init__(
        self,
        name: str,
        *,
        limit: int,
        per_owner: int,
        ttl: float | None,
        when_full: Literal["refuse", "evict"],
        owner: str = "client",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or per_owner < 1 or (ttl is not None and ttl <= 0):
            raise ValueError(f"{name}: the limits and the lifetime must be positive")
        self.name = name
        self.limit = limit
        self.per_owner = per_owner
        self.ttl = ttl
        self.when_full = when_full
        self.owner = owner
        self._clock = clock
        self._entries: OrderedDict[str, _Entry[V]] = OrderedDict()
        self._owned: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def owned(self, owner: str) -> int:
        """How many entries ``owner`` holds."""
        return self._owned.get(owner, 0)

    def put(self, key: str, value: V, owner: str) -> None:
        """Keep ``value`` under ``key`` (replacing one there); `StoreFull` at a limit when
        the store refuses."""
        self.purge()
        self.pop(key)
        if self.owned(owner) >= self.per_owner:
            self._make_room(owner, per_owner=True)
        if len(self._entries) >= self.limit:
            self._make_room(None, per_owner=False)
        expires = None if self.ttl is None else self._clock() + self.ttl
        self._entries[key] = _Entry(value, owner, expires)
        self._owned[owner] = self.owned(owner) + 1

    def get(self, key: str, *, touch: bool = False) -> V | None:
        """The live value under ``key``; ``touch`` makes it the most recently used (in a
        store without ``ttl``, whose order is then that of use, not of expiry)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires is not None and entry.expires <= self._clock():
            self.pop(key)
            return None
        if touch and self.ttl is None:
            self._entries.move_to_end(key)
        return entry.value

    def pop(self, key: str) -> V | None:
        """Remove and return the value under ``key`` (expired or not), None if absent."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        left = self._owned[entry.owner] - 1
        if left:
            self._owned[entry.owner] = left
        else:
            del self._owned[entry.owner]
        return entry.value

    def items(self) -> Iterator[tuple[str, V]]:
        """The live entries, oldest first (a copy: the store may change meanwhile)."""
        self.purge()
        return iter([(k, e.value) for k, e in self._entries.items()])

    def purge(self) -> None:
        """Drop the expired entries."""
        if self.ttl is None:
            return
        now = self._clock()
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if entry.expires is None or entry.expires > now:
                break
            self.pop(key)

    def _make_room(self, owner: str | None, *, per_owner: bool) -> None:
        if self.when_full == "refuse":
            limit = self.per_owner if per_owner else self.limit
            raise StoreFull(self.name, limit, per_owner, self.owner)
        for key, entry in self._entries.items():
            if owner is None or entry.owner == owner:
                self.pop(key)
                return


__all__ = ["Store", "StoreFull"]
