"""Google-style docstrings: the description a model reads, and the ``Args:`` descriptions of
each parameter."""

from __future__ import annotations

import inspect
import re

_ARG_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
)
_SECTIONS = _ARG_SECTIONS | {
    "Other Parameters",
    "Returns",
    "Return",
    "Yields",
    "Yield",
    "Raises",
    "Raise",
    "Exceptions",
    "Examples",
    "Example",
    "Notes",
    "Note",
    "Warnings",
    "Warning",
    "See Also",
    "References",
    "Attributes",
    "Methods",
    "Todo",
}
_ARG_LINE = r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$"
"""An ``Args:`` entry (compiled, by `re`'s cache, only where a docstring has one)."""


def _section(line: str) -> str | None:
    """The section a header line (``Args:``, ``Returns :``, alone on its line) opens."""
    text = line.strip()
    if not text.endswith(":"):
        return None
    name = text[:-1].rstrip()
    return name if name in _SECTIONS else None


def split_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """The description and per-argument descriptions of a Google-style docstring.

    The description is the text before the first section header (``Args:``, ``Returns:``,
    ``Raises:``, ``Notes:``, ``Examples:`` …, each alone on its line): the summary and any
    paragraphs after it, which tell a model what the function is for. Sections are for
    people; argument descriptions come from ``Args:`` (or ``Arguments:``/``Parameters:``).
    Put implementation notes in a ``Notes:`` section (or a comment) to keep them from the
    model.
    """
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    headers = [(i, name) for i, line in enumerate(lines) if (name := _section(line))]
    end = headers[0][0] if headers else len(lines)
    args: dict[str, str] = {}
    for start, name in headers:
        if name in _ARG_SECTIONS:
            _parse_args(lines[start + 1 :], args)
    text = "\n".join(lines[:end]).strip()
    return (text or None), args


def _parse_args(lines: list[str], args: dict[str, str]) -> None:
    current: str | None = None
    indent: int | None = None
    for line in lines:
        if not line.strip():
            current = None
            continue
        lead = len(line) - len(line.lstrip())
        if indent is None:
            indent = lead
        if lead == 0:
            break
        m = re.match(_ARG_LINE, line)
        if m and lead == indent:
            current = m.group(1).lstrip("*")
            args[current] = m.group(3).strip()
        elif current:
            args[current] = (args[current] + " " + line.strip()).strip()
