"""Newline-delimited JSON framing, sans-I/O.

`LineBuffer` turns arbitrary byte chunks into complete lines; `encode` turns one message
into one line. Nothing here touches a file descriptor.
"""

from __future__ import annotations

from typing import Any

import msgspec

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""Largest accepted line (64 MiB); a longer one is discarded and reported as `Oversized`."""

PREFIX_KEEP = 64 * 1024
"""How much of the start of an over-long line is kept, to recover its request id."""

SUFFIX_KEEP = 4 * 1024
"""How much of the end of an over-long line is kept (peers that write the id last)."""

_WHITESPACE = b" \t\r\n"


class Oversized(msgspec.Struct, frozen=True):
    """A line longer than the limit: its first and last bytes and its full length."""

    prefix: bytes
    size: int
    suffix: bytes = b""


_WS = frozenset(_WHITESPACE)


def _is_blank(line: bytes) -> bool:
    return not line or (line[0] in _WS and not line.strip(_WHITESPACE))


def _head(parts: list[bytes], n: int) -> bytes:
    out = bytearray()
    for p in parts:
        out += p[: n - len(out)]
        if len(out) >= n:
            break
    return bytes(out)


def _tail(parts: list[bytes], n: int) -> bytes:
    out: list[bytes] = []
    size = 0
    for p in reversed(parts):
        take = p[-(n - size) :]
        out.append(take)
        size += len(take)
        if size >= n:
            break
    return b"".join(reversed(out))


class LineBuffer:
    """Splits a byte stream on ``\\n``; tolerates ``\\r\\n``; skips blank lines.

    Memory stays bounded by ``max_line_bytes`` whatever the peer sends: once a line grows
    past the limit its bytes are dropped as they arrive until the next newline, keeping
    only its first `PREFIX_KEEP` and last `SUFFIX_KEEP` bytes (to address an error reply).
    """

    __slots__ = ("max_line_bytes", "_parts", "_size", "_discarding", "_prefix", "_suffix")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False
        self._prefix = b""
        self._suffix = b""

    @property
    def discarding(self) -> tuple[bytes, int] | None:
        """While an over-long line is being dropped: its first bytes and its size so far."""
        return (self._prefix, self._size) if self._discarding else None

    @property
    def buffered(self) -> int:
        """Bytes held for the line in progress (at most about ``max_line_bytes``)."""
        if self._discarding:
            return len(self._prefix) + len(self._suffix)
        return self._size

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        """Add bytes; return every line (or `Oversized` marker) they complete."""
        out: list[bytes | Oversized] = []
        start = 0
        n = len(data)
        limit = self.max_line_bytes
        while start < n:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._append(data[start:] if start else data)
                break
            piece = data[start:nl]
            start = nl + 1
            if self._discarding:
                self._keep_suffix(piece)
                out.append(Oversized(self._prefix, self._size + len(piece), self._suffix))
                self._reset()
                continue
            if self._parts:
                if self._size + len(piece) > limit:
                    parts = self._parts
                    parts.append(piece)
                    out.append(
                        Oversized(
                            _head(parts, PREFIX_KEEP),
                            self._size + len(piece),
                            _tail(parts, SUFFIX_KEEP),
                        )
                    )
                    self._reset()
                    continue
                self._parts.append(piece)
                line = b"".join(self._parts)
                self._reset()
            else:
                if len(piece) > limit:
                    out.append(Oversized(piece[:PREFIX_KEEP], len(piece), piece[-SUFFIX_KEEP:]))
                    continue
                line = piece
            if line.endswith(b"\r"):
                line = line[:-1]
            if not _is_blank(line):
                out.append(line)
        return out

    def eof(self) -> list[bytes | Oversized]:
        """The stream ended: a final unterminated line counts as a line."""
        out: list[bytes | Oversized] = []
        if self._discarding:
            out.append(Oversized(self._prefix, self._size, self._suffix))
        elif self._parts:
            line = b"".join(self._parts)
            if line.endswith(b"\r"):
                line = line[:-1]
            if not _is_blank(line):
                out.append(line)
        self._reset()
        return out

    def _append(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._discarding:
            self._keep_suffix(chunk)
            return
        self._parts.append(chunk)
        if self._size > self.max_line_bytes:
            self._prefix = _head(self._parts, PREFIX_KEEP)
            self._suffix = _tail(self._parts, SUFFIX_KEEP)
            self._parts = []
            self._discarding = True

    def _keep_suffix(self, chunk: bytes) -> None:
        if len(chunk) >= SUFFIX_KEEP:
            self._suffix = chunk[-SUFFIX_KEEP:]
        else:
            self._suffix = (self._suffix + chunk)[-SUFFIX_KEEP:]

    def _reset(self) -> None:
        self._parts = []
        self._size = 0
        self._discarding = False
        self._prefix = b""
        self._suffix = b""


_encoder = msgspec.json.Encoder()


def _escape_separators(raw: bytes) -> bytes:
    # U+2028/U+2029 are legal in JSON strings but some peers split lines on them.
    return raw.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")


def _scrub_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_surrogates(v) for v in value]
    return value


def encode(message: Any) -> bytes:
    """One message as one compact line ending in ``\\n``.

    JSON escapes every control character inside strings, so the result can never contain
    a raw newline before the terminator. Non-finite floats become ``null``; a lone surrogate
    (not a Unicode character, so not valid in an I-JSON message) becomes U+FFFD.
    """
    try:
        raw = _encoder.encode(message)
    except UnicodeEncodeError:
        raw = _encoder.encode(_scrub_surrogates(message))
    if b"\xe2\x80" in raw:
        raw = _escape_separators(raw)
    return raw + b"\n"


def json_type(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (``True`` is a boolean, not an
    integer; any other value counts as a string)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "string"


__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "encode",
    "json_type",
    "LineBuffer",
    "Oversized",
    "PREFIX_KEEP",
    "SUFFIX_KEEP",
]
