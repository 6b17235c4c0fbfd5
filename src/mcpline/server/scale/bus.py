"""The notification bus: list changes and resource updates between the processes of a server.

A server run as several processes (``--workers N``, replicas behind a load balancer) has one
registry and one set of open listens per process. What crosses processes is a `Change`: "the
tools (prompts, resources) list changed" or "resource ``uri`` was updated". The server that
makes a change tells its own peers directly, as a single process does, then hands the change
to its bus; each other process's bus delivers it to that process's peers, so every listen and
legacy session that asked hears of it exactly once, whichever process it is connected to.

A list change that crosses processes means "the list changed somewhere; fetch it again": the
registry stays per process (a tool added by a ``tools/call`` on one replica exists on that
replica only), and each client re-lists from whichever replica it reaches. Keep registries
alike across replicas (register at import), or route a client to one replica.

The default (``Server(bus=None)``) is in-process: changes reach this process's peers and
nothing else, at no cost. `mcpline.server.scale.redis_bus.RedisBus` carries them over Redis
pub/sub. Another transport implements `NotificationBus`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import msgspec

ChangeKind = Literal["list_changed", "resource_updated"]
LIST_KINDS = ("tools", "prompts", "resources")
"""The lists whose changes are notified (the ``value`` of a ``list_changed`` change)."""

_KEYS = frozenset({"kind", "value"})


@dataclass(frozen=True)
class Change:
    """One change: ``Change("list_changed", "tools")`` or ``Change("resource_updated", uri)``.

    Raises `ValueError` for any other kind, list name or a non-string/empty value.
    """

    kind: ChangeKind
    value: str

    def __post_init__(self) -> None:
        if self.kind == "list_changed":
            if self.value not in LIST_KINDS:
                raise ValueError(f"no such list: {self.value!r} (one of {', '.join(LIST_KINDS)})")
        elif self.kind == "resource_updated":
            if type(self.value) is not str or not self.value:
                raise ValueError("a resource update needs a non-empty URI")
        else:
            raise ValueError(f"unknown change kind {self.kind!r}")

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value}

    @classmethod
    def from_dict(cls, obj: Any) -> Change:
        """The change in a decoded ``{"kind": ..., "value": ...}``; `ValueError` otherwise."""
        if type(obj) is not dict or obj.keys() != _KEYS or type(obj["value"]) is not str:
            raise ValueError(f"not a change: {obj!r}")
        return cls(obj["kind"], obj["value"])

    def encode(self) -> bytes:
        """Compact JSON: ``{"kind":"list_changed","value":"tools"}``."""
        return msgspec.json.encode(self.as_dict())

    @classmethod
    def decode(cls, data: bytes | str) -> Change:
        """The inverse of `encode`; `ValueError` for anything else."""
        try:
            obj = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        return cls.from_dict(obj)


Deliver = Callable[[Change], None]
"""Hands a change from another process to this process's peers (called on the server's loop)."""


class NotificationBus(Protocol):
    """Carries `Change` values between the processes of one server.

    The server calls `start` when it starts serving (every transport enters
    ``Services.running``) and `aclose` when it stops, both on its event loop; `publish`
    whenever a change is made here, from any thread, at any time (also before `start`, at
    import, and after `aclose`).

    A bus never delivers a change back to the process that published it: that process has
    told its own peers already (so they hear of it even while the bus is down).
    """

    async def start(self, deliver: Deliver, scope: str) -> None:
        """Begin receiving: call ``deliver`` on this loop for each change another process
        publishes. ``scope`` is the server's name (a bus may name its channel after it).
        Returns once receiving is under way; a transport that is down is retried in the
        background rather than raised."""
        ...

    def publish(self, change: Change) -> None:
        """Send ``change`` to the other processes; any thread; never blocks nor raises
        because the transport is down. Before `start` and after `aclose` it may drop it."""
        ...

    async def aclose(self) -> None:
        """Stop receiving and release the transport; `start` may be called again."""
        ...


__all__ = [
    "Change",
    "ChangeKind",
    "Deliver",
    "LIST_KINDS",
    "NotificationBus",
]
