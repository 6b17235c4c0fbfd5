"""Server-controlled text made safe to show on a terminal.

A server chooses its tool names, descriptions, results and error messages. Shown raw, a C0 or
C1 control, an escape sequence (CSI, OSC 8 hyperlinks, OSC 52 clipboard writes, DCS ...), a
lone carriage return or a bidi override could rewrite the screen, the clipboard or what the
user believes they read. Each such code point is shown as a visible escape instead.
"""

from __future__ import annotations

import re

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a terminal may act on instead of showing: C0 controls other than newline and tab,
DEL, C1 controls, the bidi embeddings, overrides and isolates (they reorder the rest of the
line), and lone surrogates (they cannot even be encoded)."""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str) -> str:
    """``text`` with every unsafe code point written as ``\\xNN`` or ``\\uNNNN``.

    Newlines and tabs stay; ``\\r\\n`` becomes ``\\n``; a lone ``\\r`` is shown as ``\\x0d``,
    so it cannot return to the start of the line and overwrite it.
    """
    return UNSAFE.sub(_visible, text.replace("\r\n", "\n"))


def json_for_terminal(dumped: str) -> str:
    """Serialised JSON with every unsafe code point as a ``\\uNNNN`` escape: the same JSON
    value, nothing a terminal acts on. (``json.dumps`` already escapes C0 controls inside
    strings; the newlines outside strings are its indentation.)"""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


__all__ = [
    "for_terminal",
    "json_for_terminal",
    "UNSAFE",
]
