"""`TaskQuota`: how many tasks, and how many bytes of them, a server keeps for each principal
and in all.

A task counts from its creation until its TTL ends (finished tasks included: they are kept,
results and all, for ``tasks/get``); its bytes are the size of its stored record (arguments,
answers, state, result). Every caller with the same principal shares one bucket; callers
without a principal (stdio, sockets, HTTP without a token hook) share the smaller anonymous
bucket; every task of the server also counts against the server's bucket. A store applies
the rule atomically with the write it guards (`mcpline.server.tasks.store.TaskStore`): a new
task must fit a task and its bytes, a change that grows a record must fit the growth.

The rule is pure: `TaskQuota.refusal` says which bound a write would break, given what the
store counted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields

MIB = 1 << 20

QUOTA_ENV = "MCPLINE_TASK_QUOTA"
"""A `TaskQuota.parse` spec (``tasks=100,bytes=32MiB``): the quota when `Server` was given
none (``mcpline run --task-quota`` sets it)."""

TASK_QUOTA_EXCEEDED = -32010
"""The JSON-RPC error of a request that would break a task quota (an implementation-defined
code: MCP leaves -32000 to -32019 to implementations)."""


@dataclass(frozen=True)
class Usage:
    """What one bucket holds now: tasks and bytes."""

    tasks: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Bound:
    """The limits of one bucket, as a store checks them: ``key`` names the bucket in the
    store ("" is the server's; otherwise the owner's key)."""

    bucket: str
    key: str
    tasks: int
    bytes: int


@dataclass(frozen=True)
class Refusal:
    """The bound a write would break: ``what`` is ``"tasks"`` or ``"bytes"``."""

    bucket: str
    what: str
    limit: int

    @property
    def message(self) -> str:
        who = {
            "principal": "this principal",
            "anonymous": "callers without credentials (together)",
            "server": "the server (all callers together)",
        }[self.bucket]
        if self.what == "tasks":
            held = f"{self.limit} tasks"
        else:
            held = f"{_size(self.limit)} of task data"
        return (
            f"Task quota exceeded: {who} may keep at most {held} at once; "
            "tasks count until their ttlMs ends"
        )

    def to_error(self) -> dict[str, object]:
        """The JSON-RPC error (`TASK_QUOTA_EXCEEDED`) this refusal is answered with."""
        return {
            "code": TASK_QUOTA_EXCEEDED,
            "message": self.message,
            "data": {"quota": self.what, "bucket": self.bucket, "limit": self.limit},
        }


class QuotaExceeded(Exception):
    """A store refused a write: it would break ``refusal``'s bound (nothing was written)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


@dataclass(frozen=True)
class TaskQuota:
    """The bounds: ``tasks``/``bytes`` for each principal, ``anonymous_*`` for all callers
    without one together, ``total_*`` for the whole server (its name, in a shared store)."""

    tasks: int = 256
    bytes: int = 64 * MIB
    anonymous_tasks: int = 128
    anonymous_bytes: int = 32 * MIB
    total_tasks: int = 4096
    total_bytes: int = 128 * MIB

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"task quota: {f.name} must be a positive integer")

    def bounds(self, owner: str) -> tuple[Bound, Bound]:
        """The buckets a task of ``owner`` (`mcpline.server.owners.owner_key`; "" for none)
        counts against, in the order they are checked."""
        if owner:
            own = Bound("principal", owner, self.tasks, self.bytes)
        else:
            own = Bound("anonymous", owner, self.anonymous_tasks, self.anonymous_bytes)
        return own, Bound("server", "", self.total_tasks, self.total_bytes)

    def refusal(
        self, owner: str, mine: Usage, total: Usage, tasks: int, size: int
    ) -> Refusal | None:
        """Whether ``owner`` may add ``tasks`` tasks and ``size`` bytes to what its bucket
        (``mine``) and the server (``total``) hold: None, or the first bound it breaks."""
        own, server = self.bounds(owner)
        return check(own, mine, tasks, size) or check(server, total, tasks, size)

    @classmethod
    def parse(cls, spec: str) -> TaskQuota:
        """``tasks=100,bytes=32MiB,anonymous_tasks=10,...`` (any of the fields; sizes in
        bytes or with ``KiB``/``MiB``/``GiB``); the others keep their defaults."""
        known = {f.name for f in fields(cls)}
        values: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in spec.split(","))):
            name, sep, text = item.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in known:
                raise ValueError(
                    f"task quota: {item!r} is not NAME=VALUE with NAME one of "
                    + ", ".join(sorted(known))
                )
            values[name] = _parse_size(text.strip(), name)
        return cls(**values)

    def spec(self) -> str:
        """The `parse` spec of this quota."""
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


def check(bound: Bound, used: Usage, tasks: int, size: int) -> Refusal | None:
    """The rule for one bucket: adding ``tasks`` and ``size`` to ``used`` must stay within
    ``bound`` (only what is added is checked: a write that adds nothing always fits)."""
    if tasks > 0 and used.tasks + tasks > bound.tasks:
        return Refusal(bound.bucket, "tasks", bound.tasks)
    if size > 0 and used.bytes + size > bound.bytes:
        return Refusal(bound.bucket, "bytes", bound.bytes)
    return None


def resolve_quota(given: TaskQuota | str | None) -> TaskQuota:
    """The quota for ``Server(task_quota=...)``: a quota, a spec, or None for
    ``$MCPLINE_TASK_QUOTA`` (default: `TaskQuota()`)."""
    if isinstance(given, TaskQuota):
        return given
    spec = given if given is not None else os.environ.get(QUOTA_ENV, "")
    try:
        return TaskQuota.parse(spec)
    except ValueError as exc:
        where = "task_quota" if given is not None else f"${QUOTA_ENV}"
        raise ValueError(f"{where}: {exc}") from None


_SIZE = re.compile(r"(\d+)\s*(KiB|MiB|GiB)?", re.IGNORECASE)
_UNITS = {"": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def _parse_size(text: str, name: str) -> int:
    m = _SIZE.fullmatch(text)
    if m is None:
        raise ValueError(f"task quota: {name}={text!r} is not a number (or a size in KiB/MiB/GiB)")
    return int(m[1]) * _UNITS[(m[2] or "").lower()]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


__all__ = [
    "Bound",
    "check",
    "MIB",
    "QUOTA_ENV",
    "QuotaExceeded",
    "Refusal",
    "resolve_quota",
    "TASK_QUOTA_EXCEEDED",
    "TaskQuota",
    "Usage",
]
