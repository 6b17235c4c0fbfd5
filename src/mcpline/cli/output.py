"""What a client command prints: JSON on a pipe, tables and text on a terminal, one-line
diagnostics on stderr. Every piece of server text shown on a terminal goes through
`for_terminal` (JSON through `json_for_terminal`): no escape sequence reaches the screen and
Rich markup is never interpreted."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..terminal import for_terminal, json_for_terminal


def one_line(text: str) -> str:
    """``text`` with its whitespace folded to single spaces, at most 2000 characters."""
    return " ".join(text.split())[:2000]


_STATUS: list[ProgressBar] = []
"""The progress bar drawn on stderr's last line, if any (cleared before anything else is
written there; it is drawn again at the next progress notification)."""


def clear_status() -> None:
    """Wipe the progress bar, if one is shown, so that a line can be written on stderr."""
    while _STATUS:
        _STATUS.pop().done()


def note(text: str) -> None:
    """One line of diagnostics on stderr (server text made safe for a terminal)."""
    clear_status()
    print(for_terminal(text), file=sys.stderr, flush=True)


def say(text: str) -> None:
    """A line of human output on stdout, made safe for a terminal."""
    print(for_terminal(text))


def wants_json(args: argparse.Namespace) -> bool:
    return bool(args.json) or not sys.stdout.isatty()


def emit_json(obj: Any, *, line: bool = False) -> None:
    """``obj`` as JSON on stdout: indented on a terminal (unless ``line``), and there with
    `json_for_terminal` escapes."""
    if sys.stdout.isatty():
        text = json_for_terminal(json.dumps(obj, ensure_ascii=False, indent=None if line else 2))
    else:
        text = json.dumps(obj, ensure_ascii=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def table(headers: Sequence[str], rows: list[list[str]]) -> None:
    """A table on stdout: Rich's when installed, plain columns otherwise."""
    cells = [[for_terminal(str(c)) for c in r] for r in rows]
    try:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
        if any(headers):
            print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        for r in cells:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)))
        return
    t = Table(show_header=any(headers))
    for h in headers:
        t.add_column(h)
    for r in cells:
        t.add_row(*[Text(c) for c in r])  # Text, not markup: "[/]" is shown as it is
    Console().print(t)


def pretty(text: str) -> str:
    """``text`` indented when it is a JSON object or array (a tool's structured result as
    text), as it is otherwise."""
    stripped = text.strip()
    if not (stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]")):
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    return json.dumps(value, ensure_ascii=False, indent=2)


def human_call(result: dict[str, Any]) -> None:
    """A CallToolResult as text: each content block, or the structured content alone."""
    if result.get("isError"):
        print("tool error:")
    for block in result.get("content", []):
        kind = block.get("type")
        if kind == "text":
            say(pretty(block.get("text", "")))
        elif kind in ("image", "audio"):
            say(f"[{kind} {block.get('mimeType', '')}, {len(block.get('data', ''))} base64 chars]")
        elif kind == "resource_link":
            say(f"[resource link {block.get('uri', '')}]")
        else:
            say(json.dumps(block, ensure_ascii=False))
    if "structuredContent" in result and not result.get("content"):
        say(json.dumps(result["structuredContent"], ensure_ascii=False, indent=2))


class ProgressBar:
    """Progress notifications on stderr: a bar on a terminal, nothing otherwise (nor while
    the user is being asked something: ``held``)."""

    held = False

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.enabled or ProgressBar.held:
            return
        width = 30
        if total:
            frac = max(0.0, min(1.0, progress / total))
            bar = "█" * int(frac * width) + "░" * (width - int(frac * width))
            text = f"{self.label} [{bar}] {progress:g}/{total:g}"
        else:
            text = f"{self.label} {progress:g}"
        if message:
            text += f" {for_terminal(one_line(message))}"
        sys.stderr.write("\r\x1b[2K" + text[:200])
        sys.stderr.flush()
        self.shown = True
        if self not in _STATUS:
            _STATUS.append(self)

    def done(self) -> None:
        """Wipe the bar."""
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self.shown = False
        if self in _STATUS:
            _STATUS.remove(self)


__all__ = [
    "ProgressBar",
    "clear_status",
    "emit_json",
    "human_call",
    "note",
    "one_line",
    "pretty",
    "say",
    "table",
    "wants_json",
]
