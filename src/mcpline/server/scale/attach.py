"""A server run as several processes: its bus and shared nonce ledger, given after
construction, from one URL for deployments (``mcpline run FILE --bus redis://HOST:PORT/DB`` or
``$MCPLINE_BUS_URL``).

A server that exists already (one imported from a file) and does not serve yet takes them as
``server.bus = ...`` and ``server.nonce_ledger = ...``, as ``Server(bus=...)`` and
``Server(state_single_use=ledger)`` would.

`attach` gives a server that lacks them a `RedisBus` (list changes and resource updates cross
processes) and a `RedisNonceLedger` (a ``requestState`` opens once across processes) on that
Redis, without editing the server's file. What the file configured itself wins: a server built
with ``bus=...`` keeps its bus, one with its own ledger, or with ``state_single_use=False``,
keeps that. Only a process-local `MemoryNonceLedger` (the default) is replaced. `missing` says
what a server run as several processes still lacks. See docs/scale-out.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from ...protocol.state import MemoryNonceLedger

if TYPE_CHECKING:
    from ...protocol.state import NonceLedger
    from .bus import NotificationBus

BUS_ENV = "MCPLINE_BUS_URL"
"""The environment variable ``mcpline run`` reads the bus URL from (``--bus`` sets it too)."""
SCHEMES = ("redis", "rediss", "unix")


class Scalable(Protocol):
    """What `attach` and `missing` read and set of a server (a `mcpline.Server` is one)."""

    bus: NotificationBus | None
    nonce_ledger: NonceLedger | None


@dataclass(frozen=True)
class Attached:
    """What `attach` gave the server."""

    bus: bool
    """The server had no bus and now has a `RedisBus`."""
    ledger: bool
    """Its process-local ledger was replaced by a `RedisNonceLedger`."""


def check_url(url: str) -> str:
    """``url`` if it names a Redis (``redis://``, ``rediss://``, ``unix://``) that redis-py
    can parse; `ValueError` (one line, password masked) or `ImportError` (no redis-py)."""
    from .redis_bus import _require_redis

    if urlsplit(url).scheme not in SCHEMES:
        raise ValueError(
            f"bad bus URL {_shown(url)!r}: expected redis://HOST:PORT/DB, rediss://... "
            "or unix:///PATH.sock"
        )
    _require_redis("a bus URL")
    from redis.connection import parse_url

    try:
        parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:
        raise ValueError(f"bad bus URL {_shown(url)!r}: {exc}") from None
    return url


def _shown(url: str) -> str:
    """``url`` with any password masked, even when it does not parse."""
    from .redis_bus import redact

    try:
        return redact(url)
    except ValueError:  # a bad port: mask all that stands before the host
        scheme, sep, rest = url.partition("://")
        host, slash, path = rest.partition("/")
        return (
            scheme
            + sep
            + ("***@" + host.rpartition("@")[2] if "@" in host else host)
            + slash
            + path
        )


def attach(server: Scalable, url: str) -> Attached:
    """Give ``server`` a `RedisBus` and a `RedisNonceLedger` on ``url`` where it lacks them
    (see the module docstring); before it serves. `ValueError`/`ImportError` as `check_url`."""
    from .redis_bus import RedisBus, RedisNonceLedger

    check_url(url)
    bus = server.bus is None
    if bus:
        server.bus = RedisBus(url)
    ledger = isinstance(server.nonce_ledger, MemoryNonceLedger)
    if ledger:
        server.nonce_ledger = RedisNonceLedger(url)
    return Attached(bus, ledger)


def attach_from_env(server: Scalable, environ: Mapping[str, str] = os.environ) -> Attached | None:
    """`attach` with ``$MCPLINE_BUS_URL``; None (and nothing done) when it is unset or empty."""
    url = environ.get(BUS_ENV)
    return attach(server, url) if url else None


def missing(server: Scalable) -> list[str]:
    """What ``server`` lacks to run as several processes: ``"bus"`` (listens hear only the
    changes of their own process), ``"ledger"`` (a ``requestState`` can be used once in
    each process)."""
    gaps = []
    if server.bus is None:
        gaps.append("bus")
    if isinstance(server.nonce_ledger, MemoryNonceLedger):
        gaps.append("ledger")
    return gaps


__all__ = [
    "attach",
    "attach_from_env",
    "Attached",
    "BUS_ENV",
    "check_url",
    "missing",
    "Scalable",
    "SCHEMES",
]
