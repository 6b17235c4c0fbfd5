"""Newline-delimited JSON framing, sans-I/O.

`LineBuffer` turns arbitrary byte chunks into complete lines; `encode` turns one message
into one line. Nothing here touches a file descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""Largest accepted line (64 MiB); a longer one is discarded and reported as `Oversized`."""

PREFIX_KEEP = 64 * 1024
"""How much of an over-long line is kept, so that its request id can still be recovered."""

_WHITESPACE = b" \t\r\n"


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the limit: its first bytes and its full length."""

    prefix: bytes
    size: int


class LineBuffer:
    """Splits a byte stream on ``\\n``; tolerates ``\\r\\n``; skips blank lines.

    Memory stays bounded by ``max_line_bytes`` whatever the peer sends: once a line grows
    past the limit its bytes are dropped as they arrive until the next newline.
    """

    __slots__ = ("max_line_bytes", "_parts", "_size", "_discarding", "_prefix")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False
        self._prefix = b""

    @property
    def buffered(self) -> int:
        """Bytes held for the line in progress."""
        return self._size

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        """Add bytes; return every line (or `Oversized` marker) they complete."""
        out: list[bytes | Oversized] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._append(data[start:] if start else data)
                break
            piece = data[start:nl]
            start = nl + 1
            if self._discarding:
                out.append(Oversized(self._prefix, self._size + len(piece)))
                self._reset()
                continue
            if self._parts:
                if self._size + len(piece) > self.max_line_bytes:
                    keep = b"".join(self._parts)[:PREFIX_KEEP]
                    out.append(Oversized(keep, self._size + len(piece)))
                    self._reset()
                    continue
                self._parts.append(piece)
                line = b"".join(self._parts)
                self._reset()
            else:
                if len(piece) > self.max_line_bytes:
                    out.append(Oversized(piece[:PREFIX_KEEP], len(piece)))
                    continue
                line = piece
            if line.endswith(b"\r"):
                line = line[:-1]
            if line and not line.isspace():
                out.append(line)
        return out

    def eof(self) -> list[bytes | Oversized]:
        """The stream ended: a final unterminated line counts as a line."""
        if self._discarding:
            out: list[bytes | Oversized] = [Oversized(self._prefix, self._size)]
        elif self._parts:
            line = b"".join(self._parts).rstrip(b"\r")
            out = [line] if line.strip(_WHITESPACE) else []
        else:
            out = []
        self._reset()
        return out

    def _append(self, chunk: bytes) -> None:
        if self._discarding:
            self._size += len(chunk)
            return
        self._parts.append(chunk)
        self._size += len(chunk)
        if self._size > self.max_line_bytes:
            self._prefix = b"".join(self._parts)[:PREFIX_KEEP]
            self._parts = []
            self._discarding = True

    def _reset(self) -> None:
        self._parts = []
        self._size = 0
        self._discarding = False
        self._prefix = b""


_encoder = msgspec.json.Encoder()


def _escape_separators(raw: bytes) -> bytes:
    # U+2028/U+2029 are legal in JSON strings but some peers split lines on them.
    return raw.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")


def encode(message: Any) -> bytes:
    """One message as one compact line ending in ``\\n``.

    JSON escapes every control character inside strings, so the result can never contain
    a raw newline before the terminator. Non-finite floats become ``null``; strings with
    lone surrogates are written with ``\\u`` escapes.
    """
    try:
        raw = _encoder.encode(message)
    except UnicodeEncodeError:
        import json

        raw = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if b"\xe2\x80" in raw:
        raw = _escape_separators(raw)
    return raw + b"\n"
