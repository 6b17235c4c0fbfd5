"""Server-sent events, sans-I/O and without buffering events (the WHATWG event-stream format).

`SseParser` reads a ``text/event-stream`` body in chunks of any size and passes each ``data``
line on as it arrives, in pieces, to ``on_data``; ``on_event`` marks the end of an event that
had data. Nothing but the short fields (``id``, ``retry``, ``event``, bounded by
``field_limit``) is kept, so a peer bounds an event's size where it collects the data (the
HTTP client feeds it to an `mcpline.inbound.Inbound`, whose line limit applies). Comments
(lines that start with ``:``) are skipped; the lines of a multi-line ``data`` field are joined
with a space, which is the same JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_EOL = re.compile(rb"\r\n|\r|\n")
_START, _NAME, _DATA, _VALUE, _SKIP = range(5)
MAX_NAME = 16


class SseParser:
    """Incremental event-stream parser: ``feed(chunk)`` as bytes arrive, ``eof()`` at the end.

    ``last_event_id`` and ``retry_ms`` are the stream's latest ``id`` and ``retry`` fields;
    ``events`` counts dispatched events with data.
    """

    __slots__ = (
        "_on_data",
        "_on_event",
        "_limit",
        "_mode",
        "_buf",
        "_skip_lf",
        "_strip_space",
        "_name",
        "_has_data",
        "_type",
        "last_event_id",
        "retry_ms",
        "events",
    )

    def __init__(
        self,
        on_data: Callable[[bytes], None],
        on_event: Callable[[], None],
        *,
        field_limit: int = 4096,
    ) -> None:
        self._on_data = on_data
        self._on_event = on_event
        self._limit = field_limit
        self._mode = _START
        self._buf = bytearray()
        self._skip_lf = False
        self._strip_space = False
        self._name = b""
        self._has_data = False
        self._type: bytes | None = None
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.events = 0

    def feed(self, chunk: bytes) -> None:
        pos = 0
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                pos = 1
        n = len(chunk)
        while pos < n:
            m = _EOL.search(chunk, pos)
            end = m.start() if m is not None else n
            if end > pos:
                self._segment(chunk[pos:end])
            if m is None:
                return
            if m.end() == n and m.group() == b"\r":
                self._skip_lf = True
            self._end_line()
            pos = m.end()

    def eof(self) -> None:
        """The body ended: an event not yet ended by a blank line is dropped, as the format
        says."""
        self._mode = _START
        self._buf.clear()
        self._has_data = False
        self._type = None

    def _segment(self, data: bytes) -> None:
        mode = self._mode
        if mode == _DATA:
            if self._strip_space:
                self._strip_space = False
                data = data[1:] if data[:1] == b" " else data
            if data:
                self._on_data(data)
            return
        if mode == _VALUE:
            if self._strip_space:
                self._strip_space = False
                data = data[1:] if data[:1] == b" " else data
            if len(self._buf) + len(data) > self._limit:
                self._mode = _SKIP
                self._buf.clear()
            else:
                self._buf += data
            return
        if mode == _SKIP:
            return
        if mode == _START and data[:1] == b":":
            self._mode = _SKIP  # a comment
            return
        colon = data.find(b":")
        if colon < 0:
            self._mode = _NAME
            self._buf += data
            if len(self._buf) > MAX_NAME:
                self._mode = _SKIP
                self._buf.clear()
            return
        name = bytes(self._buf) + data[:colon]
        self._buf.clear()
        self._field(name, data[colon + 1 :])

    def _field(self, name: bytes, rest: bytes) -> None:
        self._name = name
        if name == b"data":
            if self._type not in (None, b"message"):
                self._mode = _SKIP
                return
            self._mode = _DATA
            if self._has_data:
                self._on_data(b" ")
            self._has_data = True
            self._strip_space = True
            if rest:
                self._segment(rest)
        else:
            self._mode = _VALUE
            self._strip_space = True
            if rest:
                self._segment(rest)

    def _end_line(self) -> None:
        mode = self._mode
        self._mode = _START
        self._strip_space = False
        if mode == _START:
            if self._has_data:
                self.events += 1
                self._on_event()
            self._has_data = False
            self._type = None
            return
        if mode == _NAME:
            name, value = bytes(self._buf), b""
        elif mode == _VALUE:
            name, value = self._name, bytes(self._buf)
        else:  # the end of a data line (already passed on) or of a skipped one
            self._buf.clear()
            return
        self._buf.clear()
        if name == b"data":
            if self._type in (None, b"message"):
                if self._has_data:
                    self._on_data(b" ")
                self._has_data = True
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value.isdigit():
                self.retry_ms = int(value)
        elif name == b"event":
            self._type = value or None


__all__ = ["SseParser"]
