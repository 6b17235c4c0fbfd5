"""The outbound bound: what to do with one more message for a peer that may not be reading.

Pure policy; `mcpline.server.connection.Connection` applies it. ``buffered`` is every byte
written for the peer and not yet taken by the kernel (our own queue plus the transport's
write buffer). See ``docs/backpressure.md``.
"""

from __future__ import annotations

import enum

DEFAULT_MAX_OUTBOUND_BYTES = 16 * 1024 * 1024


class Kind(enum.Enum):
    """What a message is to its peer."""

    REPLY = "reply"
    """The response to a request (including a listen's graceful completion)."""
    ADVISORY = "advisory"
    """Progress and log notifications of a request in flight."""
    STREAM = "stream"
    """A notification on a ``subscriptions/listen`` stream (list changes, resource updates)."""
    SESSION = "session"
    """A notification to a legacy session, tied to no request (list changes, updates)."""
    PEER_REQUEST = "peer-request"
    """A request to the peer (legacy elicitation, sampling, roots)."""


class Action(enum.Enum):
    SEND = "send"
    """Queue it."""
    DROP = "drop"
    """Do not queue it; nothing else happens."""
    REFUSE = "refuse"
    """Do not queue it; the request that wanted it fails instead."""
    END_STREAMS = "end-streams"
    """Do not queue it; end this peer's listen streams (their completion is a reply)."""
    DISCONNECT = "disconnect"
    """Close the connection: the peer sees it end rather than lose a message silently."""


_OVER = {
    Kind.ADVISORY: Action.DROP,
    Kind.PEER_REQUEST: Action.REFUSE,
    Kind.STREAM: Action.END_STREAMS,
    Kind.SESSION: Action.DISCONNECT,
}


def decide(kind: Kind, buffered: int, size: int, limit: int) -> Action:
    """The action for a ``size``-byte message of ``kind`` when ``buffered`` bytes wait.

    A message that fits is sent. A reply is sent while the buffer is not over the limit, so
    replies exceed it by at most one message; past that, the connection is closed. Other
    kinds are never queued past the limit.
    """
    if buffered + size <= limit:
        return Action.SEND
    if kind is Kind.REPLY:
        return Action.SEND if buffered <= limit else Action.DISCONNECT
    return _OVER[kind]


__all__ = [
    "Action",
    "decide",
    "DEFAULT_MAX_OUTBOUND_BYTES",
    "Kind",
]
