"""What a peer receives, sans-I/O: bytes in, events out, the same for server and client.

`Inbound` is the one pipeline from a byte stream to messages, in the way h11's
``receive_data``/``next_event`` works::

    inbound = Inbound(max_line_bytes=4 * 1024 * 1024)
    for event in inbound.feed(data):
        ...  # Request, Notification, Response, Invalid or Oversized

It splits lines (`mcpline.wire.LineBuffer`), applies the envelope rules
(`mcpline.jsonrpc.parse`) and reports over-long lines with what their first and last bytes
say. It decides nothing: each peer's policy acts on the events (a server answers, a client
fails the request an event belongs to). Constructing and feeding one needs no event loop.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from . import jsonrpc
from .jsonrpc import Invalid, Notification, Request, RequestId, Response
from .wire import DEFAULT_MAX_LINE_BYTES, LineBuffer
from .wire import Oversized as _LongLine


class Oversized(msgspec.Struct, frozen=True):
    """A line over the limit, dropped as it arrived; what its ends say about it.

    Reported as soon as the line crosses the limit (``complete=False``: ``size`` is what had
    arrived). When that first report could not name an ``id`` and the line later ends, it
    is reported once more (``complete=True, followup=True``) with what its last bytes add,
    for peers that write the id last. A line that arrives whole is reported once, complete.
    """

    id: RequestId | None
    """A well-typed top-level id read from the line's ends, if any."""
    has_id: bool
    has_method: bool
    size: int
    limit: int
    complete: bool
    followup: bool = False


Event = Request | Notification | Response | Invalid | Oversized


class Inbound:
    """Turns a byte stream into `Event` values. ``on_line`` sees every complete line that
    fits the limit (for tracing), before it is parsed."""

    __slots__ = ("_lines", "_reported", "_on_line")

    def __init__(
        self,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        *,
        on_line: Callable[[bytes], None] | None = None,
    ) -> None:
        self._lines = LineBuffer(max_line_bytes)
        self._reported: Oversized | None = None
        """The early report of the over-long line in progress."""
        self._on_line = on_line

    @property
    def max_line_bytes(self) -> int:
        return self._lines.max_line_bytes

    @property
    def buffered(self) -> int:
        """Bytes held for the line in progress (bounded by about ``max_line_bytes``)."""
        return self._lines.buffered

    def feed(self, data: bytes) -> list[Event]:
        """Add bytes; return the events they complete, in order."""
        events: list[Event] = []
        for item in self._lines.feed(data):
            if type(item) is bytes and self._on_line is None:
                events.append(jsonrpc.parse(item))  # the common case, without a call
                continue
            event = self._event(item)
            if event is not None:
                events.append(event)
        if self._reported is None:
            dropping = self._lines.discarding
            if dropping is not None:
                head, size = dropping
                env = jsonrpc.scan_envelope(head)
                self._reported = Oversized(
                    env.id, env.has_id, env.has_method, size, self._lines.max_line_bytes, False
                )
                events.append(self._reported)
        return events

    def eof(self) -> list[Event]:
        """The stream ended: a final unterminated line counts as a line."""
        events = [self._event(item) for item in self._lines.eof()]
        return [e for e in events if e is not None]

    def _event(self, item: bytes | _LongLine) -> Event | None:
        if type(item) is bytes:
            if self._on_line is not None:
                self._on_line(item)
            return jsonrpc.parse(item)
        assert isinstance(item, _LongLine)
        early, self._reported = self._reported, None
        if early is not None and early.id is not None:
            return None  # already reported with its id: nothing to add
        env = jsonrpc.scan_envelope(item.prefix)
        rid = env.id if env.id is not None else jsonrpc.trailing_id(item.suffix)
        return Oversized(
            rid,
            env.has_id or rid is not None,
            env.has_method,
            item.size,
            self._lines.max_line_bytes,
            True,
            followup=early is not None,
        )


__all__ = ["Event", "Inbound", "Invalid", "Notification", "Oversized", "Request", "Response"]
