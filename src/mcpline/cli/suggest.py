""" "Did you mean": the closest names to a misspelt one (`difflib.get_close_matches`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """``"; did you mean 'add'?"`` (or ``'add' or 'and'``), or ``""`` when nothing is close."""
    close = difflib.get_close_matches(name, list(names), n=2, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


def unknown(kind: str, name: str, names: list[str]) -> str:
    """``unknown tool 'ad'; did you mean 'add'?``, or the names there are when none is close."""
    hint = did_you_mean(name, names)
    if not hint:
        shown = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
        hint = f"; the server has {shown}" if names else f"; the server has no {kind}s"
    return f"unknown {kind} {name!r}{hint}"


__all__ = ["did_you_mean", "unknown"]
